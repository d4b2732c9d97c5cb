//===- RuntimeModuleTest.cpp - Tests of .kmod files and .npy files -*- C++ -*-//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Runtime modules written and read back, damaged and inconsistent modules
// refused with their reason, described through the C API's module files,
// and .npy files parsed, checked against tensors and written. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/RuntimeModule.h"
#include "kopt-c/Runtime.h"
#include "kopt/Runtime/Npy.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <cstring>

using namespace kopt::runtime;

namespace {

TensorSpec f32(const std::string &name, std::vector<int64_t> shape) {
  return TensorSpec{name, ElementType::F32, std::move(shape)};
}

/// y = relu(x + c) with a constant c, then y reshaped and copied out too.
RuntimeModule makeModule() {
  RuntimeModule module;
  module.name = "graph";
  module.producer = "test";
  module.arch = "sm_90";
  module.buffers.push_back({f32("x", {2, 4}), ModuleBuffer::Kind::Input});
  ModuleBuffer constant{f32("c", {2, 4}), ModuleBuffer::Kind::Constant};
  constant.data = std::string(32, '\x01');
  module.buffers.push_back(constant);
  module.buffers.push_back({f32("y", {2, 4}), ModuleBuffer::Kind::Output});
  ModuleBuffer view{f32("view", {8}), ModuleBuffer::Kind::Alias};
  view.aliasOf = "y";
  module.buffers.push_back(view);
  module.buffers.push_back({f32("flat", {8}), ModuleBuffer::Kind::Output});
  module.inputs = {"x"};
  module.outputs = {"y", "flat"};
  ModulePlan plan;
  plan.key = "k";
  plan.function = "g0";
  plan.planName = "baseline/per-op";
  plan.inputs = {f32("in0", {2, 4}), f32("in1", {2, 4})};
  plan.outputs = {f32("out0", {2, 4})};
  plan.tolerance = {2e-5, 1e-6};
  KernelPlan kernel;
  kernel.taskKey = "k";
  kernel.proposer = "baseline";
  kernel.variant = "per-op";
  kernel.sources.push_back(
      {"main", "extern \"C\" __global__ void f(const float *a, const float "
               "*b, float *c) {}"});
  PlanStep step;
  step.launch.source = "main";
  step.launch.entry = "f";
  step.launch.args = {"in0", "in1", "out0", "i32:8"};
  kernel.steps.push_back(step);
  plan.plan = kernel;
  plan.binaries.push_back(
      {"main", "sm_90", std::string("\0cubin\xff", 7), "// ptx\n"});
  module.plans.push_back(plan);
  ModuleStep launch;
  launch.plan = 0;
  launch.inputs = {"x", "c"};
  launch.outputs = {"y"};
  module.steps.push_back(launch);
  ModuleStep copy;
  copy.kind = ModuleStep::Kind::Copy;
  copy.from = "view";
  copy.to = "flat";
  module.steps.push_back(copy);
  return module;
}

TEST(RuntimeModuleTest, RoundTripsEveryField) {
  RuntimeModule module = makeModule();
  ASSERT_TRUE(module.verify().isOk()) << module.verify().message();
  std::string bytes = writeRuntimeModule(module);
  ASSERT_EQ(bytes.substr(0, 8), std::string("KOPTMOD\0", 8));
  auto read = readRuntimeModule(bytes, "m.kmod");
  ASSERT_TRUE(bool(read)) << read.status().message();
  EXPECT_EQ(read->name, "graph");
  EXPECT_EQ(read->arch, "sm_90");
  ASSERT_EQ(read->buffers.size(), 5u);
  EXPECT_EQ(read->findBuffer("c")->data, std::string(32, '\x01'));
  EXPECT_EQ(read->findBuffer("view")->aliasOf, "y");
  EXPECT_EQ(read->outputs, module.outputs);
  ASSERT_EQ(read->plans.size(), 1u);
  EXPECT_EQ(read->plans[0].binaries[0].cubin, std::string("\0cubin\xff", 7));
  EXPECT_EQ(read->plans[0].binaries[0].ptx, "// ptx\n");
  EXPECT_DOUBLE_EQ(read->plans[0].tolerance.relative, 2e-5);
  EXPECT_EQ(read->plans[0].plan->steps[0].launch.args,
            module.plans[0].plan->steps[0].launch.args);
  ASSERT_EQ(read->steps.size(), 2u);
  EXPECT_EQ(read->steps[1].kind, ModuleStep::Kind::Copy);
  // Writing again gives the same bytes.
  EXPECT_EQ(writeRuntimeModule(*read), bytes);
}

TEST(RuntimeModuleTest, RefusesForeignTruncatedAndDamagedFiles) {
  std::string bytes = writeRuntimeModule(makeModule());
  auto foreign = readRuntimeModule("\x93NUMPY...........", "a.npy");
  ASSERT_FALSE(bool(foreign));
  EXPECT_NE(foreign.status().message().find("not a kopt runtime module"),
            std::string::npos);
  auto truncated = readRuntimeModule(bytes.substr(0, bytes.size() - 3), "m");
  ASSERT_FALSE(bool(truncated));
  EXPECT_NE(truncated.status().message().find("outside the file"),
            std::string::npos)
      << truncated.status().message();
  std::string damaged = bytes;
  damaged[damaged.size() - 2] ^= 0x40;
  auto bad = readRuntimeModule(damaged, "m");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(bad.status().message().find("does not match its hash"),
            std::string::npos);
}

TEST(RuntimeModuleTest, RefusesAnotherSchema) {
  std::string bytes = writeRuntimeModule(makeModule());
  size_t at = bytes.find("kopt.module/1");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 12] = '9';
  auto read = readRuntimeModule(bytes, "m");
  ASSERT_FALSE(bool(read));
  EXPECT_EQ(read.status().code(), StatusCode::Unsupported);
}

TEST(RuntimeModuleTest, VerifyNamesTheProblem) {
  auto expectProblem = [](RuntimeModule module, const std::string &text) {
    Status status = module.verify();
    ASSERT_FALSE(status.isOk()) << "expected: " << text;
    EXPECT_NE(status.message().find(text), std::string::npos)
        << status.message();
  };
  RuntimeModule module = makeModule();
  module.buffers[1].data.pop_back();
  expectProblem(module, "a constant of 32 bytes holds 31");
  module = makeModule();
  module.steps[0].inputs = {"x"};
  expectProblem(module, "the plan takes 2 inputs, the step binds 1");
  module = makeModule();
  module.steps[0].outputs = {"flat"};
  expectProblem(module, "does not match the plan's outputs 'out0'");
  module = makeModule();
  module.buffers[3].aliasOf = "nothing";
  expectProblem(module, "aliases 'nothing'");
  module = makeModule();
  module.inputs.push_back("y");
  expectProblem(module, "input 'y' is not an input buffer");
  module = makeModule();
  module.plans[0].plan->steps[0].launch.args[0] = "in7";
  expectProblem(module, "in7");
  module = makeModule();
  module.plans[0].plan.reset();
  expectProblem(module, "needs either an inline plan or a reference");
}

TEST(RuntimeModuleTest, CApiDescribesAFileWithoutADevice) {
  std::string path = ::testing::TempDir() + "describe-without-device.kmod";
  ASSERT_TRUE(saveRuntimeModule(makeModule(), path).isOk());
  KoptModuleFile *file = nullptr;
  ASSERT_EQ(koptModuleFileOpen(path.c_str(), &file), KOPT_OK)
      << koptGetLastError();
  size_t inputs = 0, outputs = 0;
  ASSERT_EQ(koptModuleFileGetNumInputs(file, &inputs), KOPT_OK);
  ASSERT_EQ(koptModuleFileGetNumOutputs(file, &outputs), KOPT_OK);
  EXPECT_EQ(inputs, 1u);
  EXPECT_EQ(outputs, 2u);
  KoptTensorInfo info;
  ASSERT_EQ(koptModuleFileGetInputInfo(file, 0, &info), KOPT_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.elementType, KOPT_F32);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.shape[1], 4);
  EXPECT_EQ(info.bytes, 32u);
  ASSERT_EQ(koptModuleFileGetOutputInfo(file, 1, &info), KOPT_OK);
  EXPECT_STREQ(info.name, "flat");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(koptModuleFileGetOutputInfo(file, 2, &info), KOPT_OUT_OF_RANGE);
  EXPECT_STREQ(koptGetLastError(), "the module has 2 outputs, not 3");
  EXPECT_EQ(koptModuleFileGetInputInfo(nullptr, 0, &info),
            KOPT_INVALID_ARGUMENT);
  koptModuleFileClose(file);
  koptModuleFileClose(nullptr);

  KoptModuleFile *missing = nullptr;
  EXPECT_EQ(koptModuleFileOpen((path + ".missing").c_str(), &missing),
            KOPT_IO_ERROR);
  EXPECT_EQ(missing, nullptr);
  EXPECT_NE(std::string(koptGetLastError()).find(".missing"), std::string::npos)
      << koptGetLastError();
  std::remove(path.c_str());
}

TEST(NpyTest, ReadsWhatItWrites) {
  TensorSpec tensor{"t", ElementType::I32, {2, 3}};
  std::string data(24, '\0');
  for (int i = 0; i < 6; ++i)
    std::memcpy(&data[size_t(4 * i)], &i, 4);
  std::string file = tensorBytesToNpy(tensor, data);
  EXPECT_EQ(file.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ((file.size() - data.size()) % 64, 0u);
  auto array = parseNpy(file, "t.npy");
  ASSERT_TRUE(bool(array)) << array.status().message();
  EXPECT_EQ(array->descr, "<i4");
  EXPECT_EQ(array->shape, (std::vector<int64_t>{2, 3}));
  auto bytes = npyToTensorBytes(*array, tensor, "t");
  ASSERT_TRUE(bool(bytes));
  EXPECT_EQ(*bytes, data);
}

TEST(NpyTest, ParsesNumPysHeaders) {
  std::string header = "{'descr': '|b1', 'fortran_order': False, 'shape': "
                       "(3,), }";
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) +
                     '\0' + header + std::string("\x01\x00\x01", 3);
  auto array = parseNpy(file, "b.npy");
  ASSERT_TRUE(bool(array)) << array.status().message();
  EXPECT_EQ(array->descr, "|b1");
  EXPECT_EQ(array->shape, (std::vector<int64_t>{3}));
  TensorSpec tensor{"b", ElementType::I1, {3}};
  EXPECT_TRUE(bool(npyToTensorBytes(*array, tensor, "b")));
  // A scalar: shape ().
  std::string scalar = "{'descr': '<f8', 'fortran_order': False, 'shape': "
                       "(), }";
  auto parsed =
      parseNpy(std::string("\x93NUMPY\x01\x00", 8) + char(scalar.size()) +
                   '\0' + scalar + std::string(8, '\0'),
               "s.npy");
  ASSERT_TRUE(bool(parsed));
  EXPECT_TRUE(parsed->shape.empty());
}

TEST(NpyTest, ExplainsMismatches) {
  TensorSpec tensor{"x", ElementType::F32, {2, 2}};
  NpyArray array{"<f8", {2, 2}, std::string(32, '\0')};
  auto type = npyToTensorBytes(array, tensor, "input 'x'");
  ASSERT_FALSE(bool(type));
  EXPECT_EQ(type.status().message(),
            "input 'x': the file holds dtype '<f8', x is f32 (dtype '<f4')");
  NpyArray shaped{"<f4", {4}, std::string(16, '\0')};
  auto shape = npyToTensorBytes(shaped, tensor, "input 'x'");
  ASSERT_FALSE(bool(shape));
  EXPECT_EQ(shape.status().message(),
            "input 'x': the file's shape is (4,), x has shape (2, 2)");
  NpyArray shortData{"<f4", {2, 2}, std::string(8, '\0')};
  EXPECT_FALSE(bool(npyToTensorBytes(shortData, tensor, "x")));
  EXPECT_FALSE(bool(parseNpy("not numpy", "n.npy")));
  std::string fortran = "{'descr': '<f4', 'fortran_order': True, 'shape': "
                        "(2, 2), }";
  auto refused = parseNpy(std::string("\x93NUMPY\x01\x00", 8) +
                              char(fortran.size()) + '\0' + fortran,
                          "f.npy");
  ASSERT_FALSE(bool(refused));
  EXPECT_EQ(refused.status().code(), StatusCode::Unsupported);
}

// Found by the .npy fuzz target (test/Fuzz/NpyFuzzer.cpp): a bf16 tensor
// whose size fits 64 bits, read from a float32 file whose size does not,
// overflowed the file's byte count.
TEST(NpyTest, RefusesAShapeTooLargeForTheFile) {
  std::vector<int64_t> shape = {3384629513536809074};
  TensorSpec tensor{"h", ElementType::BF16, shape};
  ASSERT_TRUE(tensor.getBytes().has_value());
  NpyArray array{"<f4", shape, std::string(16, '\0')};
  auto refused = npyToTensorBytes(array, tensor, "input 'h'");
  ASSERT_FALSE(bool(refused));
  EXPECT_EQ(refused.status().code(), StatusCode::OutOfRange);
  EXPECT_EQ(refused.status().message(),
            "input 'h': the shape (3384629513536809074,) is too large for a "
            ".npy file of dtype '<f4'");
}

TEST(NpyTest, Bf16TravelsAsFloat32) {
  TensorSpec tensor{"h", ElementType::BF16, {2}};
  // bf16 1.0 and -2.0.
  std::string bits("\x80\x3f\x00\xc0", 4);
  std::string file = tensorBytesToNpy(tensor, bits);
  auto array = parseNpy(file, "h.npy");
  ASSERT_TRUE(bool(array));
  EXPECT_EQ(array->descr, "<f4");
  auto back = npyToTensorBytes(*array, tensor, "h");
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(*back, bits);
}

} // namespace
