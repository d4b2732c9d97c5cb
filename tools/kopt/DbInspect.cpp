//===- DbInspect.cpp - kopt db list, show and stats -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The commands that only read the database. They open it read-only, so they
// never write to the file, not even to migrate an older schema. Text goes to
// people; `--json` prints the same as a versioned document (kopt.db.list/1,
// kopt.db.show/1, kopt.db.stats/1).
//
//===----------------------------------------------------------------------===//

#include "DbCommand.h"

#include "kopt/Runtime/TaskPlan.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>
#include <sys/stat.h>

using namespace mlir::kopt::db;
namespace rt = ::kopt::runtime;

/// `value` as an llvm::json value, for pretty printing.
static llvm::json::Value toLlvmJson(const rt::json::Value &value) {
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse(rt::json::write(value));
  if (!parsed) {
    // The runtime writes valid JSON; this cannot happen.
    llvm::consumeError(parsed.takeError());
    return nullptr;
  }
  return std::move(*parsed);
}

/// Prints `document` indented by two spaces, keys sorted.
static void printJson(llvm::json::Value document) {
  llvm::outs() << llvm::formatv("{0:2}", document) << "\n";
}

static std::string formatMs(double ms) {
  return llvm::formatv("{0:F4}", ms).str();
}

static std::string formatSpeedup(const rt::KernelRecord &record) {
  std::optional<double> speedup = getSpeedup(record);
  return speedup ? llvm::formatv("{0:F2}x", *speedup).str() : "-";
}

static llvm::json::Value speedupJson(const rt::KernelRecord &record) {
  std::optional<double> speedup = getSpeedup(record);
  return speedup ? llvm::json::Value(*speedup) : llvm::json::Value(nullptr);
}

//===----------------------------------------------------------------------===//
// list
//===----------------------------------------------------------------------===//

int mlir::kopt::db::runList(const DbOptions &options) {
  auto db = openDatabase(options, OpenMode::Read);
  if (!db)
    return 1;
  rt::RecordFilter filter;
  filter.withBinaries = false;
  auto records = db->list(filter);
  if (!records) {
    printError(records.status().message());
    return 1;
  }

  if (options.json) {
    llvm::json::Array entries;
    for (const rt::KernelRecord &record : *records)
      entries.push_back(llvm::json::Object{
          {"task_key", record.taskKey},
          {"fingerprint_hash", record.fingerprint.hash()},
          {"fingerprint", toLlvmJson(rt::toJson(record.fingerprint))},
          {"proposer", record.provenance.proposer},
          {"winner_median_ms", record.winner.medianMs},
          {"baseline_median_ms", record.baseline.medianMs},
          {"speedup", speedupJson(record)},
          {"valid", record.valid},
          {"stale", record.stale}});
    printJson(llvm::json::Object{{"schema", "kopt.db.list/1"},
                                 {"database", options.name},
                                 {"records", std::move(entries)}});
    return 0;
  }

  llvm::raw_ostream &os = llvm::outs();
  const char *format = "{0,-12}  {1,-16}  {2,-9}  {3,11}  {4,11}  {5,8}  {6}";
  os << llvm::formatv(format, "KEY", "FINGERPRINT", "PROPOSER", "WINNER ms",
                      "BASELINE ms", "SPEEDUP", "VALID")
     << "\n";
  for (const rt::KernelRecord &record : *records)
    os << llvm::formatv(format, shortKey(record.taskKey),
                        record.fingerprint.hash(), record.provenance.proposer,
                        formatMs(record.winner.medianMs),
                        formatMs(record.baseline.medianMs),
                        formatSpeedup(record), record.valid ? "yes" : "no")
       << (record.stale ? "  stale" : "") << "\n";
  return 0;
}

//===----------------------------------------------------------------------===//
// show
//===----------------------------------------------------------------------===//

static std::string describeTimes(const rt::TimingSummary &times) {
  return llvm::formatv("median {0} ms, min {1}, p10 {2}, p90 {3}",
                       formatMs(times.medianMs), formatMs(times.minMs),
                       formatMs(times.p10Ms), formatMs(times.p90Ms))
      .str();
}

static std::string describePlan(const rt::json::Value &json) {
  auto plan = rt::kernelPlanFromJson(json);
  if (!plan)
    return "does not read: " + plan.status().message();
  std::vector<std::string> ids;
  for (const rt::KernelSource &source : plan->sources)
    ids.push_back(source.id);
  size_t steps = plan->steps.size();
  return llvm::formatv("{0} {1}: {2} source{3} ({4}), {5} step{6}, {7} "
                       "launch{8}",
                       plan->proposer, plan->variant, ids.size(),
                       ids.size() == 1 ? "" : "s", llvm::join(ids, ", "), steps,
                       steps == 1 ? "" : "s", plan->countLaunches(),
                       plan->countLaunches() == 1 ? "" : "es")
             .str() +
         (plan->arithmetic == "fp32" ? ""
                                     : ", " + plan->arithmetic + " arithmetic");
}

static std::string describeBinary(const std::optional<std::string> &bytes,
                                  const std::string &hash) {
  if (!bytes)
    return "none";
  return std::to_string(bytes->size()) + " bytes, hash " + hash;
}

static void printRecord(llvm::raw_ostream &os, const rt::KernelRecord &record) {
  const rt::Provenance &provenance = record.provenance;
  std::string origin = provenance.proposer;
  std::vector<std::string> details;
  if (!provenance.model.empty())
    details.push_back("model " + provenance.model);
  if (!provenance.promptHash.empty())
    details.push_back("prompt " + provenance.promptHash);
  if (provenance.round)
    details.push_back("round " + std::to_string(provenance.round));
  if (!details.empty())
    origin += " (" + llvm::join(details, ", ") + ")";

  os << "record on " << record.fingerprint.hash() << "\n";
  auto field = [&](llvm::StringRef name, const std::string &value) {
    os << "  " << llvm::left_justify(name, 12) << " " << value << "\n";
  };
  field("fingerprint", record.fingerprint.toString());
  field("valid", record.valid ? "yes" : "no");
  field("stale",
        record.stale ? "yes (measured under another driver or NVRTC)" : "no");
  field("proposer", origin);
  field("winner", describeTimes(record.winner));
  field("baseline", describeTimes(record.baseline));
  field("speedup", formatSpeedup(record));
  field("plan", describePlan(record.plan));
  field("cubin", describeBinary(record.cubin, record.cubinHash));
  field("ptx", describeBinary(record.ptx, record.ptxHash));
  field("validation", rt::json::write(record.validation));
  field("created", formatTime(record.createdAt));
  field("updated", formatTime(record.updatedAt));
}

static void printAttempt(llvm::raw_ostream &os,
                         const rt::AttemptRecord &attempt) {
  os << "  " << formatTime(attempt.time) << "  on "
     << attempt.fingerprint.hash() << "  " << attempt.proposer << "  "
     << (attempt.valid ? "valid" : "failed")
     << (attempt.failedCheck.empty() ? "" : ": " + attempt.failedCheck);
  if (!attempt.feedback.isNull())
    os << "  " << rt::json::write(attempt.feedback);
  os << "\n";
}

int mlir::kopt::db::runShow(const DbOptions &options) {
  const std::string &prefix = options.inputs.front();
  auto db = openDatabase(options, OpenMode::Read);
  if (!db)
    return 1;
  rt::RecordFilter filter;
  filter.taskKeyPrefix = prefix;
  auto records = db->list(filter);
  if (!records) {
    printError(records.status().message());
    return 1;
  }
  auto attempts = db->listAttempts(prefix);
  if (!attempts) {
    printError(attempts.status().message());
    return 1;
  }

  std::set<std::string> keys;
  for (const rt::KernelRecord &record : *records)
    keys.insert(record.taskKey);
  for (const rt::AttemptRecord &attempt : *attempts)
    keys.insert(attempt.taskKey);
  if (keys.empty()) {
    printError("no record or attempt in '" + options.name +
               "' has a task key that starts with '" + prefix + "'");
    return 1;
  }
  if (keys.size() > 1) {
    std::vector<std::string> some(keys.begin(), keys.end());
    if (some.size() > 5) {
      some.resize(5);
      some.push_back("...");
    }
    printError("task key prefix '" + prefix + "' is ambiguous in '" +
               options.name + "': it matches " + std::to_string(keys.size()) +
               " tasks: " + llvm::join(some, ", ") + "; give more of the key");
    return 1;
  }
  const std::string &key = *keys.begin();

  if (options.json) {
    llvm::json::Array recordArray, attemptArray;
    for (const rt::KernelRecord &record : *records) {
      rt::json::Value value = rt::toJson(record, /*withBinaries=*/false);
      value.set("fingerprint_hash", record.fingerprint.hash());
      value.set("stale", record.stale);
      if (record.cubin)
        value.set("cubin_bytes", record.cubin->size());
      if (record.ptx)
        value.set("ptx_bytes", record.ptx->size());
      recordArray.push_back(toLlvmJson(value));
    }
    for (const rt::AttemptRecord &attempt : *attempts) {
      rt::json::Value value = rt::toJson(attempt);
      value.set("fingerprint_hash", attempt.fingerprint.hash());
      attemptArray.push_back(toLlvmJson(value));
    }
    printJson(llvm::json::Object{{"schema", "kopt.db.show/1"},
                                 {"database", options.name},
                                 {"task_key", key},
                                 {"records", std::move(recordArray)},
                                 {"attempts", std::move(attemptArray)}});
    return 0;
  }

  llvm::raw_ostream &os = llvm::outs();
  os << "task " << key << "\n";
  if (records->empty())
    os << "no record\n";
  for (const rt::KernelRecord &record : *records)
    printRecord(os, record);
  os << "attempts (" << attempts->size() << ")\n";
  for (const rt::AttemptRecord &attempt : *attempts)
    printAttempt(os, attempt);
  return 0;
}

//===----------------------------------------------------------------------===//
// stats
//===----------------------------------------------------------------------===//

int mlir::kopt::db::runStats(const DbOptions &options) {
  auto db = openDatabase(options, OpenMode::Read);
  if (!db)
    return 1;
  auto stats = db->stats();
  if (!stats) {
    printError(stats.status().message());
    return 1;
  }
  rt::RecordFilter filter;
  filter.withBinaries = false;
  auto records = db->list(filter);
  if (!records) {
    printError(records.status().message());
    return 1;
  }

  struct FingerprintCount {
    std::string text;
    size_t records = 0;
  };
  std::map<std::string, FingerprintCount> fingerprints;
  std::map<std::string, size_t> proposers;
  std::vector<double> speedups;
  for (const rt::KernelRecord &record : *records) {
    FingerprintCount &count = fingerprints[record.fingerprint.hash()];
    count.text = record.fingerprint.toString();
    ++count.records;
    ++proposers[record.provenance.proposer];
    if (std::optional<double> speedup = getSpeedup(record);
        speedup && record.valid)
      speedups.push_back(*speedup);
  }
  llvm::sort(speedups);
  std::optional<double> medianSpeedup, bestSpeedup;
  if (!speedups.empty()) {
    size_t middle = speedups.size() / 2;
    medianSpeedup = speedups.size() % 2
                        ? speedups[middle]
                        : (speedups[middle - 1] + speedups[middle]) / 2;
    bestSpeedup = speedups.back();
  }
  struct stat info;
  int64_t fileBytes =
      ::stat(options.database.c_str(), &info) == 0 ? info.st_size : 0;

  if (options.json) {
    llvm::json::Array fingerprintArray;
    for (const auto &[hash, count] : fingerprints)
      fingerprintArray.push_back(
          llvm::json::Object{{"hash", hash},
                             {"fingerprint", count.text},
                             {"records", static_cast<int64_t>(count.records)}});
    llvm::json::Object proposerCounts;
    for (const auto &[proposer, count] : proposers)
      proposerCounts[proposer] = static_cast<int64_t>(count);
    auto optionalNumber = [](std::optional<double> value) {
      return value ? llvm::json::Value(*value) : llvm::json::Value(nullptr);
    };
    printJson(llvm::json::Object{
        {"schema", "kopt.db.stats/1"},
        {"database", options.name},
        {"schema_version", db->getSchemaVersion()},
        {"file_bytes", fileBytes},
        {"records", static_cast<int64_t>(stats->records)},
        {"valid_records", static_cast<int64_t>(stats->validRecords)},
        {"stale_records", static_cast<int64_t>(stats->staleRecords)},
        {"attempts", static_cast<int64_t>(stats->attempts)},
        {"failed_attempts", static_cast<int64_t>(stats->failedAttempts)},
        {"cubins", static_cast<int64_t>(stats->cubins)},
        {"ptxs", static_cast<int64_t>(stats->ptxs)},
        {"binary_bytes", stats->binaryBytes},
        {"median_speedup", optionalNumber(medianSpeedup)},
        {"best_speedup", optionalNumber(bestSpeedup)},
        {"fingerprints", std::move(fingerprintArray)},
        {"proposers", std::move(proposerCounts)}});
    return 0;
  }

  llvm::raw_ostream &os = llvm::outs();
  auto field = [&](llvm::StringRef name, const std::string &value) {
    os << "  " << llvm::left_justify(name, 12) << " " << value << "\n";
  };
  os << "kernel database '" << options.name << "'\n";
  field("schema", std::to_string(db->getSchemaVersion()));
  field("file", std::to_string(fileBytes) + " bytes");
  field("records",
        llvm::formatv("{0} ({1} valid, {2} invalid, {3} stale)", stats->records,
                      stats->validRecords, stats->records - stats->validRecords,
                      stats->staleRecords)
            .str());
  field("attempts", llvm::formatv("{0} ({1} failed)", stats->attempts,
                                  stats->failedAttempts)
                        .str());
  field("binaries",
        llvm::formatv("{0} cubins, {1} PTX, {2} bytes", stats->cubins,
                      stats->ptxs, stats->binaryBytes)
            .str());
  field("speedup",
        medianSpeedup
            ? llvm::formatv("median {0:F2}x, best {1:F2}x over {2} "
                            "valid records",
                            *medianSpeedup, *bestSpeedup, speedups.size())
                  .str()
            : "-");
  field("fingerprints", std::to_string(fingerprints.size()));
  for (const auto &[hash, count] : fingerprints)
    os << "    " << hash << "  "
       << llvm::left_justify(plural(count.records, "record", "records"), 14)
       << count.text << "\n";
  field("proposers", std::to_string(proposers.size()));
  for (const auto &[proposer, count] : proposers)
    os << "    " << llvm::left_justify(proposer.empty() ? "-" : proposer, 16)
       << plural(count, "record", "records") << "\n";
  return 0;
}
