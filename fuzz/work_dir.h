// A temporary directory for a fuzz target's files, made on first use and
// removed at exit. Never destroyed, so the exit handler can still use it.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace pcr::fuzz {

inline const std::filesystem::path& WorkDir() {
  static const std::filesystem::path* dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pcr-fuzz-XXXXXX").string();
    auto* made = new std::filesystem::path(mkdtemp(tmpl.data()));
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(WorkDir(), ec);
    });
    return made;
  }();
  return *dir;
}

}  // namespace pcr::fuzz
