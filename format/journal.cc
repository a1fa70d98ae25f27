#include "format/journal.h"

#include <cstdio>
#include <sstream>

#include "format/checksum.h"
#include "format/coding.h"

namespace pcr {

std::string RecordFileName(uint64_t file) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "records-%05llu%s", static_cast<unsigned long long>(file),
                kRecordFileExtension);
  return buf;
}

bool IsConversionOutput(std::string_view name) {
  if (name == kSkippedListName) return true;
  const std::string_view ext = kRecordFileExtension;
  if (!name.starts_with("records-") || !name.ends_with(ext)) return false;
  const std::string_view digits = name.substr(8, name.size() - 8 - ext.size());
  return digits.size() >= 5 && digits.find_first_not_of("0123456789") == std::string_view::npos;
}

uint64_t PlanChecksum(const ConversionPlan& plan, std::span<const SampleMetadata> sources) {
  Bytes bytes;
  PutLengthPrefixed(&bytes, "pcr-convert images plan 1");
  PutVarint64(&bytes, plan.images_per_record);
  PutVarint64(&bytes, plan.records_per_file);
  PutVarint64(&bytes, plan.strip_metadata ? 1 : 0);
  EncodeScanScript(plan.script, &bytes);
  PutVarint64(&bytes, plan.class_names.size());
  for (const std::string& c : plan.class_names) PutLengthPrefixed(&bytes, c);
  if (plan.fields_checksum != 0) PutFixed64(&bytes, plan.fields_checksum);
  PutVarint64(&bytes, sources.size());
  for (const SampleMetadata& s : sources) {
    PutLengthPrefixed(&bytes, s.key);
    PutVarint64(&bytes, static_cast<uint64_t>(s.label));
  }
  return Checksum64(bytes);
}

namespace {
constexpr char kJournalStart[] = "pcr-convert journal ";
}  // namespace

std::string JournalFirstLine(uint64_t plan_checksum, uint64_t shard_index, uint64_t shard_count) {
  char buf[96];
  // Journal 2: a part of a conversion sharded by record (0.8); 1 before, and
  // for a conversion not split, whose files are the same either way.
  std::snprintf(buf, sizeof(buf), "%s%d plan %016llx shard %llu of %llu", kJournalStart, shard_count > 1 ? 2 : 1,
                static_cast<unsigned long long>(plan_checksum), static_cast<unsigned long long>(shard_index),
                static_cast<unsigned long long>(shard_count));
  return buf;
}

int JournalVersion(std::string_view text) {
  if (!text.starts_with(kJournalStart)) return 0;
  text.remove_prefix(std::string_view(kJournalStart).size());
  return text.size() > 1 && (text[0] == '1' || text[0] == '2') && text[1] == ' ' ? text[0] - '0' : 0;
}

std::string JournalLimitsLine(bool skip_bad, uint64_t max_pixels, uint64_t memory_per_job) {
  return "limits skip-bad " + std::to_string(skip_bad ? 1 : 0) + " max-pixels " + std::to_string(max_pixels) +
         " memory " + std::to_string(memory_per_job);
}

std::string JournalOptionsLine(const JournalOptions& options) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string line = "options";
  for (const auto& [name, value] : options) {
    line += " " + name + "=";
    for (const char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if (u <= 0x20 || u >= 0x7f || c == '%' || c == '=') {
        line += {'%', kHex[u >> 4], kHex[u & 15]};
      } else {
        line += c;
      }
    }
  }
  return line;
}

std::optional<JournalOptions> ParseJournalOptionsLine(std::string_view line) {
  if (line != "options" && !line.starts_with("options ")) return std::nullopt;
  JournalOptions out;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t pos = 8; pos < line.size();) {
    const size_t end = std::min(line.find(' ', pos), line.size());
    const std::string_view pair = line.substr(pos, end - pos);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    std::string value;
    for (size_t i = eq + 1; i < pair.size(); ++i) {
      if (pair[i] != '%') {
        value += pair[i];
        continue;
      }
      if (i + 2 >= pair.size()) return std::nullopt;
      const int hi = hex(pair[i + 1]), lo = hex(pair[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      value += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    out.emplace_back(std::string(pair.substr(0, eq)), std::move(value));
    pos = end + 1;
  }
  return out;
}

std::string EncodeJournalLines(const FinishedFile& f) {
  std::string text;
  for (const auto& [source, reason] : f.skipped) text += "skip " + std::to_string(source) + " " + reason + "\n";
  char buf[160];
  std::snprintf(buf, sizeof(buf), "done %llu %llu %llu %llu %016llx %llu\n", static_cast<unsigned long long>(f.file),
                static_cast<unsigned long long>(f.entry.size), static_cast<unsigned long long>(f.entry.image_count),
                static_cast<unsigned long long>(f.entry.stripe_count),
                static_cast<unsigned long long>(f.entry.index_checksum),
                static_cast<unsigned long long>(f.input_bytes));
  return text + buf;
}

std::vector<FinishedFile> DecodeJournal(std::string_view text, std::string_view first_line,
                                        std::string_view limits_line, uint64_t first_file, uint64_t source_count) {
  std::vector<FinishedFile> files;
  FinishedFile pending;
  size_t line_no = 0;
  bool same_limits = false;
  for (size_t pos = 0, nl; (nl = text.find('\n', pos)) != std::string_view::npos; pos = nl + 1) {
    const std::string_view line = text.substr(pos, nl - pos);
    if (++line_no == 1) {
      if (line != first_line) return {};
      continue;
    }
    if (line_no == 2) {
      same_limits = line == limits_line;
      continue;
    }
    if (line_no == 3 && ParseJournalOptionsLine(line)) continue;
    std::istringstream fields{std::string(line)};
    std::string tag;
    fields >> tag;
    if (tag == "skip") {
      uint64_t source = 0;
      std::string reason;
      if (!(fields >> source) || source >= source_count) break;
      std::getline(fields >> std::ws, reason);
      pending.skipped.emplace_back(source, reason);
    } else if (tag == "done") {
      DatasetFileEntry& e = pending.entry;
      if (!(fields >> pending.file >> e.size >> e.image_count >> e.stripe_count >> std::hex >> e.index_checksum >>
            std::dec >> pending.input_bytes) ||
          pending.file != first_file + files.size() || (!pending.skipped.empty() && !same_limits)) {
        break;
      }
      if (e.size > 0) e.name = RecordFileName(pending.file);
      files.push_back(std::move(pending));
      pending = {};
    } else {
      break;
    }
  }
  return files;
}

}  // namespace pcr
