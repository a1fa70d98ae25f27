// Status and Result<T>: the one error model of pcr.
//
// Thread safety: Status and Result are values; const methods may be called
// from several threads at once, as for any standard library type.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "pcr/export.h"

namespace pcr {

enum class StatusCode : int {
  kOk = 0,
  kCorruption,       // stored bytes fail a check (checksum, bounds, structure)
  kInvalidArgument,  // caller passed something unusable (bad option, bad path)
  kIOError,          // the operating system refused an I/O call
  kNotSupported,     // well-formed input that pcr does not handle
  kNotFound,         // a file or dataset that does not exist
  kCancelled,        // the caller asked the call to stop
  kDataLoss,         // bytes read from a store kept failing the store's own checksum: the store or the network
  kOutOfMemory,      // an allocation failed: the work needs more memory than the process may take
};

// Every message is made safe to print when the status is made: a URL's
// password (scheme://user:password@host) and the values of signing query
// parameters (X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token,
// Signature, AWSAccessKeyId, sig, token) become "***".
class [[nodiscard]] PCR_EXPORT Status {
 public:
  Status() = default;
  static Status OK() { return Status(); }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status IOError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }
  static Status NotSupported(std::string msg) { return {StatusCode::kNotSupported, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  static Status DataLoss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
  static Status OutOfMemory(std::string msg) { return {StatusCode::kOutOfMemory, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "Corruption: <message>", or "OK".
  std::string ToString() const;
  // Returns a status with the same code and "<prefix>: <message>".
  Status WithPrefix(const std::string& prefix) const;
  // Returns a status with the same code and `message`.
  Status WithMessage(std::string message) const { return ok() ? *this : Status(code_, std::move(message)); }

 private:
  Status(StatusCode code, std::string msg);
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// `text` with the secrets Status keeps out of messages replaced by "***".
PCR_EXPORT std::string RedactSecrets(std::string text);

namespace internal {
// Prints "pcr: <what> on an error: <status>" to stderr and aborts.
[[noreturn]] PCR_EXPORT void DieOnError(const Status& status, const char* what);
// The error a Result built from an OK status holds instead.
PCR_EXPORT Status OkStatusAsResult();
}  // namespace internal

// Holds either a value or a non-OK Status. Reading the value of a Result
// that holds an error (value(), *, ->, MoveValue()) prints the error's
// message and aborts, as Arrow's ValueOrDie; check ok() first, or use
// ValueOr(). A Result built from an OK status holds an InvalidArgument
// error saying so, as it has no value to give.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status)  // NOLINT(google-explicit-constructor)
      : v_(status.ok() ? internal::OkStatusAsResult() : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  // The error, or OK when a value is held.
  Status status() const { return ok() ? Status::OK() : std::get<Status>(v_); }
  // The value; aborts with the error's message when there is none.
  T& value() & {
    Check();
    return *std::get_if<T>(&v_);
  }
  const T& value() const& {
    Check();
    return *std::get_if<T>(&v_);
  }
  T&& value() && {
    Check();
    return std::move(*std::get_if<T>(&v_));
  }
  // The value moved out of the Result; aborts with the error's message when
  // there is none.
  T MoveValue() { return std::move(*this).value(); }
  // The value, or `fallback` when there is an error.
  T ValueOr(T fallback) const& { return ok() ? *std::get_if<T>(&v_) : std::move(fallback); }
  T ValueOr(T fallback) && { return ok() ? std::move(*std::get_if<T>(&v_)) : std::move(fallback); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Check() const {
    if (!ok()) internal::DieOnError(*std::get_if<Status>(&v_), "reading the value of a Result");
  }
  std::variant<T, Status> v_;
};

}  // namespace pcr

#define PCR_CONCAT_INNER(a, b) a##b
#define PCR_CONCAT(a, b) PCR_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define PCR_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::pcr::Status pcr_status_ = (expr);        \
    if (!pcr_status_.ok()) return pcr_status_; \
  } while (0)

#define PCR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                              \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

// `lhs = value of rexpr`, or returns its Status from the enclosing function.
#define PCR_ASSIGN_OR_RETURN(lhs, rexpr) \
  PCR_ASSIGN_OR_RETURN_IMPL(PCR_CONCAT(pcr_result_, __LINE__), lhs, rexpr)
