//===- NpyFuzzer.cpp - libFuzzer target: .npy files -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Feeds bytes to the .npy reader that `kopt-run --input` uses (parseNpy),
// then converts what it read to a tensor of every element type whose shape
// is the file's, as `kopt-run` does for a module's input. A conversion that
// succeeds must round-trip: written back as .npy and read again, it gives the
// same shape and bytes.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "kopt/Runtime/Npy.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace kopt::runtime;
using kopt::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  Result<NpyArray> array = parseNpy(bytes, "input.npy");
  if (!array)
    return 0;
  for (ElementType type :
       {ElementType::F16, ElementType::BF16, ElementType::F32, ElementType::F64,
        ElementType::I1, ElementType::I8, ElementType::I16, ElementType::I32,
        ElementType::I64}) {
    TensorSpec tensor{"x", type, array->shape};
    // A module's tensors always have a size (tensorSpecFromJson refuses
    // the others), so only such tensors meet a file.
    if (!tensor.getBytes())
      continue;
    Result<std::string> converted = npyToTensorBytes(*array, tensor, "x");
    if (!converted)
      continue;
    check(int64_t(converted->size()) == *tensor.getBytes(),
          "converted bytes differ from the tensor's size");
    std::string written = tensorBytesToNpy(tensor, *converted);
    Result<NpyArray> again = parseNpy(written, "written.npy");
    check(again.isOk(), "a written .npy file does not read",
          again.status().message());
    check(again->shape == array->shape, "the shape changed on a round trip");
    Result<std::string> reconverted = npyToTensorBytes(*again, tensor, "x");
    check(reconverted.isOk() && *reconverted == *converted,
          "the bytes changed on a round trip");
  }
  return 0;
}
