//===- GroupCost.h - Cost of a fusion group ---------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The first-order model behind `kopt analyze`: how much arithmetic a group
// does, how many bytes it must move with and without fusion, and the largest
// speedup fusion can bring on a given device by the roofline model.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_ANALYSIS_GROUPCOST_H
#define KOPT_ANALYSIS_GROUPCOST_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>

namespace mlir::kopt {

/// Datasheet rates of a device, used as roofline ceilings.
struct DeviceRoofline {
  std::string name;
  /// Device memory bandwidth, bytes per second.
  double memoryBandwidth = 0;
  /// Peak fp32 (non-tensor-core) arithmetic, FLOP per second.
  double fp32Flops = 0;
  /// Peak dense f16/bf16 tensor-core arithmetic, FLOP per second; used for
  /// contractions and convolutions on 16-bit floats.
  double tensorFlops16 = 0;

  /// The NVIDIA H200 SXM by its datasheet: 4.8 TB/s HBM3e, 67 TFLOP/s fp32,
  /// 989 TFLOP/s dense bf16/f16.
  static DeviceRoofline h200();
};

/// What a fusion group costs.
struct GroupCost {
  /// Arithmetic operations (each arith/math op of a body, per loop iteration).
  double flops = 0;
  /// The part of `flops` done by contractions/convolutions on 16-bit floats.
  double tensorFlops = 0;
  /// Bytes moved when fused: every group input read once (an input only
  /// gathered from, such as an embedding table, at most one element per
  /// iteration of each gather), every group output written once.
  int64_t bytesFused = 0;
  /// Bytes moved when every op runs as its own kernel: `bytesFused` plus each
  /// intermediate tensor written once and read once.
  int64_t bytesUnfused = 0;
  /// Roofline time of the unfused and fused forms on the device, seconds.
  double secondsUnfused = 0;
  double secondsFused = 0;
  /// `secondsUnfused / secondsFused`: the most fusion can gain.
  double speedupBound = 1;
  /// True when the fused form is bound by arithmetic rather than memory.
  bool computeBound = false;
};

/// Computes the cost of the outlined group function `func` on `device`.
GroupCost computeGroupCost(func::FuncOp func, const DeviceRoofline &device);

/// Returns the number of bytes of a statically shaped tensor type, or 0 for
/// other types. Sub-byte element types round up to whole bytes.
int64_t getTensorBytes(Type type);

} // namespace mlir::kopt

#endif // KOPT_ANALYSIS_GROUPCOST_H
