//===- Benchmark.h - kopt-run's timing and overhead measurement -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt-run --bench` times whole module runs with the evaluator's protocol:
// untimed runs for a warm-up time, then at least 20 timed runs, each between
// two CUDA events on the stream and followed by a device synchronisation,
// with L2 flushed (a buffer twice its size written) before each one,
// outside the timed region. `--measure-overhead` compares N trivial
// launches through the runtime with the same launches through bare
// cuLaunchKernel.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TOOLS_KOPT_RUN_BENCHMARK_H
#define KOPT_TOOLS_KOPT_RUN_BENCHMARK_H

#include "kopt/Runtime/Cuda/PlanRunner.h"
#include "kopt/Runtime/ModuleRunner.h"
#include "kopt/Runtime/Status.h"

#include <cstdio>
#include <string>

namespace kopt::runtime {

/// How runs are timed.
struct BenchOptions {
  /// Untimed runs until this many milliseconds have passed (at least one).
  double warmupMs = 200;
  /// Timed runs (at least 20).
  unsigned repetitions = 50;
};

/// Times `runner`'s runs on its context's stream (see the file comment).
Result<PlanTiming> benchmarkModule(ModuleRunner &runner,
                                   const BenchOptions &options);

/// `{"median_ms", "min_ms", "p10_ms", "p90_ms", "reps", ...}` for
/// `--bench-json`.
std::string formatBenchJson(const PlanTiming &timing, const std::string &module,
                            bool graph, const std::string &device);

/// Measures the runtime's launch overhead on `context`: `steps` trivial
/// launches per run through a ModuleRunner, through a captured graph and
/// through bare cuLaunchKernel, each run waited for; prints microseconds per
/// step to `out`. Fails when the runtime costs more than `limitUs` per step
/// over bare launches.
Status measureLaunchOverhead(const CudaContext &context, unsigned steps,
                             double limitUs, FILE *out);

} // namespace kopt::runtime

#endif // KOPT_TOOLS_KOPT_RUN_BENCHMARK_H
