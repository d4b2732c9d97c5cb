//===- kopt-reference-bench.cpp - Cost of the fp64 references ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Times the compiler's side of an evaluation request: the fp64 references of
// validation set 0 and of the later sets (`buildReferenceSet`,
// kopt/Evaluator/ReferenceBuilder.h), which the autotuner builds for every
// request before the worker sees it. For each fusion group of each model
// graph it prints the size of the task, the time to materialise every input
// of set 0 on the host (`generateReferenceInputs`, for comparison), the time
// to build the reference of set 0 and of the later sets one by one, and the
// time to build them all side by side as the autotuner does
// (`buildReferenceSets`), in wall and CPU seconds.
//
// With --graph it times instead the reference `kopt check-module` builds:
// the interpreter over each file's whole graph (TOSA lowered, a dynamic
// batch specialised to --batch), every element of every output
// (`evaluateAll`) from standard-normal inputs; with --lazy also every
// element of each output of at most 4096 elements through `evaluatePoints`
// (what check-module did before, on one thread), and the largest difference
// between the two.
//
// Usage: kopt-reference-bench FILE... [--sets N] [--seed S] [--threads T]
//                             [--no-materialise] [--graph [--batch N] [--lazy]]
//   --sets N          validation sets per request (default 5, as the tuner)
//   --seed S          the evaluation seed (default 1)
//   --threads T       threads per reference (default 0: one per hardware
//                     thread, as the tuner)
//   --no-materialise  skip the materialised-inputs timing
//   --graph           time the whole-graph reference instead
//   --batch N         the batch size of a graph with a dynamic batch
//   --lazy            also time sampled points, lazily
// Exit status: 0 when every group was measured; 1 when a file could not be
// read or a reference could not be built; 2 on a usage error.
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/EntryFunction.h"
#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Codegen/KernelTask.h"
#include "kopt/Codegen/ReferenceInterpreter.h"
#include "kopt/Evaluator/ReferenceBuilder.h"
#include "kopt/InitAll.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <sys/resource.h>
#include <vector>

using namespace mlir;
using namespace mlir::kopt;

namespace {

struct Options {
  std::vector<std::string> files;
  unsigned sets = 5;
  uint64_t seed = 1;
  unsigned threads = 0;
  bool materialise = true;
  bool graph = false;
  int64_t batch = 0;
  bool lazy = false;
};

/// The process's CPU time (user and system, all threads), in seconds.
double cpuSeconds() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval &t) {
    return double(t.tv_sec) + double(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

/// The process's peak resident set, in MiB.
double peakRssMiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;
}

double tensorMiB(const std::vector<::kopt::runtime::TensorSpec> &tensors) {
  double bytes = 0;
  for (const auto &tensor : tensors)
    bytes += double(tensor.getNumElements().value_or(0)) *
             double(::kopt::runtime::getElementBytes(tensor.elementType));
  return bytes / double(1 << 20);
}

/// Wall and CPU seconds of one phase.
struct Timing {
  double wall = 0, cpu = 0;
  Timing &operator+=(const Timing &other) {
    wall += other.wall;
    cpu += other.cpu;
    return *this;
  }
};

/// Runs `body` and returns its wall and CPU time.
template <typename Fn>
Timing time(Fn &&body) {
  auto start = std::chrono::steady_clock::now();
  double cpuStart = cpuSeconds();
  body();
  return {
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count(),
      cpuSeconds() - cpuStart};
}

void printTiming(llvm::StringRef what, const Timing &timing) {
  llvm::outs() << llvm::format("    %-32s %8.3f s wall %8.3f s cpu\n",
                               what.str().c_str(), timing.wall, timing.cpu);
}

/// Measures one group; false when a reference could not be built.
bool measureGroup(func::FuncOp group, const KernelTask &task,
                  const Options &options) {
  llvm::outs() << "  @" << task.name << "  inputs "
               << llvm::format("%.0f", tensorMiB(task.inputs))
               << " MiB, outputs "
               << llvm::format("%.0f", tensorMiB(task.outputs)) << " MiB\n";
  if (options.materialise) {
    llvm::Error error = llvm::Error::success();
    Timing timing = time([&] {
      auto inputs =
          generateReferenceInputs(task, getReferenceSetSource(options.seed));
      if (!inputs)
        error = inputs.takeError();
    });
    if (error) {
      llvm::errs() << llvm::toString(std::move(error)) << "\n";
      return false;
    }
    printTiming("inputs of set 0 (materialised)", timing);
  }
  Timing later, total;
  size_t points = 0;
  for (unsigned set = 0; set < options.sets; ++set) {
    llvm::Expected<::kopt::runtime::ReferenceSet> reference =
        ::kopt::runtime::ReferenceSet();
    Timing timing = time([&] {
      reference = buildReferenceSet(group, task, options.seed, 4096, set,
                                    options.threads);
    });
    if (!reference) {
      llvm::errs() << "set " << set << ": "
                   << llvm::toString(reference.takeError()) << "\n";
      return false;
    }
    for (const auto &output : reference->outputs)
      points += output.indices.size();
    total += timing;
    if (set == 0)
      printTiming("reference of set 0", timing);
    else
      later += timing;
  }
  if (options.sets > 1)
    printTiming("references of sets 1-" + std::to_string(options.sets - 1),
                later);
  printTiming("all references, one by one", total);
  // As the autotuner builds them: every set at once.
  std::vector<llvm::Expected<::kopt::runtime::ReferenceSet>> together;
  Timing timing = time([&] {
    together = buildReferenceSets(group, task, options.seed, options.sets, 4096,
                                  options.threads);
  });
  for (auto &reference : together)
    if (!reference) {
      llvm::errs() << llvm::toString(reference.takeError()) << "\n";
      return false;
    }
  printTiming("all references, side by side", timing);
  llvm::outs() << llvm::format("    %zu points, peak RSS %.0f MiB\n", points,
                               peakRssMiB());
  return true;
}

/// Times the whole-graph reference of `module`; false on an error.
bool measureGraph(ModuleOp module, const Options &options) {
  if (llvm::Error error = prepareReferenceGraph(module, options.batch)) {
    llvm::errs() << llvm::toString(std::move(error)) << "\n";
    return false;
  }
  auto entry = findEntryFunction(module);
  if (!entry) {
    llvm::errs() << llvm::toString(entry.takeError()) << "\n";
    return false;
  }
  std::unique_ptr<ReferenceInterpreter> interpreter;
  Timing build = time([&] {
    auto created = ReferenceInterpreter::create(*entry);
    if (!created)
      llvm::errs() << llvm::toString(created.takeError()) << "\n";
    else
      interpreter = std::move(*created);
  });
  if (!interpreter)
    return false;
  printTiming("build the interpreter", build);
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<std::vector<double>> inputs;
  for (unsigned i = 0; i < interpreter->getNumInputs(); ++i) {
    inputs.emplace_back(interpreter->getInputNumElements(i));
    for (double &value : inputs.back())
      value = normal(rng);
  }
  llvm::Expected<std::vector<std::vector<double>>> all =
      std::vector<std::vector<double>>();
  Timing whole =
      time([&] { all = interpreter->evaluateAll(inputs, options.threads); });
  if (!all) {
    llvm::errs() << llvm::toString(all.takeError()) << "\n";
    return false;
  }
  printTiming("every output element (evaluateAll)", whole);
  llvm::outs() << llvm::format("    peak RSS %.0f MiB\n", peakRssMiB());
  if (!options.lazy)
    return true;
  Timing lazy;
  double largest = 0;
  for (unsigned o = 0; o < interpreter->getNumOutputs(); ++o) {
    int64_t count = interpreter->getOutputNumElements(o);
    if (count > 4096)
      continue;
    std::vector<int64_t> points(count);
    for (int64_t p = 0; p < count; ++p)
      points[p] = p;
    llvm::Expected<std::vector<double>> values = std::vector<double>();
    lazy +=
        time([&] { values = interpreter->evaluatePoints(inputs, o, points); });
    if (!values) {
      llvm::errs() << llvm::toString(values.takeError()) << "\n";
      return false;
    }
    for (int64_t p = 0; p < count; ++p)
      largest = std::max(largest, std::fabs((*values)[p] - (*all)[o][p]));
  }
  printTiming("the same, lazily (evaluatePoints)", lazy);
  llvm::outs() << llvm::format("    largest difference %g\n", largest);
  return true;
}

int usage() {
  llvm::errs() << "usage: kopt-reference-bench FILE... [--sets N] [--seed S] "
                  "[--threads T] [--no-materialise] [--graph [--batch N] "
                  "[--lazy]]\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--sets" || arg == "--seed" || arg == "--threads" ||
         arg == "--batch") &&
        i + 1 < argc) {
      char *end = nullptr;
      unsigned long long value = std::strtoull(argv[++i], &end, 10);
      if (!end || *end)
        return usage();
      if (arg == "--sets")
        options.sets = unsigned(value);
      else if (arg == "--threads")
        options.threads = unsigned(value);
      else if (arg == "--batch")
        options.batch = int64_t(value);
      else
        options.seed = value;
    } else if (arg == "--no-materialise") {
      options.materialise = false;
    } else if (arg == "--graph") {
      options.graph = true;
    } else if (arg == "--lazy") {
      options.lazy = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return usage();
    } else {
      options.files.push_back(arg);
    }
  }
  if (options.files.empty() || options.sets == 0)
    return usage();

  DialectRegistry registry;
  registerAllDialects(registry);
  bool allOk = true;
  for (const std::string &path : options.files) {
    MLIRContext context(registry);
    context.printOpOnDiagnostic(false);
    llvm::SourceMgr sourceMgr;
    SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::errs());
    auto module = loadModelGraph(path, context, sourceMgr);
    if (!module) {
      llvm::errs() << llvm::toString(module.takeError()) << "\n";
      allOk = false;
      continue;
    }
    llvm::outs() << path << "\n";
    if (options.graph) {
      allOk &= measureGraph(**module, options);
      continue;
    }
    if (failed(prepareModelGraph(**module))) {
      allOk = false;
      continue;
    }
    for (auto func : (*module)->getOps<func::FuncOp>()) {
      if (!func->hasAttr(kFusionGroupAttrName))
        continue;
      auto task = buildKernelTask(func);
      if (!task) {
        llvm::errs() << "@" << func.getSymName() << ": "
                     << llvm::toString(task.takeError()) << "\n";
        allOk = false;
        continue;
      }
      allOk &= measureGroup(func, *task, options);
      llvm::outs().flush();
    }
  }
  return allOk ? 0 : 1;
}
