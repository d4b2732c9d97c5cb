//===- KernelLookup.h - A task's kernel for the current device --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The runtime looks a task up by key for the device it runs on, which need
// not be the one it was tuned on with the same driver: it takes the fastest
// valid record measured on the device's architecture, else the newest older
// architecture's (whose PTX the driver can JIT), else any (compiled from
// source with NVRTC), and says which.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_KERNELLOOKUP_H
#define KOPT_RUNTIME_KERNELLOOKUP_H

#include "kopt/Runtime/KernelDatabase.h"
#include "kopt/Runtime/RuntimeModule.h"
#include "kopt/Runtime/TaskPlan.h"

#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// The record chosen for a task, with its plan and binaries.
struct KernelChoice {
  KernelRecord record;
  KernelPlan plan;
  std::vector<SourceBinary> binaries;
  /// Why this record, in words.
  std::string note;
};

/// Chooses the record of task `key` for a device of architecture `arch`
/// (`sm_90`) under `precision` (see the file comment). Fails with
/// `unavailable` when no valid record of the key and precision exists.
Result<KernelChoice> findKernelForArch(KernelDatabase &database,
                                       std::string_view key,
                                       const std::string &arch,
                                       const std::string &precision);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_KERNELLOOKUP_H
