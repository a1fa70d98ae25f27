// The libjpeg-turbo error manager that transcoding and decoding share: it
// turns libjpeg's errors and chosen warnings into messages.
#pragma once

#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <string>

#include <jpeglib.h>

namespace pcr {

// Which of libjpeg's warnings (corrupt data it worked around) stop the call.
enum class JpegWarnings {
  kIgnore,       // none
  kLossIsError,  // those that mean coefficients were lost or guessed
  kAllAreErrors,
};

// A libjpeg error manager whose errors longjmp to `jump` with `message` set.
// Install() before jpeg_create_*; setjmp(jump) before every libjpeg call.
struct JpegErrorManager {
  jpeg_error_mgr pub;
  jmp_buf jump;
  std::string message;
  JpegWarnings warnings = JpegWarnings::kAllAreErrors;
  int max_input_scans = 0;      // > 0: decompressing more scans is an error
  size_t max_memory_bytes = 0;  // the limit set on libjpeg, for its message
  bool not_supported = false;   // the input is refused as NotSupported rather than Corruption
  bool misread_segment = false;  // libjpeg warned about a JFIF version or an Adobe transform

  // Points `cinfo` at this manager and resets the per-call state.
  void Install(j_common_ptr cinfo);
  // With max_input_scans set, `cinfo` reports its scans as they are read.
  void WatchScans(j_decompress_ptr cinfo);
  // Clears the outcome of the previous call.
  void Reset() {
    message.clear();
    not_supported = false;
    misread_segment = false;
  }

 private:
  jpeg_progress_mgr progress_{};
};

// Destroys `cinfo` and creates it anew with `err` installed. libjpeg keeps
// the Huffman and quantisation tables of earlier images, which a JPEG
// without its own would otherwise use.
void RenewDecompressor(jpeg_decompress_struct* cinfo, JpegErrorManager* err);

}  // namespace pcr
