//===- TensorCoreGemmProposer.cpp - Built-in 3xTF32 GEMM plans --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The built-in proposer's plans for a contraction group whose outputs are
// all elementwise in the product: one kernel per plan, the tensor-core GEMM
// with the whole group as its epilogue, in every tile configuration. An
// operand the group computes (an elementwise prologue) is written to a
// temporary by a pointwise kernel first. Hopper's wgmma takes 32-bit
// operands K-major only: where B is stored [K, N], its wgmma plans (`_tb`)
// write B transposed into a temporary first (TiledTranspose.h), and the
// evaluator weighs the transpose's cost against the mma.sync plans that
// read B as it is. The plans declare `3xtf32`
// arithmetic, which the evaluator holds to the baseline's accuracy
// (docs/Evaluator.md, "Arithmetic other than IEEE fp32").
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/TensorCoreGemm.h"

#include "BuiltinPlans.h"
#include "TiledTranspose.h"

#include "kopt/Codegen/LibraryCalls.h"
#include "kopt/Codegen/PlanBuilder.h"
#include "kopt/Codegen/RuntimeStatus.h"
#include "kopt/Codegen/WgmmaConv.h"

using namespace mlir;
using namespace mlir::kopt;

/// The plan tensor holding `value`, written by a pointwise kernel first
/// when no step has written it yet.
static llvm::Expected<std::string> getOperandBuffer(PlanBuilder &builder,
                                                    Value value) {
  std::string name = builder.findBuffer(value);
  if (!name.empty())
    return name;
  PointwiseOptions options;
  options.blockSize = 256;
  options.vectorWidth = 4;
  auto kernel = generatePointwiseKernel(
      value.getContext(), builder.entryName("operand"), "a GEMM operand",
      {builder.outputFor(value)}, builder.leafFn(), options);
  if (!kernel)
    return kernel.takeError();
  builder.addKernel(*kernel, "a GEMM operand");
  return builder.findBuffer(value);
}

/// Generates the GEMM kernel of one configuration.
using GemmGenerator = llvm::function_ref<llvm::Expected<GeneratedKernel>(
    llvm::StringRef entry, llvm::StringRef comment,
    const GemmOperands &operands, llvm::ArrayRef<KernelOutput> outputs,
    const TensorEmitter::LeafFn &leafOf)>;

/// Writes B [batch..., K, N] transposed into a new temporary [batch..., N, K]
/// and returns the temporary's name.
static llvm::Expected<std::string>
writeKMajorB(PlanBuilder &builder, const GemmForm &form, const std::string &b) {
  std::vector<int64_t> shape;
  if (form.batchedB)
    shape.assign(form.batchShape.begin(), form.batchShape.end());
  shape.push_back(form.n);
  shape.push_back(form.k);
  std::string name = "b_kmajor";
  builder.declareTemporary({name, ElementType::F32, shape});
  auto kernel = generateTiledTranspose(
      builder.entryName("transpose"), "B written K-major for wgmma", b, name,
      form.batchedB ? form.getBatch() : 1, form.k, form.n);
  if (!kernel)
    return kernel.takeError();
  builder.addKernel(*kernel, "B written K-major for wgmma");
  return name;
}

/// Declares the plan `builder` built (`error` when it failed) as 3xTF32
/// arithmetic for `arch`, verifies it and adds it to `proposal`; a failure
/// becomes a remark, and false.
static bool addTensorCorePlan(Proposal &proposal, PlanBuilder &builder,
                              const KernelTask &task, llvm::Error error,
                              llvm::StringRef arch) {
  KernelPlan plan = builder.take();
  plan.arithmetic = kTensorCoreArithmetic.str();
  plan.arch = arch.str();
  return addBuiltinPlan(proposal, std::move(plan), task, std::move(error));
}

/// One plan: the operands (B transposed first when `transposeB`), then the
/// GEMM with `outputs` as its epilogue.
static llvm::Error buildPlan(PlanBuilder &builder, const GemmForm &form,
                             llvm::ArrayRef<Value> outputs,
                             GemmGenerator generate, llvm::StringRef comment,
                             bool transposeB = false) {
  GemmOperands operands;
  for (auto [value, name] :
       {std::pair(form.a, &operands.a), std::pair(form.b, &operands.b)}) {
    auto buffer = getOperandBuffer(builder, value);
    if (!buffer)
      return buffer.takeError();
    *name = *buffer;
  }
  if (transposeB) {
    auto kMajor = writeKMajorB(builder, form, operands.b);
    if (!kMajor)
      return kMajor.takeError();
    operands.b = *kMajor;
  }
  std::vector<KernelOutput> kernelOutputs;
  for (Value value : outputs)
    kernelOutputs.push_back(builder.outputFor(value));
  auto kernel = generate(builder.entryName("gemm"), comment, operands,
                         kernelOutputs, builder.leafFn());
  if (!kernel)
    return kernel.takeError();
  builder.addKernel(*kernel, comment);
  return builder.finishOutputs(form.result.getContext());
}

void mlir::kopt::proposeTensorCoreGemms(Proposal &proposal, func::FuncOp group,
                                        const KernelTask &task,
                                        Operation *anchor) {
  // Tensor cores do not compute IEEE fp32 products.
  if (task.precision == "fp32-ieee")
    return;
  std::optional<GemmForm> form = matchGemmForm(anchor);
  auto linalgOp = dyn_cast<linalg::LinalgOp>(anchor);
  if (!form || !linalgOp || !isZeroTensor(linalgOp.getDpsInits()[0]))
    return;
  // A contraction group is the product and its elementwise epilogue: every
  // output has the product's elements (reshaped, perhaps).
  SmallVector<Value> outputs = builtins::returnedValues(group);
  auto productType = cast<RankedTensorType>(form->result.getType());
  if (outputs.empty() || llvm::any_of(outputs, [&](Value value) {
        return cast<RankedTensorType>(value.getType()).getNumElements() !=
               productType.getNumElements();
      })) {
    proposal.remarks.push_back(
        "builtin: the 3xTF32 GEMM fuses elementwise epilogues only, and an "
        "output of this group does not have the product's elements");
    return;
  }

  std::string ops;
  for (Operation &op : group.getBody().front().without_terminator())
    if (!isInlinedOp(&op) && !isFoldedIntoGemms(&op))
      ops += " " + describeOpForCode(&op);
  // Builds, declares and verifies one plan; false when it failed (every
  // configuration of a family fails alike).
  auto propose = [&](const std::string &variant, const std::string &comment,
                     llvm::StringRef arch, GemmGenerator generate,
                     bool transposeB = false) {
    PlanBuilder builder(task, group, "builtin", variant);
    llvm::Error error =
        buildPlan(builder, *form, outputs, generate, comment, transposeB);
    return addTensorCorePlan(proposal, builder, task, std::move(error), arch);
  };
  MLIRContext *context = group.getContext();
  for (const TensorCoreGemmConfig &config : getTensorCoreGemmConfigs()) {
    std::string comment =
        "3xTF32 tensor-core GEMM, " + std::to_string(config.blockM) + "x" +
        std::to_string(config.blockN) + "x" + std::to_string(config.blockK) +
        " tiles, " + std::to_string(config.stages) + " stages:" + ops;
    auto generate = [&](llvm::StringRef entry, llvm::StringRef comment,
                        const GemmOperands &operands,
                        llvm::ArrayRef<KernelOutput> kernelOutputs,
                        const TensorEmitter::LeafFn &leafOf) {
      return generateTensorCoreGemm(context, entry, comment, *form, operands,
                                    kernelOutputs, leafOf, config);
    };
    if (!propose(config.getName(), comment, "", generate))
      return;
  }
  // Hopper's wgmma, for K-major operands (nn.Linear's layout); sm_90a only.
  // B stored [K, N] is transposed first.
  GemmForm wgmmaForm = *form;
  bool transposeB = !form->transposeB;
  wgmmaForm.transposeB = true;
  if (!isWgmmaGemmForm(wgmmaForm))
    return;
  for (const WgmmaGemmConfig &config : getWgmmaGemmConfigs(form->n)) {
    std::string comment =
        "3xTF32 GEMM on wgmma (sm_90a), 128x" + std::to_string(config.blockN) +
        "x" + std::to_string(config.blockK) + " tiles, " +
        std::to_string(config.stages) + " stages" +
        (transposeB ? ", B transposed first" : "") + ":" + ops;
    auto generate = [&](llvm::StringRef entry, llvm::StringRef comment,
                        const GemmOperands &operands,
                        llvm::ArrayRef<KernelOutput> kernelOutputs,
                        const TensorEmitter::LeafFn &leafOf) {
      return generateWgmmaGemm(context, entry, comment, wgmmaForm, operands,
                               kernelOutputs, leafOf, config);
    };
    if (!propose(config.getName() + (transposeB ? "_tb" : ""), comment,
                 kWgmmaArch, generate, transposeB))
      return;
  }
}

void mlir::kopt::proposeTensorCoreConvs(Proposal &proposal, func::FuncOp group,
                                        const KernelTask &task,
                                        Operation *anchor) {
  // Convolutions the kernel does not take (other layouts, groups) or that
  // would leave most SMs idle have cuDNN's plans; no remark, as most
  // networks have a few.
  std::optional<WgmmaConvShape> shape = offersWgmmaConv(anchor, task);
  if (!shape)
    return;
  // Fused whole when every output has the convolution's elements; a group
  // that pools them gets the kernel before its pooling kernels instead
  // (BuiltinProposer.cpp).
  SmallVector<Value> outputs = builtins::returnedValues(group);
  auto convType = cast<RankedTensorType>(anchor->getResult(0).getType());
  if (outputs.empty() || llvm::any_of(outputs, [&](Value value) {
        return cast<RankedTensorType>(value.getType()).getNumElements() !=
               convType.getNumElements();
      }))
    return;
  std::string ops;
  for (Operation &op : group.getBody().front().without_terminator())
    if (!isInlinedOp(&op) && !isFoldedIntoConvs(&op))
      ops += " " + describeOpForCode(&op);
  MLIRContext *context = group.getContext();
  for (const WgmmaGemmConfig &config : getWgmmaGemmConfigs(shape->features)) {
    PlanBuilder builder(task, group, "builtin", getWgmmaConvName(config));
    llvm::Error error = [&]() -> llvm::Error {
      auto operands = getConvOperands(builder, anchor);
      if (!operands)
        return operands.takeError();
      std::vector<KernelOutput> kernelOutputs;
      for (Value value : outputs)
        kernelOutputs.push_back(builder.outputFor(value));
      std::string comment = "3xTF32 implicit-GEMM convolution on wgmma "
                            "(sm_90a), 128x" +
                            std::to_string(config.blockN) + "x32 tiles, " +
                            std::to_string(config.stages) + " stages:" + ops;
      auto kernel =
          generateWgmmaConv(context, builder.entryName("conv"), comment, anchor,
                            *operands, kernelOutputs, builder.leafFn(), config);
      if (!kernel)
        return kernel.takeError();
      builder.addKernel(*kernel, comment);
      return builder.finishOutputs(context);
    }();
    if (!addTensorCorePlan(proposal, builder, task, std::move(error),
                           kWgmmaArch))
      return;
  }
}
