//===- Prompt.cpp - The LLM proposer's prompt -------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Fills the templates of lib/LLM/templates/ (embedded at build time in
// Templates.h) with a task: `{{name}}` placeholders are replaced by text
// built here. Everything is derived from the task, the baseline plan and
// the options, in a fixed order, so a prompt is reproducible and its hash
// keys replayed answers.
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/LlmProposer.h"

#include "kopt/Codegen/Identifier.h"

#include "Templates.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <map>

using namespace mlir;
using namespace mlir::kopt;

GpuDescription mlir::kopt::describeGpu(llvm::StringRef arch) {
  static const std::map<std::string, std::string> known = {
      {"sm_80", "NVIDIA Ampere (A100 class): 108 SMs, up to 164 KiB shared "
                "memory per SM (163 KiB per block), 40 MiB L2, about 2 TB/s "
                "HBM bandwidth."},
      {"sm_89", "NVIDIA Ada: up to 128 SMs, up to 100 KiB shared memory per "
                "SM (99 KiB per block), about 1 TB/s GDDR bandwidth."},
      {"sm_90", "NVIDIA Hopper (H100/H200 class): 132 SMs, up to 228 KiB "
                "shared memory per SM (227 KiB per block), 50 MiB L2, about "
                "4.8 TB/s HBM3e bandwidth, 2048 threads and 64 warps per SM, "
                "65536 32-bit registers per SM."},
      {"sm_100", "NVIDIA Blackwell: 148 SMs, up to 228 KiB shared memory per "
                 "SM (227 KiB per block), about 8 TB/s HBM3e bandwidth."},
  };
  // Peak memory bandwidth in GB/s, for the physical floor.
  static const std::map<std::string, double> bandwidth = {
      {"sm_80", 2039}, {"sm_89", 1008}, {"sm_90", 4800}, {"sm_100", 8000}};
  GpuDescription gpu;
  gpu.arch = arch.str();
  auto it = known.find(gpu.arch);
  if (it != known.end())
    gpu.details = it->second;
  auto peak = bandwidth.find(gpu.arch);
  if (peak != bandwidth.end())
    gpu.bandwidthGBs = peak->second;
  return gpu;
}

std::string mlir::kopt::getLlmEntryName(const KernelTask &task) {
  return sanitizeIdentifier(task.name) + "_llm";
}

std::string mlir::kopt::getLlmParameterList(const KernelTask &task) {
  std::vector<std::string> parameters;
  for (const TensorSpec &input : task.inputs)
    parameters.push_back(("const " + getCudaStorageType(input.elementType) +
                          " *__restrict__ " + input.name)
                             .str());
  for (const TensorSpec &output : task.outputs)
    parameters.push_back((getCudaStorageType(output.elementType) +
                          " *__restrict__ " + output.name)
                             .str());
  return llvm::join(parameters, ", ");
}

static std::string formatShape(const TensorSpec &tensor) {
  std::string text;
  for (int64_t size : tensor.shape)
    text += std::to_string(size) + "x";
  return text + stringifyElementType(tensor.elementType);
}

static std::string formatTensors(const KernelTask &task) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto line = [&](const TensorSpec &tensor, llvm::StringRef role) {
    os << "- `" << tensor.name << "` (" << role << "): " << formatShape(tensor)
       << ", " << tensor.getNumElements().value_or(0) << " elements, "
       << tensor.getBytes().value_or(0) << " bytes, C++ type `"
       << getCudaStorageType(tensor.elementType) << "`\n";
  };
  for (const TensorSpec &input : task.inputs)
    line(input, "input");
  for (const TensorSpec &output : task.outputs)
    line(output, "output");
  return text;
}

/// `sizes` as `2x2`.
static std::string joinSizes(llvm::ArrayRef<int64_t> sizes) {
  return llvm::join(
      llvm::map_range(sizes, [](int64_t size) { return std::to_string(size); }),
      "x");
}

static std::string formatStep(const PlanStep &step) {
  switch (step.kind) {
  case PlanStep::Kind::Launch: {
    const LaunchStep &launch = step.launch;
    return llvm::formatv("kernel `{0}` from source `{1}`, grid ({2}), block "
                         "({3}), {4} bytes of dynamic shared memory, "
                         "arguments ({5})",
                         launch.entry, launch.source,
                         llvm::join(launch.grid, ", "),
                         llvm::join(launch.block, ", "), launch.sharedBytes,
                         llvm::join(launch.args, ", "))
        .str();
  }
  case PlanStep::Kind::Gemm: {
    const GemmStep &gemm = step.gemm;
    std::string scale;
    if (gemm.scale != 1.0)
      llvm::raw_string_ostream(scale)
          << llvm::format("%g", gemm.scale) << " * ";
    return llvm::formatv("cuBLASLt GEMM {0} = {1}({2}{3}{4} @ {5}{6}{7}), "
                         "batch {8}, m {9}, n {10}, k {11}",
                         gemm.c, gemm.activation, scale, gemm.a,
                         gemm.transposeA ? "^T" : "", gemm.b,
                         gemm.transposeB ? "^T" : "",
                         gemm.bias.empty() ? "" : " + " + gemm.bias, gemm.batch,
                         gemm.m, gemm.n, gemm.k)
        .str();
  }
  case PlanStep::Kind::Conv: {
    const ConvStep &conv = step.conv;
    std::string text =
        llvm::formatv("cuDNN convolution {0} = conv({1}, {2}), layout {3}, "
                      "strides {4}, dilations {5}",
                      conv.output, conv.input, conv.filter, conv.layout,
                      joinSizes(conv.strides), joinSizes(conv.dilations))
            .str();
    if (!conv.padding.empty())
      text += ", zero padding " + joinSizes(conv.padding) + " on both sides";
    if (conv.groups != 1)
      text += ", " + std::to_string(conv.groups) + " groups";
    return text;
  }
  }
  return "";
}

static std::string formatBaseline(const KernelPlan *baseline) {
  if (!baseline)
    return "No baseline plan is available for this group.\n";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "The baseline computes the group op by op, in "
     << baseline->steps.size() << " step(s) on one stream";
  if (!baseline->temporaries.empty()) {
    os << ", with temporaries";
    for (const TensorSpec &temporary : baseline->temporaries)
      os << " `" << temporary.name << "` (" << formatShape(temporary) << ")";
  }
  os << ":\n\n";
  unsigned index = 0;
  for (const PlanStep &step : baseline->steps) {
    os << ++index << ". " << formatStep(step);
    if (!step.comment.empty())
      os << ": " << step.comment;
    os << "\n";
  }
  for (const KernelSource &source : baseline->sources)
    os << "\nSource `" << source.id << "`:\n\n```cuda\n"
       << llvm::StringRef(source.code).rtrim() << "\n```\n";
  os << "\nA fused kernel is expected to beat it by reading each input and "
        "writing each output once.\n";
  return text;
}

static std::string formatDouble(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// Replaces every `{{name}}` of `templ` by `values[name]`. A placeholder
/// without a value is a bug in this file, not an input error.
static std::string
fillTemplate(llvm::StringRef templ,
             const std::map<std::string, std::string> &values) {
  std::string text;
  while (!templ.empty()) {
    size_t open = templ.find("{{");
    if (open == llvm::StringRef::npos) {
      text += templ;
      break;
    }
    size_t close = templ.find("}}", open + 2);
    if (close == llvm::StringRef::npos) {
      text += templ;
      break;
    }
    text += templ.take_front(open);
    std::string name = templ.slice(open + 2, close).str();
    auto it = values.find(name);
    assert(it != values.end() && "template placeholder without a value");
    if (it != values.end())
      text += it->second;
    templ = templ.drop_front(close + 2);
  }
  return text;
}

/// The placeholders every template may use.
static std::map<std::string, std::string>
getTaskValues(const KernelTask &task, const KernelPlan *baseline,
              const PromptOptions &options) {
  std::string gpu = "Architecture: " + options.gpu.arch + ".";
  if (!options.gpu.details.empty())
    gpu += " " + options.gpu.details;
  return {
      {"max_answer_bytes", std::to_string(options.maxAnswerBytes)},
      {"group_name", sanitizeCommentText(task.name)},
      {"group_kind", task.kind},
      {"group_mlir", llvm::StringRef(task.mlir).rtrim().str()},
      {"group_pseudocode",
       [&] {
         std::string loops =
             llvm::StringRef(formatPseudoCode(task.mlir)).rtrim().str();
         return loops.empty() ? std::string("(not available)") : loops;
       }()},
      {"tensors", llvm::StringRef(formatTensors(task)).rtrim().str()},
      {"entry", getLlmEntryName(task)},
      {"parameters", getLlmParameterList(task)},
      {"precision", task.precision},
      {"tolerance_relative", formatDouble(task.tolerance.relative)},
      {"tolerance_absolute", formatDouble(task.tolerance.absolute)},
      {"gpu", gpu},
      {"baseline", formatBaseline(baseline)},
  };
}

LlmPrompt mlir::kopt::buildPrompt(const KernelTask &task,
                                  const KernelPlan *baseline,
                                  const PromptOptions &options) {
  std::map<std::string, std::string> values =
      getTaskValues(task, baseline, options);
  LlmPrompt prompt;
  prompt.system = fillTemplate(kSystemTemplate, values);
  prompt.user = fillTemplate(kUserTemplate, values) +
                fillTemplate(kAnswerTemplate, values);
  return prompt;
}

//===----------------------------------------------------------------------===//
// The search's prompts
//===----------------------------------------------------------------------===//

/// The "search so far" section: the best candidate with its source, the
/// times, and the earlier attempts' feedback.
static std::string formatState(const SearchState &state) {
  std::string best;
  llvm::raw_string_ostream os(best);
  if (state.baselineUs > 0)
    os << llvm::formatv("The baseline takes {0:F2} us (median, L2 flushed). ",
                        state.baselineUs);
  if (state.floorUs > 0)
    os << llvm::formatv("Reading every input and writing every output once "
                        "at the GPU's bandwidth takes {0:F2} us: no kernel "
                        "can be faster. ",
                        state.floorUs);
  if (state.seed) {
    os << "The fastest correct candidate so far is `" << state.seedName << "`";
    if (state.seedUs > 0)
      os << llvm::formatv(" at {0:F2} us", state.seedUs);
    os << ", launched as: ";
    for (const PlanStep &step : state.seed->steps)
      os << formatStep(step) << "; ";
    os << "\n";
    for (const KernelSource &source : state.seed->sources)
      os << "\n```cuda\n" << llvm::StringRef(source.code).rtrim() << "\n```\n";
  } else {
    os << "No candidate has beaten the baseline yet.\n";
  }
  std::string feedback;
  if (state.feedback.empty())
    feedback = "No earlier attempts.";
  else
    feedback = "Earlier attempts and what the evaluator said of them:\n\n" +
               llvm::join(state.feedback, "\n\n");
  return fillTemplate(kStateTemplate,
                      {{"round", std::to_string(state.round)},
                       {"best", llvm::StringRef(best).rtrim().str()},
                       {"feedback", feedback}});
}

LlmPrompt mlir::kopt::buildIdeasPrompt(const KernelTask &task,
                                       const KernelPlan *baseline,
                                       const PromptOptions &options,
                                       const SearchState &state,
                                       unsigned count) {
  std::map<std::string, std::string> values =
      getTaskValues(task, baseline, options);
  values["count"] = std::to_string(count);
  LlmPrompt prompt;
  prompt.system = fillTemplate(kSystemTemplate, values);
  prompt.user = fillTemplate(kUserTemplate, values) + formatState(state) +
                "\n" + fillTemplate(kIdeasTemplate, values);
  return prompt;
}

LlmPrompt mlir::kopt::buildImplementationPrompt(const KernelTask &task,
                                                const KernelPlan *baseline,
                                                const PromptOptions &options,
                                                const SearchState &state,
                                                llvm::StringRef idea) {
  std::map<std::string, std::string> values =
      getTaskValues(task, baseline, options);
  values["idea"] = idea.empty() ? "any idea of yours that beats the best so far"
                                : idea.str();
  LlmPrompt prompt;
  prompt.system = fillTemplate(kSystemTemplate, values);
  prompt.user = fillTemplate(kUserTemplate, values) + formatState(state) +
                "\n" + fillTemplate(kImplementTemplate, values) + "\n" +
                fillTemplate(kAnswerTemplate, values);
  return prompt;
}
