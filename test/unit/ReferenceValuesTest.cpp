//===- ReferenceValuesTest.cpp - Pinned fp64 reference values ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The references the compiler sends with an evaluation are pinned bit for
// bit: for every group of the frontend inputs and the examples, and every
// validation set, a digest of each output's sampled points and fp64 values
// as `buildReferenceSet` gives them. The digests were recorded when the
// reference materialised every input and memoised every element it
// computed; a faster reference must give the same points and values.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "kopt/Codegen/KernelTask.h"
#include "kopt/Evaluator/ReferenceBuilder.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <array>
#include <cstring>
#include <map>
#include <string>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::testing;
namespace rt = ::kopt::runtime;

namespace {

/// FNV-1a over bytes.
struct Digest {
  uint64_t state = 0xcbf29ce484222325ull;
  void add(const void *data, size_t size) {
    const auto *bytes = static_cast<const uint8_t *>(data);
    for (size_t i = 0; i < size; ++i) {
      state ^= bytes[i];
      state *= 0x100000001b3ull;
    }
  }
  void add(int64_t value) { add(&value, sizeof(value)); }
  void add(double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    add(&bits, sizeof(bits));
  }
};

/// The digest of every output of `reference`: names, indices and the bits
/// of the values.
uint64_t digestOf(const rt::ReferenceSet &reference) {
  Digest digest;
  for (const rt::OutputReference &output : reference.outputs) {
    digest.add(output.output.data(), output.output.size());
    digest.add(int64_t(output.indices.size()));
    for (auto [index, value] : llvm::zip_equal(output.indices, output.values)) {
      digest.add(index);
      digest.add(value);
    }
  }
  return digest.state;
}

constexpr uint64_t kSeed = 20261202;
constexpr unsigned kSets = 5;

/// The digests of sets 0 to 4, per "file @group", recorded before the
/// reference evaluated its inputs lazily.
const std::map<std::string, std::array<uint64_t, kSets>> &expectedDigests() {
  static const std::map<std::string, std::array<uint64_t, kSets>> digests = {
      // Recorded again when k's transpose moved after the heads' collapse
      // and into the group (kopt-collapse-before-transpose): its input is
      // now k as stored, drawn as another tensor.
      {"torch_attention.mlir @forward_kopt_g0_contraction",
       {0x88359e84abc22676ull, 0x70cd67a6622a14ddull, 0xd15e3b45c9b8ab69ull,
        0x44614adfbf2067f0ull, 0xddb6dfd9b0275c7eull}},
      {"torch_attention.mlir @forward_kopt_g1_reduction",
       {0xd1fd522a95b91809ull, 0x68300c746fe4a31full, 0x35a9e21e4ba33327ull,
        0xdf58be31fcba36b5ull, 0xf44b465aa4cb37a8ull}},
      {"torch_attention.mlir @forward_kopt_g2_contraction",
       {0xe808cdc1dbbacdc8ull, 0xb307aa2db5ad8a42ull, 0xc8f40c0d152c621eull,
        0x7565520daeb2b0ebull, 0x063f0874d822bb8dull}},
      // Recorded again when the group took in its input's pad and its bias
      // broadcast: its inputs are now the unpadded input and the bias
      // vector, so the validation sets draw other values.
      {"torch_conv_relu_pool.mlir @forward_kopt_g0_convolution",
       {0xc178a721ef1ccfa7ull, 0xbbabb46df718ee0full, 0x2e89e1fc5fa16ae8ull,
        0x9b16ddc558852f36ull, 0x570c81968fc289b0ull}},
      {"torch_layernorm_gelu.mlir @forward_kopt_g0_reduction",
       {0xcaa66a25ded19dfbull, 0xde8488d28aae5bc0ull, 0x0661ce14aab1f8f8ull,
        0x62f2c42a16822341ull, 0x0d034b1dfc0af9c3ull}},
      // Since the weights' transposes and the biases' broadcasts joined the
      // groups (their inputs are now the weights as stored and the bias
      // vectors, drawn as other tensors).
      {"torch_mlp.mlir @forward_kopt_g0_contraction",
       {0x7d45eecd05683c8dull, 0x509239e451709b33ull, 0x2f37a3de89b48081ull,
        0x40826d5bc2ab2acbull, 0x87788bdc67d1494bull}},
      {"torch_mlp.mlir @forward_kopt_g1_contraction",
       {0x23f384334585d6e5ull, 0xe95a760665d79119ull, 0x80f0ecf02a403c52ull,
        0x4b6974a842fc6afbull, 0x8f2eaf864493cf16ull}},
      {"attention_block.mlir @attention_block_kopt_g0_contraction",
       {0x47560f0de91a1170ull, 0x5f0a913b42affbfcull, 0x4caa9d2e32adf2f5ull,
        0x1cf6369c757f2ca5ull, 0xd6c9d47318c101c2ull}},
      {"attention_block.mlir @attention_block_kopt_g1_softmax",
       {0x19209e3dfaf0b18eull, 0x18e4b2964eea6b23ull, 0xbbdf34f03809af96ull,
        0xf68f9461a7814f43ull, 0x7a808a4c88f41a02ull}},
      {"attention_block.mlir @attention_block_kopt_g2_contraction",
       {0xa9c05225f6502984ull, 0xbc67738756e1d97dull, 0x48fbffc75049c494ull,
        0xe97e9950739c16feull, 0xdcc61ad4b6fdc5eaull}},
      {"conv_block.mlir @conv_block_kopt_g0_convolution",
       {0xe987d1fe4228af72ull, 0xb856ae0d400416e6ull, 0xe37d4b551ab60065ull,
        0x839959e11738517cull, 0x0c4cc52ad38a288cull}},
      {"layernorm_gelu.mlir @layernorm_gelu_kopt_g0_reduction",
       {0x2cf7ce9065f90e33ull, 0xef74f5763d119c4bull, 0x64b14c2015d115ceull,
        0x981b80bb85753199ull, 0x98d911a1115b5b48ull}},
      {"mlp_block.mlir @mlp_block_kopt_g0_contraction",
       {0x50551e337c8aa209ull, 0xb9eb1d61bd0f77ddull, 0x74dd2bb62114ed3full,
        0xc4f75487af59e65eull, 0x4404d51e974112b9ull}},
      {"mlp_block.mlir @mlp_block_kopt_g1_contraction",
       {0x0850e2860c0df21bull, 0xfe5e30fa621d3a5full, 0xb4f44b23fc608b22ull,
        0x5f0db961f0b80757ull, 0x37a0eb65e0cb4fc7ull}},
      {"tosa_mlp.mlir @tosa_mlp_kopt_g0_contraction",
       {0x9aea0518b1f44b37ull, 0x87df67ba438862ccull, 0x0c80347b5613ddabull,
        0x2d8a00261db4b6deull, 0x9b69953c26f68f19ull}},
      {"tosa_mlp.mlir @tosa_mlp_kopt_g1_reduction",
       {0xc4bf3e13e82a9376ull, 0xea09a0edcfcba9fdull, 0xb41fde2014e12f72ull,
        0xab29168cb501ec24ull, 0x5bad0f9130d4d4abull}},
  };
  return digests;
}

TEST(ReferenceValuesTest, FrontendAndExampleGroupsAreUnchanged) {
  auto context = makeContext();
  unsigned checked = 0;
  for (const char *file :
       {"test/Inputs/frontend/torch_attention.mlir",
        "test/Inputs/frontend/torch_conv_relu_pool.mlir",
        "test/Inputs/frontend/torch_layernorm_gelu.mlir",
        "test/Inputs/frontend/torch_mlp.mlir", "examples/attention_block.mlir",
        "examples/conv_block.mlir", "examples/layernorm_gelu.mlir",
        "examples/mlp_block.mlir", "examples/tosa_mlp.mlir"}) {
    auto module = loadPlanned(*context, file);
    ASSERT_TRUE(module);
    auto groups = groupFunctions(*module);
    EXPECT_FALSE(groups.empty()) << file;
    for (func::FuncOp group : groups) {
      auto task = buildKernelTask(group);
      ASSERT_TRUE(static_cast<bool>(task)) << llvm::toString(task.takeError());
      std::string key = llvm::sys::path::filename(file).str() + " @" +
                        group.getSymName().str();
      std::array<uint64_t, kSets> digests;
      for (unsigned set = 0; set < kSets; ++set) {
        auto reference = buildReferenceSet(group, *task, kSeed, 4096, set);
        ASSERT_TRUE(static_cast<bool>(reference))
            << key << " set " << set << ": "
            << llvm::toString(reference.takeError());
        digests[set] = digestOf(*reference);
      }
      auto it = expectedDigests().find(key);
      if (it == expectedDigests().end()) {
        ADD_FAILURE() << "no digests for " << key;
        continue;
      }
      for (unsigned set = 0; set < kSets; ++set)
        EXPECT_EQ(llvm::utohexstr(it->second[set]),
                  llvm::utohexstr(digests[set]))
            << key << " set " << set;
      ++checked;
    }
  }
  EXPECT_EQ(checked, expectedDigests().size());
}

} // namespace
