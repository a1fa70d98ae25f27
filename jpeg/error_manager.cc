#include "jpeg/error_manager.h"

#include "jpeg/jpeg_limits.h"

// clang-format off
#include <jerror.h>
// clang-format on

namespace pcr {

namespace {

[[noreturn]] void ErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  const int code = cinfo->err->msg_code;
  if (code == JERR_NO_BACKING_STORE || code == JERR_OUT_OF_MEMORY) {
    // libjpeg asks for backing store when its arrays exceed max_memory_to_use.
    err->message = "needs more than " + MemoryLimitText(err->max_memory_bytes);
    err->not_supported = true;
  } else {
    char buf[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, buf);
    err->message = buf;
  }
  longjmp(err->jump, 1);
}

void EmitMessage(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0) return;
  const auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  switch (err->warnings) {
    case JpegWarnings::kIgnore:
      return;
    case JpegWarnings::kAllAreErrors:
      ErrorExit(cinfo);
    case JpegWarnings::kLossIsError:
      // Extraneous bytes between markers, odd JFIF versions and the like lose nothing.
      switch (cinfo->err->msg_code) {
        case JWRN_JFIF_MAJOR:
        case JWRN_ADOBE_XFORM:
          reinterpret_cast<JpegErrorManager*>(cinfo->err)->misread_segment = true;
          return;
        case JWRN_EXTRANEOUS_DATA:
        case JWRN_BOGUS_ICC:
          return;
        default:
          ErrorExit(cinfo);
      }
  }
}

void ProgressMonitor(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > err->max_input_scans) {
    err->message = "more than " + std::to_string(err->max_input_scans) + " scans";
    longjmp(err->jump, 1);
  }
}

}  // namespace

void JpegErrorManager::Install(j_common_ptr cinfo) {
  cinfo->err = jpeg_std_error(&pub);
  pub.error_exit = ErrorExit;
  pub.emit_message = EmitMessage;
  Reset();
}

void JpegErrorManager::WatchScans(j_decompress_ptr cinfo) {
  if (max_input_scans <= 0) return;
  progress_.progress_monitor = ProgressMonitor;
  cinfo->progress = &progress_;
}

void RenewDecompressor(jpeg_decompress_struct* cinfo, JpegErrorManager* err) {
  jpeg_destroy_decompress(cinfo);
  *cinfo = {};
  err->Install(reinterpret_cast<j_common_ptr>(cinfo));
  jpeg_create_decompress(cinfo);
}

}  // namespace pcr
