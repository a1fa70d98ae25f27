#include "format/scan_script.h"

#include <array>
#include <charconv>
#include <sstream>

namespace pcr {

namespace {

constexpr uint8_t kAllComponents = 0x0f;

ScanSpec Dc(uint8_t mask, uint8_t ah, uint8_t al) { return {mask, 0, 0, ah, al}; }
ScanSpec Ac(int comp, uint8_t ss, uint8_t se, uint8_t ah, uint8_t al) {
  return {static_cast<uint8_t>(1u << comp), ss, se, ah, al};
}

// The default: spectral selection only (each coefficient is decoded once),
// luma in two bands and chroma in two, so a full decode walks the luma blocks
// in only three scans. Component 3 (K of CMYK/YCCK) travels with component 0.
ScanScript Spectral5Script() {
  return {"spectral5",
          {{Dc(kAllComponents, 0, 0)},
           {Ac(0, 1, 5, 0, 0), Ac(3, 1, 5, 0, 0)},
           {Ac(1, 1, 5, 0, 0), Ac(2, 1, 5, 0, 0)},
           {Ac(0, 6, 63, 0, 0), Ac(3, 6, 63, 0, 0)},
           {Ac(1, 6, 63, 0, 0), Ac(2, 6, 63, 0, 0)}}};
}

// Spectral selection only, luma in four bands.
ScanScript SpectralScript() {
  return {"spectral",
          {{Dc(kAllComponents, 0, 0)},
           {Ac(0, 1, 2, 0, 0), Ac(3, 1, 2, 0, 0)},
           {Ac(0, 3, 9, 0, 0), Ac(3, 3, 9, 0, 0)},
           {Ac(1, 1, 63, 0, 0), Ac(2, 1, 63, 0, 0)},
           {Ac(0, 10, 27, 0, 0), Ac(3, 10, 27, 0, 0)},
           {Ac(0, 28, 63, 0, 0), Ac(3, 28, 63, 0, 0)}}};
}

// libjpeg's jpeg_simple_progression() for YCbCr (ten scans), the script of
// the PCR paper; component 3 travels with component 0.
ScanScript LibjpegScript() {
  return {"libjpeg",
          {{Dc(kAllComponents, 0, 1)},
           {Ac(0, 1, 5, 0, 2), Ac(3, 1, 5, 0, 2)},
           {Ac(2, 1, 63, 0, 1)},
           {Ac(1, 1, 63, 0, 1)},
           {Ac(0, 6, 63, 0, 2), Ac(3, 6, 63, 0, 2)},
           {Ac(0, 1, 63, 2, 1), Ac(3, 1, 63, 2, 1)},
           {Dc(kAllComponents, 1, 0)},
           {Ac(2, 1, 63, 1, 0)},
           {Ac(1, 1, 63, 1, 0)},
           {Ac(0, 1, 63, 1, 0), Ac(3, 1, 63, 1, 0)}}};
}

Status ScanError(int group, int scan, const std::string& what) {
  return Status::InvalidArgument("scan script group " + std::to_string(group + 1) + " scan " +
                                 std::to_string(scan + 1) + ": " + what);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ParseSmallInt(std::string_view s, int max, uint8_t* out) {
  s = Trim(s);
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0 || v > max) return false;
  *out = static_cast<uint8_t>(v);
  return true;
}

// "c[,c...]: Ss-Se, Ah, Al"
bool ParseScan(std::string_view text, ScanSpec* scan) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view comps = text.substr(0, colon);
  scan->component_mask = 0;
  while (true) {
    const size_t comma = comps.find(',');
    uint8_t c;
    if (!ParseSmallInt(comps.substr(0, comma), kMaxScanComponents - 1, &c)) return false;
    scan->component_mask |= static_cast<uint8_t>(1u << c);
    if (comma == std::string_view::npos) break;
    comps.remove_prefix(comma + 1);
  }
  std::string_view rest = text.substr(colon + 1);
  const size_t dash = rest.find('-');
  const size_t c1 = rest.find(',');
  if (dash == std::string_view::npos || c1 == std::string_view::npos || dash > c1) return false;
  const size_t c2 = rest.find(',', c1 + 1);
  if (c2 == std::string_view::npos) return false;
  return ParseSmallInt(rest.substr(0, dash), 63, &scan->ss) &&
         ParseSmallInt(rest.substr(dash + 1, c1 - dash - 1), 63, &scan->se) &&
         ParseSmallInt(rest.substr(c1 + 1, c2 - c1 - 1), 13, &scan->ah) &&
         ParseSmallInt(rest.substr(c2 + 1), 13, &scan->al);
}

}  // namespace

Status ValidateScanScript(const ScanScript& script) {
  if (script.groups.empty() || script.group_count() > kMaxScanGroups) {
    return Status::InvalidArgument("scan script must have 1.." + std::to_string(kMaxScanGroups) +
                                   " groups, has " + std::to_string(script.groups.size()));
  }
  // bits[c][k]: the point transform Al reached by coefficient k of component
  // c, or -1 while it has not been coded.
  std::array<std::array<int, kDctCoefficients>, kMaxScanComponents> bits;
  for (auto& comp : bits) comp.fill(-1);
  for (int g = 0; g < script.group_count(); ++g) {
    const auto& group = script.groups[g];
    if (group.empty() || group.size() > kMaxScansPerGroup) {
      return ScanError(g, 0, "a group holds 1.." + std::to_string(kMaxScansPerGroup) + " scans");
    }
    for (int s = 0; s < static_cast<int>(group.size()); ++s) {
      const ScanSpec& scan = group[s];
      if (scan.component_mask == 0 || (scan.component_mask & ~kAllComponents) != 0) {
        return ScanError(g, s, "components must be a non-empty subset of 0..3");
      }
      if (scan.ss > scan.se || scan.se >= kDctCoefficients) {
        return ScanError(g, s, "band must satisfy Ss <= Se <= 63");
      }
      if (scan.ss == 0 && scan.se != 0) return ScanError(g, s, "a DC scan must have Se = 0");
      if (scan.ss > 0 && (scan.component_mask & (scan.component_mask - 1)) != 0) {
        return ScanError(g, s, "an AC scan must code one component");
      }
      if (scan.al > 13 || scan.ah > 13) return ScanError(g, s, "Ah and Al must be at most 13");
      if (scan.ah != 0 && scan.al + 1 != scan.ah) {
        return ScanError(g, s, "a refinement scan must have Al = Ah - 1");
      }
      for (int c = 0; c < kMaxScanComponents; ++c) {
        if ((scan.component_mask & (1u << c)) == 0) continue;
        if (scan.ss > 0 && bits[c][0] < 0) {
          return ScanError(g, s, "AC scan of component " + std::to_string(c) + " before its DC");
        }
        for (int k = scan.ss; k <= scan.se; ++k) {
          const int expected = scan.ah == 0 ? -1 : scan.ah;
          if (bits[c][k] != expected) {
            return ScanError(g, s, "coefficient " + std::to_string(k) + " of component " +
                                       std::to_string(c) + " is not in the state Ah requires");
          }
          bits[c][k] = scan.al;
        }
      }
    }
  }
  if ((script.groups[0][0].component_mask & 1u) == 0 || script.groups[0][0].ss != 0) {
    return Status::InvalidArgument("scan script: the first scan must be a DC scan of component 0");
  }
  for (int c = 0; c < kMaxScanComponents; ++c) {
    for (int k = 0; k < kDctCoefficients; ++k) {
      if (bits[c][k] != 0) {
        return Status::InvalidArgument("scan script: coefficient " + std::to_string(k) +
                                       " of component " + std::to_string(c) +
                                       " never reaches full precision");
      }
    }
  }
  return Status::OK();
}

std::vector<std::string> BuiltinScanScriptNames() { return {"spectral5", "spectral", "libjpeg"}; }

Result<ScanScript> BuiltinScanScript(std::string_view name) {
  if (name == "spectral5") return Spectral5Script();
  if (name == "spectral") return SpectralScript();
  if (name == "libjpeg") return LibjpegScript();
  return Status::InvalidArgument("unknown scan script '" + std::string(name) +
                                 "' (built-in: spectral5, spectral, libjpeg)");
}

Result<ScanScript> ParseScanScript(std::string_view text, std::string name) {
  ScanScript script{std::move(name), {}};
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    line = Trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::vector<ScanSpec> group;
    while (!line.empty()) {
      const size_t semi = line.find(';');
      const std::string_view item = Trim(line.substr(0, semi));
      line = semi == std::string_view::npos ? std::string_view() : Trim(line.substr(semi + 1));
      if (item.empty()) continue;
      ScanSpec scan;
      if (!ParseScan(item, &scan)) {
        return Status::InvalidArgument("scan script " + script.name + " line " +
                                       std::to_string(line_no) + ": expected 'c[,c]: Ss-Se, Ah, Al', got '" +
                                       std::string(item) + "'");
      }
      group.push_back(scan);
    }
    script.groups.push_back(std::move(group));
  }
  PCR_RETURN_IF_ERROR(ValidateScanScript(script).WithPrefix(script.name));
  return script;
}

std::string FormatScanScript(const ScanScript& script) {
  std::ostringstream out;
  for (const auto& group : script.groups) {
    for (size_t s = 0; s < group.size(); ++s) {
      const ScanSpec& scan = group[s];
      if (s > 0) out << "; ";
      bool first = true;
      for (int c = 0; c < kMaxScanComponents; ++c) {
        if ((scan.component_mask & (1u << c)) == 0) continue;
        out << (first ? "" : ",") << c;
        first = false;
      }
      out << ": " << int{scan.ss} << "-" << int{scan.se} << ", " << int{scan.ah} << ", "
          << int{scan.al};
    }
    out << "\n";
  }
  return out.str();
}

void EncodeScanScript(const ScanScript& script, Bytes* out) {
  PutLengthPrefixed(out, script.name);
  PutVarint64(out, script.groups.size());
  for (const auto& group : script.groups) {
    PutVarint64(out, group.size());
    for (const ScanSpec& scan : group) {
      PutFixed8(out, scan.component_mask);
      PutFixed8(out, scan.ss);
      PutFixed8(out, scan.se);
      PutFixed8(out, static_cast<uint8_t>(scan.ah << 4 | scan.al));
    }
  }
}

bool DecodeScanScript(ByteCursor* in, ScanScript* script) {
  uint64_t group_count;
  if (!in->GetLengthPrefixed(255, &script->name) ||
      !in->GetVarintAtMost(kMaxScanGroups, &group_count)) {
    return false;
  }
  script->groups.assign(group_count, {});
  for (auto& group : script->groups) {
    uint64_t scan_count;
    if (!in->GetVarintAtMost(kMaxScansPerGroup, &scan_count)) return false;
    group.resize(scan_count);
    for (ScanSpec& scan : group) {
      uint8_t ahal;
      if (!in->GetFixed8(&scan.component_mask) || !in->GetFixed8(&scan.ss) ||
          !in->GetFixed8(&scan.se) || !in->GetFixed8(&ahal)) {
        return false;
      }
      scan.ah = ahal >> 4;
      scan.al = ahal & 0x0f;
    }
  }
  return true;
}

}  // namespace pcr
