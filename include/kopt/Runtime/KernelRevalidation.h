//===- KernelRevalidation.h - Winners of another toolchain ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A winner measured under one driver and NVRTC version is not trusted under
// another until it has been validated and timed again. This is the database
// side of that: marking such winners stale, finding the ones that still have
// no record for the current toolchain, and storing what a re-evaluation
// returns. The re-evaluation itself (compile with the current NVRTC, validate
// and time on the GPU) is a callback, which the evaluator provides.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_KERNELREVALIDATION_H
#define KOPT_RUNTIME_KERNELREVALIDATION_H

#include "kopt/Runtime/KernelDatabase.h"

#include <functional>
#include <string>
#include <vector>

namespace kopt::runtime {

/// What stale records are judged against.
struct RevalidationScope {
  /// The machine now. Its driver and NVRTC versions decide which records are
  /// stale; its other fields matter only with `sameDeviceOnly`.
  DeviceFingerprint current;
  /// Only judge records of `current`'s device (compute capability, SM count,
  /// bandwidth, L2 size), code generator version and precision: the records
  /// a re-evaluation on this machine can time again. Off, every record is
  /// judged by its driver and NVRTC versions alone.
  bool sameDeviceOnly = true;
};

/// Whether `a` and `b` agree on everything but the driver and NVRTC
/// versions.
bool isSameDeviceAndCodegen(const DeviceFingerprint &a,
                            const DeviceFingerprint &b);

/// `recorded` with the driver and NVRTC versions of `current`: the
/// fingerprint under which a re-validated record is stored.
DeviceFingerprint withToolchainOf(const DeviceFingerprint &recorded,
                                  const DeviceFingerprint &current);

/// A winner measured under another driver or NVRTC version.
struct StaleRecord {
  std::string taskKey;
  DeviceFingerprint fingerprint;
  /// Where its re-validated record goes (`withToolchainOf`).
  DeviceFingerprint target;
  /// True when `target` has no record for the task yet, so the winner needs
  /// re-validation.
  bool pending = false;
};

/// Sets the stale flag of every valid record in `scope` whose driver or NVRTC
/// version differs from `scope.current`, and clears it on every other record
/// in `scope`; records outside `scope` keep theirs. One transaction. Returns
/// the stale records, ordered by task key then fingerprint hash.
Result<std::vector<StaleRecord>>
markStaleRecords(KernelDatabase &db, const RevalidationScope &scope);

/// Re-evaluates `record`, a winner measured under another toolchain, under
/// the current one: compiles its plan with the current NVRTC, validates it
/// and times it and the baseline on the GPU. Returns the record to store
/// under `target` (valid with the new times and evidence, or invalid), or an
/// error when it could not be evaluated at all (no GPU, a lost worker), which
/// leaves it pending. Attempts it wants kept, it adds itself.
using ReevaluateFunction = std::function<Result<KernelRecord>(
    const KernelRecord &record, const DeviceFingerprint &target)>;

/// What `revalidateStaleRecords` did.
struct RevalidationSummary {
  /// Every stale record in scope, as `markStaleRecords` returns them.
  std::vector<StaleRecord> stale;
  /// Pending records whose re-evaluation found them valid, and invalid; both
  /// are stored under their target fingerprint.
  size_t confirmed = 0;
  size_t invalidated = 0;
  /// One line per pending record that could not be re-evaluated.
  std::vector<std::string> errors;

  /// The number of stale records that need re-validation.
  size_t countPending() const;
};

/// Marks stale records (`markStaleRecords`), then, when `reevaluate` is set,
/// re-evaluates each pending one and stores the result under its target
/// fingerprint with `put`. Without `reevaluate` it only marks. Fails only
/// when the database does; a failed re-evaluation is counted in the summary.
Result<RevalidationSummary>
revalidateStaleRecords(KernelDatabase &db, const RevalidationScope &scope,
                       const ReevaluateFunction &reevaluate = {});

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_KERNELREVALIDATION_H
