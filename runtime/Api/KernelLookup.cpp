//===- KernelLookup.cpp - A task's kernel for the current device -*- C++
//-*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelLookup.h"

#include "kopt/Runtime/Cuda/BoundPlan.h"
#include "kopt/Runtime/ModuleRunner.h"

#include <optional>

using namespace kopt::runtime;

/// The architecture's number (`sm_90a` gives 90), or -1.
static int archNumber(const std::string &arch) {
  if (arch.rfind("sm_", 0) != 0)
    return -1;
  int number = 0;
  size_t i = 3;
  for (; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i)
    number = number * 10 + (arch[i] - '0');
  return i == 3 ? -1 : number;
}

Result<KernelChoice>
kopt::runtime::findKernelForArch(KernelDatabase &database, std::string_view key,
                                 const std::string &arch,
                                 const std::string &precision) {
  if (key.empty())
    return Status::error(StatusCode::InvalidArgument, "an empty task key");
  // Ranks: 0 = this architecture, 1 = an older one's PTX, 2 = source only.
  std::optional<KernelRecord> best;
  int bestRank = 3;
  RecordFilter filter;
  filter.taskKeyPrefix = std::string(key);
  Status walked = database.forEachRecord(filter, [&](const KernelRecord &r) {
    if (r.taskKey != key || !r.valid || r.fingerprint.precision != precision)
      return Status::success();
    const std::string &built = r.fingerprint.computeCapability;
    int rank = built == arch ? 0 : isPtxCompatible(built, arch) ? 1 : 2;
    bool better = rank < bestRank;
    if (!better && rank == bestRank) {
      int builtNumber = archNumber(built);
      int bestNumber = archNumber(best->fingerprint.computeCapability);
      better = rank == 1 && builtNumber != bestNumber
                   ? builtNumber > bestNumber
                   : r.winner.medianMs < best->winner.medianMs;
    }
    if (better) {
      best = r;
      bestRank = rank;
    }
    return Status::success();
  });
  if (!walked.isOk())
    return walked;
  if (!best)
    return Status::error(StatusCode::Unavailable,
                         "no valid kernel for task " + std::string(key) +
                             " under precision " + precision +
                             " in the kernel database");
  auto plan = kernelPlanFromJson(best->plan);
  if (!plan)
    return plan.status().withContext(describeRecord(*best));
  KernelChoice choice;
  choice.binaries = getRecordBinaries(*best, *plan);
  choice.plan = std::move(*plan);
  const std::string &built = best->fingerprint.computeCapability;
  choice.note =
      describeRecord(*best) + ", measured on " + built +
      (bestRank == 0   ? ""
       : bestRank == 1 ? "; no record for " + arch + ": its PTX is JIT-compiled"
                       : "; no record for " + arch +
                             " or an older architecture: compiled "
                             "from source");
  choice.record = std::move(*best);
  return choice;
}
