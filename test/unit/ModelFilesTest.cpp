//===- ModelFilesTest.cpp - Tests of collectModelFiles ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Support/ModelFiles.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include "gtest/gtest.h"

#include <fstream>
#include <string>

using namespace mlir::kopt;

namespace {

/// A fresh temporary folder, removed with its contents.
class ModelFilesTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("kopt-files", root));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(root); }

  /// `relative` under the folder.
  std::string at(const std::string &relative) const {
    return (root + "/" + relative).str();
  }
  /// Creates an empty file at `relative`, with its folders.
  void touch(const std::string &relative) {
    llvm::SmallString<128> path(at(relative));
    ASSERT_FALSE(llvm::sys::fs::create_directories(
        llvm::StringRef(path).rsplit('/').first));
    std::ofstream(path.str().str()) << "";
  }

  llvm::SmallString<128> root;
};

TEST_F(ModelFilesTest, FoldersAreSearchedSortedAndFilesTakenAsGiven) {
  touch("models/b.mlir");
  touch("models/a.mlir");
  touch("models/notes.txt");
  touch("models/deep/c.mlir");
  touch("single.txt");
  auto files = collectModelFiles({at("single.txt"), at("models")});
  ASSERT_TRUE(bool(files)) << llvm::toString(files.takeError());
  EXPECT_EQ(*files, (std::vector<std::string>{
                        at("single.txt"), at("models/a.mlir"),
                        at("models/b.mlir"), at("models/deep/c.mlir")}));
}

TEST_F(ModelFilesTest, LinkedFoldersAreSearchedOnce) {
  touch("models/sub/a.mlir");
  touch("other/b.mlir");
  ASSERT_FALSE(llvm::sys::fs::create_link(at("other"), at("models/linked")));
  ASSERT_FALSE(llvm::sys::fs::create_link("..", at("models/sub/up")));
  ASSERT_FALSE(llvm::sys::fs::create_link(at("models"), at("models/self")));
  auto files = collectModelFiles({at("models"), at("models")});
  ASSERT_TRUE(bool(files)) << llvm::toString(files.takeError());
  EXPECT_EQ(*files, (std::vector<std::string>{at("models/linked/b.mlir"),
                                              at("models/sub/a.mlir")}));
}

TEST_F(ModelFilesTest, MissingPathIsAnError) {
  auto files = collectModelFiles({at("missing")});
  ASSERT_FALSE(bool(files));
  EXPECT_EQ(llvm::toString(files.takeError()),
            "no such file or folder: '" + at("missing") + "'");
}

} // namespace
