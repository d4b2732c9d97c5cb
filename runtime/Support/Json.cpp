//===- Json.cpp - The runtime's JSON value, over nlohmann-json --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// nlohmann-json parses: its SAX interface hands the values to a Builder that
// grows the Value tree directly, and its parser keeps its own stack, so
// hostile nesting costs no recursion; the Builder refuses nesting deeper than
// `ParseLimits::maxDepth` and duplicate keys. nlohmann-json also escapes the
// strings the writer prints; numbers are printed with std::to_chars, which
// does not depend on the C locale.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Json.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <unordered_set>

using namespace kopt::runtime;
using namespace kopt::runtime::json;

/// Largest magnitude below which every integer is exactly a double.
static constexpr double kExactIntegerLimit = 9007199254740992.0; // 2^53

//===----------------------------------------------------------------------===//
// Value
//===----------------------------------------------------------------------===//

std::optional<bool> Value::getBool() const {
  if (valueKind != Kind::Bool)
    return std::nullopt;
  return boolean;
}

std::optional<double> Value::getNumber() const {
  if (valueKind != Kind::Number)
    return std::nullopt;
  return number;
}

std::optional<int64_t> Value::getInteger() const {
  if (valueKind != Kind::Number)
    return std::nullopt;
  if (exact)
    return integer;
  if (std::isfinite(number) && std::trunc(number) == number &&
      std::fabs(number) <= kExactIntegerLimit)
    return static_cast<int64_t>(number);
  return std::nullopt;
}

const std::string *Value::getString() const {
  return valueKind == Kind::String ? &text : nullptr;
}

const Value &Value::at(size_t index) const {
  assert(index < items.size() && "index out of range");
  return items[index];
}

Value &Value::at(size_t index) {
  assert(index < items.size() && "index out of range");
  return items[index];
}

const std::string &Value::keyAt(size_t index) const {
  assert(valueKind == Kind::Object && index < keys.size() &&
         "not an object member");
  return keys[index];
}

void Value::push(Value item) {
  if (valueKind == Kind::Null)
    valueKind = Kind::Array;
  assert(valueKind == Kind::Array && "push on a non-array");
  if (valueKind == Kind::Array)
    items.push_back(std::move(item));
}

const Value *Value::find(std::string_view key) const {
  if (valueKind != Kind::Object)
    return nullptr;
  for (size_t i = 0, e = keys.size(); i < e; ++i)
    if (keys[i] == key)
      return &items[i];
  return nullptr;
}

Value *Value::find(std::string_view key) {
  return const_cast<Value *>(static_cast<const Value *>(this)->find(key));
}

void Value::set(std::string_view key, Value value) {
  if (valueKind == Kind::Null)
    valueKind = Kind::Object;
  assert(valueKind == Kind::Object && "set on a non-object");
  if (valueKind != Kind::Object)
    return;
  if (Value *existing = find(key)) {
    *existing = std::move(value);
    return;
  }
  keys.emplace_back(key);
  items.push_back(std::move(value));
}

bool Value::erase(std::string_view key) {
  if (valueKind != Kind::Object)
    return false;
  for (size_t i = 0, e = keys.size(); i < e; ++i)
    if (keys[i] == key) {
      keys.erase(keys.begin() + i);
      items.erase(items.begin() + i);
      return true;
    }
  return false;
}

bool Value::operator==(const Value &other) const {
  if (valueKind != other.valueKind)
    return false;
  switch (valueKind) {
  case Kind::Null:
    return true;
  case Kind::Bool:
    return boolean == other.boolean;
  case Kind::Number: {
    if (exact && other.exact)
      return integer == other.integer;
    if (!exact && !other.exact)
      return number == other.number;
    // An exact integer equals a double only if the double is that integer.
    const Value &whole = exact ? *this : other;
    const Value &real = exact ? other : *this;
    if (!std::isfinite(real.number) || std::trunc(real.number) != real.number ||
        std::fabs(real.number) >= 9223372036854775808.0)
      return false;
    return static_cast<int64_t>(real.number) == whole.integer;
  }
  case Kind::String:
    return text == other.text;
  case Kind::Array:
    return items == other.items;
  case Kind::Object:
    return keys == other.keys && items == other.items;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {
/// A position in the text that also records, in `*reached`, how far
/// nlohmann-json's lexer has read: the Builder's own errors name the byte
/// just read.
struct Cursor {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char *;
  using reference = const char &;

  const char *at;
  const char **reached;

  reference operator*() const { return *at; }
  Cursor &operator++() {
    *reached = ++at;
    return *this;
  }
  bool operator==(const Cursor &other) const { return at == other.at; }
  bool operator!=(const Cursor &other) const { return at != other.at; }
};

/// nlohmann-json's message without its "[json.exception...] parse error at
/// line L, column C: " prefix (the caller names the position), and with the
/// bytes above ASCII of the text it quotes spelled `<0xC3>`, so that a
/// message about invalid UTF-8 is not invalid UTF-8 itself.
std::string describe(const nlohmann::json::exception &error) {
  std::string_view text = error.what();
  size_t name = text.find("] ");
  if (name != std::string_view::npos)
    text.remove_prefix(name + 2);
  size_t colon = text.find(": ");
  if (text.substr(0, 11) == "parse error" && colon != std::string_view::npos)
    text.remove_prefix(colon + 2);
  std::string message;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x80) {
      message += c;
      continue;
    }
    char buffer[8];
    std::snprintf(buffer, sizeof(buffer), "<0x%02X>",
                  static_cast<unsigned char>(c));
    message += buffer;
  }
  return message;
}
} // namespace

namespace kopt::runtime::json {
/// Receives nlohmann-json's SAX events and builds the Value tree; the first
/// error stops the parse.
class Builder {
public:
  using Json = nlohmann::json;

  Builder(const char *const &reached, const ParseLimits &limits)
      : reached(reached), limits(limits) {}

  bool null() { return add(Value()); }
  bool boolean(bool value) { return add(Value(value)); }
  bool number_integer(Json::number_integer_t value) { return add(value); }
  bool number_unsigned(Json::number_unsigned_t value) { return add(value); }
  bool number_float(Json::number_float_t value, const Json::string_t &) {
    return add(value);
  }
  bool string(Json::string_t &value) { return add(std::move(value)); }
  bool binary(Json::binary_t &) { // JSON text has none.
    return fail(lastRead(), "unexpected binary value");
  }
  bool start_object(size_t) { return open(Value::object()); }
  bool start_array(size_t) { return open(Value::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(Json::string_t &key);
  bool parse_error(size_t position, const std::string &,
                   const Json::exception &error) {
    // `position` counts the bytes read, the offending one (or the end) too.
    return fail(position ? position - 1 : 0, describe(error));
  }

  /// Records an error at byte `offset` (the first one wins); returns false.
  bool fail(size_t offset, std::string message) {
    if (!failed) {
      failed = true;
      errorOffset = offset;
      errorMessage = std::move(message);
    }
    return false;
  }

  Value root;
  bool failed = false;
  size_t errorOffset = 0;
  std::string errorMessage;

private:
  /// An open array or object, with its keys in a set once it has many.
  struct Frame {
    Value *value;
    std::unordered_set<std::string> keys;
  };

  /// Offset of the byte the lexer read last.
  size_t lastRead() const { return reached - start - 1; }
  bool add(Value value);
  bool open(Value value);
  bool close() {
    frames.pop_back();
    return true;
  }

  const char *const &reached;
  const char *start = reached;
  const ParseLimits &limits;
  std::vector<Frame> frames;
  /// The key of the object member whose value comes next.
  std::string pendingKey;
};
} // namespace kopt::runtime::json

bool Builder::add(Value value) {
  if (frames.empty()) {
    root = std::move(value);
    return true;
  }
  Value &parent = *frames.back().value;
  if (parent.isObject())
    parent.keys.push_back(std::move(pendingKey));
  parent.items.push_back(std::move(value));
  return true;
}

bool Builder::open(Value value) {
  if (frames.size() >= limits.maxDepth)
    return fail(lastRead(), "nesting deeper than the limit of " +
                                std::to_string(limits.maxDepth));
  add(std::move(value));
  Value *opened = frames.empty() ? &root : &frames.back().value->items.back();
  frames.push_back({opened, {}});
  return true;
}

bool Builder::key(Json::string_t &key) {
  // Small objects check duplicates by scanning; large ones use a set so a
  // hostile object with many keys costs linear time.
  constexpr size_t kScanLimit = 16;
  Frame &frame = frames.back();
  const std::vector<std::string> &keys = frame.value->keys;
  bool duplicate;
  if (keys.size() < kScanLimit) {
    duplicate = frame.value->find(key) != nullptr;
  } else {
    if (frame.keys.empty())
      frame.keys.insert(keys.begin(), keys.end());
    duplicate = !frame.keys.insert(key).second;
  }
  // The lexer has just read the key's closing quote.
  if (duplicate)
    return fail(lastRead(), "duplicate key \"" + key + "\" in an object");
  pendingKey = std::move(key);
  return true;
}

Result<Value> json::parse(std::string_view text, const ParseLimits &limits) {
  const char *reached = text.data();
  Builder builder(reached, limits);
  if (text.size() > limits.maxBytes) {
    builder.fail(limits.maxBytes, "input of " + std::to_string(text.size()) +
                                      " bytes is over the limit of " +
                                      std::to_string(limits.maxBytes) +
                                      " bytes");
  } else {
    Cursor first{text.data(), &reached};
    Cursor last{text.data() + text.size(), &reached};
    nlohmann::json::sax_parse(first, last, &builder);
  }
  if (!builder.failed)
    return std::move(builder.root);

  size_t line = 1, lineStart = 0;
  size_t end = std::min(builder.errorOffset, text.size());
  for (size_t i = 0; i < end; ++i)
    if (text[i] == '\n') {
      ++line;
      lineStart = i + 1;
    }
  return Status::error(StatusCode::InvalidArgument,
                       std::to_string(line) + ":" +
                           std::to_string(builder.errorOffset - lineStart + 1) +
                           ": " + builder.errorMessage);
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

/// Appends `text` as a JSON string literal.
static void writeString(const std::string &text, std::string &out) {
  out += nlohmann::json(text).dump(-1, ' ', /*ensure_ascii=*/false,
                                   nlohmann::json::error_handler_t::replace);
}

/// Appends a number so that parsing it gives the same value back.
static void writeNumber(double number, bool exact, int64_t integer,
                        std::string &out) {
  char buffer[64];
  if (!exact) {
    if (!std::isfinite(number)) {
      out += "null";
      return;
    }
    if (number == 0 && std::signbit(number)) {
      out += "-0.0";
      return;
    }
    if (std::trunc(number) != number ||
        std::fabs(number) > kExactIntegerLimit) {
      auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), number,
                                     std::chars_format::general, 17);
      assert(ec == std::errc() && "buffer too small for a double");
      (void)ec;
      out.append(buffer, end);
      return;
    }
    integer = static_cast<int64_t>(number);
  }
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), integer);
  assert(ec == std::errc() && "buffer too small for an integer");
  (void)ec;
  out.append(buffer, end);
}

void json::writeTo(const Value &value, std::string &out) {
  switch (value.kind()) {
  case Value::Kind::Null:
    out += "null";
    return;
  case Value::Kind::Bool:
    out += *value.getBool() ? "true" : "false";
    return;
  case Value::Kind::Number: {
    double number = *value.getNumber();
    std::optional<int64_t> integer = value.getInteger();
    // An exact integer beyond 2^53 is written from its int64, not the double;
    // -0.0 is not an integer.
    bool exact = integer.has_value() &&
                 std::signbit(number) == (*integer < 0) &&
                 static_cast<double>(*integer) == number &&
                 std::fabs(number) <= 9223372036854775807.0;
    writeNumber(number, exact, integer.value_or(0), out);
    return;
  }
  case Value::Kind::String:
    writeString(*value.getString(), out);
    return;
  case Value::Kind::Array:
    out += '[';
    for (size_t i = 0, e = value.size(); i < e; ++i) {
      if (i)
        out += ',';
      writeTo(value.at(i), out);
    }
    out += ']';
    return;
  case Value::Kind::Object:
    out += '{';
    for (size_t i = 0, e = value.size(); i < e; ++i) {
      if (i)
        out += ',';
      writeString(value.keyAt(i), out);
      out += ':';
      writeTo(value.at(i), out);
    }
    out += '}';
    return;
  }
}

std::string json::write(const Value &value) {
  std::string out;
  writeTo(value, out);
  return out;
}
