//===- EvaluationChecks.h - GPU-free pieces of the evaluator ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Decisions of the evaluation engine (Evaluator.h) that need no GPU, kept
// here so that they are unit-tested anywhere: launch counting against a
// plan's declared kernels (DESIGN's point 6), checking fp64 reference values
// against an output (point 2), and turning comparisons into evidence.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_EVALUATIONCHECKS_H
#define KOPT_RUNTIME_EVALUATOR_EVALUATIONCHECKS_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Protocol.h"
#include "kopt/Runtime/TaskPlan.h"
#include "runtime/Evaluator/Comparison.h"
#include "runtime/Evaluator/InputGenerator.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// The distribution whose `getDistributionName` is `name`, or std::nullopt.
std::optional<InputDistribution> parseDistributionName(std::string_view name);

/// Checks the kernels one run launched (`launched`, kernel names in order)
/// against `plan`: each launch step's entry must have run exactly as many
/// times as the plan declares it. Kernels the plan does not declare are
/// allowed only when the plan has library steps (GEMM, convolution), whose
/// kernels have no declared names. Returns "" when the launches agree, else
/// one line saying how they differ.
std::string checkLaunches(const KernelPlan &plan,
                          const std::vector<std::string> &launched);

/// Checks that `reference` fits `task`: known distribution, every output
/// named once and known, indices and values of equal length, indices within
/// the output, values finite.
Status verifyReference(const KernelTask &task, const ReferenceSet &reference);

/// Compares an output's bytes (`output`, of `type`) with `reference` at its
/// sampled indices, under `tolerance` for floats and exactly for integers.
/// `reference` must have passed `verifyReference`. The mismatches' indices
/// are the output's linear indices.
ComparisonResult compareWithReference(ElementType type,
                                      const std::vector<uint8_t> &output,
                                      const OutputReference &reference,
                                      const Tolerance &tolerance);

/// A JSON number for `value`, or the string `nan`, `inf` or `-inf` (JSON has
/// no non-finite numbers).
json::Value toJsonNumber(double value);

/// Evidence of a failed comparison of output `output`: the norms, counts,
/// message and worst elements.
json::Value describeComparison(const ComparisonResult &comparison,
                               std::string_view output);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_EVALUATIONCHECKS_H
