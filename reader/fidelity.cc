// Fidelities: as users write them, checked, and lowered on a JPEG already
// read.
#include <charconv>

#include "format/checksum.h"
#include "format/file_format.h"
#include "reader/image_dataset_rep.h"

namespace pcr {

bool ParseFidelity(std::string_view text, int num_scan_groups, bool fields_only, int* fidelity) {
  if (text == "full") {
    *fidelity = kFullFidelity;
    return true;
  }
  int k = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
  if (text.empty() || text[0] == '-' || ec != std::errc() || end != text.data() + text.size()) return false;
  if ((k < 1 || k > num_scan_groups) && !(fields_only && k == kFieldsOnly)) return false;
  *fidelity = k;
  return true;
}

Status ImageDataset::Rep::CheckFidelity(int fidelity) const {
  if (fidelity != kFullFidelity && (fidelity < 1 || fidelity > script.group_count())) {
    return Status::InvalidArgument("fidelity must be 1.." + std::to_string(script.group_count()) +
                                   " or full (kFullFidelity), not " + std::to_string(fidelity));
  }
  return Status::OK();
}

Result<Bytes> ImageDataset::LowerFidelity(uint64_t image, ByteSpan jpeg, int jpeg_fidelity, int fidelity) const {
  PCR_RETURN_IF_ERROR(rep_->CheckImage(image));
  PCR_RETURN_IF_ERROR(rep_->CheckFidelity(jpeg_fidelity));
  PCR_RETURN_IF_ERROR(rep_->CheckFidelity(fidelity));
  const int from = ScanGroups(jpeg_fidelity), to = ScanGroups(fidelity);
  if (to > from) {
    return Status::InvalidArgument("fidelity " + std::to_string(to) + " is above jpeg_fidelity " +
                                   std::to_string(from) + ": a JPEG holds no scan group it was read without");
  }
  const auto [record, row] = rep_->Locate(image);
  const RecordLocation& loc = rep_->records[record];
  PCR_ASSIGN_OR_RETURN(const auto file, rep_->File(loc.file));
  const StripeInfo& stripe = file->index().stripes[loc.stripe];
  auto wrong = [&](const std::string& why) {
    return Status::Corruption(rep_->DescribeImage(image) + ": the " + std::to_string(jpeg.size()) +
                              "-byte JPEG is not this image at fidelity " + std::to_string(from) + ": " + why);
  };
  const size_t eoi = kJpegEndOfImage.size();
  if (jpeg.size() < 2 + eoi || !std::equal(kJpegEndOfImage.begin(), kJpegEndOfImage.end(), jpeg.end() - eoi)) {
    return wrong("it does not end with EOI");
  }
  // Groups 2..L stand in the JPEG as stored, each checked by its chunk's checksum.
  size_t end = jpeg.size() - eoi;
  for (int g = from; g > to; --g) {
    const ChunkInfo& c = stripe.chunk(g, row);
    if (end < 2 + c.length)
      return wrong("scan group " + std::to_string(g) + " takes " + std::to_string(c.length) + " bytes");
    end -= c.length;
    if (Checksum32(jpeg.subspan(end, c.length)) != c.checksum) {
      return wrong("its bytes " + std::to_string(end) + ".." + std::to_string(end + c.length) +
                   " do not match scan group " + std::to_string(g) + "'s checksum");
    }
  }
  Bytes out(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(end));
  out.insert(out.end(), kJpegEndOfImage.begin(), kJpegEndOfImage.end());
  return out;
}

}  // namespace pcr
