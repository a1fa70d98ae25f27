// What a path names, worked out once here for image datasets, tables, the
// tools and conversions: a pcr file, a dataset directory or remote prefix, a
// part of a sharded conversion, or a directory holding one table file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "format/file_format.h"
#include "io/io_engine.h"

namespace pcr {

struct Location {
  std::string path;  // as given
  bool remote = false;
  // A directory or a remote prefix; otherwise a file (which may not exist:
  // opening it says so). A remote path is a file when it ends in ".pcr".
  bool directory = false;
  // In a local directory: whether it holds a dataset manifest and a part
  // manifest, and without a dataset manifest its .pcr files (sorted), or why
  // it could not be listed. A remote prefix is not looked at: reading its
  // manifest tells.
  bool dataset_manifest = false;
  bool part_manifest = false;
  std::vector<std::string> pcr_files;
  Status list_error;

  // `name` in the directory or under the prefix.
  std::string Join(std::string_view name) const;
  // The file a table reader opens: the path itself, or a directory's one
  // .pcr file; InvalidArgument when the directory is a dataset or holds none
  // or several, IOError when it could not be listed.
  Result<std::string> TableFile() const;
};

// Looks at `path` without opening any pcr file: stats and, for a local
// directory without a dataset manifest, its listing. IOError when the
// dataset manifest's stat fails other than by absence.
Result<Location> Locate(const std::string& path);

// The kind a pcr file's header gives, read through `engine`: one read of the
// header alone.
Result<FileKind> ReadFileKind(const std::string& file, IoEngine& engine);

}  // namespace pcr
