//===- RuntimeModule.h - A model graph as buffers and launches --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A runtime module (`kopt.module/1`, a `.kmod` file) is what `kopt compile
// --emit-module` writes and libkoptrt runs: a graph's buffers (inputs,
// outputs, constants with their bytes, temporaries and reshaped views) and an
// ordered list of steps, each a plan launch over named buffers or a copy.
// Plans come inline (their sources and, per source, a cubin and PTX) or by
// reference to a kernel database record. docs/RuntimeModule.md describes the
// file: an 8-byte magic, the length of a JSON header, the header, and a data
// section holding every binary blob at 64-byte-aligned offsets.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_RUNTIMEMODULE_H
#define KOPT_RUNTIME_RUNTIMEMODULE_H

#include "kopt/Runtime/KernelDatabase.h"
#include "kopt/Runtime/OutputFile.h"
#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// One buffer of a module.
struct ModuleBuffer {
  enum class Kind { Input, Output, Constant, Temporary, Alias };
  /// The name, element type and shape (`tensor.name` is the buffer's name).
  TensorSpec tensor;
  Kind kind = Kind::Temporary;
  /// For an alias: the buffer whose bytes it views with another shape (never
  /// an alias itself); the byte sizes agree.
  std::string aliasOf;
  /// For a constant: its bytes, row-major in its element type.
  std::string data;
};

/// The compiled forms of one plan source for one architecture.
struct SourceBinary {
  std::string source;
  /// The architecture they were built for, such as `sm_90`.
  std::string arch;
  /// The cubin for `arch`, and PTX the driver can JIT on `arch` and newer;
  /// either may be empty.
  std::string cubin;
  std::string ptx;
};

/// One plan of a module: what it computes and how, inline or by reference.
struct ModulePlan {
  /// The task's key, and the outlined function it came from (for messages).
  std::string key;
  std::string function;
  /// `proposer/variant`, and the FNV-1a hash of the plan's JSON as the
  /// compiler tagged it (`kopt.plan_hash`).
  std::string planName;
  std::string planHash;
  /// The task's tensors in order (no MLIR: the module does not need it).
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  /// The task's tolerance (what a check of the module's outputs allows).
  Tolerance tolerance;
  /// The plan itself, when inline.
  std::optional<KernelPlan> plan;
  /// Compiled sources of an inline plan.
  std::vector<SourceBinary> binaries;
  /// For a plan by reference: the kernel database record's fingerprint;
  /// the record is looked up by `key` and this, and must hash to `planHash`.
  std::optional<DeviceFingerprint> reference;

  /// The task the plan runs for (named `function`, without MLIR).
  KernelTask getTask() const;
};

/// One step of a module, run in order on one stream.
struct ModuleStep {
  enum class Kind { Plan, Copy };
  Kind kind = Kind::Plan;
  /// Plan: the index into `RuntimeModule::plans`, and the buffers bound to
  /// the task's inputs and outputs, in order.
  size_t plan = 0;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  /// Copy: bytes of buffer `from` into buffer `to` (equal sizes).
  std::string from;
  std::string to;
};

/// One complete program: the buffers, plans and steps that run the graph at
/// one batch size (a static module is one program).
struct ModuleProgram {
  /// In a module with a dynamic batch: the batch size this program runs
  /// (the outermost dimension of its batched inputs and outputs is this
  /// size times a constant); 0 in a static module.
  int64_t batch = 0;
  std::vector<ModuleBuffer> buffers;
  /// Buffer names of the function's arguments and results, in order.
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<ModulePlan> plans;
  std::vector<ModuleStep> steps;

  /// The buffer named `name`, or nullptr.
  const ModuleBuffer *findBuffer(std::string_view name) const;
  /// Checks the program's consistency: unique buffer names, aliases of
  /// existing non-alias buffers of the same size, constants holding exactly
  /// their bytes, inputs and outputs of the right kinds, every step's plan
  /// and buffers existing with the task's shapes and element types, every
  /// inline plan verified against its task.
  Status verify() const;
};

/// How a module with a dynamic batch runs at other sizes.
struct DynamicBatch {
  /// Whether the compiler proved that every sample is computed from its
  /// own slice of the batched inputs alone; only then does a batch size
  /// without a program of its own run, as chunks of the tuned sizes.
  bool independent = false;
  /// Why it could not be proved, when it was not.
  std::string reason;
  /// The inputs and outputs whose outermost dimension carries the batch;
  /// the others (weights) are the same at every size.
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

/// A whole graph, ready to run (`kopt.module/1`). The module is itself the
/// program of its first batch size; a module with a dynamic batch has a
/// program for each further tuned size in `specializations`.
struct RuntimeModule : ModuleProgram {
  /// The schema this code reads and writes.
  static constexpr const char *kSchema = "kopt.module/1";

  /// The graph's function name.
  std::string name;
  /// Who wrote the module (`kopt 0.1.0`).
  std::string producer;
  /// The architecture the binaries were built for (may be empty).
  std::string arch;
  /// Set when the graph's batch is dynamic.
  std::optional<DynamicBatch> dynamicBatch;
  /// The programs of the other batch sizes (none in a static module).
  std::vector<ModuleProgram> specializations;

  /// Every program: this one first, then the specialisations.
  std::vector<const ModuleProgram *> getPrograms() const;
  /// The tuned batch sizes, ascending (empty for a static module).
  std::vector<int64_t> getBatchSizes() const;
  /// The program of batch size `batch`, or nullptr.
  const ModuleProgram *findProgram(int64_t batch) const;
  /// Whether input or output `name` carries the batch.
  bool isBatched(std::string_view name) const;
  /// The tensor of input or output `name` at batch size `batch` (the
  /// module's own shape in a static module, whatever `batch`).
  Result<TensorSpec> getTensorAtBatch(std::string_view name,
                                      int64_t batch) const;
  /// Whether the module runs at batch size `batch`: a tuned size, or any
  /// positive size when its samples are independent; else an error naming
  /// the tuned sizes.
  Status checkBatch(int64_t batch) const;
  /// Verifies every program, and that they agree: the same inputs and
  /// outputs, of the same element types, the batched ones scaling with the
  /// batch size in their outermost dimension and the others alike.
  Status verify() const;
};

/// The stable spelling of a buffer kind (`input`, `alias`, ...).
const char *stringifyBufferKind(ModuleBuffer::Kind kind);

/// Serialises `module` (see the file comment); does not verify it.
std::string writeRuntimeModule(const RuntimeModule &module);
/// Reads a module written by `writeRuntimeModule`, checks every blob's
/// bounds and hash, and verifies it. `name` prefixes error messages.
Result<RuntimeModule> readRuntimeModule(std::string_view bytes,
                                        std::string_view name = "module");
/// Reads the file at `path` with `readRuntimeModule`.
Result<RuntimeModule> loadRuntimeModule(const std::string &path);
/// Writes `module` to `path` through an OutputFile, refusing the files in
/// `protect`.
Status saveRuntimeModule(const RuntimeModule &module, const std::string &path,
                         const ProtectedFiles &protect = {});

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_RUNTIMEMODULE_H
