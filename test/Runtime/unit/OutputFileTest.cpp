//===- OutputFileTest.cpp - Tests of OutputFile and FileName ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/OutputFile.h"
#include "kopt/Runtime/FileName.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kopt::runtime;

namespace {

/// A fresh directory, removed with its files at the end of the test.
class OutputFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "kopt-output-XXXXXX")
            .string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }

  std::string path(const std::string &name) const { return dir + "/" + name; }

  /// The names in the directory, hidden ones too.
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    if (DIR *handle = ::opendir(dir.c_str())) {
      while (dirent *entry = ::readdir(handle))
        if (std::string(entry->d_name) != "." &&
            std::string(entry->d_name) != "..")
          names.push_back(entry->d_name);
      ::closedir(handle);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  static std::string read(const std::string &file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  static void write(const std::string &file, const std::string &text) {
    std::ofstream(file, std::ios::binary) << text;
  }

  std::string dir;
};

TEST_F(OutputFileTest, WritesANewFile) {
  ASSERT_TRUE(writeOutputFile(path("out.txt"), "hello\n").isOk());
  EXPECT_EQ(read(path("out.txt")), "hello\n");
  EXPECT_EQ(list(), std::vector<std::string>{"out.txt"});
}

TEST_F(OutputFileTest, ReplacesARegularFileAndKeepsItsMode) {
  write(path("out.txt"), "old");
  ASSERT_EQ(::chmod(path("out.txt").c_str(), 0640), 0);
  ASSERT_TRUE(writeOutputFile(path("out.txt"), "new").isOk());
  EXPECT_EQ(read(path("out.txt")), "new");
  struct stat st;
  ASSERT_EQ(::stat(path("out.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(list(), std::vector<std::string>{"out.txt"});
}

TEST_F(OutputFileTest, NothingAppearsUntilCommit) {
  write(path("out.txt"), "old");
  {
    auto file = OutputFile::open(path("out.txt"));
    ASSERT_TRUE(file.isOk()) << file.status().message();
    (*file)->stream() << "half of it";
    ASSERT_TRUE((*file)->write(" and more").isOk());
    EXPECT_EQ(read(path("out.txt")), "old");
    // Dropped without commit: the old file stays, the temporary goes.
  }
  EXPECT_EQ(read(path("out.txt")), "old");
  EXPECT_EQ(list(), std::vector<std::string>{"out.txt"});
}

TEST_F(OutputFileTest, StreamAndWriteKeepTheirOrder) {
  auto file = OutputFile::open(path("out.txt"));
  ASSERT_TRUE(file.isOk());
  (*file)->stream() << "a" << 1;
  ASSERT_TRUE((*file)->write("b").isOk());
  (*file)->stream() << "c";
  ASSERT_TRUE((*file)->commit().isOk());
  EXPECT_EQ(read(path("out.txt")), "a1bc");
}

TEST_F(OutputFileTest, RefusesAnInputAndTheDatabase) {
  write(path("x.mlir"), "module {}");
  write(path("k.db"), "records");
  write(path("k.db-wal"), "wal");
  ProtectedFiles protect;
  protect.addInput(path("x.mlir"));
  protect.addDatabase(path("k.db"));
  Status status = writeOutputFile(path("x.mlir"), "", protect);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("the same file as an input"),
            std::string::npos)
      << status.message();
  EXPECT_FALSE(writeOutputFile(path("k.db"), "", protect).isOk());
  EXPECT_FALSE(writeOutputFile(path("k.db-wal"), "", protect).isOk());
  // Another name for the same file is the same file.
  ASSERT_EQ(::link(path("k.db").c_str(), path("hard.db").c_str()), 0);
  ASSERT_EQ(::symlink("k.db", path("soft.db").c_str()), 0);
  EXPECT_FALSE(writeOutputFile(path("hard.db"), "", protect).isOk());
  EXPECT_FALSE(writeOutputFile(dir + "/./soft.db", "", protect).isOk());
  EXPECT_EQ(read(path("x.mlir")), "module {}");
  EXPECT_EQ(read(path("k.db")), "records");
  EXPECT_EQ(read(path("k.db-wal")), "wal");
  EXPECT_TRUE(writeOutputFile(path("other.mlir"), "ok", protect).isOk());
}

TEST_F(OutputFileTest, RefusesADatabaseNotCreatedYet) {
  ProtectedFiles protect;
  protect.addDatabase(path("new.db"));
  EXPECT_FALSE(protect.check(dir + "/./new.db").isOk());
  EXPECT_TRUE(protect.check(path("other.db")).isOk());
}

TEST_F(OutputFileTest, WritesThroughASymbolicLink) {
  write(path("target.txt"), "old");
  ASSERT_EQ(::symlink("target.txt", path("link.txt").c_str()), 0);
  ASSERT_TRUE(writeOutputFile(path("link.txt"), "new").isOk());
  struct stat st;
  ASSERT_EQ(::lstat(path("link.txt").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(read(path("target.txt")), "new");
}

TEST_F(OutputFileTest, RefusesALinkToNothingAndADirectory) {
  ASSERT_EQ(::symlink("missing.txt", path("link.txt").c_str()), 0);
  Status status = writeOutputFile(path("link.txt"), "x");
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("symbolic link to a missing file"),
            std::string::npos)
      << status.message();
  EXPECT_FALSE(writeOutputFile(dir, "x").isOk());
  EXPECT_FALSE(writeOutputFile(path("no/such/dir.txt"), "x").isOk());
  EXPECT_EQ(list(), std::vector<std::string>{"link.txt"});
}

TEST_F(OutputFileTest, WritesADeviceInPlace) {
  struct stat before, after;
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  ASSERT_TRUE(writeOutputFile("/dev/null", "discarded").isOk());
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(before.st_ino, after.st_ino);
}

TEST_F(OutputFileTest, ReportsAFullDevice) {
  struct stat st;
  if (::stat("/dev/full", &st) != 0)
    GTEST_SKIP() << "no /dev/full here";
  // More than the stream's buffer, so the error shows before commit too.
  std::string big(1 << 17, 'x');
  auto file = OutputFile::open("/dev/full");
  ASSERT_TRUE(file.isOk());
  (*file)->stream() << big;
  Status status = (*file)->commit();
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("cannot write '/dev/full'"),
            std::string::npos)
      << status.message();
  EXPECT_FALSE(writeOutputFile("/dev/full", "x").isOk());
}

TEST_F(OutputFileTest, WritesAFifoInPlace) {
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  // A reader must be there before the writer's open returns.
  int reader = ::open(path("pipe").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(writeOutputFile(path("pipe"), "through").isOk());
  char data[16] = {};
  EXPECT_EQ(::read(reader, data, sizeof(data)), 7);
  ::close(reader);
  struct stat st;
  ASSERT_EQ(::lstat(path("pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(FileNameTest, KeepsSafeNames) {
  EXPECT_EQ(sanitizeFileName("layernorm_gelu_kopt_g0_reduction"),
            "layernorm_gelu_kopt_g0_reduction");
  EXPECT_EQ(sanitizeFileName("baseline-matmul.v2"), "baseline-matmul.v2");
}

TEST(FileNameTest, MakesUnsafeNamesOneComponent) {
  for (const std::string &name : std::vector<std::string>{
           "../../etc/evil name", "/etc/passwd", "..", ".", "", ".hidden",
           "a/b", "tab\there", "new\nline", std::string("nul\0x", 5),
           "\xc3\xa9t\xc3\xa9", "../../../../../../tmp/abs/../x"}) {
    std::string safe = sanitizeFileName(name);
    EXPECT_FALSE(safe.empty()) << name;
    EXPECT_NE(safe.front(), '.') << name;
    EXPECT_EQ(safe.find('/'), std::string::npos) << name;
    for (char c : safe)
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                  c == '-' || c == '.')
          << name;
    EXPECT_LE(safe.size(), kMaxSafeFileNameLength);
  }
  EXPECT_NE(sanitizeFileName("a/b"), sanitizeFileName("a_b"));
  EXPECT_EQ(sanitizeFileName("a/b"), sanitizeFileName("a/b"));
  EXPECT_EQ(sanitizeFileName(std::string(1000, 'x')).size(),
            kMaxSafeFileNameLength);
}

TEST(FileNameTest, ResolvesCollisionsInOrder) {
  FileNameSet names;
  EXPECT_EQ(names.add("main"), "main");
  EXPECT_EQ(names.add("main"), "main-2");
  EXPECT_EQ(names.add("Main"), "Main-3");
  EXPECT_EQ(names.add("main-2"), "main-2-2");
}

} // namespace
