//===- DbImportFuzzer.cpp - libFuzzer target: kopt db import ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Feeds text, as an export file, to the import of `kopt db import`
// (KernelDatabase::importJsonLines) into a fresh SQLite file, and checks
// what docs/KernelDatabase.md promises: an import that fails leaves the
// database empty; one that succeeds leaves a database that `verify`
// accepts, whose export imports into another database and exports again to
// the same bytes.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "kopt/Runtime/KernelDatabase.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unistd.h>

using namespace kopt::runtime;
using kopt::fuzz::check;

/// The database file, in a folder of its own that lives as long as the run:
/// under $TMPDIR, or in shared memory where there is some, since a fresh file
/// per input on a disk costs its syncs (40 ms each).
static const std::string &getDatabasePath() {
  static const std::string path = [] {
    const char *base = std::getenv("TMPDIR");
    std::string parent = base && *base                     ? base
                         : ::access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                                           : "/tmp";
    std::string folder = parent + "/kopt-fuzz-db-import-XXXXXX";
    check(::mkdtemp(folder.data()) != nullptr, "cannot make a folder");
    std::string file = folder + "/kernels.db";
    static const std::string removeLater = folder;
    std::atexit([] {
      for (const char *suffix : {"/kernels.db", "/kernels.db-wal",
                                 "/kernels.db-shm", "/kernels.db-journal"})
        ::unlink((removeLater + suffix).c_str());
      ::rmdir(removeLater.c_str());
    });
    return file;
  }();
  return path;
}

static std::string joinLines(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &line : lines)
    text += line + "\n";
  return text;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  const std::string &path = getDatabasePath();
  for (const char *suffix : {"", "-wal", "-shm", "-journal"})
    ::unlink((path + suffix).c_str());
  Result<std::unique_ptr<SqliteKernelDatabase>> db =
      SqliteKernelDatabase::open(path);
  check(db.isOk(), "cannot open a fresh database", db.status().message());

  Result<ImportSummary> summary = (*db)->importJsonLines(text, "input.jsonl");
  Result<KernelDatabaseStats> stats = (*db)->stats();
  check(stats.isOk(), "stats fail after an import", stats.status().message());
  if (!summary) {
    check(stats->records == 0 && stats->attempts == 0,
          "a failed import left rows behind", summary.status().message());
    return 0;
  }
  check(stats->records == summary->added &&
            stats->attempts == summary->attemptsAdded,
        "the database holds other than what the import reported");
  Result<std::vector<std::string>> problems = (*db)->findProblems();
  check(problems.isOk(), "verify cannot run", problems.status().message());
  check(problems->empty(), "an imported record fails verify",
        joinLines(*problems));

  Result<std::string> exported = (*db)->exportJsonLines();
  check(exported.isOk(), "export fails", exported.status().message());
  MemoryKernelDatabase copy;
  Result<ImportSummary> reimported = copy.importJsonLines(*exported);
  check(reimported.isOk(), "an export does not import",
        reimported.status().message());
  Result<std::string> again = copy.exportJsonLines();
  check(again.isOk() && *again == *exported,
        "export, import and export gave other bytes");
  return 0;
}
