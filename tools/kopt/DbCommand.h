//===- DbCommand.h - kopt db's commands -------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt db` has commands of its own (list, show, export, import, verify,
// prune, stats, revalidate, init, queue). DbCommand.cpp parses the command
// line; the commands that read the database live in DbInspect.cpp, those
// that change it or check it in DbMaintain.cpp, the tuning queue's in
// DbQueue.cpp. Each returns the process exit code: 0 on
// success, 1 when the work failed, 2 for a bad command line.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_DBCOMMAND_H
#define KOPT_TOOLS_KOPT_DBCOMMAND_H

#include "kopt/Runtime/KernelDatabase.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kopt::db {

/// What the command line of one `kopt db` command asked for.
struct DbOptions {
  /// The database file or URL (`--db`, else `KOPT_DB`).
  std::string database;
  /// `database` for messages: without a password.
  std::string name;
  /// Whether `database` came from the command line (`--db`).
  bool fromCommandLine = false;
  /// queue: list every job; queue the failed ones again.
  bool jobs = false;
  bool retryFailed = false;
  /// `--json`: print a JSON document instead of text.
  bool json = false;
  /// show: the task key or its prefix; import: the files to read.
  std::vector<std::string> inputs;
  /// export: where to write (`-o`, "-" for stdout).
  std::string output = "-";
  /// export: write a SQLite file with this journal (`delete` or `wal`)
  /// instead of JSON lines; empty for JSON lines.
  std::string journal;
  /// prune: what to remove.
  std::optional<unsigned> olderThanDays;
  bool invalid = false;
  bool attempts = false;
  std::string fingerprint;
  bool dryRun = false;
  /// revalidate: the current toolchain's versions, empty to detect them.
  std::string driverVersion;
  std::string nvrtcVersion;
};

/// `kopt db list`: one line per record.
int runList(const DbOptions &options);
/// `kopt db show KEY`: every record and attempt of one task.
int runShow(const DbOptions &options);
/// `kopt db stats`: counts, sizes, fingerprints and proposers.
int runStats(const DbOptions &options);
/// `kopt db export`: everything as JSON lines.
int runExport(const DbOptions &options);
/// `kopt db import FILE...`: merges JSON lines, one transaction per file.
int runImport(const DbOptions &options);
/// `kopt db verify`: the file, the binaries' hashes and the plans.
int runVerify(const DbOptions &options);
/// `kopt db prune`: removes what the options select.
int runPrune(const DbOptions &options);
/// `kopt db revalidate`: marks winners of another toolchain stale.
int runRevalidate(const DbOptions &options);
/// `kopt db init`: creates kopt's tables.
int runInit(const DbOptions &options);
/// `kopt db queue`: the tuning queue's depth, workers and progress.
int runQueue(const DbOptions &options);

/// How a command opens the database.
enum class OpenMode {
  /// Never write: the file must exist, and an older schema is read as is.
  Read,
  /// Write to an existing file.
  Write,
  /// Write, creating the file when it does not exist.
  Create,
};

/// Opens the database of `options` (a file or a URL), or prints why it
/// cannot and returns null.
std::unique_ptr<::kopt::runtime::KernelDatabase>
openDatabase(const DbOptions &options, OpenMode mode);

/// Prints `message` as kopt's error on stderr.
void printError(llvm::StringRef message);

/// `count` and the noun `one` or `many` that goes with it: `1 record`.
std::string plural(size_t count, llvm::StringRef one, llvm::StringRef many);

/// The first 12 digits of a task key, as tables show it.
llvm::StringRef shortKey(llvm::StringRef key);

/// `seconds` since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
std::string formatTime(int64_t seconds);

/// The baseline's median over the winner's, or std::nullopt when the
/// winner has no time.
std::optional<double> getSpeedup(const ::kopt::runtime::KernelRecord &record);

} // namespace mlir::kopt::db

#endif // KOPT_TOOLS_KOPT_DBCOMMAND_H
