// A temporary directory for a fuzz target's files, made on first use and
// removed at exit. Never destroyed, so the exit handler can still use it.
// In memory (/dev/shm) where the machine has it: the writers' thousands of
// fsyncs then cost nothing, on a busy disk too.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace pcr::fuzz {

inline const std::filesystem::path& WorkDir() {
  static const std::filesystem::path* dir = [] {
    std::error_code ec;
    const std::filesystem::path shm = "/dev/shm";
    const bool in_memory = std::filesystem::is_directory(shm, ec) && access(shm.c_str(), W_OK) == 0;
    std::string tmpl = ((in_memory ? shm : std::filesystem::temp_directory_path()) / "pcr-fuzz-XXXXXX").string();
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
