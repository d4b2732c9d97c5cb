//===- JsonTest.cpp - Tests of the runtime's JSON ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Json.h"

#include "gtest/gtest.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

using namespace kopt::runtime;

namespace {

/// Parses `text`, failing the test on an error.
json::Value parseOk(std::string_view text) {
  Result<json::Value> value = json::parse(text);
  EXPECT_TRUE(value.isOk()) << value.status().message();
  return value.isOk() ? *value : json::Value();
}

TEST(JsonTest, ParsesScalars) {
  EXPECT_TRUE(parseOk("null").isNull());
  EXPECT_EQ(parseOk(" true ").getBool(), true);
  EXPECT_EQ(parseOk("false").getBool(), false);
  EXPECT_EQ(parseOk("0").getInteger(), 0);
  EXPECT_EQ(parseOk("-17").getInteger(), -17);
  EXPECT_EQ(parseOk("1.5").getNumber(), 1.5);
  EXPECT_EQ(parseOk("1.5").getInteger(), std::nullopt);
  EXPECT_EQ(parseOk("2.5e2").getNumber(), 250.0);
  EXPECT_EQ(parseOk("2.5e2").getInteger(), 250);
  EXPECT_EQ(parseOk("1E-2").getNumber(), 0.01);
  EXPECT_EQ(*parseOk("\"hi\"").getString(), "hi");
  EXPECT_EQ(parseOk("\"hi\"").getNumber(), std::nullopt);
  EXPECT_EQ(parseOk("1").getString(), nullptr);
  // A UTF-8 byte order mark is skipped (RFC 8259 section 8.1 allows it).
  EXPECT_TRUE(parseOk("\xEF\xBB\xBF{}").isObject());
}

TEST(JsonTest, WritesCompactlyInInsertionOrder) {
  const char *text =
      R"({"zeta":1,"alpha":[true,false,null,{}],"mid":{"b":"x","a":[]}})";
  json::Value value = parseOk(text);
  EXPECT_EQ(json::write(value), text);
  EXPECT_EQ(value.keyAt(0), "zeta");
  EXPECT_EQ(value.keyAt(2), "mid");
  EXPECT_EQ(json::write(parseOk(" [ 1 , \"a\" ,\n\t{ \"k\" : null } ] ")),
            R"([1,"a",{"k":null}])");
}

TEST(JsonTest, EditsObjectsKeepingPositions) {
  json::Value object = json::Value::object();
  object.set("b", 1);
  object.set("a", 2);
  object.set("b", "again");
  EXPECT_EQ(json::write(object), R"({"b":"again","a":2})");
  ASSERT_NE(object.find("a"), nullptr);
  EXPECT_EQ(object.find("a")->getInteger(), 2);
  EXPECT_EQ(object.find("c"), nullptr);
  EXPECT_TRUE(object.erase("b"));
  EXPECT_FALSE(object.erase("b"));
  EXPECT_EQ(json::write(object), R"({"a":2})");

  json::Value array;
  array.push(1);
  array.push("two");
  EXPECT_EQ(json::write(array), R"([1,"two"])");
  EXPECT_EQ(json::Value(3).find("a"), nullptr);
}

TEST(JsonTest, IntegersStayExact) {
  for (const char *text :
       {"9223372036854775807", "-9223372036854775808", "9007199254740993",
        "-9007199254740993", "123456789012345678"}) {
    json::Value value = parseOk(text);
    ASSERT_TRUE(value.getInteger().has_value()) << text;
    EXPECT_EQ(std::to_string(*value.getInteger()), text);
    EXPECT_EQ(json::write(value), text);
  }
  EXPECT_EQ(json::write(json::Value(int64_t(INT64_MIN))),
            "-9223372036854775808");
  EXPECT_EQ(json::write(json::Value(uint64_t(UINT64_MAX))),
            "1.8446744073709552e+19");
}

TEST(JsonTest, IntegersBeyondInt64BecomeDoubles) {
  json::Value value = parseOk("9223372036854775808");
  EXPECT_EQ(value.getInteger(), std::nullopt);
  EXPECT_EQ(value.getNumber(), 9223372036854775808.0);
  json::Value negative = parseOk("-99999999999999999999999");
  EXPECT_EQ(negative.getInteger(), std::nullopt);
  EXPECT_EQ(negative.getNumber(), -1e23);
  // A double that is integral but beyond 2^53 is not claimed as exact.
  EXPECT_EQ(json::Value(1e17).getInteger(), std::nullopt);
  EXPECT_EQ(json::Value(4096.0).getInteger(), 4096);
}

TEST(JsonTest, DoublesRoundTripBitForBit) {
  for (double number : {0.1, 1.0 / 3.0, -2.5, 1e300, -1e-300, 5e-324, DBL_MAX,
                        DBL_MIN, DBL_EPSILON, 123456789.125,
                        1152921504606846976.0, 1e23, 4096.0, -0.0}) {
    std::string text = json::write(json::Value(number));
    Result<json::Value> back = json::parse(text);
    ASSERT_TRUE(back.isOk()) << text << ": " << back.status().message();
    double parsed = *back->getNumber();
    EXPECT_EQ(std::memcmp(&parsed, &number, sizeof(double)), 0)
        << text << " read back as " << parsed;
  }
  EXPECT_EQ(json::write(json::Value(0.1)), "0.10000000000000001");
  EXPECT_EQ(json::write(json::Value(2.0)), "2");
  EXPECT_EQ(json::write(json::Value(-0.0)), "-0.0");
}

TEST(JsonTest, UnderflowIsZeroOverflowIsAnError) {
  EXPECT_EQ(parseOk("1e-400").getNumber(), 0.0);
  EXPECT_TRUE(std::signbit(*parseOk("-1e-400").getNumber()));
  EXPECT_EQ(parseOk("0.0000000000000000000000000000001e-380").getNumber(), 0.0);
  EXPECT_FALSE(json::parse("1e400").isOk());
  EXPECT_FALSE(json::parse("-123.5e308").isOk());
}

TEST(JsonTest, NonFiniteNumbersAreWrittenAsNull) {
  EXPECT_EQ(json::write(json::Value(NAN)), "null");
  EXPECT_EQ(json::write(json::Value(INFINITY)), "null");
  EXPECT_EQ(json::write(json::Value(-INFINITY)), "null");
}

TEST(JsonTest, DecodesEscapesAndSurrogates) {
  json::Value value = parseOk(
      R"("q\" b\\ s\/ \b\f\n\r\t \u0041\u00e9\u20AC \ud83d\ude00 \u0000.")");
  std::string expected = "q\" b\\ s/ \b\f\n\r\t A\xC3\xA9\xE2\x82\xAC "
                         "\xF0\x9F\x98\x80 ";
  expected += '\0';
  expected += '.';
  EXPECT_EQ(*value.getString(), expected);
  // The highest code point, as a surrogate pair.
  EXPECT_EQ(*parseOk(R"("\udbff\udfff")").getString(), "\xF4\x8F\xBF\xBF");
  // Raw UTF-8 passes through unchanged both ways.
  std::string raw = "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"";
  EXPECT_EQ(json::write(parseOk(raw)), raw);
}

TEST(JsonTest, WriterEscapesWhatJsonRequires) {
  std::string text = "a\"b\\c\nd\te\x01"
                     "f\x1f/";
  text += '\0';
  EXPECT_EQ(json::write(json::Value(text)),
            R"("a\"b\\c\nd\te\u0001f\u001f/\u0000")");
  // Bytes that are not UTF-8 become U+FFFD, one per maximal ill-formed
  // subsequence, so the output always parses.
  std::string invalid = "x\xFFy\xC3 \xE2\x82z";
  std::string written = json::write(json::Value(invalid));
  EXPECT_EQ(written, "\"x\xEF\xBF\xBDy\xEF\xBF\xBD \xEF\xBF\xBDz\"");
  EXPECT_TRUE(json::parse(written).isOk());
}

/// A parse error expected at a line and column.
struct ErrorCase {
  std::string text;
  size_t line, column;
  const char *message;
};

TEST(JsonTest, ReportsEveryErrorKindWithItsPosition) {
  const ErrorCase cases[] = {
      {"", 1, 1, "unexpected end of input; expected '[', '{', or a literal"},
      {"  \n  x", 2, 3, "invalid literal"},
      {"NaN", 1, 1, "invalid literal; last read: 'N'"},
      {"[1,]", 1, 4, "unexpected ']'; expected '[', '{', or a literal"},
      {"{\"a\":1,}", 1, 8, "unexpected '}'; expected string literal"},
      {"{1:2}", 1, 2, "unexpected number literal; expected string literal"},
      {"{\"a\" 1}", 1, 6,
       "parsing object separator - unexpected number literal; expected ':'"},
      {"{\"a\":1 \"b\":2}", 1, 10, "unexpected string literal; expected '}'"},
      {"[1 2]", 1, 4, "unexpected number literal; expected ']'"},
      {"[1,\n 2", 2, 3, "unexpected end of input; expected ']'"},
      {"{\"a\":", 1, 6, "unexpected end of input; expected '[', '{', or a"},
      {"tru", 1, 4, "invalid literal; last read: 'tru'"},
      {"nullx", 1, 5, "invalid literal; last read: 'nullx'"},
      {"// comment\n1", 1, 1, "invalid literal; last read: '/'"},
      {"01", 1, 2, "unexpected number literal; expected end of input"},
      {"-", 1, 2, "expected digit after '-'"},
      {"-a", 1, 2, "expected digit after '-'; last read: '-a'"},
      {"1.", 1, 3, "expected digit after '.'"},
      {"1.e5", 1, 3, "expected digit after '.'; last read: '1.e'"},
      {"1e+", 1, 4, "expected digit after exponent sign"},
      {"[1e400]", 1, 6, "number overflow parsing '1e400'"},
      {"\"abc", 1, 5, "missing closing quote"},
      {"[\"a\\", 1, 5, "forbidden character after backslash"},
      {"\"a\x01\"", 1, 3, "control character U+0001 (SOH) must be escaped"},
      {"\"a\nb\"", 1, 3, "control character U+000A (LF) must be escaped"},
      {"\"\\x\"", 1, 3,
       "forbidden character after backslash; last read: "
       "'\"\\x'"},
      {"\"\\u12G4\"", 1, 6, "'\\u' must be followed by 4 hex digits"},
      {"\"\\u12", 1, 6, "'\\u' must be followed by 4 hex digits"},
      {"\"\\ud83d\"", 1, 8, "surrogate U+D800..U+DBFF must be followed by"},
      {"\"\\ud83d\\u0041\"", 1, 13,
       "surrogate U+D800..U+DBFF must be followed by"},
      {"\"\\ude00\"", 1, 7, "surrogate U+DC00..U+DFFF must follow"},
      {"\"\xC3\x28\"", 1, 3, "ill-formed UTF-8 byte; last read: '\"<0xC3>('"},
      {"\"\xC0\xAF\"", 1, 2, "ill-formed UTF-8 byte"},         // Overlong '/'.
      {"\"\xED\xA0\x80\"", 1, 3, "ill-formed UTF-8 byte"},     // A surrogate.
      {"\"\xF4\x90\x80\x80\"", 1, 3, "ill-formed UTF-8 byte"}, // > U+10FFFF.
      {"\"\xE2\x82\"", 1, 4, "ill-formed UTF-8 byte"},         // Truncated.
      {"\"\x80\"", 1, 2, "ill-formed UTF-8 byte"}, // A lone continuation.
      {"{\"a\":1,\"a\":2}", 1, 10, "duplicate key \"a\" in an object"},
      {"1 2", 1, 3, "unexpected number literal; expected end of input"},
      {"[1,2]\n  ]", 2, 3, "unexpected ']'; expected end of input"},
  };
  for (const ErrorCase &test : cases) {
    Result<json::Value> value = json::parse(test.text);
    ASSERT_FALSE(value.isOk()) << "accepted: " << test.text;
    EXPECT_EQ(value.status().code(), StatusCode::InvalidArgument);
    const std::string &message = value.status().message();
    std::string prefix =
        std::to_string(test.line) + ":" + std::to_string(test.column) + ": ";
    EXPECT_EQ(message.substr(0, prefix.size()), prefix) << test.text;
    EXPECT_NE(message.find(test.message), std::string::npos)
        << test.text << ": " << message;
  }
}

TEST(JsonTest, FindsDuplicateKeysInLargeObjects) {
  std::string text = "{";
  for (int i = 0; i < 100; ++i)
    text += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  // The error names the duplicate key's closing quote.
  size_t column = text.size() + 5;
  text += "\"k42\":0}";
  Result<json::Value> duplicate = json::parse(text);
  ASSERT_FALSE(duplicate.isOk());
  EXPECT_EQ(duplicate.status().message(),
            "1:" + std::to_string(column) +
                ": duplicate key \"k42\" in an object");
  text.replace(text.size() - 7, 3, "new");
  json::Value value = parseOk(text);
  EXPECT_EQ(value.size(), 101u);
  EXPECT_EQ(value.keyAt(100), "new");
}

TEST(JsonTest, EnforcesTheDepthLimit) {
  auto nested = [](unsigned depth) {
    return std::string(depth, '[') + std::string(depth, ']');
  };
  json::ParseLimits limits;
  EXPECT_TRUE(json::parse(nested(limits.maxDepth), limits).isOk());
  Result<json::Value> deep = json::parse(nested(limits.maxDepth + 1), limits);
  ASSERT_FALSE(deep.isOk());
  EXPECT_EQ(deep.status().message(),
            "1:129: nesting deeper than the limit of 128");
  // Hostile nesting fails fast instead of exhausting the stack.
  EXPECT_FALSE(json::parse(std::string(1000000, '['), limits).isOk());
  limits.maxDepth = 2;
  EXPECT_TRUE(json::parse(R"({"a":[1]})", limits).isOk());
  deep = json::parse(R"({"a":[{}]})", limits);
  ASSERT_FALSE(deep.isOk());
  EXPECT_EQ(deep.status().message(), "1:7: nesting deeper than the limit of 2");
}

TEST(JsonTest, EnforcesTheSizeLimit) {
  json::ParseLimits limits;
  limits.maxBytes = 8;
  EXPECT_TRUE(json::parse("[1,2,3] ", limits).isOk());
  Result<json::Value> value = json::parse("[1,2,3,4]", limits);
  ASSERT_FALSE(value.isOk());
  EXPECT_EQ(value.status().message(),
            "1:9: input of 9 bytes is over the limit of 8 bytes");
}

TEST(JsonTest, ComparesStructurally) {
  EXPECT_EQ(parseOk("3"), json::Value(3.0));
  EXPECT_EQ(parseOk("3.0"), json::Value(3));
  EXPECT_NE(json::Value(int64_t(9007199254740993)),
            json::Value(9007199254740992.0));
  EXPECT_NE(parseOk(R"({"a":1,"b":2})"), parseOk(R"({"b":2,"a":1})"));
  EXPECT_EQ(parseOk(R"({"a":[1,{"b":null}]})"),
            parseOk(R"({ "a" : [ 1 , { "b" : null } ] })"));
  EXPECT_NE(parseOk("[1]"), parseOk("[1,1]"));
  EXPECT_NE(parseOk("\"1\""), parseOk("1"));
  EXPECT_NE(parseOk("null"), parseOk("false"));
}

} // namespace
