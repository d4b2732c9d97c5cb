//===- InputLimitsTest.cpp - Bounds on what kopt reads ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Support/InputLimits.h"

#include "llvm/Support/FileSystem.h"

#include "gtest/gtest.h"

#include <string>

#include <sys/stat.h>

using namespace mlir::kopt;

namespace {

/// The message of `error`, or "" for success.
std::string messageOf(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : std::string();
}

/// `depth` levels of `open`, then as many `close`.
std::string nest(unsigned depth, llvm::StringRef open, llvm::StringRef close) {
  std::string text;
  for (unsigned i = 0; i < depth; ++i)
    text += open;
  for (unsigned i = 0; i < depth; ++i)
    text += close;
  return text;
}

TEST(InputLimitsTest, AcceptsNestingUpToTheLimit) {
  EXPECT_EQ(messageOf(checkMlirNesting(nest(kMaxMlirNesting, "[", "]"), "a")),
            "");
  std::string message =
      messageOf(checkMlirNesting(nest(kMaxMlirNesting + 1, "[", "]"), "a"));
  EXPECT_EQ(message, "a:1:1001: nesting deeper than 1000 levels; kopt "
                     "refuses it (it would exhaust the parser's stack)");
}

TEST(InputLimitsTest, CountsAnglesButNotArrowsOrComparisons) {
  // Each `->` and `>=` would close a level if counted: 2,000 of them must
  // leave the `tuple<` levels open, so the text is still too deep.
  std::string arrows;
  for (unsigned i = 0; i < 2000; ++i)
    arrows += "(d0) -> (d0) d0 >= 0 ";
  std::string deep = nest(kMaxMlirNesting, "tuple<", "");
  EXPECT_NE(messageOf(checkMlirNesting(deep + arrows + "tuple<", "a")), "");
  // Balanced affine maps, many of them, stay shallow.
  std::string maps;
  for (unsigned i = 0; i < 5000; ++i)
    maps += "#m = affine_map<(d0, d1) -> (d0 + d1)>\n";
  EXPECT_EQ(messageOf(checkMlirNesting(maps, "a")), "");
  // A stray `<` is dropped by the bracket that closes around it.
  std::string strays;
  for (unsigned i = 0; i < 5000; ++i)
    strays += "{ a < b }";
  EXPECT_EQ(messageOf(checkMlirNesting(strays, "a")), "");
}

TEST(InputLimitsTest, SkipsStringsAndComments) {
  std::string text = "\"" + std::string(5000, '[') + "\\\" [\" // " +
                     std::string(5000, '{') + "\n{}";
  EXPECT_EQ(messageOf(checkMlirNesting(text, "a")), "");
}

TEST(InputLimitsTest, BoundsJsonNesting) {
  EXPECT_TRUE(static_cast<bool>(parseJson(nest(kMaxJsonNesting, "[", "]"))));
  llvm::Expected<llvm::json::Value> deep =
      parseJson("{\"a\": " + nest(100000, "[", "]") + "}");
  ASSERT_FALSE(static_cast<bool>(deep));
  EXPECT_EQ(llvm::toString(deep.takeError()),
            "[1:134]: nesting deeper than 128 levels");
  // Brackets in strings do not count.
  EXPECT_TRUE(
      static_cast<bool>(parseJson("[\"" + std::string(1000, '[') + "\\\"\"]")));
}

TEST(InputLimitsTest, RefusesWhatIsNotARegularFile) {
  llvm::SmallString<128> directory;
  ASSERT_FALSE(
      llvm::sys::fs::createUniqueDirectory("kopt-limits-test", directory));
  std::string fifo = (directory + "/fifo.mlir").str();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading would block until a writer comes.
  auto buffer = readInputFile(fifo);
  ASSERT_FALSE(static_cast<bool>(buffer));
  EXPECT_EQ(llvm::toString(buffer.takeError()),
            "'" + fifo +
                "' is not a regular file (a FIFO, a device or a socket); "
                "kopt reads only regular files");
  auto zero = readInputFile("/dev/zero");
  ASSERT_FALSE(static_cast<bool>(zero));
  llvm::consumeError(zero.takeError());
  auto folder = readInputFile(directory);
  ASSERT_FALSE(static_cast<bool>(folder));
  EXPECT_EQ(llvm::toString(folder.takeError()),
            "'" + directory.str().str() + "' is a directory, not a file");
  llvm::sys::fs::remove_directories(directory);
}

TEST(InputLimitsTest, BoundsTheSize) {
  llvm::SmallString<128> path;
  int fd = -1;
  ASSERT_FALSE(
      llvm::sys::fs::createTemporaryFile("kopt-limits", "mlir", fd, path));
  ASSERT_EQ(::write(fd, "0123456789", 10), 10);
  ::close(fd);
  ::setenv(kMaxInputBytesVariable, "9", 1);
  auto tooLarge = readInputFile(path);
  ::setenv(kMaxInputBytesVariable, "10", 1);
  auto fits = readInputFile(path);
  ::unsetenv(kMaxInputBytesVariable);
  ASSERT_FALSE(static_cast<bool>(tooLarge));
  EXPECT_EQ(llvm::toString(tooLarge.takeError()),
            "'" + path.str().str() +
                "' is 10 bytes, more than the input limit of 9 bytes (set "
                "KOPT_MAX_INPUT_BYTES to raise it)");
  ASSERT_TRUE(static_cast<bool>(fits));
  EXPECT_EQ((*fits)->getBuffer(), "0123456789");
  EXPECT_EQ(getMaxInputBytes(), kDefaultMaxInputBytes);
  llvm::sys::fs::remove(path);
}

} // namespace
