//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reading and writing NumPy's .npy format (versions 1.0 to 3.0): a magic,
// a Python dict literal with `descr`, `fortran_order` and `shape`, then the
// raw little-endian elements. kopt-run exchanges tensors this way. Only
// C-order arrays of the element types kopt knows are accepted; bf16, which
// NumPy lacks, travels as float32.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_NPY_H
#define KOPT_RUNTIME_NPY_H

#include "kopt/Runtime/OutputFile.h"
#include "kopt/Runtime/Status.h"
#include "kopt/Runtime/TaskPlan.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kopt::runtime {

/// An array read from a .npy file.
struct NpyArray {
  /// The NumPy type string, such as `<f4` or `|b1`.
  std::string descr;
  std::vector<int64_t> shape;
  /// The elements, row-major, little-endian.
  std::string data;
};

/// The NumPy type string kopt writes for `type` (`<f4`, `|b1`, ...); bf16
/// is written as `<f4`.
const char *getNpyDescr(ElementType type);

/// Parses .npy bytes; `name` prefixes error messages.
Result<NpyArray> parseNpy(std::string_view bytes, std::string_view name);
/// Reads the .npy file at `path`.
Result<NpyArray> readNpyFile(const std::string &path);

/// Converts `array` to the bytes of `tensor` (row-major in its element
/// type). Fails, naming `what` and the file's and the tensor's shape or
/// type, unless the shape matches exactly and the type is `tensor`'s own
/// (or float32 for a bf16 tensor).
Result<std::string> npyToTensorBytes(const NpyArray &array,
                                     const TensorSpec &tensor,
                                     std::string_view what);

/// .npy bytes (version 1.0) holding `bytes`, the contents of `tensor`
/// (bf16 converted to float32).
std::string tensorBytesToNpy(const TensorSpec &tensor, std::string_view bytes);
/// Writes `tensorBytesToNpy` to `path` through an OutputFile, refusing the
/// files in `protect`.
Status writeNpyFile(const std::string &path, const TensorSpec &tensor,
                    std::string_view bytes, const ProtectedFiles &protect = {});

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_NPY_H
