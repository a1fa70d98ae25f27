// What a store or server sends, on arbitrary bytes: header lines into the
// digest a body is checked against (DigestFromHeaders, BodyDigestFromHeaders),
// an S3 error body into its description, and any text through the
// redaction every Status message gets. A digest found must check the bytes
// the same whole as in pieces; base64 must round-trip; redaction must be
// idempotent. Any other outcome aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "io/object_digest.h"
#include "io/s3_request.h"
#include "pcr/status.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "answer_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // "name: value" lines, lowercased names, as the clients keep them.
  std::vector<std::pair<std::string, std::string>> headers;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      headers.emplace_back(name, line.substr(colon + 1));
    }
    at = end + 1;
  }
  for (const pcr::ObjectDigest& d : {pcr::DigestFromHeaders(headers, true), pcr::DigestFromHeaders(headers, false),
                                     pcr::BodyDigestFromHeaders(headers)}) {
    if (d.empty()) continue;
    (void)d.Describe();
    std::string whole, pieces;
    const bool same = pcr::DigestMatches(d, text, &whole);
    pcr::DigestChecker checker(d);
    for (size_t at = 0; at < text.size(); at += 7) checker.Update(std::string_view(text).substr(at, 7));
    Check(checker.Matches() == same && checker.got() == whole, "a digest in pieces differs from the whole");
  }
  Check(pcr::FromBase64(pcr::Base64(text)) == text, "base64 does not round-trip");
  (void)pcr::FromBase64(text);
  (void)pcr::DescribeHttpError(403, text, text.substr(0, 16));
  const std::string redacted = pcr::RedactSecrets(text);
  Check(pcr::RedactSecrets(redacted) == redacted, "redaction is not idempotent");
  return 0;
}
