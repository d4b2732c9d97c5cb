//===- InputFile.cpp - Read an input file within bounds ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The file is opened without blocking and checked through its descriptor,
// so what is checked is what is read: a FIFO neither blocks the open nor is
// read, and a path swapped after the check changes nothing. The file is read
// rather than mapped, so one truncated meanwhile cannot fault a later read.
//
//===----------------------------------------------------------------------===//

#include "kopt/Support/InputLimits.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir::kopt;

uint64_t mlir::kopt::getMaxInputBytes() {
  if (const char *text = std::getenv(kMaxInputBytesVariable)) {
    uint64_t value = 0;
    if (!llvm::StringRef(text).trim().getAsInteger(10, value) && value > 0)
      return value;
  }
  return kDefaultMaxInputBytes;
}

/// The error for an input of `size` bytes (`orMore`: at least) over `limit`.
static llvm::Error tooLarge(llvm::StringRef path, uint64_t size, uint64_t limit,
                            bool orMore = false) {
  return llvm::createStringError(
      "'%s' is %llu bytes%s, more than the input limit of %llu bytes (set "
      "%s to raise it)",
      path.str().c_str(), static_cast<unsigned long long>(size),
      orMore ? " or more" : "", static_cast<unsigned long long>(limit),
      kMaxInputBytesVariable);
}

/// Reads stdin up to `limit` bytes.
static llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readStdin(uint64_t limit) {
  llvm::SmallString<0> text;
  char chunk[1 << 16];
  while (true) {
    ssize_t count = ::read(STDIN_FILENO, chunk, sizeof(chunk));
    if (count < 0 && errno == EINTR)
      continue;
    if (count < 0)
      return llvm::createStringError(
          std::error_code(errno, std::generic_category()),
          "cannot read stdin: %s", std::strerror(errno));
    if (count == 0)
      break;
    text.append(chunk, chunk + count);
    if (text.size() > limit)
      return tooLarge("-", text.size(), limit, /*orMore=*/true);
  }
  return llvm::MemoryBuffer::getMemBufferCopy(text, "<stdin>");
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
mlir::kopt::readInputFile(llvm::StringRef path) {
  uint64_t limit = getMaxInputBytes();
  if (path == "-")
    return readStdin(limit);
  std::string name = path.str();
  int fd = ::open(name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    std::error_code error(errno, std::generic_category());
    return llvm::createStringError(error, "cannot read '%s': %s", name.c_str(),
                                   error.message().c_str());
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    std::error_code error(errno, std::generic_category());
    return llvm::createStringError(error, "cannot read '%s': %s", name.c_str(),
                                   error.message().c_str());
  }
  if (S_ISDIR(info.st_mode))
    return llvm::createStringError("'%s' is a directory, not a file",
                                   name.c_str());
  if (!S_ISREG(info.st_mode))
    return llvm::createStringError(
        "'%s' is not a regular file (a FIFO, a device or a socket); kopt "
        "reads only regular files",
        name.c_str());
  uint64_t size = static_cast<uint64_t>(info.st_size);
  if (size > limit)
    return tooLarge(path, size, limit);
  auto buffer = llvm::MemoryBuffer::getOpenFile(
      llvm::sys::fs::convertFDToNativeFile(fd), path, size,
      /*RequiresNullTerminator=*/true, /*IsVolatile=*/true);
  if (std::error_code error = buffer.getError())
    return llvm::createStringError(error, "cannot read '%s': %s", name.c_str(),
                                   error.message().c_str());
  return std::move(*buffer);
}
