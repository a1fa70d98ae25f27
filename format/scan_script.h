// Scan scripts: how an image's DCT coefficients are cut into scan groups.
//
// A script is a list of scan groups; a group is a list of progressive JPEG
// scans; a scan names components by index (0..3) and a coefficient band
// Ss..Se with successive-approximation bits Ah/Al (ITU T.81 G.1.1). Applied
// to an image with C components, scans keep only the components < C and a
// scan left with none is dropped, so group k codes the same coefficients of
// component j in every image that has component j.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/coding.h"
#include "pcr/status.h"
#include "pcr/types.h"

namespace pcr {

inline constexpr int kMaxScanComponents = 4;  // components a script can name
inline constexpr int kMaxScanGroups = 64;     // groups in one script
inline constexpr int kMaxScansPerGroup = 16;  // scans in one group
inline constexpr int kDctCoefficients = 64;

// OK when the script is a complete, legal progression for 4 components:
// group 1 holds a DC scan of component 0, every group is non-empty, every
// band obeys T.81 G.1.1.1, and every coefficient of every component ends at
// full precision (Al = 0).
Status ValidateScanScript(const ScanScript& script);

// Names of the built-in scripts; the first is the default.
std::vector<std::string> BuiltinScanScriptNames();
// REQUIRES: name is one of BuiltinScanScriptNames(), else InvalidArgument.
Result<ScanScript> BuiltinScanScript(std::string_view name);

// Parses the text form: one scan group per non-empty line, scans separated by
// ';', each scan "c[,c...]: Ss-Se, Ah, Al"; '#' starts a comment. Validated.
Result<ScanScript> ParseScanScript(std::string_view text, std::string name);
// The text form of `script`, accepted by ParseScanScript.
std::string FormatScanScript(const ScanScript& script);

// ScanScript wire form (spec: "ScanScript").
void EncodeScanScript(const ScanScript& script, Bytes* out);
bool DecodeScanScript(ByteCursor* in, ScanScript* script);

}  // namespace pcr
