//===- DbMaintain.cpp - kopt db export, import, verify, ... -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The commands that move data in and out of the database, check it, and
// change it: export, import, verify, prune and revalidate. An export goes
// through an OutputFile (whole or not at all, never over the database); each
// imported file is one transaction. Revalidation only marks and lists here:
// re-evaluating a stale winner needs the evaluator on a GPU, which the tuning
// commands provide through revalidateStaleRecords.
//
//===----------------------------------------------------------------------===//

#include "DbCommand.h"

#include "kopt/Autotune/Autotuner.h"
#include "kopt/Autotune/Revalidator.h"
#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/KernelRevalidation.h"
#include "kopt/Runtime/OutputFile.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <ctime>
#include <fstream>
#include <iostream>

using namespace mlir::kopt::db;
namespace rt = ::kopt::runtime;

//===----------------------------------------------------------------------===//
// export and import
//===----------------------------------------------------------------------===//

/// `kopt db export --journal=MODE -o FILE`: a database file to ship.
static int exportDatabaseFile(rt::KernelDatabase &db,
                              const DbOptions &options) {
  auto summary = rt::exportSqliteFile(db, options.output,
                                      options.journal == "delete"
                                          ? rt::SqliteJournal::Delete
                                          : rt::SqliteJournal::Wal);
  if (!summary) {
    printError("cannot write '" + options.output +
               "': " + summary.status().message());
    return 1;
  }
  llvm::outs() << "exported " << plural(summary->records, "record", "records")
               << " and " << plural(summary->attempts, "attempt", "attempts")
               << " to the database file '" << options.output << "' ("
               << (options.journal == "delete" ? "rollback journal"
                                               : "write-ahead log")
               << ")\n";
  return 0;
}

int mlir::kopt::db::runExport(const DbOptions &options) {
  if (!options.journal.empty() &&
      (options.journal != "delete" && options.journal != "wal")) {
    printError("--journal must be delete or wal, not '" + options.journal +
               "'");
    return 2;
  }
  if (!options.journal.empty() && options.output == "-") {
    printError("--journal writes a database file: give it with -o FILE");
    return 2;
  }
  // Checked before the database is opened, which may create its -wal file.
  rt::ProtectedFiles protect;
  protect.addDatabase(options.database);
  if (rt::Status status = protect.check(options.output); !status.isOk()) {
    printError(status.message());
    return 1;
  }
  auto db = openDatabase(options, OpenMode::Read);
  if (!db)
    return 1;
  if (!options.journal.empty())
    return exportDatabaseFile(*db, options);
  // The export appears whole when complete, or not at all (an OutputFile
  // dropped before commit leaves nothing).
  std::cout.flush();
  auto out = rt::OutputFile::open(options.output, protect);
  if (!out) {
    printError(out.status().message());
    return 1;
  }
  auto summary = db->exportJsonLines((*out)->stream());
  if (!summary) {
    // The file's own error says why the stream failed.
    rt::Status written = (*out)->getWriteStatus();
    printError(written.isOk() ? summary.status().message() : written.message());
    return 1;
  }
  if (rt::Status status = (*out)->commit(); !status.isOk()) {
    printError(status.message());
    return 1;
  }
  if (options.output == "-")
    return 0;
  llvm::outs() << "exported " << plural(summary->records, "record", "records")
               << " and " << plural(summary->attempts, "attempt", "attempts")
               << " to '" << options.output << "'\n";
  return 0;
}

int mlir::kopt::db::runImport(const DbOptions &options) {
  auto db = openDatabase(options, OpenMode::Create);
  if (!db)
    return 1;
  bool allOk = true;
  for (const std::string &path : options.inputs) {
    std::ifstream file;
    std::istream *in = &std::cin;
    std::string name = path == "-" ? "<stdin>" : path;
    if (path != "-") {
      file.open(path, std::ios::binary);
      if (!file) {
        printError("cannot read '" + path + "'");
        allOk = false;
        continue;
      }
      in = &file;
    }
    auto summary = db->importJsonLines(*in, name);
    if (!summary) {
      printError(summary.status().message() + " (nothing from '" + name +
                 "' was imported)");
      allOk = false;
      continue;
    }
    llvm::outs() << llvm::formatv(
        "{0}: {1} added, {2} replaced, {3} kept; {4} "
        "added, {5} already present\n",
        name, summary->added, summary->replaced, summary->kept,
        plural(summary->attemptsAdded, "attempt", "attempts"),
        summary->attemptsPresent);
  }
  return allOk ? 0 : 1;
}

//===----------------------------------------------------------------------===//
// verify
//===----------------------------------------------------------------------===//

int mlir::kopt::db::runVerify(const DbOptions &options) {
  auto db = openDatabase(options, OpenMode::Read);
  if (!db)
    return 1;
  auto problems = db->findProblems();
  if (!problems) {
    printError(problems.status().message());
    return 1;
  }
  if (!problems->empty()) {
    printError("kernel database '" + options.name +
               "': " + plural(problems->size(), "problem", "problems") + ":");
    for (const std::string &problem : *problems)
      llvm::errs() << "  " << problem << "\n";
    return 1;
  }
  auto stats = db->stats();
  if (!stats) {
    printError(stats.status().message());
    return 1;
  }
  llvm::outs() << "kernel database '" << options.name << "': ok (schema "
               << db->getSchemaVersion() << ", "
               << plural(stats->records, "record", "records") << ", "
               << plural(stats->attempts, "attempt", "attempts") << ")\n";
  return 0;
}

//===----------------------------------------------------------------------===//
// prune
//===----------------------------------------------------------------------===//

static bool isFingerprintHash(llvm::StringRef text) {
  return text.size() == 16 && llvm::all_of(text, [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

int mlir::kopt::db::runPrune(const DbOptions &options) {
  bool byRecord =
      options.olderThanDays || options.invalid || !options.fingerprint.empty();
  if (!byRecord && !options.attempts) {
    printError("kopt db prune needs to be told what to remove: --older-than "
               "DAYS, --invalid, --fingerprint HASH or --attempts");
    return 2;
  }
  if (!options.fingerprint.empty() && !isFingerprintHash(options.fingerprint)) {
    printError("--fingerprint takes a fingerprint hash of 16 hex digits, as "
               "'kopt db list' shows it, not '" +
               options.fingerprint + "'");
    return 2;
  }
  auto db = openDatabase(options, OpenMode::Write);
  if (!db)
    return 1;

  rt::PruneOptions prune;
  prune.records = byRecord;
  prune.attempts = options.attempts;
  if (options.olderThanDays)
    prune.before = static_cast<int64_t>(std::time(nullptr)) -
                   int64_t(*options.olderThanDays) * 86400;
  prune.invalidOnly = options.invalid;
  prune.fingerprintHash = options.fingerprint;
  prune.dryRun = options.dryRun;
  auto summary = db->prune(prune);
  if (!summary) {
    printError(summary.status().message());
    return 1;
  }

  llvm::raw_ostream &os = llvm::outs();
  os << (options.dryRun ? "would remove " : "removed ")
     << plural(summary->records.size(), "record", "records") << " and "
     << plural(summary->attempts, "attempt", "attempts") << " from '"
     << options.name << "'" << (summary->records.empty() ? "\n" : ":\n");
  for (const rt::KernelRecord &record : summary->records)
    os << "  " << shortKey(record.taskKey) << "  " << record.fingerprint.hash()
       << "  " << (record.valid ? "valid  " : "invalid") << "  updated "
       << formatTime(record.updatedAt) << "\n";
  return 0;
}

//===----------------------------------------------------------------------===//
// revalidate
//===----------------------------------------------------------------------===//

/// `version` (1000 * major + 10 * minor, as CUDA counts) as `major.minor`.
static std::string formatCudaVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

/// The given version, or this machine's; prints why not and returns
/// std::nullopt when there is none.
static std::optional<std::string> getDriverVersion(const std::string &given) {
  if (!given.empty())
    return given;
  auto driver = rt::loadCudaDriver();
  if (!driver) {
    printError("cannot tell the current driver version (" +
               driver.status().message() + "); give it with --driver VERSION");
    return std::nullopt;
  }
  return formatCudaVersion((*driver)->version);
}

static std::optional<std::string> getNvrtcVersion(const std::string &given) {
  if (!given.empty())
    return given;
  auto version = rt::getNvrtcVersion();
  if (!version) {
    printError("cannot tell the current NVRTC version (" +
               version.status().message() + "); give it with --nvrtc VERSION");
    return std::nullopt;
  }
  return std::to_string(version->first) + "." + std::to_string(version->second);
}

int mlir::kopt::db::runRevalidate(const DbOptions &options) {
  std::optional<std::string> driver = getDriverVersion(options.driverVersion);
  if (!driver)
    return 2;
  std::optional<std::string> nvrtc = getNvrtcVersion(options.nvrtcVersion);
  if (!nvrtc)
    return 2;
  auto db = openDatabase(options, OpenMode::Write);
  if (!db)
    return 1;

  // With a GPU, this device's stale winners are evaluated again in a
  // kopt-worker (beside their stored baseline) and stored under the current
  // toolchain. Without one, every record is judged by its toolchain alone
  // and the stale ones are marked and listed.
  rt::RevalidationScope scope;
  std::string why;
  int devices = 0;
  std::optional<rt::DeviceFingerprint> device =
      probeDeviceFingerprint("fp32", why, devices);
  std::unique_ptr<WorkerPool> pool;
  rt::ReevaluateFunction reevaluate;
  if (device && options.driverVersion.empty() && options.nvrtcVersion.empty()) {
    scope.current = *device;
    scope.sameDeviceOnly = true;
    WorkerPoolOptions poolOptions;
    poolOptions.deviceCount = 1;
    pool = std::make_unique<WorkerPool>(poolOptions);
    reevaluate = makeWorkerReevaluator(*pool);
  } else {
    scope.current.driverVersion = *driver;
    scope.current.nvrtcVersion = *nvrtc;
    scope.sameDeviceOnly = false;
  }
  auto summary = rt::revalidateStaleRecords(*db, scope, reevaluate);
  if (!summary) {
    printError(summary.status().message());
    return 1;
  }

  llvm::raw_ostream &os = llvm::outs();
  os << "current toolchain: driver " << *driver << ", NVRTC " << *nvrtc << "\n";
  if (reevaluate) {
    os << "re-evaluated on this GPU (" << scope.current.computeCapability
       << "): " << summary->confirmed << " still valid, "
       << summary->invalidated << " no longer valid, " << summary->errors.size()
       << " could not be evaluated\n";
    for (const std::string &error : summary->errors)
      os << "  " << error << "\n";
    return summary->errors.empty() ? 0 : 1;
  }
  size_t pending = summary->countPending();
  os << "marked " << plural(summary->stale.size(), "winner", "winners")
     << " stale (measured under another driver or NVRTC); " << pending
     << (pending == 1 ? " needs" : " need") << " re-validation on a GPU"
     << (pending ? ":\n" : "\n");
  for (const rt::StaleRecord &stale : summary->stale)
    if (stale.pending)
      os << "  " << shortKey(stale.taskKey) << "  " << stale.fingerprint.hash()
         << "  driver " << stale.fingerprint.driverVersion << ", NVRTC "
         << stale.fingerprint.nvrtcVersion << "  ->  " << stale.target.hash()
         << "\n";
  return 0;
}
