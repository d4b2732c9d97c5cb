//===- Nvrtc.h - Compiling CUDA C++ with NVRTC ------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Compiles device-only CUDA C++ to a cubin for one architecture plus PTX as
// the portable fallback. NVRTC is opened with dlopen; it works without a GPU,
// so everything here is tested on machines that have none.
//
// NVRTC has no time bound of its own: a compile that hangs (a template
// explosion in a proposed kernel, say) blocks its thread. The evaluator
// worker bounds compile time by running candidates in an isolated process
// that it kills on a deadline.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_CUDA_NVRTC_H
#define KOPT_RUNTIME_CUDA_NVRTC_H

#include "kopt/Runtime/Status.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kopt::runtime {

/// What NVRTC produced for one source.
struct CompiledKernel {
  /// PTX for the requested architecture's virtual counterpart (`sm_90` gives
  /// `.target sm_90`, which the driver can JIT on sm_90 and newer devices).
  std::string ptx;
  /// The cubin for the requested architecture.
  std::string cubin;
  /// NVRTC's log (warnings, remarks); empty for a clean compile.
  std::string log;
};

/// Options of one compile.
struct NvrtcOptions {
  /// Options beyond the defaults, such as a plan's `compileOptions`.
  std::vector<std::string> extra;
  /// Fail when NVRTC's log holds any warning (NVRTC 13 has no -Werror).
  bool warningsAsErrors = false;
};

/// Compiles `source` (named `name` in diagnostics) for `arch`, such as
/// `sm_90`. Passes `--gpu-architecture=<arch>`, `-default-device`,
/// `--std=c++17` and, when a CUDA toolkit is found (`$CUDA_HOME`,
/// `$CUDA_PATH`, `/usr/local/cuda`), its include folder, which NVRTC needs for
/// cuda_fp16.h and cuda_bf16.h. A failure carries NVRTC's log.
Result<CompiledKernel> compileCuda(std::string_view source,
                                   std::string_view name, std::string_view arch,
                                   const NvrtcOptions &options = {});

/// NVRTC's version as (major, minor); fails when NVRTC cannot be loaded.
Result<std::pair<int, int>> getNvrtcVersion();

/// True when `log` holds a warning diagnostic (`file(line): warning #...`,
/// `nvrtc: warning : ...`).
bool nvrtcLogHasWarning(std::string_view log);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_CUDA_NVRTC_H
