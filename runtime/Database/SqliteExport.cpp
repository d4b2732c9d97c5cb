//===- SqliteExport.cpp - Copy a kernel database to a new file --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt db export --journal=delete`: a database file meant to be shipped. It
// is written beside its destination under a temporary name, through the
// same `merge` and `addAttempt` every other write uses, and renamed into
// place only when complete.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelDatabase.h"

#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

using namespace kopt::runtime;

Result<ExportSummary> kopt::runtime::exportSqliteFile(KernelDatabase &source,
                                                      const std::string &path,
                                                      SqliteJournal journal) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0)
    return Status::error(StatusCode::InvalidArgument,
                         "'" + path +
                             "' exists; a database file is written only "
                             "where there is none");
  std::string partial = path + ".partial-" + std::to_string(::getpid());
  auto removePartial = [&] {
    for (const char *suffix : {"", "-journal", "-wal", "-shm"})
      std::remove((partial + suffix).c_str());
  };
  removePartial();

  ExportSummary summary;
  Status status = [&]() -> Status {
    SqliteOpenOptions options;
    options.journal = journal;
    Result<std::unique_ptr<SqliteKernelDatabase>> target =
        SqliteKernelDatabase::open(partial, options);
    if (!target)
      return target.status();
    // One snapshot of the source, one transaction in the copy.
    return source.readSnapshot([&] {
      return (*target)->transact([&] {
        Status status = source.forEachRecord({}, [&](const KernelRecord &r) {
          ++summary.records;
          return (*target)->merge(r).status();
        });
        if (!status.isOk())
          return status;
        return source.forEachAttempt({}, [&](const AttemptRecord &attempt) {
          ++summary.attempts;
          return (*target)->addAttempt(attempt);
        });
      });
    });
  }();
  if (status.isOk() && std::rename(partial.c_str(), path.c_str()) != 0)
    status = Status::error(StatusCode::IoError,
                           "cannot rename '" + partial + "' to '" + path + "'");
  if (!status.isOk()) {
    removePartial();
    return status;
  }
  return summary;
}
