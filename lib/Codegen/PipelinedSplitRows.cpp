//===- PipelinedSplitRows.cpp - Split rows as one kernel --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "SplitRowPasses.h"

#include "kopt/Codegen/CudaEmitter.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::kopt;

/// The counters' plan temporary.
static constexpr llvm::StringLiteral kCountersParam = "pipeslots";

llvm::StringRef mlir::kopt::getPipelineHelpers() {
  return R"cuda(
#ifndef KOPT_PIPELINE_HELPERS
#define KOPT_PIPELINE_HELPERS
template <typename T> struct KoptCoherentRead {
  const T *p;
  __device__ __forceinline__ T operator[](long long i) const {
    return __ldcg(p + i);
  }
};
// Waits until `*counter` reaches `target` (an acquire); a count not
// reached after 2 s stops the kernel (kopt_trap_when_late).
__device__ __forceinline__ void kopt_wait_count(const long long *counter,
                                                long long target) {
  unsigned long long started = 0;
  for (;;) {
    long long seen;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];"
                 : "=l"(seen) : "l"(counter) : "memory");
    if (seen >= target)
      return;
    kopt_trap_when_late(started);
  }
}
#endif
)cuda";
}

llvm::Expected<PipelinedSplitRowKernels>
mlir::kopt::generatePipelinedSplitRowKernels(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    int64_t numRows, int64_t rowLength, unsigned blockSize, int64_t chunks,
    int64_t lag, const std::function<std::string(unsigned)> &partialName,
    std::vector<PartialBuffer> &partials) {
  if (lag < 1)
    return llvm::createStringError(
        "a pass lags its previous by a step or more");
  auto plan = planSplitRows(context, outputs, leafOf, numRows, rowLength,
                            blockSize, chunks, partialName);
  if (!plan)
    return plan.takeError();
  partials = plan->partials;
  int64_t passes = plan->levels.size() + 1;
  auto reader = [](llvm::StringRef name) { return "kopt_cg_" + name.str(); };

  SplitPassOptions options;
  // Each thread reads one partial, not all: every pass's block reads its
  // row's partials.
  options.combineTogether = true;
  options.streamStores = true;
  options.partialReader = reader;
  std::vector<SplitPass> bodies;
  // Every pass's leaves, once each, the partials' readers left out.
  std::vector<LeafTensor> leaves;
  for (int64_t pass = 0; pass < passes; ++pass) {
    // The last pass reads the rows for the last time (L2 may evict them
    // first), and the operands every row reads again to keep (LayerNorm's
    // weights: 33.6 MB beside rows of 16 MB in 50 MB of L2).
    if (pass == passes - 1) {
      options.loadFunction = "__ldcs";
      options.broadcastLoadFunction = "kopt_load_keep";
    }
    auto body = emitSplitPass(context, *plan, pass, outputs, leafOf, numRows,
                              rowLength, blockSize, chunks, options);
    if (!body)
      return body.takeError();
    for (const LeafTensor &leaf : body->leaves)
      if (!llvm::StringRef(leaf.param).starts_with("kopt_cg_") &&
          llvm::none_of(leaves, [&](const LeafTensor &known) {
            return known.param == leaf.param;
          }))
        leaves.push_back(leaf);
    bodies.push_back(std::move(*body));
  }

  std::string r = std::to_string(numRows) + "LL";
  std::string s = std::to_string(chunks) + "LL";
  std::string p = std::to_string(passes) + "LL";
  std::string counters = kCountersParam.str();
  int64_t counts = 1 + (passes - 1) * numRows;
  int64_t tickets = (numRows + (passes - 1) * lag) * passes * chunks;
  int64_t chunkLength = (rowLength + chunks - 1) / chunks;

  GeneratedKernel kernel;
  kernel.entry = entry.str();
  std::string signature = printKernelSignature(kernel.entry, blockSize, leaves,
                                               outputs, kernel.args);
  signature.pop_back();
  for (const PartialBuffer &partial : partials) {
    signature += ", " + getCudaStorageType(partial.elementType).str() +
                 " *__restrict__ " + partial.param;
    kernel.args.push_back(partial.param);
  }
  signature += ", long long *__restrict__ " + counters + ")";
  kernel.args.push_back(counters);

  CodeWriter code;
  code.lines(getLoadKeepHelper());
  code.lines(getDeadlineHelper());
  code.lines(getPipelineHelpers());
  code.comment(comment.str() + " (split rows, passes pipelined)");
  code.line(signature + " {");
  code.indent();
  code.comment("Tickets in the order blocks start: every earlier ticket's "
               "block has started.");
  code.line("__shared__ long long kopt_ticket;");
  code.line("if (threadIdx.x == 0)");
  code.line("  kopt_ticket = (long long)atomicAdd(reinterpret_cast<unsigned "
            "long long *>(" +
            counters + "), 1ULL);");
  code.line("__syncthreads();");
  code.line("const long long kopt_step = kopt_ticket / (" + p + " * " + s +
            ");");
  code.line("const int kopt_pass = (int)((kopt_ticket / " + s + ") % " + p +
            ");");
  code.line("const long long row = kopt_step - kopt_pass * " +
            std::to_string(lag) + "LL;");
  code.line("const long long chunk = kopt_ticket % " + s + ";");
  code.line("if (row < 0 || row >= " + r + ") return;");
  code.line("const long long chunkStart = chunk * " +
            std::to_string(chunkLength) + "LL;");
  code.line("const long long chunkEnd = min(chunkStart + " +
            std::to_string(chunkLength) + "LL, " + std::to_string(rowLength) +
            "LL);");
  for (const PartialBuffer &partial : partials) {
    std::string type = getCudaStorageType(partial.elementType).str();
    code.line("const KoptCoherentRead<" + type + "> " + reader(partial.param) +
              "{" + partial.param + "};");
    code.line("(void)" + reader(partial.param) + ";");
  }
  code.comment("The row's previous pass done in every chunk.");
  code.line("if (kopt_pass > 0) {");
  code.line("  if (threadIdx.x == 0)");
  code.line("    kopt_wait_count(" + counters + " + 1 + (kopt_pass - 1) * " +
            r + " + row, " + s + ");");
  code.line("  __syncthreads();");
  code.line("}");
  for (auto [pass, body] : llvm::enumerate(bodies)) {
    code.line(std::string(pass ? "} else " : "") +
              "if (kopt_pass == " + std::to_string(pass) + ") {");
    code.indent();
    code.lines(body.body);
    code.dedent();
  }
  code.line("}");
  code.comment("This chunk of the pass done, its partials stored (a "
               "release).");
  code.line("if (kopt_pass < " + std::to_string(passes - 1) + ") {");
  code.line("  __syncthreads();");
  code.line("  if (threadIdx.x == 0)");
  code.line("    asm volatile(\"red.release.gpu.global.add.u64 [%0], 1;\" :: "
            "\"l\"(" +
            counters + " + 1 + kopt_pass * " + r + " + row) : \"memory\");");
  code.line("}");
  code.dedent();
  code.line("}");
  kernel.code = code.str();
  kernel.grid = {std::to_string(tickets), "1", "1"};
  kernel.block = {std::to_string(blockSize), "1", "1"};

  GeneratedKernel reset = generateCountsReset(
      (entry + "_reset").str(), comment.str() + " (pipeline counters reset)",
      counters, counts);

  PipelinedSplitRowKernels result;
  result.kernels = {std::move(reset), std::move(kernel)};
  result.counters.param = counters;
  result.counters.elementType = ElementType::I64;
  result.counters.shape = {counts};
  return result;
}
