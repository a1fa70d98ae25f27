#include "format/json.h"

#include <locale.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace pcr {

namespace {

constexpr int kMaxDepth = 64;

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

namespace {

// Bytes of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no
// overlong forms, surrogates or code points above U+10FFFF); 0 if none.
size_t Utf8Length(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // bounds of the second byte
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (b(i) < 0x80 || b(i) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

size_t InvalidUtf8At(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8Length(s.substr(i));
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string EscapeInvalidUtf8(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8Length(s.substr(i));
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof(hex), "\\x%02x", static_cast<unsigned char>(s[i++]));
    out += hex;
  }
  return out;
}

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  char buf[8];
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(s[i++]);
    } else if (c < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out->append(buf);
      ++i;
    } else if (const size_t n = Utf8Length(s.substr(i)); n > 0) {
      out->append(s.substr(i, n));
      i += n;
    } else {
      // A byte of no UTF-8 character: a lone surrogate, as Python's
      // surrogateescape spells it, which String() reads back as the byte.
      std::snprintf(buf, sizeof(buf), "\\udc%02x", c);
      out->append(buf);
      ++i;
    }
  }
  out->push_back('"');
}

bool JsonCursor::Fail(std::string what) {
  if (error_.empty()) error_ = std::move(what);
  return false;
}

void JsonCursor::SkipSpace() {
  while (pos_ < text_.size() &&
         (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
    ++pos_;
  }
}

bool JsonCursor::Consume(char c, const char* what) {
  SkipSpace();
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  return Fail(std::string("expected ") + what);
}

JsonCursor::Kind JsonCursor::Peek() {
  SkipSpace();
  if (pos_ >= text_.size()) return Kind::kEnd;
  switch (text_[pos_]) {
    case '{':
      return Kind::kObject;
    case '[':
      return Kind::kArray;
    case '"':
      return Kind::kString;
    case 't':
      return Kind::kTrue;
    case 'f':
      return Kind::kFalse;
    case 'n':
      return NamedFloatLength(text_.substr(pos_)) > 0 ? Kind::kNumber : Kind::kNull;
    default:
      return text_[pos_] == '-' || text_[pos_] == '+' || IsDigit(text_[pos_]) ||
                     NamedFloatLength(text_.substr(pos_)) > 0
                 ? Kind::kNumber
                 : Kind::kInvalid;
  }
}

bool JsonCursor::BeginObject() {
  if (depth_ >= kMaxDepth) return Fail("nesting deeper than 64");
  if (!Consume('{', "'{'")) return false;
  ++depth_;
  need_comma_ = false;
  return true;
}

bool JsonCursor::NextMember(std::string* key, bool* done) {
  SkipSpace();
  if (pos_ < text_.size() && text_[pos_] == '}') {
    ++pos_;
    --depth_;
    need_comma_ = true;
    *done = true;
    return true;
  }
  if (need_comma_ && !Consume(',', "',' or '}'")) return false;
  *done = false;
  if (Peek() != Kind::kString) return Fail("expected a string key");
  if (!String(key)) return false;
  if (!Consume(':', "':'")) return false;
  need_comma_ = false;
  return true;
}

bool JsonCursor::BeginArray() {
  if (depth_ >= kMaxDepth) return Fail("nesting deeper than 64");
  if (!Consume('[', "'['")) return false;
  ++depth_;
  need_comma_ = false;
  return true;
}

bool JsonCursor::NextElement(bool* done) {
  SkipSpace();
  if (pos_ < text_.size() && text_[pos_] == ']') {
    ++pos_;
    --depth_;
    need_comma_ = true;
    *done = true;
    return true;
  }
  if (need_comma_ && !Consume(',', "',' or ']'")) return false;
  *done = false;
  need_comma_ = false;
  return true;
}

constexpr size_t kHugeString = 1 << 20;

bool JsonCursor::String(std::string* out) {
  if (!Consume('"', "a string")) return false;
  out->clear();
  // Before `more` bytes are appended: a huge string takes at most the rest of
  // its text, room for which is made once rather than in copies as it doubles.
  auto room = [&](size_t more) {
    if (out->capacity() - out->size() >= more || out->size() + more < kHugeString) return;
    size_t end = pos_;
    while (end < text_.size() && text_[end] != '"') end += text_[end] == '\\' ? 2 : 1;
    out->reserve(out->size() + (std::min(end, text_.size()) - pos_));
  };
  while (true) {
    if (pos_ >= text_.size()) return Fail("unterminated string");
    const char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      break;
    }
    if (static_cast<unsigned char>(c) < 0x20) return Fail("control character in string");
    if (c != '\\') {  // a run of plain characters at once: one allocation for a huge string
      size_t end = pos_ + 1;
      while (end < text_.size() && text_[end] != '"' && text_[end] != '\\' &&
             static_cast<unsigned char>(text_[end]) >= 0x20) {
        ++end;
      }
      room(end - pos_);
      out->append(text_.substr(pos_, end - pos_));
      pos_ = end;
      continue;
    }
    if (pos_ + 1 >= text_.size()) return Fail("unterminated string");
    room(4);  // an escape's bytes: at most a UTF-8 character's
    const char e = text_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out->push_back(e);
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u': {
        auto hex4 = [&](uint32_t* v) {
          if (pos_ + 4 > text_.size()) return false;
          const auto r = std::from_chars(text_.data() + pos_, text_.data() + pos_ + 4, *v, 16);
          if (r.ec != std::errc() || r.ptr != text_.data() + pos_ + 4) return false;
          pos_ += 4;
          return true;
        };
        uint32_t cp;
        if (!hex4(&cp)) return Fail("bad \\u escape");
        if (cp >= 0xd800 && cp < 0xdc00) {
          uint32_t low;
          if (text_.substr(pos_, 2) != "\\u") return Fail("unpaired surrogate");
          pos_ += 2;
          if (!hex4(&low) || low < 0xdc00 || low >= 0xe000) return Fail("unpaired surrogate");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        } else if (cp >= 0xdc80 && cp < 0xdd00) {
          out->push_back(static_cast<char>(cp - 0xdc00));  // a byte of no UTF-8 character, escaped
          break;
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          return Fail("unpaired surrogate");
        }
        AppendUtf8(cp, out);
        break;
      }
      default:
        --pos_;
        return Fail("bad escape");
    }
  }
  need_comma_ = true;
  return true;
}

bool IntegerLiteralIsExact(std::string_view digits, double value) {
  const bool negative = digits.starts_with('-');
  if (negative) digits.remove_prefix(1);
  while (digits.size() > 1 && digits[0] == '0') digits.remove_prefix(1);
  if (digits == "0") return value == 0;
  if (negative != std::signbit(value) || digits.size() > 310) return false;
  char buf[320];
  const int n = std::snprintf(buf, sizeof(buf), "%.0f", std::fabs(value));  // every digit of an integral double
  return n > 0 && std::string_view(buf, static_cast<size_t>(n)) == digits;
}

double NearestDouble(std::string_view text) {
  // strtod rounds to nearest, in the C locale whatever the process's.
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", nullptr);
  return strtod_l(std::string(text).c_str(), nullptr, c_locale);
}

size_t NamedFloatLength(std::string_view text) {
  for (const std::string_view name : {"infinity", "inf", "nan"}) {
    if (text.size() < name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) same = (text[i] | 0x20) == name[i];
    if (same && (text.size() == name.size() || !std::isalnum(static_cast<unsigned char>(text[name.size()])))) {
      return name.size();
    }
  }
  return 0;
}

bool JsonCursor::Number(JsonNumber* out) {
  SkipSpace();
  const size_t start = pos_;
  size_t p = pos_;
  if (p < text_.size() && (text_[p] == '-' || text_[p] == '+')) ++p;
  if (const size_t n = NamedFloatLength(text_.substr(p)); n > 0) {
    const double v = (text_[p] | 0x20) == 'n' ? std::numeric_limits<double>::quiet_NaN()
                                              : std::numeric_limits<double>::infinity();
    *out = JsonNumber{.d = std::copysign(v, text_[start] == '-' ? -1.0 : 1.0)};
    pos_ = p + n;
    need_comma_ = true;
    return true;
  }
  if (p > start && text_[start] == '+') return Fail("expected a number: '+' only before nan, inf or infinity");
  if (p >= text_.size() || !IsDigit(text_[p])) return Fail("expected a number");
  if (text_[p] == '0') {
    ++p;
  } else {
    while (p < text_.size() && IsDigit(text_[p])) ++p;
  }
  bool integral = true;
  if (p < text_.size() && text_[p] == '.') {
    integral = false;
    ++p;
    if (p >= text_.size() || !IsDigit(text_[p])) return Fail("expected a digit after '.'");
    while (p < text_.size() && IsDigit(text_[p])) ++p;
  }
  if (p < text_.size() && (text_[p] == 'e' || text_[p] == 'E')) {
    integral = false;
    ++p;
    if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
    if (p >= text_.size() || !IsDigit(text_[p])) return Fail("expected an exponent");
    while (p < text_.size() && IsDigit(text_[p])) ++p;
  }
  const char* first = text_.data() + start;
  const char* last = text_.data() + p;
  out->is_int = false;
  if (integral) {
    const auto r = std::from_chars(first, last, out->i);
    out->is_int = r.ec == std::errc() && r.ptr == last;
  }
  if (out->is_int) {
    out->d = out->i == 0 && *first == '-' ? -0.0 : static_cast<double>(out->i);  // -0 keeps its sign as a double
  } else {
    const auto r = std::from_chars(first, last, out->d);
    if (r.ec == std::errc::result_out_of_range) {
      out->d = NearestDouble(std::string_view(first, static_cast<size_t>(last - first)));
    } else if (r.ec != std::errc() || r.ptr != last) {
      return Fail("malformed number");
    }
  }
  out->exact = !integral || IntegerLiteralIsExact(std::string_view(first, last - first), out->d);
  pos_ = p;
  need_comma_ = true;
  return true;
}

bool JsonCursor::Literal(Kind* kind) {
  SkipSpace();
  for (const auto& [word, k] : {std::pair{std::string_view("true"), Kind::kTrue},
                                std::pair{std::string_view("false"), Kind::kFalse},
                                std::pair{std::string_view("null"), Kind::kNull}}) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      *kind = k;
      need_comma_ = true;
      return true;
    }
  }
  return Fail("expected a value");
}

bool JsonCursor::SkipValue() {
  std::string s;
  switch (Peek()) {
    case Kind::kObject: {
      if (!BeginObject()) return false;
      bool done;
      while (NextMember(&s, &done) && !done) {
        if (!SkipValue()) return false;
      }
      return error_.empty();
    }
    case Kind::kArray: {
      if (!BeginArray()) return false;
      bool done;
      while (NextElement(&done) && !done) {
        if (!SkipValue()) return false;
      }
      return error_.empty();
    }
    case Kind::kString:
      return String(&s);
    case Kind::kNumber: {
      JsonNumber n;
      return Number(&n);
    }
    case Kind::kEnd:
      return Fail("unexpected end of text");
    default: {
      Kind k;
      return Literal(&k);
    }
  }
}

bool JsonCursor::End() {
  SkipSpace();
  if (pos_ != text_.size()) return Fail("trailing characters after the value");
  return true;
}

}  // namespace pcr
