//===- OutputFile.h - Writing a command's output files ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every file a kopt command writes (the compiler's `-o`, `--emit-module`,
// `--emit-dir`, `kopt db export -o`, kopt-run's outputs) goes through
// OutputFile, which promises (docs/Architecture.md, "Output files"):
//
// - an output that is the same file (device and inode) as an input or the
//   kernel database is refused before anything is written;
// - a regular file or a missing path is written through a temporary file in
//   the target's directory and renamed over it only once complete, so it is
//   either the old file or the whole new one, never partial or empty;
// - a symbolic link is written through: its target is replaced, the link
//   stays; a link to nothing is refused;
// - a character device or a FIFO (/dev/null, /dev/full, a pipe) is written
//   in place and never replaced; anything else that is not a regular file
//   is refused;
// - every write, flush, sync, close and rename error is returned as a
//   Status naming the path, and the temporary file is removed.
//
// POSIX only, no LLVM: the runtime's tools use it too.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_OUTPUTFILE_H
#define KOPT_RUNTIME_OUTPUTFILE_H

#include "kopt/Runtime/Status.h"

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// The files a command must not write over: its inputs and its kernel
/// database. Compared by device and inode when an output is opened.
class ProtectedFiles {
public:
  /// Protects the input `path` ("-" and missing files are ignored).
  void addInput(const std::string &path);
  /// Protects the SQLite database `path` and its -wal, -shm and -journal
  /// files; a location that is no file (a PostgreSQL URL) protects nothing.
  void addDatabase(const std::string &path);

  /// Fails when `output` names the same file as a protected path: the same
  /// device and inode, or, while neither exists, the same name. An output
  /// that exists and is not a regular file (/dev/null) never fails.
  Status check(const std::string &output) const;

private:
  struct Entry {
    std::string path;
    /// "an input" or "the kernel database", for the message.
    const char *role;
  };
  std::vector<Entry> entries;
};

/// One output file being written; see the file comment for the rules. The
/// output only appears once `commit` succeeds: destroying an OutputFile that
/// was not committed removes its temporary file.
class OutputFile {
public:
  /// Opens `path` for writing ("-" is standard output), after checking it
  /// against `protect`.
  static Result<std::unique_ptr<OutputFile>>
  open(const std::string &path, const ProtectedFiles &protect = {});

  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  /// Appends `bytes`. A failure is kept and returned by `commit` too.
  Status write(std::string_view bytes);
  /// A stream over `write`, for code that writes to a std::ostream.
  std::ostream &stream();
  /// The first write error so far, for code that only learns from the
  /// stream that a write failed; success when there was none.
  Status getWriteStatus() const;
  /// Flushes, syncs and closes the file and, for a regular file, renames the
  /// temporary file over the target. Called at most once.
  Status commit();

  /// The path the user gave.
  const std::string &getPath() const;

  /// The state, defined in OutputFile.cpp only.
  struct Impl;

private:
  explicit OutputFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// Writes `bytes` to `path` through an OutputFile.
Status writeOutputFile(const std::string &path, std::string_view bytes,
                       const ProtectedFiles &protect = {});

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_OUTPUTFILE_H
