#include "io/http_client.h"
#include "io/parallel_for.h"
#include "io/s3_upload.h"
#include "pcr/convert.h"
#include "writer/remote_input.h"

namespace pcr {

Result<std::string> GetObject(const std::string& path, const RemoteOptions& remote, const UploadOptions& upload) {
  if (!path.starts_with("s3://")) return Status::InvalidArgument(path + ": expected s3://BUCKET/KEY");
  PCR_ASSIGN_OR_RETURN(auto client, HttpClient::Create(OutputRemote(remote, upload)));
  PCR_ASSIGN_OR_RETURN(const Bytes bytes, ReadWholeObject(path, *client));
  return std::string(bytes.begin(), bytes.end());
}

Status PutObject(const std::string& path, std::string_view body, const RemoteOptions& remote,
                 const UploadOptions& upload) {
  PCR_ASSIGN_OR_RETURN(auto uploader, S3Uploader::Create(remote, upload));
  return uploader->Put(path, body).status();
}

Status DeleteObjects(const std::string& prefix, const RemoteOptions& remote, const UploadOptions& upload) {
  const size_t slash = prefix.starts_with("s3://") ? prefix.find('/', 5) : std::string::npos;
  if (slash == std::string::npos || slash == 5 || slash + 1 == prefix.size()) {
    return Status::InvalidArgument(prefix + ": expected s3://BUCKET/KEYPREFIX (a key prefix, not a whole bucket)");
  }
  const std::string bucket = prefix.substr(5, slash - 5);
  PCR_ASSIGN_OR_RETURN(auto uploader, S3Uploader::Create(remote, upload));
  const std::string keys = prefix.substr(slash + 1);
  PCR_ASSIGN_OR_RETURN(const auto uploads, uploader->ListUploads(bucket, keys));
  for (const S3Uploader::OpenUpload& u : uploads) {
    PCR_RETURN_IF_ERROR(uploader->Abort("s3://" + bucket + "/" + u.key, u.upload_id));
  }
  PCR_ASSIGN_OR_RETURN(const auto objects, uploader->List(bucket, keys));
  return ParallelFor(objects.size(), upload.concurrency,
                     [&](size_t i) { return uploader->Delete("s3://" + bucket + "/" + objects[i].key); });
}

}  // namespace pcr
