//===- InputGenerator.h - Validation input sets -----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Draws the input sets a candidate is validated on (docs/Design.md "Evaluator",
// point 2): at least five sets per candidate, fresh per candidate through the
// seed, cycling through distributions that catch different shortcuts:
//
// - standard normal (approximated by Irwin-Hall: the sum of twelve uniforms,
//   centred; mean 0, variance 1, bounded by 6): the common case;
// - large mean, small spread (mean 1000, standard deviation 1e-2, widened to
//   four units in the last place at 1000 for f16/bf16, where 1e-2 would
//   vanish): exposes one-pass variance and softmax without the max shift;
// - wide dynamic range: sign * significand * 2^e with e uniform in
//   [-19, 19) ([-13, 13) for f16, whose range ends at 65504), about
//   eleven decades: exposes accumulation order and scaling bugs;
// - small integers, uniform in [-8, 8]: exact in every float type, so any
//   computation that the math keeps exact (sums, products of few terms)
//   must match exactly.
//
// Integer tensors ignore the float distribution and take uniform integers in
// a range small enough that sums and products of a few thousand of them stay
// in range (i8: [-8, 8], i16: [-16, 16], i32 and i64: [-1000, 1000]); i1
// tensors take fair coin flips.
//
// Every element is a pure function of (seed, index): counter-based
// SplitMix64 bits and only exact or singly rounded arithmetic, compiled
// without contraction. The evaluator draws its sets on the device with the
// same functions (DeviceChecks.cpp mirrors them, and a GPU test checks the
// two bitwise), while the compiler draws the same values on the host for its
// fp64 reference.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_INPUTGENERATOR_H
#define KOPT_RUNTIME_EVALUATOR_INPUTGENERATOR_H

#include "kopt/Runtime/Evaluator/ElementCodec.h"

#include <cstdint>
#include <vector>

namespace kopt::runtime {

/// The fewest input sets a candidate is validated on.
constexpr unsigned kMinValidationSets = 5;

/// The distributions input values are drawn from.
enum class InputDistribution : uint8_t {
  StandardNormal,
  LargeMeanSmallSpread,
  WideDynamicRange,
  SmallIntegers,
};

/// A short name of `distribution` (`normal`, `large-mean`, `wide-range`,
/// `small-int`), for reports.
const char *getDistributionName(InputDistribution distribution);

/// The distributions of `numSets` validation sets, cycling through all of
/// them in declaration order (so five sets cover each one, the first twice).
std::vector<InputDistribution> getValidationDistributions(unsigned numSets);

/// SplitMix64: small, fast and fully specified, so its streams are identical
/// on every machine and standard library.
class SplitMix64 {
public:
  /// Starts the stream at `seed`.
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  /// The next 64 random bits.
  uint64_t next();
  /// Uniform in the open interval (0, 1), with 53 random bits.
  double uniform();
  /// Standard normal, by the Box-Muller transform (one value per call).
  double normal();
  /// Uniform integer in [`low`, `high`] (requires `low <= high`).
  int64_t uniformInteger(int64_t low, int64_t high);

private:
  uint64_t state;
};

/// A seed for stream `index` derived from `seed`: distinct indices give
/// unrelated streams (a SplitMix64 finaliser of both).
uint64_t deriveSeed(uint64_t seed, uint64_t index);

/// The standard deviation of the large-mean distribution in `type`.
double getLargeMeanSpread(ElementType type);
/// The wide-range distribution's binary exponents lie in [-e, e) for this e.
int getWideRangeMaxExponent(ElementType type);
/// Integer tensors of `type` (not i1) are drawn from [-bound, bound].
int64_t getIntegerBound(ElementType type);

/// Random bits number `lane` (0 to 3) of element `index` of the stream
/// `seed`: the (4 * index + lane + 1)-th output of SplitMix64.
uint64_t drawBits(uint64_t seed, uint64_t index, unsigned lane);

/// Element `index` of a float tensor drawn from `distribution` with `seed`,
/// before rounding to `type` (which only sets the spread and range).
double drawFloat(ElementType type, InputDistribution distribution,
                 uint64_t seed, uint64_t index);

/// Element `index` of a tensor of `type` drawn from `distribution` with
/// `seed`, already rounded to `type`.
double drawValue(ElementType type, InputDistribution distribution,
                 uint64_t seed, uint64_t index);

/// `drawValue(type, distribution, seed, indices[i])` for each of the `count`
/// `indices`, into `values`: the same values, drawn faster.
void drawValues(ElementType type, InputDistribution distribution, uint64_t seed,
                const int64_t *indices, size_t count, double *values);

/// `numElements` values for a tensor of `type` drawn from `distribution`
/// with `seed`, already rounded to `type` (encoding them loses nothing).
std::vector<double> generateValues(ElementType type, uint64_t numElements,
                                   InputDistribution distribution,
                                   uint64_t seed);

/// The bytes of `tensor` drawn from `distribution` with `seed` (none when
/// its size overflows).
std::vector<uint8_t> generateTensorData(const TensorSpec &tensor,
                                        InputDistribution distribution,
                                        uint64_t seed);

/// One input set: the bytes of every tensor of `inputs`, in order, each from
/// its own stream `deriveSeed(seed, index)`.
std::vector<std::vector<uint8_t>>
generateInputSet(const std::vector<TensorSpec> &inputs,
                 InputDistribution distribution, uint64_t seed);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_INPUTGENERATOR_H
