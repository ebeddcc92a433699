// Status and Result<T>: how every layer reports failure across its boundary.
// A null Status is success; errors carry a code and a human-readable message
// that names what to fix (file, field, offset). Handlers and parsers never throw
// across a layer boundary; they return these.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace llmhost {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller's input is wrong (bad flag, bad JSON field)
  kNotFound,         // a file, tensor, key or model does not exist
  kCorruption,       // stored data is malformed (bad header, checksum mismatch)
  kIOError,          // the OS refused (open, read, mmap, write)
  kNotSupported,     // valid input we do not handle (unknown dtype, architecture)
  kResourceExhausted,// a limit was hit (memory, recursion, output size)
  kInternal,         // a bug: an invariant did not hold
};

const char* StatusCodeName(StatusCode code);

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status NotSupported(std::string m) { return {StatusCode::kNotSupported, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "Corruption: model.safetensors: header length 12 exceeds file size 8"
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context + ": "`.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}                       // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace llmhost

#define LLMHOST_CONCAT_INNER(a, b) a##b
#define LLMHOST_CONCAT(a, b) LLMHOST_CONCAT_INNER(a, b)

// RETURN_IF_ERROR(expr): propagate a non-OK Status.
#define RETURN_IF_ERROR(expr)                      \
  do {                                             \
    ::llmhost::Status _st = (expr);                \
    if (!_st.ok()) return _st;                     \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): unwrap a Result<T> or propagate its Status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(LLMHOST_CONCAT(_res_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
