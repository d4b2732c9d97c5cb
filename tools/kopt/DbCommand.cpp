//===- DbCommand.cpp - kopt db ----------------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt db` has commands of its own, which llvm::cl cannot nest under a
// subcommand. So the driver hands `kopt db ...` over before parsing, and this
// file parses it again as `kopt db` with its own subcommands, registered only
// then: the driver's help lists `db` once, and `kopt db list --help` shows
// list's options alone.
//
//===----------------------------------------------------------------------===//

#include "DbCommand.h"
#include "Commands.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <ctime>

using namespace mlir::kopt;
using namespace mlir::kopt::db;
namespace cl = llvm::cl;
namespace rt = ::kopt::runtime;

/// Lists `db` in `kopt --help`; the driver never parses it (see
/// runDbCommand).
static cl::SubCommand
    dbCommand("db", "Inspect, move and maintain a kernel database: list, show, "
                    "export, import, verify, prune, stats, revalidate, init, "
                    "queue");

namespace {
/// The commands and options of `kopt db`, created only when it runs.
struct DbCommandLine {
  cl::SubCommand list{"list", "One line per record: task key, fingerprint "
                              "hash, proposer, winner and baseline medians, "
                              "speedup, validity"};
  cl::SubCommand show{"show", "Every record of one task, with its attempts "
                              "(a unique prefix of the task key will do)"};
  cl::SubCommand exportCommand{
      "export", "Write every record (binaries in hex) and every attempt as "
                "JSON lines"};
  cl::SubCommand importCommand{
      "import", "Merge JSON lines written by export, one transaction per "
                "file: for each task and fingerprint the faster valid record "
                "stays"};
  cl::SubCommand verify{"verify",
                        "Check the file's integrity, every binary against "
                        "its hash and every stored plan; fail with the list "
                        "of problems"};
  cl::SubCommand prune{"prune", "Remove old or invalid records, the records "
                                "of one fingerprint, or attempts"};
  cl::SubCommand stats{"stats", "Count records, attempts and binaries, per "
                                "fingerprint and proposer"};
  cl::SubCommand revalidate{
      "revalidate", "Mark stale the winners measured under another driver "
                    "or NVRTC version, and list those that need re-validation "
                    "on a GPU"};

  cl::SubCommand init{"init", "Create kopt's tables in a database (a "
                              "PostgreSQL server's, or a new SQLite file) "
                              "and print its schema version"};
  cl::SubCommand queue{"queue", "Show the tuning queue (PostgreSQL): jobs "
                                "by state, workers, progress"};

  cl::opt<std::string> database{"db",
                                cl::desc("The kernel database: a SQLite file "
                                         "or a postgresql:// URL without a "
                                         "password (default: $KOPT_DB)"),
                                cl::value_desc("file or URL"),
                                cl::sub(init),
                                cl::sub(queue),
                                cl::sub(list),
                                cl::sub(show),
                                cl::sub(exportCommand),
                                cl::sub(importCommand),
                                cl::sub(verify),
                                cl::sub(prune),
                                cl::sub(stats),
                                cl::sub(revalidate)};
  cl::opt<bool> json{"json",         cl::desc("Print a JSON document"),
                     cl::sub(list),  cl::sub(show),
                     cl::sub(stats), cl::sub(queue)};
  cl::opt<bool> jobs{"jobs", cl::desc("Also list every job"), cl::sub(queue)};
  cl::opt<bool> retryFailed{"retry-failed",
                            cl::desc("Queue the failed jobs again first"),
                            cl::sub(queue)};

  cl::opt<std::string> key{cl::Positional, cl::desc("<task key or prefix>"),
                           cl::sub(show)};
  cl::opt<std::string> output{"o", cl::desc("Write here instead of stdout"),
                              cl::value_desc("file"), cl::init("-"),
                              cl::sub(exportCommand)};
  cl::opt<std::string> journal{
      "journal",
      cl::desc("Write a SQLite database file (with -o) instead of JSON "
               "lines, with this journal: delete, for a file to ship and "
               "read where it cannot be written, or wal"),
      cl::value_desc("delete|wal"), cl::sub(exportCommand)};
  cl::list<std::string> files{cl::Positional,
                              cl::desc("<file.jsonl>... ('-' for stdin)"),
                              cl::sub(importCommand)};

  cl::opt<unsigned> olderThan{
      "older-than",
      cl::desc("Remove records last updated more than N days ago (with "
               "--attempts, also attempts made then)"),
      cl::value_desc("N"), cl::sub(prune)};
  cl::opt<bool> invalid{"invalid",
                        cl::desc("Remove invalid records (with --attempts, "
                                 "also failed attempts)"),
                        cl::sub(prune)};
  cl::opt<std::string> fingerprint{
      "fingerprint",
      cl::desc("Remove the records of this fingerprint hash, as list shows it "
               "(with --attempts, also its attempts)"),
      cl::value_desc("hash"), cl::sub(prune)};
  cl::opt<bool> attempts{
      "attempts",
      cl::desc("Remove attempts: those the other options select, or all of "
               "them"),
      cl::sub(prune)};
  cl::opt<bool> dryRun{"dry-run",
                       cl::desc("Say what would be removed, and remove "
                                "nothing"),
                       cl::sub(prune)};

  cl::opt<std::string> driver{
      "driver",
      cl::desc("The current CUDA driver version, such as 12.8 (default: this "
               "machine's)"),
      cl::value_desc("version"), cl::sub(revalidate)};
  cl::opt<std::string> nvrtc{
      "nvrtc",
      cl::desc("The current NVRTC version, such as 12.8 (default: the NVRTC "
               "kopt loads)"),
      cl::value_desc("version"), cl::sub(revalidate)};
};
} // namespace

namespace {
/// Reaches llvm::cl's protected SubCommand::unregisterSubCommand, through the
/// access a derived class has; cl::ResetCommandLineParser would also remove
/// the generic options, --help among them.
struct SubCommandUnregistrar : cl::SubCommand {
  static void unregister(cl::SubCommand &sub) {
    (sub.*&SubCommandUnregistrar::unregisterSubCommand)();
  }
};
} // namespace

static const char *const kCommandNames[] = {
    "list",  "show",  "export",     "import", "verify",
    "prune", "stats", "revalidate", "init",   "queue"};

int mlir::kopt::runDbCommand(int argc, char **argv) {
  // argv is `kopt db [command] [arguments]`. Catch a misspelt command before
  // llvm::cl takes it for a stray positional argument.
  if (argc > 2 && argv[2][0] != '-' &&
      !llvm::is_contained(kCommandNames, llvm::StringRef(argv[2]))) {
    printError("unknown command 'kopt db " + std::string(argv[2]) +
               "'; try 'kopt db --help'");
    return 2;
  }

  // The driver's own subcommands are not db's; leave only db's registered.
  std::vector<cl::SubCommand *> registered(
      cl::getRegisteredSubcommands().begin(),
      cl::getRegisteredSubcommands().end());
  for (cl::SubCommand *sub : registered)
    if (sub != &cl::SubCommand::getTopLevel() &&
        sub != &cl::SubCommand::getAll())
      SubCommandUnregistrar::unregister(*sub);
  static DbCommandLine commandLine;

  std::string programName = std::string(argv[0]) + " db";
  std::vector<const char *> args = {programName.c_str()};
  args.insert(args.end(), argv + 2, argv + argc);
  cl::ParseCommandLineOptions(
      static_cast<int>(args.size()), args.data(),
      "kopt db: inspect, move and maintain a kernel database\n\n"
      "  kopt db list --db FILE [--json]\n"
      "  kopt db show KEY --db FILE [--json]\n"
      "  kopt db export --db FILE [-o OUT] [--journal=delete|wal]\n"
      "  kopt db import IN... --db FILE\n"
      "  kopt db verify --db FILE\n"
      "  kopt db prune --db FILE [--older-than DAYS] [--invalid]\n"
      "                [--fingerprint HASH] [--attempts] [--dry-run]\n"
      "  kopt db stats --db FILE [--json]\n"
      "  kopt db revalidate --db FILE [--driver VERSION] [--nvrtc VERSION]\n"
      "  kopt db init --db URL\n"
      "  kopt db queue --db URL [--jobs] [--retry-failed] [--json]\n\n"
      "FILE may be a postgresql:// URL everywhere; --db defaults to $KOPT_DB.\n"
      "See docs/KernelDatabase.md and docs/Fleet.md.\n");

  const DbCommandLine &line = commandLine;
  DbOptions options;
  options.database = line.database;
  options.fromCommandLine = !options.database.empty();
  if (options.database.empty())
    options.database = rt::getDatabaseFromEnvironment();
  options.name = rt::redactDatabaseUrl(options.database);
  options.jobs = line.jobs;
  options.retryFailed = line.retryFailed;
  options.json = line.json;
  options.output = line.output;
  options.journal = line.journal;
  if (line.olderThan.getNumOccurrences())
    options.olderThanDays = line.olderThan;
  options.invalid = line.invalid;
  options.attempts = line.attempts;
  options.fingerprint = line.fingerprint;
  options.dryRun = line.dryRun;
  options.driverVersion = line.driver;
  options.nvrtcVersion = line.nvrtc;
  if (line.show && !line.key.empty())
    options.inputs.push_back(line.key);
  if (line.importCommand)
    options.inputs.assign(line.files.begin(), line.files.end());

  struct Command {
    const cl::SubCommand &sub;
    int (*run)(const DbOptions &);
    /// What the command needs besides --db, for the error when it is
    /// missing; null when it needs nothing.
    const char *needs;
  };
  const Command commands[] = {
      {line.list, runList, nullptr},
      {line.show, runShow, "a task key or a prefix of one"},
      {line.exportCommand, runExport, nullptr},
      {line.importCommand, runImport, "at least one file to import"},
      {line.verify, runVerify, nullptr},
      {line.prune, runPrune, nullptr},
      {line.stats, runStats, nullptr},
      {line.revalidate, runRevalidate, nullptr},
      {line.init, runInit, nullptr},
      {line.queue, runQueue, nullptr},
  };
  for (const Command &command : commands) {
    if (!command.sub)
      continue;
    std::string name = "kopt db " + command.sub.getName().str();
    if (options.database.empty()) {
      printError(name + " needs --db FILE (or KOPT_DB); try '" + name +
                 " --help'");
      return 2;
    }
    if (command.needs && options.inputs.empty()) {
      printError(name + " needs " + command.needs + "; try '" + name +
                 " --help'");
      return 2;
    }
    return command.run(options);
  }
  printError("no command given; try 'kopt db --help'");
  return 2;
}

//===----------------------------------------------------------------------===//
// Shared by the commands
//===----------------------------------------------------------------------===//

std::unique_ptr<rt::KernelDatabase>
mlir::kopt::db::openDatabase(const DbOptions &command, OpenMode mode) {
  rt::KernelDatabaseOptions options;
  options.readOnly = mode == OpenMode::Read;
  options.create = mode == OpenMode::Create;
  // Writing into a damaged file could spread the damage.
  options.checkIntegrity = mode != OpenMode::Read;
  options.fromCommandLine = command.fromCommandLine;
  auto db = rt::openKernelDatabase(command.database, options);
  if (!db) {
    printError(db.status().message());
    return nullptr;
  }
  return std::move(*db);
}

void mlir::kopt::db::printError(llvm::StringRef message) {
  llvm::WithColor::error(llvm::errs(), "kopt") << message << "\n";
}

std::string mlir::kopt::db::plural(size_t count, llvm::StringRef one,
                                   llvm::StringRef many) {
  return std::to_string(count) + " " + (count == 1 ? one : many).str();
}

llvm::StringRef mlir::kopt::db::shortKey(llvm::StringRef key) {
  return key.take_front(12);
}

std::string mlir::kopt::db::formatTime(int64_t seconds) {
  std::time_t time = static_cast<std::time_t>(seconds);
  std::tm parts = {};
  char text[32] = "?";
  if (::gmtime_r(&time, &parts))
    std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &parts);
  return text;
}

std::optional<double>
mlir::kopt::db::getSpeedup(const rt::KernelRecord &record) {
  if (!(record.winner.medianMs > 0) || !(record.baseline.medianMs > 0))
    return std::nullopt;
  return record.baseline.medianMs / record.winner.medianMs;
}
