//===- Json.cpp - A strict JSON value, parser and writer --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A recursive-descent parser over a string_view. Recursion is bounded by
// `ParseLimits::maxDepth`, so hostile nesting cannot exhaust the stack. The
// first error stops the parse; its byte offset is turned into a line and
// column only then. Numbers are converted with std::from_chars/to_chars,
// which do not depend on the C locale.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Json.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_set>

using namespace kopt::runtime;
using namespace kopt::runtime::json;

/// Largest magnitude below which every integer is exactly a double.
static constexpr double kExactIntegerLimit = 9007199254740992.0; // 2^53

//===----------------------------------------------------------------------===//
// UTF-8
//===----------------------------------------------------------------------===//

/// Returns the length of the well-formed UTF-8 sequence at `text[pos]`
/// (1 to 4), or 0 when the bytes there are not well-formed UTF-8 (overlong
/// forms, surrogates and code points above U+10FFFF are refused).
static size_t measureUtf8(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) -> unsigned {
    return static_cast<unsigned char>(text[i]);
  };
  unsigned lead = byte(pos);
  if (lead < 0x80)
    return 1;
  size_t length;
  unsigned low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0)
      low = 0xA0; // Overlong below U+0800.
    else if (lead == 0xED)
      high = 0x9F; // UTF-16 surrogates.
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0)
      low = 0x90; // Overlong below U+10000.
    else if (lead == 0xF4)
      high = 0x8F; // Above U+10FFFF.
  } else {
    return 0;
  }
  if (text.size() - pos < length)
    return 0;
  if (byte(pos + 1) < low || byte(pos + 1) > high)
    return 0;
  for (size_t i = 2; i < length; ++i)
    if (byte(pos + i) < 0x80 || byte(pos + i) > 0xBF)
      return 0;
  return length;
}

/// Appends code point `code` (at most U+10FFFF, not a surrogate) as UTF-8.
static void appendUtf8(uint32_t code, std::string &out) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

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

namespace kopt::runtime::json {
/// Parses one document; stops at the first error.
class Parser {
public:
  Parser(std::string_view text, const ParseLimits &limits)
      : text(text), limits(limits) {}

  Result<Value> run(ParseError *error);

private:
  bool parseValue(Value &out, unsigned depth);
  bool parseObject(Value &out, unsigned depth);
  bool parseArray(Value &out, unsigned depth);
  bool parseString(std::string &out);
  bool parseNumber(Value &out);
  bool parseLiteral(Value &out);
  bool parseHex4(size_t at, uint32_t &code);

  void skipWhitespace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }
  bool atEnd() const { return pos >= text.size(); }

  /// Records an error at `offset` (the first one wins) and returns false.
  bool fail(size_t offset, std::string message) {
    if (!failed) {
      failed = true;
      errorOffset = offset;
      errorMessage = std::move(message);
    }
    return false;
  }
  /// Records "expected `what`" at the current position, naming what was
  /// found instead.
  bool expected(const std::string &what) {
    if (atEnd())
      return fail(pos, "unexpected end of input; expected " + what);
    return fail(pos, "expected " + what + ", found " + describe(pos));
  }
  /// Names the byte at `offset` for a message.
  std::string describe(size_t offset) const {
    unsigned char c = static_cast<unsigned char>(text[offset]);
    if (c >= 0x20 && c < 0x7F)
      return std::string("'") + static_cast<char>(c) + "'";
    char buffer[16];
    std::snprintf(buffer, sizeof(buffer), "byte 0x%02X", c);
    return buffer;
  }

  std::string_view text;
  const ParseLimits &limits;
  size_t pos = 0;
  bool failed = false;
  size_t errorOffset = 0;
  std::string errorMessage;
};
} // namespace kopt::runtime::json

Result<Value> Parser::run(ParseError *error) {
  Value result;
  if (text.size() > limits.maxBytes) {
    fail(limits.maxBytes, "input of " + std::to_string(text.size()) +
                              " bytes is over the limit of " +
                              std::to_string(limits.maxBytes) + " bytes");
  } else if (parseValue(result, 0)) {
    skipWhitespace();
    if (!atEnd())
      fail(pos, "expected the end of input after the JSON value, found " +
                    describe(pos));
  }
  if (!failed)
    return result;

  ParseError parsed;
  parsed.offset = errorOffset;
  parsed.line = 1;
  size_t lineStart = 0;
  size_t limit = std::min(errorOffset, text.size());
  for (size_t i = 0; i < limit; ++i)
    if (text[i] == '\n') {
      ++parsed.line;
      lineStart = i + 1;
    }
  parsed.column = errorOffset - lineStart + 1;
  parsed.message = errorMessage;
  std::string message = std::to_string(parsed.line) + ":" +
                        std::to_string(parsed.column) + ": " + errorMessage;
  if (error)
    *error = std::move(parsed);
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

bool Parser::parseValue(Value &out, unsigned depth) {
  skipWhitespace();
  if (atEnd())
    return expected("a value");
  switch (text[pos]) {
  case '{':
  case '[':
    if (depth >= limits.maxDepth)
      return fail(pos, "nesting deeper than the limit of " +
                           std::to_string(limits.maxDepth));
    return text[pos] == '{' ? parseObject(out, depth + 1)
                            : parseArray(out, depth + 1);
  case '"':
    out.valueKind = Value::Kind::String;
    return parseString(out.text);
  case 't':
  case 'f':
  case 'n':
    return parseLiteral(out);
  default:
    if (text[pos] == '-' || (text[pos] >= '0' && text[pos] <= '9'))
      return parseNumber(out);
    return expected("a value");
  }
}

bool Parser::parseLiteral(Value &out) {
  for (std::string_view word : {"true", "false", "null"}) {
    if (text.substr(pos, word.size()) != word)
      continue;
    size_t end = pos + word.size();
    // `nullx` is not `null` followed by junk at the top level: name the word.
    if (end < text.size() &&
        std::isalnum(static_cast<unsigned char>(text[end])))
      break;
    out = word == "null" ? Value() : Value(word == "true");
    pos = end;
    return true;
  }
  return fail(pos, "invalid literal; expected a value (true, false, null, a "
                   "number, a string, an array or an object)");
}

bool Parser::parseNumber(Value &out) {
  size_t start = pos;
  bool negative = false;
  if (text[pos] == '-') {
    negative = true;
    ++pos;
  }
  auto isDigit = [&](size_t at) {
    return at < text.size() && text[at] >= '0' && text[at] <= '9';
  };
  if (!isDigit(pos))
    return expected("a digit after '-'");
  size_t integerDigits = 0;
  if (text[pos] == '0') {
    ++pos;
    if (isDigit(pos))
      return fail(start, "leading zeros are not allowed in a number");
  } else {
    while (isDigit(pos)) {
      ++pos;
      ++integerDigits;
    }
  }
  bool integral = true;
  if (pos < text.size() && text[pos] == '.') {
    integral = false;
    ++pos;
    if (!isDigit(pos))
      return expected("a digit after '.'");
    while (isDigit(pos))
      ++pos;
  }
  int64_t exponent = 0;
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    integral = false;
    ++pos;
    bool negativeExponent = false;
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
      negativeExponent = text[pos++] == '-';
    if (!isDigit(pos))
      return expected("a digit in the exponent");
    while (isDigit(pos)) {
      if (exponent < 100000)
        exponent = exponent * 10 + (text[pos] - '0');
      ++pos;
    }
    if (negativeExponent)
      exponent = -exponent;
  }

  const char *first = text.data() + start;
  const char *last = text.data() + pos;
  out = Value();
  out.valueKind = Value::Kind::Number;
  if (integral) {
    int64_t whole = 0;
    auto [end, ec] = std::from_chars(first, last, whole);
    if (ec == std::errc() && end == last) {
      out.integer = whole;
      out.exact = true;
      out.number = static_cast<double>(whole);
      return true;
    }
    // Too big for int64: keep it as a double below.
  }
  double real = 0;
  auto [end, ec] = std::from_chars(first, last, real);
  if (ec == std::errc::result_out_of_range) {
    // Decide between overflow and underflow from the decimal magnitude.
    if (static_cast<int64_t>(integerDigits) + exponent > 0)
      return fail(start, "number '" + std::string(first, last) +
                             "' is out of the range of a double");
    real = negative ? -0.0 : 0.0;
  } else if (ec != std::errc() || end != last) {
    return fail(start, "invalid number '" + std::string(first, last) + "'");
  }
  out.number = real;
  return true;
}

bool Parser::parseHex4(size_t at, uint32_t &code) {
  code = 0;
  for (size_t i = 0; i < 4; ++i) {
    if (at + i >= text.size())
      return fail(at - 2, "unexpected end of input; expected 4 hex digits "
                          "after '\\u'");
    char c = text[at + i];
    unsigned digit;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      digit = c - 'A' + 10;
    else
      return fail(at + i, "expected 4 hex digits after '\\u', found " +
                              describe(at + i));
    code = code * 16 + digit;
  }
  return true;
}

bool Parser::parseString(std::string &out) {
  size_t open = pos;
  ++pos; // The opening quote.
  out.clear();
  while (true) {
    // Copy a run of plain ASCII at once.
    size_t runStart = pos;
    while (pos < text.size()) {
      unsigned char c = static_cast<unsigned char>(text[pos]);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
        break;
      ++pos;
    }
    out.append(text.data() + runStart, pos - runStart);
    if (atEnd())
      return fail(open, "unterminated string; expected '\"' before the end "
                        "of input");
    unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c == '"') {
      ++pos;
      return true;
    }
    if (c < 0x20)
      return fail(pos, "control character " + describe(pos) +
                           " in a string; it must be escaped");
    if (c >= 0x80) {
      size_t length = measureUtf8(text, pos);
      if (length == 0)
        return fail(pos, "invalid UTF-8 in a string at " + describe(pos));
      out.append(text.data() + pos, length);
      pos += length;
      continue;
    }
    // An escape.
    size_t escape = pos;
    ++pos;
    if (atEnd())
      return fail(open, "unterminated string; expected '\"' before the end "
                        "of input");
    char kind = text[pos++];
    switch (kind) {
    case '"':
      out += '"';
      break;
    case '\\':
      out += '\\';
      break;
    case '/':
      out += '/';
      break;
    case 'b':
      out += '\b';
      break;
    case 'f':
      out += '\f';
      break;
    case 'n':
      out += '\n';
      break;
    case 'r':
      out += '\r';
      break;
    case 't':
      out += '\t';
      break;
    case 'u': {
      uint32_t code;
      if (!parseHex4(pos, code))
        return false;
      pos += 4;
      if (code >= 0xDC00 && code <= 0xDFFF)
        return fail(escape, "unpaired low surrogate '" +
                                std::string(text.substr(escape, 6)) +
                                "' in a string");
      if (code >= 0xD800 && code <= 0xDBFF) {
        if (text.substr(pos, 2) != "\\u")
          return fail(escape, "unpaired high surrogate '" +
                                  std::string(text.substr(escape, 6)) +
                                  "'; expected a '\\u' low surrogate after "
                                  "it");
        uint32_t low;
        if (!parseHex4(pos + 2, low))
          return false;
        if (low < 0xDC00 || low > 0xDFFF)
          return fail(escape, "unpaired high surrogate '" +
                                  std::string(text.substr(escape, 6)) +
                                  "'; expected a low surrogate after it, "
                                  "found '" +
                                  std::string(text.substr(pos, 6)) + "'");
        pos += 6;
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      }
      appendUtf8(code, out);
      break;
    }
    default:
      return fail(escape, "invalid escape in a string: '\\' followed by " +
                              describe(escape + 1));
    }
  }
}

bool Parser::parseArray(Value &out, unsigned depth) {
  ++pos; // '['
  out = Value::array();
  skipWhitespace();
  if (!atEnd() && text[pos] == ']') {
    ++pos;
    return true;
  }
  while (true) {
    Value item;
    if (!parseValue(item, depth))
      return false;
    out.items.push_back(std::move(item));
    skipWhitespace();
    if (!atEnd() && text[pos] == ',') {
      ++pos;
      continue;
    }
    if (!atEnd() && text[pos] == ']') {
      ++pos;
      return true;
    }
    return expected("',' or ']' after an array item");
  }
}

bool Parser::parseObject(Value &out, unsigned depth) {
  ++pos; // '{'
  out = Value::object();
  skipWhitespace();
  if (!atEnd() && text[pos] == '}') {
    ++pos;
    return true;
  }
  // Small objects check duplicates by scanning; large ones use a set so a
  // hostile object with many keys costs linear time.
  constexpr size_t kScanLimit = 16;
  std::unordered_set<std::string> seen;
  while (true) {
    skipWhitespace();
    if (atEnd() || text[pos] != '"')
      return expected("a string key");
    size_t keyPos = pos;
    std::string key;
    if (!parseString(key))
      return false;
    bool duplicate;
    if (out.keys.size() < kScanLimit) {
      duplicate = out.find(key) != nullptr;
    } else {
      if (seen.empty())
        seen.insert(out.keys.begin(), out.keys.end());
      duplicate = !seen.insert(key).second;
    }
    if (duplicate)
      return fail(keyPos, "duplicate key \"" + key + "\" in an object");
    skipWhitespace();
    if (atEnd() || text[pos] != ':')
      return expected("':' after an object key");
    ++pos;
    Value value;
    if (!parseValue(value, depth))
      return false;
    out.keys.push_back(std::move(key));
    out.items.push_back(std::move(value));
    skipWhitespace();
    if (!atEnd() && text[pos] == ',') {
      ++pos;
      continue;
    }
    if (!atEnd() && text[pos] == '}') {
      ++pos;
      return true;
    }
    return expected("',' or '}' after an object member");
  }
}

Result<Value> json::parse(std::string_view text, const ParseLimits &limits,
                          ParseError *error) {
  return Parser(text, limits).run(error);
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

/// Appends `text` as a JSON string literal.
static void writeString(std::string_view text, std::string &out) {
  static const char *const hex = "0123456789abcdef";
  out += '"';
  size_t pos = 0;
  while (pos < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c >= 0x80) {
      size_t length = measureUtf8(text, pos);
      if (length == 0) {
        out += "\xEF\xBF\xBD"; // U+FFFD for a byte that is not UTF-8.
        ++pos;
      } else {
        out.append(text.data() + pos, length);
        pos += length;
      }
      continue;
    }
    ++pos;
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 0xF];
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  out += '"';
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
