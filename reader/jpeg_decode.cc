#include "reader/jpeg_decode.h"

#include <csetjmp>
#include <cstdio>
#include <string>

#include <jpeglib.h>

namespace pcr {

namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  jmp_buf jump;
  bool warnings_are_errors = true;
  std::string message;
};

void ErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  char buf[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, buf);
  err->message = buf;
  longjmp(err->jump, 1);
}

void EmitMessage(j_common_ptr cinfo, int msg_level) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (msg_level < 0 && err->warnings_are_errors) ErrorExit(cinfo);
}

struct Decompressor {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  bool created = false;
  ~Decompressor() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

// Every C++ object here outlives the longjmp target or is POD.
bool Run(Decompressor* d, ByteSpan jpeg, const DecodeOptions& options, DecodedImage* out) {
  d->cinfo.err = jpeg_std_error(&d->err.pub);
  d->err.pub.error_exit = ErrorExit;
  d->err.pub.emit_message = EmitMessage;
  d->err.warnings_are_errors = options.warnings_are_errors;
  if (setjmp(d->err.jump)) return false;
  jpeg_create_decompress(&d->cinfo);
  d->created = true;
  d->cinfo.mem->max_memory_to_use = 1L << 30;
  jpeg_mem_src(&d->cinfo, jpeg.data(), jpeg.size());
  jpeg_read_header(&d->cinfo, TRUE);
  d->cinfo.scale_num = 1;
  d->cinfo.scale_denom = static_cast<unsigned>(options.scale_denom);
  jpeg_start_decompress(&d->cinfo);
  out->width = static_cast<int>(d->cinfo.output_width);
  out->height = static_cast<int>(d->cinfo.output_height);
  out->components = d->cinfo.output_components;
  const size_t stride = static_cast<size_t>(out->width) * out->components;
  out->pixels.resize(stride * out->height);
  while (d->cinfo.output_scanline < d->cinfo.output_height) {
    JSAMPROW row = out->pixels.data() + stride * d->cinfo.output_scanline;
    jpeg_read_scanlines(&d->cinfo, &row, 1);
  }
  jpeg_finish_decompress(&d->cinfo);
  return true;
}

}  // namespace

Result<DecodedImage> DecodeJpeg(ByteSpan jpeg, const DecodeOptions& options) {
  if (options.scale_denom != 1 && options.scale_denom != 2 && options.scale_denom != 4 &&
      options.scale_denom != 8) {
    return Status::InvalidArgument("scale_denom must be 1, 2, 4 or 8");
  }
  Decompressor d;
  DecodedImage out;
  if (!Run(&d, jpeg, options, &out)) return Status::Corruption("JPEG decode: " + d.err.message);
  return out;
}

}  // namespace pcr
