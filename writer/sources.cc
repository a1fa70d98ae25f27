#include "writer/sources.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <map>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/io_engine.h"
#include "io/remote_path.h"
#include "writer/text_input.h"

namespace pcr {

namespace fs = std::filesystem;

namespace {

bool IsJpegName(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".jpe" || ext == ".jfif";
}

bool IsHidden(const fs::path& p) { return p.filename().string().starts_with("."); }

// True when `head` (3 bytes) is the JPEG signature FF D8 FF.
bool IsJpegSignature(const uint8_t* head) { return head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF; }

// True when the regular file at `path` starts with the JPEG signature.
bool HasJpegSignature(const std::string& path) {
  const Result<int> fd = OpenRegularFile(path);
  if (!fd.ok()) return false;
  uint8_t head[3];
  const bool jpeg = pread(*fd, head, sizeof(head), 0) == 3 && IsJpegSignature(head);
  close(*fd);
  return jpeg;
}

}  // namespace

void IgnoredFiles::Add(std::string key) {
  ++count;
  examples.insert(std::upper_bound(examples.begin(), examples.end(), key), std::move(key));
  if (examples.size() > kExamples) examples.pop_back();
}

Result<SourceList> ListImageFolder(const std::string& root, bool by_content) {
  SourceList list;
  std::vector<std::string>* classes = &list.class_names;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return Status::InvalidArgument(root + ": not a directory");
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory() && !IsHidden(entry.path())) {
      classes->push_back(entry.path().filename().string());
    }
  }
  if (ec) return Status::IOError(root + ": " + ec.message());
  std::sort(classes->begin(), classes->end());
  for (size_t label = 0; label < classes->size(); ++label) {
    std::vector<std::string> keys;
    const fs::path dir = fs::path(root) / (*classes)[label];
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it); it.increment(ec)) {
      if (IsHidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file()) continue;
      std::string key = fs::relative(it->path(), root).generic_string();
      if (!(by_content ? HasJpegSignature(it->path().string()) : IsJpegName(it->path()))) {
        list.ignored.Add(std::move(key));
        continue;
      }
      if (key.size() > kMaxKeyLength) {
        return Status::InvalidArgument(it->path().string() + ": path longer than " +
                                       std::to_string(kMaxKeyLength) + " bytes");
      }
      keys.push_back(std::move(key));
    }
    if (ec) return Status::IOError(dir.string() + ": " + ec.message());
    std::sort(keys.begin(), keys.end());
    for (auto& k : keys) list.sources.push_back({static_cast<int64_t>(label), std::move(k)});
  }
  return list;
}

Result<std::pair<std::string, std::string>> SplitS3Prefix(const std::string& root) {
  S3PathParts parts;
  if (!SplitS3Path(root, &parts)) return Status::InvalidArgument(root + ": expected s3://BUCKET/PREFIX");
  std::string prefix(parts.rest);
  if (!prefix.empty() && !prefix.ends_with('/')) prefix += '/';
  return std::make_pair(std::string(parts.bucket), prefix);
}

Result<SourceList> ListRemoteImageFolder(const std::string& root, bool by_content, S3Uploader& s3, HttpClient& client,
                                         std::unordered_map<std::string, S3Uploader::ListedObject>* listed) {
  PCR_ASSIGN_OR_RETURN(const auto where, SplitS3Prefix(root));
  const auto& [bucket, prefix] = where;
  PCR_ASSIGN_OR_RETURN(const std::vector<S3Uploader::ListedObject> objects, s3.List(bucket, prefix));
  if (objects.empty()) {
    return Status::NotFound("s3://" + bucket + "/" + prefix + ": no objects under this prefix (expected " +
                            "s3://BUCKET/PREFIX/<class>/<image>.jpg)");
  }
  SourceList list;
  // Class name -> keys, both sorted at the end.
  std::map<std::string, std::vector<std::string>> classes;
  std::vector<std::string> candidates;
  for (const S3Uploader::ListedObject& o : objects) {
    std::string key = o.key.substr(prefix.size());
    (*listed)[key] = o;
    const size_t slash = key.find('/');
    if (slash == std::string::npos || slash == 0) continue;  // beside the class folders
    bool hidden = false, empty_part = false;
    for (size_t start = 0; start < key.size();) {
      const size_t end = std::min(key.find('/', start), key.size());
      hidden |= key[start] == '.';
      empty_part |= end == start;
      start = end + 1;
    }
    if (hidden) continue;
    if (empty_part) {  // "a//b": no file system path
      list.ignored.Add(std::move(key));
      continue;
    }
    classes[key.substr(0, slash)];
    if (!key.ends_with('/')) candidates.push_back(std::move(key));  // else a folder marker
  }
  std::vector<bool> jpeg(candidates.size());
  if (by_content) {
    std::vector<std::array<uint8_t, 3>> heads(candidates.size());
    std::vector<Status> statuses(candidates.size());
    std::vector<std::string> paths(candidates.size());
    std::vector<RemoteRead> reads;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (listed->at(candidates[i]).size < 3) continue;
      paths[i] = JoinRemotePath(root, candidates[i]);
      reads.push_back({.path = paths[i], .offset = 0, .length = 3, .out = heads[i].data(), .status = &statuses[i],
                       .object_size = listed->at(candidates[i]).size});
    }
    client.Fetch(reads);
    for (size_t i = 0; i < candidates.size(); ++i) {
      // Gone since the listing: as a file that cannot be opened, not a JPEG.
      if (statuses[i].code() == StatusCode::kNotFound) continue;
      PCR_RETURN_IF_ERROR(statuses[i]);
      jpeg[i] = !paths[i].empty() && IsJpegSignature(heads[i].data());
    }
  } else {
    for (size_t i = 0; i < candidates.size(); ++i) jpeg[i] = IsJpegName(fs::path(candidates[i]));
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!jpeg[i]) {
      list.ignored.Add(std::move(candidates[i]));
      continue;
    }
    if (candidates[i].size() > kMaxKeyLength) {
      return Status::InvalidArgument(JoinRemotePath(root, candidates[i]) + ": path longer than " +
                                     std::to_string(kMaxKeyLength) + " bytes");
    }
    classes[candidates[i].substr(0, candidates[i].find('/'))].push_back(std::move(candidates[i]));
  }
  for (auto& [name, keys] : classes) {
    const int64_t label = static_cast<int64_t>(list.class_names.size());
    list.class_names.push_back(name);
    std::sort(keys.begin(), keys.end());
    for (std::string& k : keys) list.sources.push_back({label, std::move(k)});
  }
  return list;
}

namespace {

// A key is a relative, normalised path: no leading '/', no empty, "." or
// ".." parts, so that it names a file below SRC_DIR and below any directory
// an image is extracted into.
bool IsNormalKey(const std::string& key) {
  if (key.empty() || key.front() == '/' || key.back() == '/') return false;
  for (size_t start = 0; start <= key.size();) {
    const size_t slash = std::min(key.find('/', start), key.size());
    const std::string_view part(key.data() + start, slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = slash + 1;
  }
  return true;
}

}  // namespace

Result<SourceList> ReadSourceList(const std::string& list_file, const RemoteOptions& remote) {
  SourceList list;
  Result<std::unique_ptr<MappedInput>> in = MappedInput::Open(list_file, remote);
  if (!in.ok()) {
    const Status failed = in.status();
    const std::string& m = failed.message();
    return failed.WithMessage(list_file + ": cannot open list file: " +
                                   (m.starts_with(list_file + ": ") ? m.substr(list_file.size() + 2) : m));
  }
  std::string_view text = (*in)->text();
  int line_no = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string line(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t comma = line.rfind(',');
    auto bad = [&](const std::string& what) {
      return Status::InvalidArgument(list_file + " line " + std::to_string(line_no) + ": " + what);
    };
    if (comma == std::string::npos || comma == 0) return bad("expected 'path,label'");
    SampleMetadata s{0, line.substr(0, comma)};
    try {
      size_t used = 0;
      s.label = std::stoll(line.substr(comma + 1), &used);
      if (used != line.size() - comma - 1) return bad("label is not an integer");
    } catch (const std::exception&) {
      return bad("label is not an integer");
    }
    if (s.key.size() > kMaxKeyLength) return bad("path longer than " + std::to_string(kMaxKeyLength));
    if (!IsNormalKey(s.key)) {
      return bad("path '" + s.key + "' is not a relative path below SRC_DIR in normal form (no leading '/', "
                 "no empty, '.' or '..' parts)");
    }
    list.sources.push_back(std::move(s));
  }
  return list;
}

}  // namespace pcr
