//===- LlmProposerTest.cpp - The LLM prompt and answer parser ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/LLM/LlmProposer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace mlir::kopt;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace {

KernelTask makeTask() {
  KernelTask task;
  task.key = std::string(64, 'a');
  task.name = "bias_relu_kopt_g0_elementwise";
  task.kind = "elementwise";
  task.inputs = {{"in0", ElementType::F32, {256, 1024}},
                 {"in1", ElementType::F32, {1024}}};
  task.outputs = {{"out0", ElementType::F32, {256, 1024}}};
  task.mlir = "func.func private @bias_relu_kopt_g0_elementwise(%arg0: "
              "tensor<256x1024xf32>, %arg1: tensor<1024xf32>) -> "
              "tensor<256x1024xf32>";
  return task;
}

const char *const kSignature =
    "extern \"C\" __global__ void bias_relu_kopt_g0_elementwise_llm(const "
    "float *__restrict__ in0, const float *__restrict__ in1, float "
    "*__restrict__ out0)";

const char *const kBody = R"src( {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 256 * 1024) {
    float v = in0[i] + in1[i % 1024];
    out0[i] = v > 0.f ? v : 0.f;
  }
}
)src";

const char *const kLaunch = R"json(```json
{"grid": ["cdiv(numel(out0), 256)"], "block": [256], "shared_bytes": 0}
```
)json";

std::string answerWith(const std::string &code,
                       const std::string &launch = kLaunch) {
  return "Here is a fused kernel.\n\n```cuda\n" + code + "```\n\n" + launch;
}

std::string goodAnswer() { return answerWith(kSignature + std::string(kBody)); }

std::string rejection(const std::string &text, AnswerOptions options = {}) {
  auto plan = parseAnswer(text, makeTask(), options);
  if (plan)
    return "accepted";
  return llvm::toString(plan.takeError());
}

TEST(LlmAnswerTest, ParsesValidAnswer) {
  KernelTask task = makeTask();
  auto plan = parseAnswer(goodAnswer(), task);
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->proposer, "llm");
  EXPECT_THAT(plan->variant, StartsWith("llm-"));
  EXPECT_EQ(plan->variant.size(), 12u);
  EXPECT_EQ(plan->taskKey, task.key);
  ASSERT_EQ(plan->sources.size(), 1u);
  EXPECT_THAT(plan->sources[0].code, HasSubstr("out0[i] = v > 0.f"));
  ASSERT_EQ(plan->steps.size(), 1u);
  const LaunchStep &launch = plan->steps[0].launch;
  EXPECT_EQ(launch.entry, "bias_relu_kopt_g0_elementwise_llm");
  EXPECT_EQ(launch.source, plan->sources[0].id);
  EXPECT_EQ(launch.args, (std::vector<std::string>{"in0", "in1", "out0"}));
  EXPECT_EQ(launch.grid[0], "cdiv(numel(out0), 256)");
  EXPECT_EQ(launch.grid[1], "1");
  EXPECT_EQ(launch.block[0], "256");
  EXPECT_TRUE(verifyPlan(*plan, task).isOk());

  // The same code gives the same variant.
  auto again = parseAnswer(goodAnswer(), task);
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(again->variant, plan->variant);
}

TEST(LlmAnswerTest, AcceptsHelpersIncludesAndForbiddenWordsInComments) {
  std::string code = "#include <cuda_fp16.h>\n"
                     "#include \"cuda_bf16.h\"  // for later\n"
                     "#define BLOCK 256\n"
                     "#pragma once\n"
                     "// Not host code: no cudaMalloc, no main(), no <<<.\n"
                     "/* __host__ thrust:: */\n"
                     "__device__ __forceinline__ float relu(float v) {\n"
                     "  const char *note = \"cudaMemcpy\";\n"
                     "  (void)note;\n"
                     "  return v > 0.f ? v : 0.f;\n"
                     "}\n"
                     "extern \"C\" __global__ __launch_bounds__(BLOCK) void\n"
                     "bias_relu_kopt_g0_elementwise_llm(\n"
                     "    const float *__restrict__ a,\n"
                     "    const float *__restrict__ b,\n"
                     "    float *__restrict__ c) {\n"
                     "  int i = blockIdx.x * BLOCK + threadIdx.x;\n"
                     "  if (i < 262144) c[i] = relu(a[i] + b[i % 1024]);\n"
                     "}\n";
  EXPECT_EQ(rejection(answerWith(code)), "accepted");
}

TEST(LlmAnswerTest, RejectsMissingCodeBlock) {
  EXPECT_THAT(rejection("I cannot do that."),
              HasSubstr("no ```cuda code block"));
  EXPECT_THAT(rejection("```cpp\nint x;\n```\n" + std::string(kLaunch)),
              HasSubstr("found only ```cpp"));
}

TEST(LlmAnswerTest, RejectsSeveralCodeBlocks) {
  std::string code = kSignature + std::string(kBody);
  EXPECT_THAT(rejection("```cuda\n" + code + "```\n" + answerWith(code)),
              HasSubstr("2 ```cuda code blocks"));
}

TEST(LlmAnswerTest, RejectsUnclosedBlock) {
  EXPECT_THAT(rejection("```cuda\n" + std::string(kSignature) + kBody),
              HasSubstr("not closed"));
}

TEST(LlmAnswerTest, RejectsSeveralKernels) {
  std::string code = kSignature + std::string(kBody) +
                     "extern \"C\" __global__ void other() {}\n";
  EXPECT_THAT(rejection(answerWith(code)), HasSubstr("2 __global__ kernels"));
}

TEST(LlmAnswerTest, RejectsNoKernel) {
  EXPECT_THAT(rejection(answerWith("__device__ int f() { return 1; }\n")),
              HasSubstr("no __global__ kernel"));
}

TEST(LlmAnswerTest, RejectsWrongEntryName) {
  std::string code =
      "extern \"C\" __global__ void fused(const float *__restrict__ in0, "
      "const float *__restrict__ in1, float *__restrict__ out0)" +
      std::string(kBody);
  std::string reason = rejection(answerWith(code));
  EXPECT_THAT(reason, HasSubstr("named `fused`"));
  EXPECT_THAT(reason, HasSubstr(kSignature));
}

TEST(LlmAnswerTest, RejectsKernelWithoutExternC) {
  std::string code = std::string(kSignature).substr(11) + kBody;
  EXPECT_THAT(rejection(answerWith(code)),
              HasSubstr("must be declared `extern \"C\""));
}

TEST(LlmAnswerTest, RejectsWrongParameters) {
  std::string twoParameters =
      "extern \"C\" __global__ void bias_relu_kopt_g0_elementwise_llm(const "
      "float *__restrict__ in0, float *__restrict__ out0)" +
      std::string(kBody);
  EXPECT_THAT(rejection(answerWith(twoParameters)),
              HasSubstr("has 2 parameter(s); it must have 3"));
  std::string notConst =
      "extern \"C\" __global__ void bias_relu_kopt_g0_elementwise_llm(float "
      "*in0, const float *__restrict__ in1, float *__restrict__ out0)" +
      std::string(kBody);
  EXPECT_THAT(rejection(answerWith(notConst)),
              HasSubstr("parameter 1 of the kernel is `float * in0`; it must "
                        "be `const float *__restrict__ in0`"));
  std::string wrongType =
      "extern \"C\" __global__ void bias_relu_kopt_g0_elementwise_llm(const "
      "float *__restrict__ in0, const float *__restrict__ in1, double "
      "*__restrict__ out0)" +
      std::string(kBody);
  EXPECT_THAT(rejection(answerWith(wrongType)), HasSubstr("parameter 3"));
}

TEST(LlmAnswerTest, RejectsHostCode) {
  std::string kernel = kSignature + std::string(kBody);
  EXPECT_THAT(rejection(answerWith(kernel + "int main() { return 0; }\n")),
              HasSubstr("host code is not allowed (found `main(`)"));
  EXPECT_THAT(
      rejection(answerWith(kernel + "void h() { float *p; cudaMalloc(&p, 4); "
                                    "}\n")),
      HasSubstr("found `cudaMalloc`"));
  EXPECT_THAT(
      rejection(answerWith(kernel + "__host__ __device__ int f() { return 1; "
                                    "}\n")),
      HasSubstr("found `__host__`"));
  EXPECT_THAT(rejection(answerWith(kernel + "void l() { k<<<1, 1>>>(); }\n")),
              HasSubstr("kernel launch"));
  EXPECT_THAT(rejection(answerWith("#define ALLOC cudaMalloc\n" + kernel)),
              HasSubstr("found `cudaMalloc`"));
}

TEST(LlmAnswerTest, RejectsDisallowedIncludesAndLibraries) {
  std::string kernel = kSignature + std::string(kBody);
  EXPECT_THAT(rejection(answerWith("#include <stdio.h>\n" + kernel)),
              HasSubstr("`#include <stdio.h>` is not allowed"));
  EXPECT_THAT(rejection(answerWith("#include <cub/cub.cuh>\n" + kernel)),
              HasSubstr("is not allowed"));
  EXPECT_THAT(
      rejection(answerWith(kernel + "__device__ void g() { thrust::x(); }\n")),
      HasSubstr("library calls are not allowed (found `thrust`)"));
  EXPECT_THAT(rejection(answerWith("#error no\n" + kernel)),
              HasSubstr("`#error` is not allowed"));
}

TEST(LlmAnswerTest, RejectsOversizedAndInvalidText) {
  AnswerOptions small;
  small.maxAnswerBytes = 100;
  EXPECT_THAT(rejection(goodAnswer(), small),
              HasSubstr("more than the 100 allowed"));
  EXPECT_THAT(rejection(goodAnswer() + "\xff\xfe"),
              HasSubstr("not valid UTF-8"));
  EXPECT_THAT(
      rejection(answerWith("/* open\n" + std::string(kSignature) + "\n")),
      HasSubstr("comment is not closed"));
}

TEST(LlmAnswerTest, RejectsBadLaunchBlocks) {
  std::string kernel = kSignature + std::string(kBody);
  EXPECT_THAT(rejection(answerWith(kernel, "")),
              HasSubstr("no ```json launch block"));
  EXPECT_THAT(rejection(answerWith(kernel, "```json\n{grid: 1}\n```\n")),
              HasSubstr("not valid JSON"));
  EXPECT_THAT(rejection(answerWith(kernel, "```json\n[1]\n```\n")),
              HasSubstr("must be a JSON object"));
  EXPECT_THAT(
      rejection(answerWith(kernel, "```json\n{\"grid\": [1], \"block\": [1], "
                                   "\"stream\": 1}\n```\n")),
      HasSubstr("unknown key \"stream\""));
  EXPECT_THAT(
      rejection(answerWith(kernel, "```json\n{\"block\": [256]}\n```\n")),
      HasSubstr("no \"grid\" array"));
  EXPECT_THAT(rejection(answerWith(
                  kernel, "```json\n{\"grid\": [1, 1, 1, 1], \"block\": "
                          "[1]}\n```\n")),
              HasSubstr("one to three entries"));
  EXPECT_THAT(rejection(answerWith(kernel, "```json\n{\"grid\": "
                                           "[\"numel(nope)\"], \"block\": "
                                           "[256]}\n```\n")),
              HasSubstr("the launch block is invalid"));
  EXPECT_THAT(
      rejection(answerWith(
          kernel, "```json\n{\"grid\": [1], \"block\": [2048]}\n```\n")),
      HasSubstr("the launch block is invalid"));
  EXPECT_THAT(
      rejection(answerWith(kernel, "```json\n{\"grid\": [1], \"block\": [32], "
                                   "\"shared_bytes\": -4}\n```\n")),
      HasSubstr("non-negative"));
  // Deep enough to exhaust a recursive parser's stack, in an answer the
  // size cap lets through.
  AnswerOptions large;
  large.maxAnswerBytes = 1 << 20;
  EXPECT_THAT(
      rejection(answerWith(kernel, "```json\n" + std::string(100000, '[') +
                                       std::string(100000, ']') + "\n```\n"),
                large),
      HasSubstr("nesting deeper than 128 levels"));
}

TEST(LlmAnswerTest, NeverCrashesOnTruncatedAnswers) {
  std::string answer = goodAnswer();
  KernelTask task = makeTask();
  unsigned accepted = 0;
  for (size_t size = 0; size <= answer.size(); ++size) {
    auto plan = parseAnswer(llvm::StringRef(answer).take_front(size), task);
    if (plan)
      ++accepted;
    else
      EXPECT_FALSE(llvm::toString(plan.takeError()).empty());
  }
  EXPECT_GE(accepted, 1u);
}

TEST(LlmAnswerTest, NeverCrashesOnMutatedAnswers) {
  // Deterministic mutations of a valid answer with the characters the lexer
  // cares about; every outcome must be a plan or a non-empty reason.
  const std::string alphabet = "`\"'/*#\\(){}<>,;\n \r\0\xff\xc3R_ab1";
  std::string answer = goodAnswer();
  KernelTask task = makeTask();
  uint64_t state = 42;
  auto next = [&state](uint64_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % bound;
  };
  for (int round = 0; round < 3000; ++round) {
    std::string text = answer;
    for (int edits = 1 + next(4); edits > 0; --edits) {
      size_t at = next(text.size() + 1);
      char c = alphabet[next(alphabet.size())];
      switch (next(3)) {
      case 0:
        text.insert(text.begin() + at, c);
        break;
      case 1:
        if (at < text.size())
          text[at] = c;
        break;
      default:
        if (at < text.size())
          text.erase(at, 1 + next(8));
        break;
      }
    }
    auto plan = parseAnswer(text, task);
    if (!plan) {
      EXPECT_FALSE(llvm::toString(plan.takeError()).empty());
    }
  }
  for (const char *text :
       {"", "```", "```cuda\n```\n", "```cuda\n```\n```json\n```\n", "``````",
        "```cuda\nR\"x(\n```\n", "```cuda\n#\n```\n",
        "```cuda\nextern \"C\" __global__\n```\n```json\n{}\n```\n",
        "```cuda\n__global__ void f(\n```\n"})
    EXPECT_FALSE(static_cast<bool>(parseAnswer(text, task))) << text;
}

TEST(LlmPromptTest, HoldsSignatureShapesRulesAndBaseline) {
  KernelTask task = makeTask();
  task.tolerance.relative = 2e-5;
  KernelPlan baseline;
  baseline.taskKey = task.key;
  baseline.proposer = "baseline";
  baseline.variant = "per-op";
  baseline.sources.push_back({"main", "extern \"C\" __global__ void "
                                      "baseline_add(const float *a) {}\n"});
  PlanStep step;
  step.launch.source = "main";
  step.launch.entry = "baseline_add";
  step.launch.grid = {"cdiv(numel(out0), 256)", "1", "1"};
  step.launch.block = {"256", "1", "1"};
  step.launch.args = {"in0", "in1", "out0"};
  baseline.steps.push_back(step);

  PromptOptions options;
  options.gpu = describeGpu("sm_90");
  LlmPrompt prompt = buildPrompt(task, &baseline, options);
  EXPECT_THAT(prompt.user, HasSubstr(kSignature));
  EXPECT_THAT(prompt.user, HasSubstr("`in0` (input): 256x1024xf32"));
  EXPECT_THAT(prompt.user, HasSubstr("`in1` (input): 1024xf32"));
  EXPECT_THAT(prompt.user, HasSubstr("`out0` (output): 256x1024xf32"));
  EXPECT_THAT(prompt.user, HasSubstr(task.mlir));
  EXPECT_THAT(prompt.user, HasSubstr("2e-05"));
  EXPECT_THAT(prompt.user, HasSubstr("Precision policy: fp32"));
  EXPECT_THAT(prompt.user, HasSubstr("Architecture: sm_90. NVIDIA Hopper"));
  EXPECT_THAT(prompt.user, HasSubstr("132 SMs"));
  EXPECT_THAT(prompt.user, HasSubstr("baseline_add(const float *a)"));
  EXPECT_THAT(prompt.user, HasSubstr("kernel `baseline_add`"));
  EXPECT_THAT(prompt.system, HasSubstr("Write no host code"));
  EXPECT_THAT(prompt.system, HasSubstr("cudaMalloc"));
  EXPECT_THAT(prompt.system, HasSubstr("<cuda_fp16.h> and <cuda_bf16.h>"));
  EXPECT_THAT(prompt.system, HasSubstr("lower precision"));
  EXPECT_THAT(prompt.system, HasSubstr("```json"));
  EXPECT_THAT(prompt.system, HasSubstr("65536 bytes are rejected"));
  EXPECT_THAT(prompt.system + prompt.user, Not(HasSubstr("{{")));

  // Deterministic, so replayed answers find their prompt.
  LlmPrompt again = buildPrompt(task, &baseline, options);
  EXPECT_EQ(again.system, prompt.system);
  EXPECT_EQ(again.user, prompt.user);

  LlmPrompt alone = buildPrompt(task, nullptr, options);
  EXPECT_THAT(alone.user, HasSubstr("No baseline plan"));
}

TEST(LlmPromptTest, SpellsElementTypesInTheSignature) {
  KernelTask task = makeTask();
  task.name = "mixed-group.1";
  task.inputs[0].elementType = ElementType::F16;
  task.inputs[1].elementType = ElementType::I8;
  task.outputs[0].elementType = ElementType::BF16;
  // Not a C identifier: made one, with a hash of the name.
  std::string entry = getLlmEntryName(task);
  EXPECT_TRUE(llvm::StringRef(entry).starts_with("mixed_group_1_")) << entry;
  EXPECT_TRUE(llvm::StringRef(entry).ends_with("_llm")) << entry;
  EXPECT_EQ(getLlmParameterList(task),
            "const __half *__restrict__ in0, const signed char *__restrict__ "
            "in1, __nv_bfloat16 *__restrict__ out0");
  LlmPrompt prompt = buildPrompt(task, nullptr, PromptOptions());
  EXPECT_THAT(prompt.user, HasSubstr("void " + entry + "(const __half"));
  EXPECT_EQ(describeGpu("sm_75").details, "");
}

} // namespace

namespace {

TEST(LlmPromptTest, GivesTheGroupAsPlainLoops) {
  const char *mlir = R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func private @g(%arg0: tensor<4x8xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#map, #row],
                       iterator_types = ["parallel", "reduction"]}
      ins(%arg0 : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}
)mlir";
  std::string loops = formatPseudoCode(mlir);
  EXPECT_THAT(loops, HasSubstr("in0: f32[4x8] (input)"));
  EXPECT_THAT(loops, HasSubstr("t2 = f32[4] filled with 0.0"));
  EXPECT_THAT(loops, HasSubstr("t3: f32[4], starting as a copy of t2 = "
                               "linalg.generic:"));
  EXPECT_THAT(loops, HasSubstr("for d1 in 0..8 (reduction):"));
  EXPECT_THAT(loops, HasSubstr("v0 = arith.maximumf(in0[d0, d1], t3[d0])"));
  EXPECT_THAT(loops, HasSubstr("t3[d0] = v0"));
  EXPECT_THAT(loops, HasSubstr("out0 = t3  (f32[4], output)"));
  // A gather guarded by an assertion, which kernels do not check.
  std::string gather = formatPseudoCode(R"mlir(
#map = affine_map<(d0) -> (d0)>
func.func private @g(%arg0: tensor<4xi64>, %arg1: tensor<9xf32>) -> tensor<4xf32> {
  %c9 = arith.constant 9 : index
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map],
                       iterator_types = ["parallel"]}
      ins(%arg0 : tensor<4xi64>) outs(%e : tensor<4xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %ok = arith.cmpi slt, %i, %c9 : index
    cf.assert %ok, "index must be smaller than dim size"
    %v = tensor.extract %arg1[%i] : tensor<9xf32>
    linalg.yield %v : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
)mlir");
  EXPECT_THAT(gather,
              HasSubstr("v2 = in1[v0] (indices clamped into the tensor)"));
  EXPECT_THAT(gather, Not(HasSubstr("cf.assert")));
  // Text that is no MLIR gives no loops, and the prompt says so.
  EXPECT_EQ(formatPseudoCode("not mlir"), "");
  EXPECT_THAT(buildPrompt(makeTask(), nullptr, {}).user,
              HasSubstr("(not available)"));
}

} // namespace
