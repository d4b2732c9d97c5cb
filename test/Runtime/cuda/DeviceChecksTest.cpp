//===- DeviceChecksTest.cpp - The evaluator's device kernels ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The device versions of the evaluator's bulk checks against their host
// versions: the generator bit for bit, the comparison verdicts, unwritten
// counts and checksums. Skips without a CUDA driver (fails instead under
// KOPT_REQUIRE_GPU=1).
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/DeviceChecks.h"

#include "runtime/Evaluator/Guards.h"

#include "GpuTestFixture.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace kopt::runtime;

namespace {

class DeviceChecksTest : public gputest::WithCudaContext<> {
protected:
  void SetUp() override {
    WithCudaContext::SetUp();
    if (!context)
      return;
    auto checks = DeviceChecks::create(*context);
    ASSERT_TRUE(bool(checks)) << checks.status().message();
    device = std::move(*checks);
  }

  DeviceBuffer upload(const std::vector<uint8_t> &bytes) {
    auto buffer = DeviceBuffer::allocate(*context, int64_t(bytes.size()) + 8);
    EXPECT_TRUE(bool(buffer));
    const CudaDriver &api = context->getDriver();
    EXPECT_EQ(api.cuMemcpyHtoD(buffer->get(), bytes.data(), bytes.size()),
              CUDA_SUCCESS);
    return std::move(*buffer);
  }

  std::vector<uint8_t> download(const DeviceBuffer &buffer, size_t bytes) {
    std::vector<uint8_t> host(bytes);
    const CudaDriver &api = context->getDriver();
    EXPECT_EQ(api.cuMemcpyDtoH(host.data(), buffer.get(), bytes), CUDA_SUCCESS);
    return host;
  }

  std::unique_ptr<DeviceChecks> device;
};

TEST_F(DeviceChecksTest, GeneratorMatchesTheHostBitForBit) {
  constexpr uint64_t count = 100003;
  for (ElementType type : getAllElementTypes()) {
    for (InputDistribution distribution : getValidationDistributions(4)) {
      TensorSpec tensor{"t", type, {int64_t(count)}};
      std::vector<uint8_t> host =
          generateTensorData(tensor, distribution, 0x1234 + int(type));
      auto buffer = DeviceBuffer::allocate(*context, int64_t(host.size()));
      ASSERT_TRUE(bool(buffer));
      ASSERT_TRUE(device
                      ->generate(buffer->get(), type, count, distribution,
                                 0x1234 + int(type))
                      .isOk());
      std::vector<uint8_t> drawn = download(*buffer, host.size());
      size_t width = size_t(getElementBytes(type));
      size_t mismatches = 0, first = 0;
      for (size_t i = 0; i < count; ++i)
        if (std::memcmp(&host[i * width], &drawn[i * width], width) != 0 &&
            mismatches++ == 0)
          first = i;
      EXPECT_EQ(mismatches, 0u)
          << stringifyElementType(type) << " "
          << getDistributionName(distribution) << ": first at " << first;
    }
  }
}

TEST_F(DeviceChecksTest, ComparisonVerdictsMatchTheHost) {
  TensorSpec tensor{"t", ElementType::F32, {50000}};
  std::vector<uint8_t> expected =
      generateTensorData(tensor, InputDistribution::StandardNormal, 3);
  Tolerance tolerance;
  struct Case {
    const char *name;
    std::vector<uint8_t> actual;
  };
  std::vector<double> values = decodeElements(ElementType::F32, expected);
  std::vector<double> nudged = values, broken = values, nan = values;
  for (double &value : nudged)
    value *= 1.0 + 1e-7;
  broken[777] += 1.0;
  nan[5] = std::nan("");
  std::vector<Case> cases = {
      {"identical", expected},
      {"within tolerance", encodeElements(ElementType::F32, nudged)},
      {"one element off", encodeElements(ElementType::F32, broken)},
      {"a NaN", encodeElements(ElementType::F32, nan)}};
  DeviceBuffer reference = upload(expected);
  for (const Case &c : cases) {
    DeviceBuffer actual = upload(c.actual);
    auto sums =
        device->compare(ElementType::F32, actual.get(), reference.get(), 50000);
    ASSERT_TRUE(bool(sums)) << sums.status().message();
    ASSERT_TRUE(sums->isConclusive());
    ComparisonResult onDevice = judgeComparisonSums(*sums, false, tolerance);
    ComparisonResult onHost =
        compareOutputBytes(ElementType::F32, c.actual, expected, tolerance);
    EXPECT_EQ(onDevice.passed, onHost.passed) << c.name;
    EXPECT_EQ(onDevice.numDiffering, onHost.numDiffering) << c.name;
    EXPECT_EQ(onDevice.numSpecialMismatches, onHost.numSpecialMismatches)
        << c.name;
    EXPECT_NEAR(onDevice.relativeError, onHost.relativeError,
                1e-9 + 1e-9 * onHost.relativeError)
        << c.name;
  }
  // Integers: exact.
  std::vector<uint8_t> ints = encodeElements(ElementType::I32, {1, 2, 3, 4});
  std::vector<uint8_t> other = encodeElements(ElementType::I32, {1, 2, 5, 4});
  DeviceBuffer a = upload(ints), b = upload(other);
  auto same = device->compare(ElementType::I32, a.get(), a.get(), 4);
  auto differ = device->compare(ElementType::I32, b.get(), a.get(), 4);
  ASSERT_TRUE(same && differ);
  EXPECT_TRUE(judgeComparisonSums(*same, true, tolerance).passed);
  EXPECT_FALSE(judgeComparisonSums(*differ, true, tolerance).passed);
  EXPECT_EQ(differ->numDiffering, 1u);
}

TEST_F(DeviceChecksTest, FillCountAndChecksum) {
  for (ElementType type : {ElementType::F16, ElementType::F32, ElementType::F64,
                           ElementType::I8}) {
    constexpr uint64_t count = 4099;
    size_t bytes = count * size_t(getElementBytes(type));
    auto buffer = DeviceBuffer::allocate(*context, int64_t(bytes));
    ASSERT_TRUE(bool(buffer));
    std::vector<uint8_t> poison = getPoisonElement(type, 0);
    ASSERT_TRUE(device->fill(buffer->get(), count, poison).isOk());
    EXPECT_EQ(download(*buffer, bytes), makePoisonedBuffer(type, count, 0));
    auto all = device->countEqual(buffer->get(), count, poison);
    ASSERT_TRUE(bool(all));
    EXPECT_EQ(*all, count) << stringifyElementType(type);
    auto before = device->checksum(buffer->get(), bytes);
    // Overwrite one element: one fewer poisoned, another checksum.
    std::vector<uint8_t> zero(poison.size(), 0);
    const CudaDriver &api = context->getDriver();
    ASSERT_EQ(api.cuMemcpyHtoD(buffer->get() + 17 * poison.size(), zero.data(),
                               zero.size()),
              CUDA_SUCCESS);
    auto fewer = device->countEqual(buffer->get(), count, poison);
    auto after = device->checksum(buffer->get(), bytes);
    ASSERT_TRUE(fewer && before && after);
    EXPECT_EQ(*fewer, count - 1);
    EXPECT_NE(*before, *after);
    // A tail that is not a whole 8-byte word counts too.
    auto shorter = device->checksum(buffer->get(), bytes - 1);
    ASSERT_TRUE(bool(shorter));
    EXPECT_NE(*shorter, *after);
  }
  // Swapping two words changes the checksum: position matters.
  std::vector<uint8_t> words(64, 0);
  words[0] = 1;
  std::vector<uint8_t> swapped(64, 0);
  swapped[8] = 1;
  DeviceBuffer a = upload(words), b = upload(swapped);
  auto sumA = device->checksum(a.get(), 64);
  auto sumB = device->checksum(b.get(), 64);
  ASSERT_TRUE(sumA && sumB);
  EXPECT_NE(*sumA, *sumB);
}

} // namespace
