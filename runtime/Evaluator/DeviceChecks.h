//===- DeviceChecks.h - The evaluator's own device kernels ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The bulk work of validation done where the data is: drawing input sets,
// poisoning outputs, checksumming buffers, counting unwritten elements and
// comparing outputs, each a small kernel of one NVRTC module compiled once
// per process and architecture. On 64 MB tensors the host versions of these
// (InputGenerator, Guards, Comparison) take seconds per candidate; these
// take milliseconds, and move no tensor over PCIe.
//
// The device results decide only the common case, "everything agrees". When
// a device check finds a problem, the evaluator reads the buffers back and
// runs the host version, which produces the evidence (worst elements, first
// unwritten indices) and has the last word.
//
// The generator mirrors InputGenerator.cpp's `drawValue` bit for bit (a GPU
// test checks every type and distribution).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_EVALUATOR_DEVICECHECKS_H
#define KOPT_RUNTIME_EVALUATOR_DEVICECHECKS_H

#include "kopt/Runtime/Cuda/CudaDriver.h"
#include "kopt/Runtime/Evaluator/Comparison.h"
#include "kopt/Runtime/Evaluator/InputGenerator.h"

#include <memory>
#include <vector>

namespace kopt::runtime {

class DeviceChecks {
public:
  /// Compiles (once per process and architecture) and loads the kernels on
  /// `context`, which must outlive the result.
  static Result<std::unique_ptr<DeviceChecks>>
  create(const CudaContext &context);
  ~DeviceChecks();
  DeviceChecks(const DeviceChecks &) = delete;
  DeviceChecks &operator=(const DeviceChecks &) = delete;

  /// Fills `numElements` elements of `type` at `out` with the values
  /// `drawValue(type, distribution, seed, index)` gives.
  Status generate(CUdeviceptr out, ElementType type, uint64_t numElements,
                  InputDistribution distribution, uint64_t seed);
  /// Fills `numElements` elements at `out` with the bytes of `element` (1,
  /// 2, 4 or 8 bytes).
  Status fill(CUdeviceptr out, uint64_t numElements,
              const std::vector<uint8_t> &element);
  /// A 64-bit checksum of the `bytes` bytes at `data` (8-byte aligned),
  /// sensitive to every bit and to position. Device checksums compare only
  /// with device checksums.
  Result<uint64_t> checksum(CUdeviceptr data, uint64_t bytes);
  /// How many of the `numElements` elements at `data` hold exactly the
  /// bytes of `element`.
  Result<uint64_t> countEqual(CUdeviceptr data, uint64_t numElements,
                              const std::vector<uint8_t> &element);
  /// The sums `compareValues` (or `compareIntegers`) builds its verdict
  /// from, over `numElements` elements of `type` at `actual` and
  /// `expected`.
  Result<ComparisonSums> compare(ElementType type, CUdeviceptr actual,
                                 CUdeviceptr expected, uint64_t numElements);
  /// Copies `bytes` bytes between two device buffers.
  Status copy(CUdeviceptr to, CUdeviceptr from, uint64_t bytes);
  /// The elements of `elementBytes` bytes at `indices` (within bounds) of
  /// the buffer at `data`, read back to the host in that order: the sampled
  /// points of an fp64 reference, without moving the whole output.
  Result<std::vector<uint8_t>> gather(CUdeviceptr data, size_t elementBytes,
                                      const std::vector<int64_t> &indices);

private:
  struct Kernels;
  DeviceChecks(const CudaContext &context, std::unique_ptr<Kernels> kernels,
               DeviceBuffer results);
  Status launch(CUfunction function, uint64_t work, void **arguments);
  /// Zeroes the results buffer, or sets its first u64 slots as given.
  Status resetResults(const std::vector<uint64_t> &initial = {});
  Status readResults(void *to, size_t bytes);

  const CudaContext &context;
  std::unique_ptr<Kernels> kernels;
  /// Scratch for the kernels' reductions.
  DeviceBuffer results;
};

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_EVALUATOR_DEVICECHECKS_H
