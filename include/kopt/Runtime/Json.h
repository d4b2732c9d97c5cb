//===- Json.h - A strict JSON value, parser and writer ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The runtime's JSON value, read and written with nlohmann-json (RFC 8259).
// Parsing is strict: no comments, no trailing commas, no duplicate keys, no
// lone surrogates, no invalid UTF-8, no NaN or infinity, and a nesting depth
// limit and a size limit stop hostile input. Errors name the line and column
// (1-based, columns counted in bytes) and what was wrong there. nlohmann-json
// stays out of this header.
//
// Objects keep their members in insertion order, and the writer prints them
// in that order, so output is stable. Numbers are doubles; an integer literal
// that fits in int64 is also kept exactly. The writer prints integers exactly
// and other numbers with 17 significant digits, so every finite number
// survives a round trip.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_JSON_H
#define KOPT_RUNTIME_JSON_H

#include "kopt/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kopt::runtime::json {

/// A JSON value: null, a boolean, a number, a string, an array, or an object
/// whose members keep their insertion order.
class Value {
public:
  /// The six JSON kinds.
  enum class Kind { Null, Bool, Number, String, Array, Object };

  /// Constructs null.
  Value() = default;
  /// Constructs null.
  Value(std::nullptr_t) {}
  /// Constructs a boolean.
  Value(bool value) : valueKind(Kind::Bool), boolean(value) {}
  /// Constructs an integer, kept exactly when it fits in int64 (a larger
  /// unsigned value is kept as a double).
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                             int> = 0>
  Value(T value) : valueKind(Kind::Number), number(static_cast<double>(value)) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t))
      if (value > static_cast<T>(INT64_MAX))
        return;
    integer = static_cast<int64_t>(value);
    exact = true;
  }
  /// Constructs a number. Integral values within +-2^53 read back as
  /// integers; NaN and infinities are written as null (JSON has neither).
  Value(double value) : valueKind(Kind::Number), number(value) {}
  /// Constructs a string (UTF-8).
  Value(std::string value) : valueKind(Kind::String), text(std::move(value)) {}
  /// Constructs a string (UTF-8).
  Value(std::string_view value) : Value(std::string(value)) {}
  /// Constructs a string (UTF-8).
  Value(const char *value) : Value(std::string(value)) {}

  /// Returns an empty array.
  static Value array() {
    Value value;
    value.valueKind = Kind::Array;
    return value;
  }
  /// Returns an array holding `items`.
  static Value array(std::vector<Value> items) {
    Value value = array();
    value.items = std::move(items);
    return value;
  }
  /// Returns an empty object.
  static Value object() {
    Value value;
    value.valueKind = Kind::Object;
    return value;
  }

  /// This value's kind.
  Kind kind() const { return valueKind; }
  bool isNull() const { return valueKind == Kind::Null; }
  bool isArray() const { return valueKind == Kind::Array; }
  bool isObject() const { return valueKind == Kind::Object; }

  /// The boolean, or std::nullopt for another kind.
  std::optional<bool> getBool() const;
  /// The number as a double, or std::nullopt for another kind.
  std::optional<double> getNumber() const;
  /// The number as an exact int64: an integer literal that fit in int64, or
  /// an integral double within +-2^53. std::nullopt otherwise.
  std::optional<int64_t> getInteger() const;
  /// The string, or nullptr for another kind.
  const std::string *getString() const;

  /// Number of array items or object members (0 for other kinds).
  size_t size() const { return items.size(); }
  /// The `index`th array item or object member value; `index < size()`.
  const Value &at(size_t index) const;
  /// The `index`th array item or object member value; `index < size()`.
  Value &at(size_t index);
  /// The key of the `index`th object member; `index < size()`.
  const std::string &keyAt(size_t index) const;

  /// Appends `item` to an array; turns null into an empty array first.
  void push(Value item);

  /// The value of member `key`, or nullptr when absent or not an object.
  const Value *find(std::string_view key) const;
  /// The value of member `key`, or nullptr when absent or not an object.
  Value *find(std::string_view key);
  /// Sets member `key` of an object (null turns into an empty object). A
  /// new key goes last; an existing key keeps its position.
  void set(std::string_view key, Value value);
  /// Removes member `key`; returns whether it was present.
  bool erase(std::string_view key);

  /// Structural equality; numbers compare by value, objects by members in
  /// order.
  bool operator==(const Value &other) const;
  bool operator!=(const Value &other) const { return !(*this == other); }

private:
  friend class Builder;

  Kind valueKind = Kind::Null;
  bool boolean = false;
  double number = 0;
  int64_t integer = 0;
  /// Whether `integer` holds the number exactly.
  bool exact = false;
  std::string text;
  /// Array items, or object member values.
  std::vector<Value> items;
  /// Object member keys, parallel to `items`.
  std::vector<std::string> keys;
};

/// Limits that stop hostile input.
struct ParseLimits {
  /// Maximum nesting of arrays and objects.
  unsigned maxDepth = 128;
  /// Maximum size of the text in bytes.
  size_t maxBytes = size_t(64) << 20;
};

/// Parses `text` as one JSON value, with nothing but whitespace after it.
/// On failure the Status message is `line:column: message`.
Result<Value> parse(std::string_view text, const ParseLimits &limits = {});

/// Writes `value` compactly (no whitespace), members in insertion order.
/// Invalid UTF-8 in strings is replaced by U+FFFD (one per maximal ill-formed
/// subsequence) so the output is always valid JSON.
std::string write(const Value &value);

/// Appends `value`, written as by `write`, to `out`.
void writeTo(const Value &value, std::string &out);

} // namespace kopt::runtime::json

#endif // KOPT_RUNTIME_JSON_H
