//===- Benchmark.cpp - kopt-run's timing and overhead -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Benchmark.h"

#include "kopt/Runtime/Cuda/FlushedTimer.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"
#include "kopt/Runtime/Json.h"

#include <algorithm>
#include <chrono>

using namespace kopt::runtime;

Result<PlanTiming> kopt::runtime::benchmarkModule(ModuleRunner &runner,
                                                  const BenchOptions &options) {
  const CudaContext &context = runner.getContext();
  CUstream stream = context.getStream();
  unsigned repetitions = std::max(options.repetitions, 20u);
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  auto warmupRuns =
      warmUpFor(options.warmupMs, [&] { return runner.run(stream); });
  if (!warmupRuns)
    return warmupRuns.status();
  // The evaluator's timing: L2 flushed outside the events. A module may
  // run work beyond the stream (a graph), so the whole context is waited
  // for.
  auto timer = FlushedTimer::create(context);
  if (!timer)
    return timer.status();
  std::vector<double> timesUs;
  for (unsigned i = 0; i < repetitions; ++i) {
    auto time = (*timer)->time([&] { return runner.enqueue(stream); },
                               /*waitForContext=*/true);
    if (!time)
      return time.status();
    timesUs.push_back(*time);
  }
  PlanTiming timing = summarizeTimings(timesUs);
  timing.warmupRuns = *warmupRuns;
  return timing;
}

std::string kopt::runtime::formatBenchJson(const PlanTiming &timing,
                                           const std::string &module,
                                           bool graph,
                                           const std::string &device) {
  json::Value value = json::Value::object();
  value.set("schema", "kopt.run.bench/1");
  value.set("module", module);
  value.set("device", device);
  value.set("graph", graph);
  value.set("median_ms", timing.medianUs / 1e3);
  value.set("min_ms", timing.minUs / 1e3);
  value.set("p10_ms", timing.p10Us / 1e3);
  value.set("p90_ms", timing.p90Us / 1e3);
  value.set("reps", int64_t(timing.repetitions));
  value.set("warmup_runs", int64_t(timing.warmupRuns));
  return json::write(value) + "\n";
}

//===----------------------------------------------------------------------===//
// Launch overhead
//===----------------------------------------------------------------------===//

static const char *kTrivialKernel =
    "extern \"C\" __global__ void kopt_touch(float *p) {\n"
    "  if (threadIdx.x == 0 && p[0] == 12345.0f) p[0] = 0.0f;\n"
    "}\n";

/// A module of `steps` launches of the trivial kernel on one buffer.
static RuntimeModule makeTrivialModule(unsigned steps) {
  RuntimeModule module;
  module.name = "launch_overhead";
  module.producer = "kopt-run";
  TensorSpec tensor{"p", ElementType::F32, {1}};
  ModuleBuffer buffer;
  buffer.tensor = tensor;
  buffer.kind = ModuleBuffer::Kind::Temporary;
  module.buffers.push_back(buffer);
  ModulePlan plan;
  plan.key = "launch-overhead";
  plan.function = "touch";
  plan.outputs = {TensorSpec{"out0", ElementType::F32, {1}}};
  KernelPlan kernel;
  kernel.taskKey = plan.key;
  kernel.proposer = "baseline";
  kernel.variant = "touch";
  kernel.sources.push_back({"main", kTrivialKernel});
  PlanStep step;
  step.launch.source = "main";
  step.launch.entry = "kopt_touch";
  step.launch.args = {"out0"};
  kernel.steps.push_back(step);
  plan.plan = kernel;
  module.plans.push_back(plan);
  for (unsigned i = 0; i < steps; ++i) {
    ModuleStep moduleStep;
    moduleStep.plan = 0;
    moduleStep.outputs = {"p"};
    module.steps.push_back(moduleStep);
  }
  return module;
}

/// The median over `rounds` of the wall time of `body` (which enqueues
/// `steps` launches) plus a stream synchronisation, per step, in us.
template <typename Body>
static Result<double> timePerStep(const CudaDriver &api, CUstream stream,
                                  unsigned steps, Body &&body) {
  std::vector<double> perStep;
  for (unsigned round = 0; round < 25; ++round) {
    auto start = std::chrono::steady_clock::now();
    if (Status status = body(); !status.isOk())
      return status;
    if (Status status =
            api.check(api.cuStreamSynchronize(stream), "cuStreamSynchronize");
        !status.isOk())
      return status;
    double us = std::chrono::duration<double, std::micro>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    // The first rounds warm the driver up.
    if (round >= 5)
      perStep.push_back(us / steps);
  }
  std::sort(perStep.begin(), perStep.end());
  return perStep[perStep.size() / 2];
}

Status kopt::runtime::measureLaunchOverhead(const CudaContext &context,
                                            unsigned steps, double limitUs,
                                            FILE *out) {
  steps = std::max(steps, 1u);
  const CudaDriver &api = context.getDriver();
  CUstream stream = context.getStream();
  auto runner = ModuleRunner::create(context, makeTrivialModule(steps));
  if (!runner)
    return runner.status();

  // The bare launches use the same kernel from the same compile.
  auto compiled =
      compileCuda(kTrivialKernel, "main.cu", context.getDeviceInfo().getArch());
  if (!compiled)
    return compiled.status();
  auto module = context.loadModule(compiled->cubin);
  if (!module)
    return module.status();
  CUfunction function = nullptr;
  if (Status status =
          api.check(api.cuModuleGetFunction(&function, *module, "kopt_touch"),
                    "cuModuleGetFunction");
      !status.isOk())
    return status;
  CUdeviceptr pointer = (*runner)->getDevicePointer("p");
  void *arguments[] = {&pointer};

  auto bare = timePerStep(api, stream, steps, [&]() -> Status {
    for (unsigned i = 0; i < steps; ++i)
      if (Status status =
              api.check(api.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0,
                                           stream, arguments, nullptr),
                        "cuLaunchKernel");
          !status.isOk())
        return status;
    return Status::success();
  });
  if (!bare)
    return bare.status();
  auto runtime = timePerStep(api, stream, steps,
                             [&]() { return (*runner)->enqueue(stream); });
  if (!runtime)
    return runtime.status();
  (*runner)->setUseGraph(true);
  auto graph = timePerStep(api, stream, steps,
                           [&]() { return (*runner)->enqueue(stream); });
  if (!graph)
    return graph.status();

  double overhead = *runtime - *bare;
  std::fprintf(out,
               "launch overhead: %u trivial launches per run, median of 20 "
               "runs, wall time per step\n"
               "  bare cuLaunchKernel   %8.3f us\n"
               "  kopt runtime          %8.3f us  (%+.3f us over bare)\n"
               "  kopt runtime, graph   %8.3f us\n",
               steps, *bare, *runtime, overhead, *graph);
  if (overhead > limitUs)
    return Status::error(StatusCode::Internal,
                         "the runtime adds " + std::to_string(overhead) +
                             " us per step over bare launches, more than " +
                             std::to_string(limitUs));
  std::fprintf(out, "  within the limit of %.1f us per step\n", limitUs);
  return Status::success();
}
