//===- FieldReader.h - Typed reads of JSON object fields --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A private helper of the runtime: reads the fields of one JSON object with
// their expected types and remembers the first problem, so a decoder reads
// every field in a row and checks one Status at the end. A field that is
// present with the wrong type is always an error; a missing field is an
// error only when it is required.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_SUPPORT_FIELDREADER_H
#define KOPT_RUNTIME_SUPPORT_FIELDREADER_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// Reads typed fields of a JSON object, keeping the first error.
class FieldReader {
public:
  /// Reads `object`; `where` prefixes error messages (`plan: step 2`). A
  /// value that is not an object is an error at once.
  FieldReader(const json::Value &object, std::string where);

  /// The string field `name`; "" when absent (an error if `required`).
  std::string string(std::string_view name, bool required = true);
  /// The integer field `name` within [`min`, `max`]; `fallback` when absent
  /// (an error if `required`).
  int64_t integer(std::string_view name, int64_t fallback, int64_t min,
                  int64_t max, bool required = false);
  /// The number field `name`; `fallback` when absent.
  double number(std::string_view name, double fallback, bool required = false);
  /// The boolean field `name`; `fallback` when absent.
  bool boolean(std::string_view name, bool fallback, bool required = false);
  /// The object field `name`, or nullptr when absent (an error if
  /// `required`).
  const json::Value *object(std::string_view name, bool required = true);
  /// The array field `name`, or nullptr when absent (an error if
  /// `required`).
  const json::Value *array(std::string_view name, bool required = true);
  /// The array of strings `name`; integers are accepted and spelled in
  /// decimal when `allowIntegers`.
  std::vector<std::string> strings(std::string_view name, bool required = true,
                                   bool allowIntegers = false);

  /// Records `message` as the problem unless one is recorded already.
  void fail(const std::string &message);
  /// Whether no problem has been recorded.
  bool isOk() const { return problem.empty(); }
  /// Success, or InvalidArgument with `where: problem`.
  Status status() const;

private:
  /// The field `name`, or nullptr (noting an error when `required`).
  const json::Value *get(std::string_view name, bool required,
                         const char *what);

  const json::Value &value;
  std::string where;
  std::string problem;
};

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_SUPPORT_FIELDREADER_H
