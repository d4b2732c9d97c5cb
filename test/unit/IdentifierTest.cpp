//===- IdentifierTest.cpp - Tests of C identifiers from names ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/Identifier.h"

#include "gtest/gtest.h"

#include <regex>

using namespace mlir::kopt;

namespace {

bool isIdentifier(const std::string &text) {
  return std::regex_match(text, std::regex("[A-Za-z_][A-Za-z0-9_]*"));
}

TEST(IdentifierTest, KeepsValidIdentifiers) {
  for (const char *name : {"main_kopt_g0_elementwise", "_x", "A1", "f__g"})
    EXPECT_EQ(sanitizeIdentifier(name), name);
  std::string longest(kMaxIdentifierLength, 'a');
  EXPECT_EQ(sanitizeIdentifier(longest), longest);
}

TEST(IdentifierTest, MakesAnyNameAnIdentifier) {
  const std::string names[] = {"../../etc/evil name",
                               "f*/ #include \"x\"\n} void g() { /* \\",
                               "\xD0\xBC\xD0\xBE\xCE\xBB",
                               "1abc",
                               "",
                               std::string("a\0b", 3),
                               std::string(5000, 'z'),
                               "a.b"};
  for (const std::string &name : names) {
    std::string safe = sanitizeIdentifier(name);
    EXPECT_TRUE(isIdentifier(safe)) << safe;
    EXPECT_LE(safe.size(), kMaxIdentifierLength);
    EXPECT_EQ(sanitizeIdentifier(name), safe) << "not deterministic";
  }
  EXPECT_TRUE(llvm::StringRef(sanitizeIdentifier("../../etc/evil name"))
                  .starts_with("______etc_evil_name_"));
  EXPECT_TRUE(
      llvm::StringRef(sanitizeIdentifier("1abc")).starts_with("k1abc_"));
}

TEST(IdentifierTest, KeepsChangedNamesApart) {
  // Both become "a_b" before the hash; neither may become the valid "a_b".
  std::string dot = sanitizeIdentifier("a.b");
  std::string dash = sanitizeIdentifier("a-b");
  EXPECT_NE(dot, dash);
  EXPECT_NE(dot, "a_b");
  EXPECT_NE(sanitizeIdentifier(std::string(200, 'x') + "1"),
            sanitizeIdentifier(std::string(200, 'x') + "2"));
}

TEST(IdentifierTest, MakesCommentsOneHarmlessLine) {
  EXPECT_EQ(sanitizeCommentText("fused: linalg.generic{arith.addf}"),
            "fused: linalg.generic{arith.addf}");
  std::string text = sanitizeCommentText("a*/b/*c\nd\\\r\te\xCE\xBB");
  EXPECT_EQ(text, "a*?b?*c?d???e??");
  EXPECT_EQ(sanitizeCommentText("*//*/"), "*??*?");
}

} // namespace
