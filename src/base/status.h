// Status and Result<T>: errors as values (DESIGN.md house rule 1).
//
// A Status is OK or carries a code and a message a user can act on: what went wrong, where
// (file, byte offset, rank, tensor) and what to do. Result<T> holds either a T or a non-OK
// Status. Both are [[nodiscard]]. Propagate with TITAN_RETURN_IF_ERROR / TITAN_ASSIGN_OR_RETURN,
// which can prepend context ("loading manifest: ...").
//
// Thread safety: plain values; copying is cheap for OK statuses (no allocation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "src/base/check.h"

namespace titan {

// The most specific code should be picked; they mirror absl::StatusCode.
enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,     // the caller's input is wrong (bad flag, malformed file content)
  kNotFound,            // a named file, key, rank or series does not exist
  kAlreadyExists,       // e.g. a rank given twice, a port in use
  kFailedPrecondition,  // the system is not in a state to do this (e.g. no NVML)
  kOutOfRange,          // a value or offset beyond the allowed range
  kDataLoss,            // corruption: checksum mismatch, truncated file
  kUnavailable,         // a transient condition; retrying may succeed
  kDeadlineExceeded,    // a timeout
  kResourceExhausted,   // disk full, buffer full, budget spent
  kPermissionDenied,
  kUnimplemented,
  kInternal,   // an invariant broke; a bug in titan
  kCancelled,  // the caller asked the operation to stop (shutdown); nothing is wrong
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // Empty for OK.
  std::string_view message() const { return rep_ ? std::string_view(rep_->message) : ""; }
  // "INVALID_ARGUMENT: message" or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "context: message". OK stays OK.
  Status WithContext(std::string_view context) const;

  // Explicitly discards a status whose failure is already accounted for elsewhere.
  void IgnoreError() const {}

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;
};

inline Status OkStatus() { return Status(); }
Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status FailedPreconditionError(std::string message);
Status OutOfRangeError(std::string message);
Status DataLossError(std::string message);
Status UnavailableError(std::string message);
Status DeadlineExceededError(std::string message);
Status ResourceExhaustedError(std::string message);
Status PermissionDeniedError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status CancelledError(std::string message);
// Maps an errno value to the closest code; message is "what: strerror(errno)".
Status ErrnoError(int errno_value, std::string_view what);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : value_(std::move(status)) {  // NOLINT: implicit by design
    TITAN_CHECK(!std::get<Status>(value_).ok()) << "Result built from an OK Status";
  }

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? OkStatus() : std::get<Status>(value_); }

  // Precondition: ok().
  const T& value() const& { return CheckedValue(); }
  T& value() & { return CheckedValue(); }
  T&& value() && { return std::move(CheckedValue()); }
  const T& operator*() const& { return CheckedValue(); }
  T& operator*() & { return CheckedValue(); }
  const T* operator->() const { return &CheckedValue(); }
  T* operator->() { return &CheckedValue(); }
  T value_or(T fallback) const { return ok() ? std::get<T>(value_) : std::move(fallback); }

 private:
  T& CheckedValue() {
    TITAN_CHECK(ok()) << "value() on error Result: " << std::get<Status>(value_).ToString();
    return std::get<T>(value_);
  }
  const T& CheckedValue() const {
    TITAN_CHECK(ok()) << "value() on error Result: " << std::get<Status>(value_).ToString();
    return std::get<T>(value_);
  }
  std::variant<T, Status> value_;
};

}  // namespace titan

#define TITAN_STATUS_CONCAT_INNER(a, b) a##b
#define TITAN_STATUS_CONCAT(a, b) TITAN_STATUS_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define TITAN_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::titan::Status titan_status_ = (expr);        \
    if (!titan_status_.ok()) return titan_status_; \
  } while (0)

// Like TITAN_RETURN_IF_ERROR, prefixing `context` to the message.
#define TITAN_RETURN_IF_ERROR_CTX(expr, context)                        \
  do {                                                                  \
    ::titan::Status titan_status_ = (expr);                             \
    if (!titan_status_.ok()) return titan_status_.WithContext(context); \
  } while (0)

// `lhs = value of rexpr` or return its error. lhs may declare: TITAN_ASSIGN_OR_RETURN(auto x, F());
#define TITAN_ASSIGN_OR_RETURN(lhs, rexpr) \
  TITAN_ASSIGN_OR_RETURN_IMPL(TITAN_STATUS_CONCAT(titan_result_, __LINE__), lhs, rexpr)
#define TITAN_ASSIGN_OR_RETURN_IMPL(result, lhs, rexpr) \
  auto result = (rexpr);                                \
  if (!result.ok()) return result.status();             \
  lhs = std::move(result).value()
