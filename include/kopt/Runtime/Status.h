//===- Status.h - Status and Result values for the runtime ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The runtime reports errors as values: a `Status` (ok, or a code and a
// message) and a `Result<T>` (a value, or the Status that says why there is
// none). Nothing in the runtime throws across its API, and both types are
// [[nodiscard]] so a dropped error is a compiler warning.
//
// The runtime lives in `namespace kopt::runtime`. Code inside
// `namespace mlir::kopt` must spell it `::kopt::runtime`, or the name lookup
// finds `mlir::kopt` first.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_STATUS_H
#define KOPT_RUNTIME_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace kopt::runtime {

/// What kind of failure a Status reports.
enum class StatusCode {
  /// No error.
  Ok,
  /// The input is malformed or violates a documented constraint.
  InvalidArgument,
  /// A number or size is outside the accepted range.
  OutOfRange,
  /// The input uses a version or feature this code does not implement.
  Unsupported,
  /// A read or write on a file descriptor failed, or a stream ended early.
  IoError,
  /// The peer closed the stream cleanly, between two frames.
  Closed,
  /// A needed library or device is not available on this machine.
  Unavailable,
  /// An invariant of kopt itself does not hold.
  Internal,
};

/// The stable spelling of `code` (`ok`, `invalid-argument`, ...).
const char *stringifyStatusCode(StatusCode code);

/// Success, or an error code with a message for people.
class [[nodiscard]] Status {
public:
  /// Constructs a successful status.
  Status() = default;

  /// Returns a successful status.
  static Status success() { return Status(); }

  /// Returns an error with `code` (not `Ok`) and `message`.
  static Status error(StatusCode code, std::string message) {
    assert(code != StatusCode::Ok && "an error needs an error code");
    Status status;
    status.statusCode = code;
    status.text = std::move(message);
    return status;
  }

  /// True when this status reports success.
  bool isOk() const { return statusCode == StatusCode::Ok; }
  /// The status's code (`Ok` on success).
  StatusCode code() const { return statusCode; }
  /// The message (empty on success).
  const std::string &message() const { return text; }

  /// Returns this error with `context` and ": " in front of its message; a
  /// success stays a success.
  Status withContext(const std::string &context) const {
    if (isOk())
      return *this;
    return error(statusCode, context + ": " + text);
  }

  /// `code: message`, or `ok`.
  std::string toString() const;

  /// Marks a status as deliberately ignored.
  void ignore() const {}

private:
  StatusCode statusCode = StatusCode::Ok;
  std::string text;
};

/// A value of type `T`, or the error Status that explains its absence.
template <typename T>
class [[nodiscard]] Result {
public:
  /// Holds `value`.
  Result(T value) : stored(std::move(value)) {}
  /// Holds the error `status`, which must not be a success.
  Result(Status status) : errorStatus(std::move(status)) {
    assert(!errorStatus.isOk() && "a Result without a value needs an error");
    if (errorStatus.isOk())
      errorStatus = Status::error(StatusCode::Internal,
                                  "Result constructed from a success status");
  }

  /// True when a value is held.
  bool isOk() const { return stored.has_value(); }
  /// True when a value is held.
  explicit operator bool() const { return isOk(); }

  /// The held value; only valid when `isOk()`.
  T &value() & {
    assert(isOk() && "no value in an error Result");
    return *stored;
  }
  /// The held value; only valid when `isOk()`.
  const T &value() const & {
    assert(isOk() && "no value in an error Result");
    return *stored;
  }
  /// Moves the held value out; only valid when `isOk()`.
  T &&value() && {
    assert(isOk() && "no value in an error Result");
    return std::move(*stored);
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  /// The error, or a success status when a value is held.
  const Status &status() const { return errorStatus; }

private:
  std::optional<T> stored;
  Status errorStatus;
};

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_STATUS_H
