//===- LaunchArguments.h - Scalar kernel arguments of plans -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A launch step's arguments are tensor names or typed scalar literals
// (`i32:4`, `f32:0.5`; docs/KernelPlan.md). Every runner of plans (the plan
// runner, the runtime's prepared plans) turns a literal into the 8 bytes of
// argument storage that cuLaunchKernel reads through a pointer.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_LAUNCHARGUMENTS_H
#define KOPT_RUNTIME_CUDA_LAUNCHARGUMENTS_H

#include "kopt/Runtime/Status.h"

#include <cstdint>
#include <string>

namespace kopt::runtime {

/// Parses a `i32:N`, `i64:N`, `f32:X` or `f64:X` literal into 8 bytes of
/// argument storage (a kernel reads only the first 4 for 32-bit types).
/// Fails for a malformed or out-of-range literal or another prefix.
Result<uint64_t> encodeScalarArgument(const std::string &arg);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_LAUNCHARGUMENTS_H
