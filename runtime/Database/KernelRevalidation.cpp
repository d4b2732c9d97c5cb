//===- KernelRevalidation.cpp - Winners of another toolchain ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Marking works on the records without their binaries, in one transaction,
// so that the flags always agree with one toolchain. Re-evaluation happens
// outside any transaction: it takes GPU time, and other processes must be
// able to write meanwhile. Each result is stored with `put`, so a record that
// another process stored for the same target in the meantime is only
// replaced when the new one is better.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelRevalidation.h"

#include <set>
#include <utility>

using namespace kopt::runtime;

bool kopt::runtime::isSameDeviceAndCodegen(const DeviceFingerprint &a,
                                           const DeviceFingerprint &b) {
  return withToolchainOf(a, b) == b;
}

DeviceFingerprint
kopt::runtime::withToolchainOf(const DeviceFingerprint &recorded,
                               const DeviceFingerprint &current) {
  DeviceFingerprint target = recorded;
  target.driverVersion = current.driverVersion;
  target.nvrtcVersion = current.nvrtcVersion;
  return target;
}

size_t RevalidationSummary::countPending() const {
  size_t pending = 0;
  for (const StaleRecord &record : stale)
    pending += record.pending ? 1 : 0;
  return pending;
}

Result<std::vector<StaleRecord>>
kopt::runtime::markStaleRecords(KernelDatabase &db,
                                const RevalidationScope &scope) {
  std::vector<StaleRecord> stale;
  Status status = db.transact([&]() -> Status {
    RecordFilter filter;
    filter.withBinaries = false;
    Result<std::vector<KernelRecord>> records = db.list(filter);
    if (!records)
      return records.status();
    std::set<std::pair<std::string, std::string>> present;
    for (const KernelRecord &record : *records)
      present.insert({record.taskKey, record.fingerprint.hash()});

    for (const KernelRecord &record : *records) {
      const DeviceFingerprint &fingerprint = record.fingerprint;
      if (scope.sameDeviceOnly &&
          !isSameDeviceAndCodegen(fingerprint, scope.current))
        continue;
      bool otherToolchain =
          fingerprint.driverVersion != scope.current.driverVersion ||
          fingerprint.nvrtcVersion != scope.current.nvrtcVersion;
      // An invalid record is never used, so there is nothing to re-validate.
      bool isStale = record.valid && otherToolchain;
      if (record.stale != isStale) {
        Result<bool> marked =
            db.setStale(record.taskKey, fingerprint.hash(), isStale);
        if (!marked)
          return marked.status();
      }
      if (!isStale)
        continue;
      StaleRecord entry;
      entry.taskKey = record.taskKey;
      entry.fingerprint = fingerprint;
      entry.target = withToolchainOf(fingerprint, scope.current);
      entry.pending = !present.count({entry.taskKey, entry.target.hash()});
      stale.push_back(std::move(entry));
    }
    return Status::success();
  });
  if (!status.isOk())
    return status;
  return stale;
}

Result<RevalidationSummary>
kopt::runtime::revalidateStaleRecords(KernelDatabase &db,
                                      const RevalidationScope &scope,
                                      const ReevaluateFunction &reevaluate) {
  RevalidationSummary summary;
  Result<std::vector<StaleRecord>> stale = markStaleRecords(db, scope);
  if (!stale)
    return stale.status();
  summary.stale = std::move(*stale);
  if (!reevaluate)
    return summary;

  for (const StaleRecord &entry : summary.stale) {
    if (!entry.pending)
      continue;
    Result<std::optional<KernelRecord>> record =
        db.lookup(entry.taskKey, entry.fingerprint);
    if (!record)
      return record.status();
    // Another process may have pruned it since it was marked.
    if (!record->has_value())
      continue;
    Result<KernelRecord> result = reevaluate(**record, entry.target);
    if (!result) {
      summary.errors.push_back(describeRecord(**record) + ": " +
                               result.status().message());
      continue;
    }
    // The result belongs to the target and is new there, whatever the
    // callback copied from the old record.
    KernelRecord revalidated = std::move(*result);
    revalidated.taskKey = entry.taskKey;
    revalidated.fingerprint = entry.target;
    revalidated.stale = false;
    revalidated.createdAt = revalidated.updatedAt = 0;
    Result<bool> stored = db.put(revalidated);
    if (!stored)
      return stored.status();
    ++(revalidated.valid ? summary.confirmed : summary.invalidated);
  }
  return summary;
}
