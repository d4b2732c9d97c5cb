//===- kopt-run.cpp - Run a kopt runtime module -----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// libkoptrt's command-line face: runs a runtime module end to end with
// inputs from .npy files and outputs to .npy files, and times it. Every
// check that needs no GPU (the command line, the module, the .npy files'
// names, types and shapes) is made before the device is opened, so a
// mistake is reported the same way on any machine. Exit codes: 0 success,
// 1 a failure, 2 a bad command line.
//
//===----------------------------------------------------------------------===//

#include "Benchmark.h"

#include "kopt/Runtime/Cuda/TensorData.h"
#include "kopt/Runtime/KernelDatabase.h"
#include "kopt/Runtime/ModuleRunner.h"
#include "kopt/Runtime/Npy.h"
#include "kopt/Runtime/OutputFile.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace kopt::runtime;

static const char *kUsage =
    "usage: kopt-run MODULE.kmod [--input NAME=FILE.npy]... "
    "[--output NAME=FILE.npy]...\n"
    "                [--random-inputs [--seed N]] [--bench] [--bench-json "
    "FILE]\n"
    "                [--reps N] [--warmup-ms MS] [--graph] [--db FILE] "
    "[--device N]\n"
    "                [--batch N]\n"
    "       kopt-run MODULE.kmod --list\n"
    "       kopt-run --measure-overhead [--steps N] [--limit-us US]\n";

static const char *kHelp =
    "\n"
    "Runs a runtime module written by 'kopt compile --emit-module' on a GPU.\n"
    "\n"
    "  --input NAME=FILE.npy   the input NAME (as 'kopt-run M --list' shows, "
    "or\n"
    "                          argN by position) from a C-order .npy file of\n"
    "                          its exact shape and dtype (bf16: float32)\n"
    "  --output NAME=FILE.npy  write output NAME (or outN) after one run\n"
    "  --random-inputs         fill the inputs not given with deterministic\n"
    "                          standard-normal values (--seed, default 0)\n"
    "  --bench                 time whole runs: warm-up for --warmup-ms "
    "(200),\n"
    "                          then --reps (50, at least 20) runs between "
    "CUDA\n"
    "                          events with a device sync, L2 flushed before\n"
    "                          each outside the timed region; prints the\n"
    "                          median, min and p10-p90 spread\n"
    "  --bench-json FILE       also write the timings as JSON (median_ms,\n"
    "                          min_ms, p10_ms, p90_ms, reps); implies --bench\n"
    "  --graph                 run through a CUDA graph captured once\n"
    "  --db FILE               the kernel database, for modules whose plans\n"
    "                          are references to its records\n"
    "  --device N              the GPU to use (default 0)\n"
    "  --batch N               the batch size of a module with a dynamic "
    "batch\n"
    "                          (default: the outermost dimension of the "
    "given\n"
    "                          inputs, else the first tuned size)\n"
    "  --list                  print the module's inputs, outputs and steps\n"
    "                          (and its batch sizes and their programs)\n"
    "  --measure-overhead      time N (--steps, 200) trivial launches through\n"
    "                          the runtime and through bare cuLaunchKernel;\n"
    "                          fails above --limit-us (5) per step\n"
    "  -q, --quiet             print only errors and the timings\n";

namespace {
struct Options {
  std::string module;
  std::vector<std::pair<std::string, std::string>> inputs, outputs;
  bool randomInputs = false;
  uint64_t seed = 0;
  bool bench = false;
  std::string benchJson;
  BenchOptions benchOptions;
  bool graph = false;
  std::string database;
  int device = 0;
  /// The batch size; 0 when not given.
  int64_t batch = 0;
  bool list = false;
  bool measureOverhead = false;
  unsigned overheadSteps = 200;
  double limitUs = 5.0;
  bool quiet = false;
};
} // namespace

static int usageError(const std::string &message) {
  std::fprintf(stderr, "kopt-run: error: %s\n%s", message.c_str(), kUsage);
  return 2;
}

static int failure(const std::string &message) {
  std::fprintf(stderr, "kopt-run: error: %s\n", message.c_str());
  return 1;
}

static bool parseUnsigned(const std::string &text, uint64_t &value) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  value = std::strtoull(text.c_str(), nullptr, 10);
  return true;
}

/// Parses `argv`; returns -1 to go on, else an exit code.
static int parseArguments(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    size_t equals = arg.find('=');
    bool inlineValue = arg.rfind("--", 0) == 0 && equals != std::string::npos;
    if (inlineValue) {
      value = arg.substr(equals + 1);
      arg = arg.substr(0, equals);
    }
    auto next = [&](std::string &out) {
      if (inlineValue) {
        out = value;
        return true;
      }
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    auto number = [&](uint64_t &out) -> bool {
      std::string text;
      return next(text) && parseUnsigned(text, out);
    };
    uint64_t n = 0;
    if (arg == "-h" || arg == "--help") {
      std::printf("%s%s", kUsage, kHelp);
      return 0;
    }
    if (arg == "--input" || arg == "--output") {
      std::string pair;
      if (!next(pair))
        return usageError(arg + " needs NAME=FILE.npy");
      size_t at = pair.find('=');
      if (at == std::string::npos || at == 0 || at + 1 == pair.size())
        return usageError(arg + " needs NAME=FILE.npy, got '" + pair + "'");
      (arg == "--input" ? options.inputs : options.outputs)
          .emplace_back(pair.substr(0, at), pair.substr(at + 1));
    } else if (arg == "--random-inputs") {
      options.randomInputs = true;
    } else if (arg == "--seed") {
      if (!number(options.seed))
        return usageError("--seed needs a non-negative integer");
    } else if (arg == "--bench") {
      options.bench = true;
    } else if (arg == "--bench-json") {
      if (!next(options.benchJson) || options.benchJson.empty())
        return usageError("--bench-json needs a file");
      options.bench = true;
    } else if (arg == "--reps") {
      if (!number(n) || n < 20 || n > 1000000)
        return usageError("--reps needs an integer of at least 20");
      options.benchOptions.repetitions = unsigned(n);
    } else if (arg == "--warmup-ms") {
      if (!number(n))
        return usageError("--warmup-ms needs a non-negative integer");
      options.benchOptions.warmupMs = double(n);
    } else if (arg == "--graph") {
      options.graph = true;
    } else if (arg == "--db") {
      if (!next(options.database))
        return usageError("--db needs a file");
    } else if (arg == "--device") {
      if (!number(n) || n > 1024)
        return usageError("--device needs a device number");
      options.device = int(n);
    } else if (arg == "--batch") {
      if (!number(n) || n < 1 || n > (uint64_t(1) << 40))
        return usageError("--batch needs a positive integer");
      options.batch = int64_t(n);
    } else if (arg == "--list") {
      options.list = true;
    } else if (arg == "--measure-overhead") {
      options.measureOverhead = true;
    } else if (arg == "--steps") {
      if (!number(n) || n < 1 || n > 100000)
        return usageError("--steps needs a positive integer");
      options.overheadSteps = unsigned(n);
    } else if (arg == "--limit-us") {
      if (!number(n))
        return usageError("--limit-us needs a non-negative integer");
      options.limitUs = double(n);
    } else if (arg == "-q" || arg == "--quiet") {
      options.quiet = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (options.module.empty()) {
      options.module = arg;
    } else {
      return usageError("more than one module given ('" + options.module +
                        "' and '" + arg + "')");
    }
  }
  if (options.module.empty() && !options.measureOverhead)
    return usageError("no module given");
  return -1;
}

static std::string describe(const TensorSpec &tensor) {
  std::string text =
      std::string(stringifyElementType(tensor.elementType)) + "[";
  for (size_t i = 0; i < tensor.shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(tensor.shape[i]);
  return text + "]";
}

/// The module buffer NAME names among `names` (also `<prefix>N`), or null.
static const ModuleBuffer *resolve(const RuntimeModule &module,
                                   const std::vector<std::string> &names,
                                   const std::string &name,
                                   const std::string &prefix) {
  for (const std::string &candidate : names)
    if (candidate == name)
      return module.findBuffer(candidate);
  uint64_t index = 0;
  if (name.rfind(prefix, 0) == 0 &&
      parseUnsigned(name.substr(prefix.size()), index) && index < names.size())
    return module.findBuffer(names[index]);
  return nullptr;
}

static std::string listNames(const RuntimeModule &module,
                             const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "" : ", ") + name + " " +
            describe(module.findBuffer(name)->tensor);
  return text.empty() ? "none" : text;
}

static void printSteps(const ModuleProgram &program) {
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const ModuleStep &step = program.steps[i];
    if (step.kind == ModuleStep::Kind::Copy) {
      std::printf("  step %zu  copy %s -> %s\n", i, step.from.c_str(),
                  step.to.c_str());
      continue;
    }
    const ModulePlan &plan = program.plans[step.plan];
    std::printf("  step %zu  @%s  %s%s\n", i, plan.function.c_str(),
                plan.planName.c_str(),
                plan.reference ? " (database reference)" : "");
  }
}

static void printListing(const RuntimeModule &module) {
  std::printf("module %s (%s, binaries for %s)\n", module.name.c_str(),
              module.producer.c_str(),
              module.arch.empty() ? "no architecture" : module.arch.c_str());
  if (module.dynamicBatch) {
    std::string sizes;
    for (int64_t size : module.getBatchSizes())
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(size);
    std::printf("  batch   dynamic; tuned for %s; %s\n", sizes.c_str(),
                module.dynamicBatch->independent
                    ? "samples independent: any size runs, as chunks of "
                      "the tuned sizes"
                    : ("only the tuned sizes run (samples not proven "
                       "independent: " +
                       module.dynamicBatch->reason + ")")
                          .c_str());
  }
  auto tensorLine = [&](const char *kind, const std::string &name) {
    std::string shape = describe(module.findBuffer(name)->tensor);
    if (module.isBatched(name))
      shape += " (batch " + std::to_string(module.batch) + ")";
    std::printf("  %-7s %-12s %s\n", kind, name.c_str(), shape.c_str());
  };
  for (const std::string &name : module.inputs)
    tensorLine("input", name);
  for (const std::string &name : module.outputs)
    tensorLine("output", name);
  for (const ModuleProgram *program : module.getPrograms()) {
    if (module.dynamicBatch)
      std::printf("  program batch %lld: %zu buffers, %zu plans, %zu steps\n",
                  static_cast<long long>(program->batch),
                  program->buffers.size(), program->plans.size(),
                  program->steps.size());
    printSteps(*program);
  }
}

int main(int argc, char **argv) {
  // Under a file size limit (ulimit -f), a write beyond it fails with an
  // error instead of killing kopt-run.
  std::signal(SIGXFSZ, SIG_IGN);
  Options options;
  if (int code = parseArguments(argc, argv, options); code >= 0)
    return code;

  if (options.measureOverhead) {
    auto context = CudaContext::create(options.device);
    if (!context)
      return failure(context.status().message());
    Status status = measureLaunchOverhead(**context, options.overheadSteps,
                                          options.limitUs, stdout);
    return status.isOk() ? 0 : failure(status.message());
  }

  auto loaded = loadRuntimeModule(options.module);
  if (!loaded)
    return failure(loaded.status().message());
  const RuntimeModule &module = *loaded;
  if (options.list) {
    printListing(module);
    return 0;
  }

  // Inputs and outputs, checked before any GPU work.
  std::map<std::string, NpyArray> arrays;
  for (const auto &[name, file] : options.inputs) {
    const ModuleBuffer *buffer = resolve(module, module.inputs, name, "arg");
    if (!buffer)
      return failure("the module has no input '" + name +
                     "'; its inputs: " + listNames(module, module.inputs));
    if (arrays.count(buffer->tensor.name))
      return failure("input '" + name + "' is given twice");
    auto array = readNpyFile(file);
    if (!array)
      return failure(array.status().message());
    arrays[buffer->tensor.name] = std::move(*array);
  }
  int64_t batch = module.batch;
  if (!module.dynamicBatch && options.batch)
    return failure("--batch: the module's shapes are static");
  if (module.dynamicBatch) {
    batch = options.batch;
    // Else the batch the given inputs carry.
    for (const std::string &name : module.dynamicBatch->inputs) {
      auto array = arrays.find(name);
      if (batch || array == arrays.end() || array->second.shape.empty())
        continue;
      int64_t perSample =
          module.findBuffer(name)->tensor.shape[0] / module.batch;
      if (perSample > 0 && array->second.shape[0] % perSample == 0 &&
          array->second.shape[0] > 0)
        batch = array->second.shape[0] / perSample;
    }
    if (!batch)
      batch = module.batch;
    if (Status status = module.checkBatch(batch); !status.isOk())
      return failure(status.message());
  }
  auto tensorOf = [&](const std::string &name) {
    return *module.getTensorAtBatch(name, batch);
  };
  std::map<std::string, std::string> inputBytes;
  for (const auto &[name, file] : options.inputs) {
    const ModuleBuffer *buffer = resolve(module, module.inputs, name, "arg");
    auto bytes = npyToTensorBytes(
        arrays[buffer->tensor.name], tensorOf(buffer->tensor.name),
        "input '" + name + "' ('" + file + "')" +
            (module.isBatched(buffer->tensor.name)
                 ? " at batch " + std::to_string(batch)
                 : std::string()));
    if (!bytes)
      return failure(bytes.status().message());
    inputBytes[buffer->tensor.name] = std::move(*bytes);
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < module.inputs.size(); ++i) {
    const std::string &name = module.inputs[i];
    if (inputBytes.count(name))
      continue;
    TensorSpec tensor = tensorOf(name);
    if (!options.randomInputs) {
      missing.push_back(name + " " + describe(tensor));
      continue;
    }
    std::vector<uint8_t> random =
        makeRandomTensorData(tensor, options.seed * 1000003 + i);
    inputBytes[name] = std::string(random.begin(), random.end());
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string &item : missing)
      list += (list.empty() ? "" : ", ") + item;
    return failure("no value for input" +
                   std::string(missing.size() > 1 ? "s " : " ") + list +
                   " (give --input NAME=FILE.npy, or --random-inputs)");
  }
  // No output may overwrite the module, an input or the database.
  ProtectedFiles protect;
  protect.addInput(options.module);
  for (const auto &input : options.inputs)
    protect.addInput(input.second);
  protect.addDatabase(options.database);
  std::vector<std::pair<TensorSpec, std::string>> outputs;
  for (const auto &[name, file] : options.outputs) {
    const ModuleBuffer *buffer = resolve(module, module.outputs, name, "out");
    if (!buffer)
      return failure("the module has no output '" + name +
                     "'; its outputs: " + listNames(module, module.outputs));
    if (Status status = protect.check(file); !status.isOk())
      return failure(status.message());
    outputs.emplace_back(tensorOf(buffer->tensor.name), file);
  }
  if (!options.benchJson.empty())
    if (Status status = protect.check(options.benchJson); !status.isOk())
      return failure(status.message());

  // The device.
  auto context = CudaContext::create(options.device);
  if (!context)
    return failure(context.status().message());
  std::unique_ptr<SqliteKernelDatabase> database;
  ModuleRunnerOptions runnerOptions;
  if (!options.database.empty()) {
    SqliteOpenOptions openOptions;
    openOptions.readOnly = true;
    openOptions.create = false;
    auto opened = SqliteKernelDatabase::open(options.database, openOptions);
    if (!opened)
      return failure(opened.status().message());
    database = std::move(*opened);
    runnerOptions.database = database.get();
  }
  std::string name = module.name;
  auto runner =
      ModuleRunner::create(**context, std::move(*loaded), runnerOptions);
  if (!runner)
    return failure(runner.status().message());
  if (!options.quiet)
    for (const std::string &note : (*runner)->getLoadNotes())
      std::fprintf(stderr, "kopt-run: %s\n", note.c_str());
  if (batch && batch != (*runner)->getBatch())
    if (Status status = (*runner)->setBatch(batch); !status.isOk())
      return failure(status.message());
  if (batch && !options.quiet) {
    std::string chunks;
    for (const BatchChunk &chunk : (*runner)->getChunks())
      chunks += (chunks.empty() ? "" : " + ") +
                (chunk.count < chunk.size
                     ? std::to_string(chunk.count) + " (padded to " +
                           std::to_string(chunk.size) + ")"
                     : std::to_string(chunk.size));
    std::fprintf(stderr, "kopt-run: batch %lld: %s\n",
                 static_cast<long long>(batch), chunks.c_str());
  }
  for (const auto &[input, bytes] : inputBytes)
    if (Status status = (*runner)->setInput(input, bytes.data(), bytes.size());
        !status.isOk())
      return failure(status.message());
  (*runner)->setUseGraph(options.graph);

  if (Status status = (*runner)->run(); !status.isOk())
    return failure(status.message());
  for (const auto &[tensor, file] : outputs) {
    auto bytes = (*runner)->readBuffer(tensor.name);
    if (!bytes)
      return failure(bytes.status().message());
    if (Status status = writeNpyFile(file, tensor, *bytes, protect);
        !status.isOk())
      return failure(status.message());
    if (!options.quiet)
      std::fprintf(stderr, "kopt-run: wrote %s %s to '%s'\n",
                   tensor.name.c_str(), describe(tensor).c_str(), file.c_str());
  }
  if (!options.bench)
    return 0;

  auto timing = benchmarkModule(**runner, options.benchOptions);
  if (!timing)
    return failure(timing.status().message());
  const std::string &device = (*context)->getDeviceInfo().name;
  std::printf("%s%s: median %.4f ms, min %.4f ms, p10-p90 %.4f-%.4f ms "
              "(spread %.1f%%), %u reps after %u warm-up runs, %s\n",
              name.c_str(), options.graph ? " (graph)" : "",
              timing->medianUs / 1e3, timing->minUs / 1e3, timing->p10Us / 1e3,
              timing->p90Us / 1e3,
              timing->medianUs > 0
                  ? 100.0 * (timing->p90Us - timing->p10Us) / timing->medianUs
                  : 0.0,
              timing->repetitions, timing->warmupRuns, device.c_str());
  if (!options.benchJson.empty())
    if (Status status = writeOutputFile(
            options.benchJson,
            formatBenchJson(*timing, name, options.graph, device), protect);
        !status.isOk())
      return failure(status.message());
  return 0;
}
