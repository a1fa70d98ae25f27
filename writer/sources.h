// The source images of a conversion: class folders or a list file.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/file_format.h"
#include "io/http_client.h"
#include "io/s3_upload.h"
#include "pcr/io.h"
#include "pcr/status.h"

namespace pcr {

// Files of class folders that are not taken as images.
struct IgnoredFiles {
  static constexpr size_t kExamples = 5;
  uint64_t count = 0;
  std::vector<std::string> examples;  // the smallest keys, sorted

  void Add(std::string key);
};

struct SourceList {
  std::vector<std::string> class_names;  // empty for a list file
  std::vector<SampleMetadata> sources;   // key relative to the root, and label
  IgnoredFiles ignored;
};

// The JPEGs of the ImageFolder `root`: root/<class>/.../<image>, classes in
// sorted order (label = index), keys in sorted order within a class. Hidden
// files and folders are left out. Files are taken by name (.jpg, .jpeg, .jpe,
// .jfif) or, with `by_content`, by their JPEG signature; the rest are counted
// in `ignored`.
Result<SourceList> ListImageFolder(const std::string& root, bool by_content);

// An S3 prefix taken as an ImageFolder: s3://BUCKET/PREFIX/<class>/.../<image>
// listed (ListObjectsV2, every page), with ListImageFolder's rules; keys
// ending in '/' (folder markers) are passed over. `by_content` reads the
// first bytes of every candidate through `client`. *listed receives every
// listed object by key (relative to the prefix).
Result<SourceList> ListRemoteImageFolder(const std::string& root, bool by_content, S3Uploader& s3, HttpClient& client,
                                         std::unordered_map<std::string, S3Uploader::ListedObject>* listed);

// s3://BUCKET/PREFIX split into the bucket and the prefix ending in '/' (or
// empty); InvalidArgument for another path.
Result<std::pair<std::string, std::string>> SplitS3Prefix(const std::string& root);

// The "path,label" lines of `list_file`. Paths must be relative and in
// normal form; InvalidArgument names the line.
Result<SourceList> ReadSourceList(const std::string& list_file, const RemoteOptions& remote = {});

}  // namespace pcr
