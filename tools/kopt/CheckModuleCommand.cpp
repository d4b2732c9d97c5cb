//===- CheckModuleCommand.cpp - kopt check-module ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt check-module GRAPH.mlir MODULE.kmod`: the end-to-end check of a
// runtime module. Draws inputs, writes them as .npy files, runs kopt-run on
// them (the binary beside kopt, or --kopt-run), and compares every element
// of each output with the fp64 reference interpreter run over the whole
// graph (TOSA lowered, nothing fused; `evaluateAll` on every core). An output
// passes when its relative error norm is within the sum of the module's task
// tolerances (each fused group may add its own share) or its RMS error within
// the largest absolute floor. Standard-normal inputs come first; when they
// fail, uniform(0.5, 2) inputs are tried, since some graphs (a reciprocal of a
// sum of normals) are ill-conditioned on normal inputs, and the report says
// so. A module with a dynamic batch runs at `--batch` (its first tuned size
// by default), and the reference interprets the graph specialised to it.
// Integer inputs are drawn as 0, 1 or 2 (indices, masks) in every set.
// Inputs given as .npy files (`--input NAME=FILE`, `--input-dir DIR`) stay
// the same in every input set: a model's real weights, whose drawn stand-ins
// (a negative running variance) would make its reference NaN.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "kopt/Autotune/ModuleEmitter.h"
#include "kopt/Codegen/ReferenceInterpreter.h"
#include "kopt/InitAll.h"
#include "kopt/Runtime/BatchChunks.h"
#include "kopt/Runtime/Cuda/TensorData.h"
#include "kopt/Runtime/Npy.h"
#include "kopt/Runtime/RuntimeModule.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <random>

using namespace mlir;
using namespace mlir::kopt;
namespace cl = llvm::cl;
namespace rt = ::kopt::runtime;

static cl::SubCommand
    checkModuleCommand("check-module",
                       "Run a runtime module with kopt-run and compare its "
                       "outputs with the fp64 reference interpreter");
static cl::list<std::string> checkInputs(cl::Positional, cl::OneOrMore,
                                         cl::desc("<graph.mlir> <module.kmod>"),
                                         cl::sub(checkModuleCommand));
static cl::opt<std::string>
    koptRunPath("kopt-run", cl::desc("kopt-run (default: beside kopt)"),
                cl::value_desc("path"), cl::init(""),
                cl::sub(checkModuleCommand));
static cl::opt<bool> useGraph("graph",
                              cl::desc("Run through a captured CUDA graph"),
                              cl::sub(checkModuleCommand));
static cl::opt<std::string>
    checkDatabase("db",
                  cl::desc("Kernel database, for modules whose plans refer "
                           "to its records"),
                  cl::value_desc("file"), cl::init(""),
                  cl::sub(checkModuleCommand));

static cl::opt<int64_t> checkBatch(
    "batch",
    cl::desc("The batch size to run a module with a dynamic batch at "
             "(default: its first tuned size)"),
    cl::value_desc("N"), cl::init(0), cl::sub(checkModuleCommand));

bool mlir::kopt::isCheckModuleCommandSelected() {
  return static_cast<bool>(checkModuleCommand);
}

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "kopt") << message << "\n";
  return 1;
}

static std::string findKoptRun() {
  if (!koptRunPath.empty())
    return koptRunPath;
  std::string executable = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&findKoptRun));
  llvm::SmallString<256> path(llvm::sys::path::parent_path(executable));
  llvm::sys::path::append(path, "kopt-run");
  return std::string(path);
}

namespace {
/// How one output compared.
struct OutputCheck {
  std::string name;
  double relative = 0, rms = 0, maxAbs = 0;
  /// Reference values that are NaN or infinite: outputs that agree there
  /// prove nothing (a graph fed values outside its domain, e.g. a negative
  /// variance, gives NaN on both sides), so the input set is inconclusive.
  size_t nonFinite = 0, count = 0;
  /// Whether every reference value is zero: as little proof as NaN.
  bool allZero = false;
  bool pass = false;
};
} // namespace

/// Runs kopt-run on `inputs` in `dir` and compares its outputs with the
/// interpreter; returns the outputs' checks, or an error. `seconds` is set
/// to the reference's wall time.
static llvm::Expected<std::vector<OutputCheck>>
runOnce(const rt::RuntimeModule &module, int64_t batch,
        const std::string &modulePath, ReferenceInterpreter &interpreter,
        const std::vector<std::vector<uint8_t>> &inputs, llvm::StringRef dir,
        const rt::Tolerance &tolerance, double &seconds) {
  std::vector<llvm::StringRef> argv;
  std::vector<std::string> storage;
  std::string koptRun = findKoptRun();
  storage.push_back(koptRun);
  storage.push_back(modulePath);
  storage.push_back("--quiet");
  std::vector<std::vector<double>> inputValues;
  if (module.dynamicBatch) {
    storage.push_back("--batch");
    storage.push_back(std::to_string(batch));
  }
  for (size_t i = 0; i < module.inputs.size(); ++i) {
    rt::TensorSpec tensor = *module.getTensorAtBatch(module.inputs[i], batch);
    std::string file = (dir + "/in" + llvm::Twine(i) + ".npy").str();
    std::string bytes(inputs[i].begin(), inputs[i].end());
    if (rt::Status status = rt::writeNpyFile(file, tensor, bytes);
        !status.isOk())
      return llvm::createStringError(status.message());
    storage.push_back("--input");
    storage.push_back(tensor.name + "=" + file);
    // The interpreter reads what the device reads (bf16 travels as f32, so
    // decode the tensor's own bytes).
    inputValues.push_back(rt::decodeTensorData(tensor.elementType, inputs[i]));
  }
  for (size_t i = 0; i < module.outputs.size(); ++i) {
    storage.push_back("--output");
    storage.push_back(module.outputs[i] + "=" +
                      (dir + "/out" + llvm::Twine(i) + ".npy").str());
  }
  if (useGraph)
    storage.push_back("--graph");
  if (!checkDatabase.empty()) {
    storage.push_back("--db");
    storage.push_back(checkDatabase);
  }
  for (const std::string &arg : storage)
    argv.push_back(arg);
  std::string message;
  int code = llvm::sys::ExecuteAndWait(koptRun, argv, std::nullopt, {}, 0, 0,
                                       &message);
  if (code != 0)
    return llvm::createStringError(
        "kopt-run ('" + koptRun + "') failed" +
        (message.empty() ? " with exit code " + std::to_string(code)
                         : ": " + message));

  // The reference of every element of every output, on every core.
  auto start = std::chrono::steady_clock::now();
  auto expected = interpreter.evaluateAll(inputValues, /*numThreads=*/0);
  if (!expected)
    return expected.takeError();
  seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  std::vector<OutputCheck> checks;
  for (size_t o = 0; o < module.outputs.size(); ++o) {
    rt::TensorSpec tensor = *module.getTensorAtBatch(module.outputs[o], batch);
    auto array =
        rt::readNpyFile((dir + "/out" + llvm::Twine(o) + ".npy").str());
    if (!array)
      return llvm::createStringError(array.status().message());
    auto bytes = rt::npyToTensorBytes(*array, tensor, tensor.name);
    if (!bytes)
      return llvm::createStringError(bytes.status().message());
    std::vector<double> actual = rt::decodeTensorData(
        tensor.elementType, reinterpret_cast<const uint8_t *>(bytes->data()),
        bytes->size());
    const std::vector<double> &reference = (*expected)[o];
    if (reference.size() != actual.size())
      return llvm::createStringError(
          "output '" + tensor.name + "' has " + std::to_string(actual.size()) +
          " elements, the graph's " + std::to_string(reference.size()));
    OutputCheck check;
    check.name = tensor.name;
    double diff = 0, norm = 0;
    for (size_t p = 0; p < actual.size(); ++p) {
      double ref = reference[p], got = actual[p];
      if (!std::isfinite(ref))
        ++check.nonFinite;
      double d = std::fabs(got - ref);
      if (std::isnan(got) != std::isnan(ref))
        d = INFINITY;
      else if (std::isnan(got))
        d = 0;
      diff += d * d;
      norm += ref * ref;
      check.maxAbs = std::max(check.maxAbs, d);
    }
    check.relative = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
    check.rms = std::sqrt(diff / double(std::max<size_t>(actual.size(), 1)));
    check.count = actual.size();
    check.allZero =
        !actual.empty() && std::all_of(reference.begin(), reference.end(),
                                       [](double value) { return value == 0; });
    check.pass = check.nonFinite == 0 && !check.allZero &&
                 (check.relative <= tolerance.relative ||
                  check.rms <= tolerance.absolute);
    checks.push_back(check);
  }
  return checks;
}

static cl::list<std::string> checkGivenInputs(
    "input",
    cl::desc("Input NAME (as 'kopt-run M --list' shows, or argN) from a .npy "
             "file of its exact shape and dtype, the same in every input set; "
             "repeatable"),
    cl::value_desc("NAME=FILE.npy"), cl::sub(checkModuleCommand));
static cl::opt<std::string> checkInputDir(
    "input-dir",
    cl::desc("Read every input NAME that has a file DIR/NAME.npy (or "
             "DIR/argN.npy) from it, as --input does"),
    cl::value_desc("DIR"), cl::init(""), cl::sub(checkModuleCommand));

/// The inputs given as .npy files, by input index: `--input` first, then
/// the files of `--input-dir`. Fails on a name the module lacks, a file
/// that cannot be read, or a shape or dtype that differs.
static llvm::Expected<std::map<size_t, std::vector<uint8_t>>>
readGivenInputs(const rt::RuntimeModule &module, int64_t batch) {
  std::map<size_t, std::vector<uint8_t>> given;
  auto indexOf = [&](llvm::StringRef name) -> std::optional<size_t> {
    for (size_t i = 0; i < module.inputs.size(); ++i)
      if (module.inputs[i] == name || name == "arg" + std::to_string(i))
        return i;
    return std::nullopt;
  };
  auto load = [&](size_t index, const std::string &file) -> llvm::Error {
    rt::TensorSpec tensor =
        *module.getTensorAtBatch(module.inputs[index], batch);
    auto array = rt::readNpyFile(file);
    if (!array)
      return llvm::createStringError(array.status().message());
    auto bytes = rt::npyToTensorBytes(*array, tensor, file);
    if (!bytes)
      return llvm::createStringError(bytes.status().message());
    given[index] = std::vector<uint8_t>(bytes->begin(), bytes->end());
    return llvm::Error::success();
  };
  for (const std::string &spec : checkGivenInputs) {
    auto [name, file] = llvm::StringRef(spec).split('=');
    if (file.empty())
      return llvm::createStringError("--input takes NAME=FILE.npy, not '" +
                                     spec + "'");
    std::optional<size_t> index = indexOf(name);
    if (!index)
      return llvm::createStringError("--input: the module has no input '" +
                                     name.str() + "'");
    if (given.count(*index))
      return llvm::createStringError("--input: '" + name.str() +
                                     "' is given twice");
    if (llvm::Error error = load(*index, file.str()))
      return std::move(error);
  }
  if (!checkInputDir.empty()) {
    if (!llvm::sys::fs::is_directory(checkInputDir))
      return llvm::createStringError("--input-dir: '" + checkInputDir +
                                     "' is not a folder");
    size_t found = 0;
    for (size_t i = 0; i < module.inputs.size(); ++i) {
      for (const std::string &name :
           {module.inputs[i], "arg" + std::to_string(i)}) {
        llvm::SmallString<256> file(checkInputDir);
        llvm::sys::path::append(file, name + ".npy");
        if (given.count(i) || !llvm::sys::fs::exists(file))
          continue;
        if (llvm::Error error = load(i, std::string(file)))
          return std::move(error);
        ++found;
      }
    }
    if (found == 0)
      return llvm::createStringError(
          "--input-dir: '" + checkInputDir +
          "' holds no NAME.npy or argN.npy of the module's inputs");
  }
  return given;
}

int mlir::kopt::runCheckModuleCommand() {
  if (checkInputs.size() != 2)
    return fail("check-module takes a graph and a module: kopt check-module "
                "GRAPH.mlir MODULE.kmod");
  const std::string &graphPath = checkInputs[0];
  const std::string &modulePath = checkInputs[1];
  auto module = rt::loadRuntimeModule(modulePath);
  if (!module)
    return fail(module.status().message());
  int64_t batch = module->batch;
  if (checkBatch.getNumOccurrences()) {
    if (rt::Status status = module->checkBatch(checkBatch); !status.isOk())
      return fail("--batch: " + status.message());
    batch = checkBatch;
  }

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::errs());
  auto graph = loadModelGraph(graphPath, context, sourceMgr);
  if (!graph)
    return fail(llvm::toString(graph.takeError()));
  if (llvm::Error error =
          prepareReferenceGraph(**graph, module->dynamicBatch ? batch : 0))
    return fail(llvm::toString(std::move(error)));
  auto entry = findEntryFunction(**graph);
  if (!entry)
    return fail(llvm::toString(entry.takeError()));
  if (entry->getNumArguments() != module->inputs.size() ||
      entry->getFunctionType().getNumResults() != module->outputs.size())
    return fail("the module's inputs and outputs do not match @" +
                entry->getSymName() + " of '" + graphPath + "'");
  auto interpreter = ReferenceInterpreter::create(*entry);
  if (!interpreter)
    return fail("reference: " + llvm::toString(interpreter.takeError()));

  // Each fused group may add its share of error: the bounds add up (over
  // the program that runs, the largest when chunks run several).
  rt::Tolerance tolerance{0, 0};
  std::vector<const rt::ModuleProgram *> running = {&*module};
  if (module->dynamicBatch) {
    running.clear();
    for (const rt::BatchChunk &chunk :
         rt::planBatchChunks(batch, module->getBatchSizes()))
      running.push_back(module->findProgram(chunk.size));
  }
  for (const rt::ModuleProgram *program : running) {
    rt::Tolerance sum{0, 0};
    for (const rt::ModuleStep &step : program->steps)
      if (step.kind == rt::ModuleStep::Kind::Plan) {
        sum.relative += program->plans[step.plan].tolerance.relative;
        sum.absolute = std::max(sum.absolute,
                                program->plans[step.plan].tolerance.absolute);
      }
    tolerance.relative = std::max(tolerance.relative, sum.relative);
    tolerance.absolute = std::max(tolerance.absolute, sum.absolute);
  }
  if (tolerance.relative == 0)
    tolerance = rt::Tolerance();

  llvm::SmallString<128> dir;
  if (std::error_code error =
          llvm::sys::fs::createUniqueDirectory("kopt-check", dir))
    return fail("cannot create a temporary folder: " + error.message());
  auto given = readGivenInputs(*module, batch);
  if (!given) {
    llvm::sys::fs::remove_directories(dir);
    return fail(llvm::toString(given.takeError()));
  }
  if (!given->empty())
    llvm::outs() << "check-module: " << given->size() << " of "
                 << module->inputs.size()
                 << " inputs read from .npy files, the same in every input "
                    "set\n";
  std::mt19937_64 rng(0x6b6f7074);
  bool passed = false, inconclusive = false;
  for (const char *distribution : {"normal(0, 1)", "uniform(0.5, 2)"}) {
    bool normal = llvm::StringRef(distribution).starts_with("normal");
    std::vector<std::vector<uint8_t>> inputs;
    for (const std::string &name : module->inputs) {
      rt::TensorSpec tensor = *module->getTensorAtBatch(name, batch);
      if (auto it = given->find(inputs.size()); it != given->end()) {
        inputs.push_back(it->second);
        continue;
      }
      // Integer inputs are mostly indices (token ids, masks, token types):
      // 0, 1 or 2 in every set, valid for any table of three rows or more,
      // where a signed draw would index out of bounds, which PyTorch refuses.
      rt::ElementType type = tensor.elementType;
      bool integer =
          type == rt::ElementType::I8 || type == rt::ElementType::I16 ||
          type == rt::ElementType::I32 || type == rt::ElementType::I64;
      if (normal && !integer) {
        inputs.push_back(rt::makeRandomTensorData(tensor, rng()));
        continue;
      }
      std::uniform_real_distribution<double> uniform(0.5, 2.0);
      std::uniform_int_distribution<int> index(0, 2);
      std::vector<double> values(size_t(tensor.getNumElements().value_or(0)));
      for (double &value : values)
        value = integer ? index(rng) : uniform(rng);
      inputs.push_back(rt::encodeTensorData(tensor.elementType, values));
    }
    double seconds = 0;
    auto checks = runOnce(*module, batch, modulePath, **interpreter, inputs,
                          dir, tolerance, seconds);
    if (!checks) {
      llvm::sys::fs::remove_directories(dir);
      return fail(llvm::toString(checks.takeError()));
    }
    passed = true;
    inconclusive = false;
    llvm::outs() << "check-module " << module->name << " on " << distribution
                 << " inputs" << (useGraph ? " (CUDA graph)" : "")
                 << (module->dynamicBatch ? " at batch " + std::to_string(batch)
                                          : std::string())
                 << ":\n"
                 << llvm::formatv("  fp64 reference of every element over the "
                                  "whole graph: {0:f2} s\n",
                                  seconds);
    for (const OutputCheck &check : *checks) {
      llvm::outs() << llvm::formatv(
          "  {0,-12} relative error {1:e2} (bound {2:e2}), rms {3:e2} "
          "(floor {4:e2}), max abs {5:e2}  {6}\n",
          check.name, check.relative, tolerance.relative, check.rms,
          tolerance.absolute, check.maxAbs,
          check.nonFinite || check.allZero ? "INCONCLUSIVE"
          : check.pass                     ? "PASS"
                                           : "FAIL");
      if (check.nonFinite)
        llvm::outs() << llvm::formatv(
            "  {0,-12} {1} of {2} fp64 reference values are NaN or infinite: "
            "these inputs prove nothing\n",
            check.name, check.nonFinite, check.count);
      else if (check.allZero)
        llvm::outs() << llvm::formatv("  {0,-12} every fp64 reference value "
                                      "is 0: these inputs prove nothing\n",
                                      check.name);
      inconclusive |= check.nonFinite || check.allZero;
      passed &= check.pass;
    }
    if (passed || !normal)
      break;
    llvm::outs() << (inconclusive
                         ? "  inconclusive on normal inputs; trying uniform("
                           "0.5, 2) (a graph with a square root or logarithm "
                           "of its inputs needs positive values)\n"
                         : "  over the bound on normal inputs; trying "
                           "uniform(0.5, 2) (an ill-conditioned graph fails "
                           "on normals even in its baseline)\n");
  }
  if (inconclusive)
    llvm::outs() << "the fp64 reference is not finite, or all zero, on every "
                    "input set tried: nothing was checked\n";
  llvm::sys::fs::remove_directories(dir);
  llvm::outs() << (passed ? "PASS" : "FAIL") << " " << module->name << "\n";
  return passed ? 0 : 1;
}
