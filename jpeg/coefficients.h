// The quantised DCT coefficients of a JPEG, one block row at a time: pcr's
// own entropy decoder for the progressive scans pcr writes, and libjpeg-turbo's
// jpeg_read_coefficients as its reference.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "format/coding.h"

namespace pcr {

// The colour space libjpeg-turbo's jpeg_read_header guesses for a frame.
enum class JpegColorSpace { kGray, kYCbCr, kRgb, kCmyk, kYcck };

// A frame's geometry as libjpeg-turbo computes it, and what a decode to
// pixels needs besides the coefficients.
struct CoefficientFrame {
  struct Component {
    int id = 0;
    int h = 1, v = 1;  // sampling factors
    int width_in_blocks = 0, height_in_blocks = 0;
    // The quantisation table in natural order, as latched by the
    // component's first scan; all 0 when no scan has the component.
    std::array<uint16_t, 64> quant{};
    bool quant_latched = false;
    uint64_t sent = 0;  // bit k: zigzag coefficient k is in some scan
  };
  int width = 0, height = 0;
  int num_components = 0;
  std::array<Component, 4> components{};
  JpegColorSpace color_space = JpegColorSpace::kGray;  // as of the first SOS
  bool saw_adobe = false;  // an APP14 "Adobe" segment anywhere before EOI
};

// How a decode ended. kOk: every block was delivered exactly as libjpeg-turbo
// decodes it. kNotHandled: the input is outside this decoder (see
// ProgressiveCoefficientDecoder); decode it with libjpeg-turbo. kWarning:
// corrupt data libjpeg-turbo only warns about; kError: data it refuses. After
// anything but kOk the blocks delivered are not the image's.
struct CoefficientOutcome {
  enum Kind { kOk, kNotHandled, kWarning, kError };
  Kind kind = kOk;
  std::string message;  // libjpeg-turbo's words, then the scan and its byte offset

  bool ok() const { return kind == kOk; }
};

// Receives block row `row` of `component`: width_in_blocks blocks of 64
// coefficients in natural (row-major) order, as libjpeg's JBLOCK. How long
// the pointer stays valid: ProgressiveCoefficientDecoder::Decode.
using BlockRowFn = std::function<void(int component, int row, int16_t* blocks)>;

// Decodes SOF2 (progressive, Huffman, 8-bit) JPEGs whose scans use spectral
// selection only (Ah = Al = 0), each coefficient of a component in at most one
// scan and every AC scan after its component's DC scan, with 1, 3 or 4
// components whose first is sampled 1x1, 2x1, 1x2 or 2x2 and the others 1x1,
// restart markers where DRI asks for them, and any prefix of the scans (bands
// not sent are zero). Everything else is kNotHandled: baseline, extended,
// lossless and arithmetic-coded frames, successive approximation, 12-bit
// samples, other sampling factors, and markers or headers libjpeg-turbo would
// warn about or refuse (which it then reports itself).
//
// All scans advance in lockstep, one iMCU row at a time; a block row is
// delivered once every scan has passed it. Working memory is one iMCU row of
// blocks per component and the entropy-coded bytes without their stuffing.
//
// Not thread-safe; reuse one object per thread to keep its buffers.
class ProgressiveCoefficientDecoder {
 public:
  ProgressiveCoefficientDecoder();
  ~ProgressiveCoefficientDecoder();
  ProgressiveCoefficientDecoder(const ProgressiveCoefficientDecoder&) = delete;
  ProgressiveCoefficientDecoder& operator=(const ProgressiveCoefficientDecoder&) = delete;

  // Reads the markers of `jpeg`, which must outlive Decode(). kOk or
  // kNotHandled.
  CoefficientOutcome Open(ByteSpan jpeg);
  // The frame of the last successful Open().
  const CoefficientFrame& frame() const;
  // Delivers every block row of every component in order of rows. Scans
  // that hold no component of `components` (bit c: component c), and the AC
  // scans of the components in `dc_only`, are not decoded, so their errors
  // go unseen and their coefficients stay 0. The blocks `row` receives stay
  // valid, and may be changed by it, until `keep` more iMCU rows have been
  // delivered.
  // REQUIRES: the last Open() returned kOk.
  CoefficientOutcome Decode(const BlockRowFn& row, unsigned components = 0xf, unsigned dc_only = 0, int keep = 0);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// libjpeg-turbo's jpeg_read_coefficients over `jpeg`, with warnings as errors
// when asked; delivers each component's real block rows in order when `row`
// is set. kOk, or kError with libjpeg's message (kWarning never: libjpeg's
// warnings are errors here or ignored). Not thread-safe; one per thread.
class LibjpegCoefficientReader {
 public:
  LibjpegCoefficientReader();
  ~LibjpegCoefficientReader();
  LibjpegCoefficientReader(const LibjpegCoefficientReader&) = delete;
  LibjpegCoefficientReader& operator=(const LibjpegCoefficientReader&) = delete;

  CoefficientOutcome Read(ByteSpan jpeg, bool warnings_are_errors, const BlockRowFn& row,
                          CoefficientFrame* frame = nullptr);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Both decoders over one JPEG (libjpeg-turbo with warnings as errors).
// `mismatch` says where they disagree: pcr's decoder kOk where libjpeg-turbo
// fails, a frame or block that differs, or a warning or error where
// libjpeg-turbo succeeds. Empty when they agree (pcr kNotHandled agrees).
struct CoefficientComparison {
  CoefficientOutcome pcr;
  CoefficientOutcome libjpeg;
  std::string mismatch;
};
CoefficientComparison CompareCoefficientDecoders(ByteSpan jpeg, ProgressiveCoefficientDecoder& pcr_decoder,
                                                 LibjpegCoefficientReader& libjpeg_reader);

}  // namespace pcr
