//===- Nvrtc.cpp - Compiling CUDA C++ with NVRTC ----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Execution/Nvrtc.h"

#include "DynamicLibrary.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"

#include <nvrtc.h>

#include <memory>

using namespace mlir;
using namespace mlir::kopt;

/// NVRTC functions kopt uses; none has a versioned name in NVRTC 13.
#define KOPT_NVRTC_SYMBOLS(X)                                                  \
  X(nvrtcVersion)                                                              \
  X(nvrtcGetErrorString)                                                       \
  X(nvrtcCreateProgram)                                                        \
  X(nvrtcDestroyProgram)                                                       \
  X(nvrtcCompileProgram)                                                       \
  X(nvrtcGetProgramLogSize)                                                    \
  X(nvrtcGetProgramLog)                                                        \
  X(nvrtcGetPTXSize)                                                           \
  X(nvrtcGetPTX)                                                               \
  X(nvrtcGetCUBINSize)                                                         \
  X(nvrtcGetCUBIN)

namespace {
struct NvrtcLibrary {
#define KOPT_DECLARE_NVRTC_FUNCTION(symbol)                                    \
  decltype(&::symbol) symbol = nullptr;
  KOPT_NVRTC_SYMBOLS(KOPT_DECLARE_NVRTC_FUNCTION)
#undef KOPT_DECLARE_NVRTC_FUNCTION
};

struct NvrtcLoad {
  std::unique_ptr<NvrtcLibrary> library;
  std::string error;
};
} // namespace

static NvrtcLoad loadNvrtcOnce() {
  NvrtcLoad load;
  // The loader's search first (LD_LIBRARY_PATH, the system cache), then the
  // toolkit folders.
  std::vector<std::string> candidates = {"libnvrtc.so.13", "libnvrtc.so"};
  for (const std::string &root : dynlib::getCudaRoots())
    for (const char *lib : {"/lib64", "/lib"})
      llvm::append_range(candidates,
                         dynlib::listLibraries(root + lib, "libnvrtc.so"));
  auto handle = dynlib::openFirstLibrary(
      candidates, "NVRTC (libnvrtc.so.13) not found: install the CUDA 13 "
                  "toolkit or set CUDA_HOME");
  if (!handle) {
    load.error = llvm::toString(handle.takeError());
    return load;
  }
  auto library = std::make_unique<NvrtcLibrary>();
#define KOPT_RESOLVE_NVRTC_SYMBOL(symbol)                                      \
  library->symbol = reinterpret_cast<decltype(library->symbol)>(               \
      dynlib::lookupSymbol(*handle, #symbol));                                 \
  if (!library->symbol) {                                                      \
    load.error = "NVRTC lacks " #symbol " (NVRTC 12 or newer is needed)";      \
    return load;                                                               \
  }
  KOPT_NVRTC_SYMBOLS(KOPT_RESOLVE_NVRTC_SYMBOL)
#undef KOPT_RESOLVE_NVRTC_SYMBOL
  load.library = std::move(library);
  return load;
}

static llvm::Expected<const NvrtcLibrary *> loadNvrtc() {
  static const NvrtcLoad load = loadNvrtcOnce();
  if (!load.library)
    return llvm::createStringError(load.error);
  return load.library.get();
}

llvm::Expected<std::pair<int, int>> mlir::kopt::getNvrtcVersion() {
  auto nvrtc = loadNvrtc();
  if (!nvrtc)
    return nvrtc.takeError();
  int major = 0, minor = 0;
  if ((*nvrtc)->nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return llvm::createStringError("nvrtcVersion failed");
  return std::make_pair(major, minor);
}

bool mlir::kopt::nvrtcLogHasWarning(llvm::StringRef log) {
  llvm::SmallVector<llvm::StringRef> lines;
  log.split(lines, '\n');
  return llvm::any_of(lines, [](llvm::StringRef line) {
    return line.contains(": warning") || line.starts_with("warning");
  });
}

/// The include folder of the first CUDA toolkit found, or empty. NVRTC 13
/// does not carry cuda_fp16.h and cuda_bf16.h built in: it needs the
/// toolkit's headers on its include path.
static std::string findCudaIncludeDir() {
  for (const std::string &root : dynlib::getCudaRoots()) {
    std::string dir = root + "/include";
    if (llvm::sys::fs::exists(dir + "/cuda_fp16.h"))
      return dir;
  }
  return "";
}

namespace {
/// Destroys an nvrtcProgram on scope exit.
struct ProgramGuard {
  const NvrtcLibrary &nvrtc;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program)
      nvrtc.nvrtcDestroyProgram(&program);
  }
};
} // namespace

llvm::Expected<CompiledKernel>
mlir::kopt::compileCuda(llvm::StringRef source, llvm::StringRef name,
                        llvm::StringRef arch, const NvrtcOptions &options) {
  auto loaded = loadNvrtc();
  if (!loaded)
    return loaded.takeError();
  const NvrtcLibrary &nvrtc = **loaded;
  auto fail = [&](llvm::StringRef what, nvrtcResult result,
                  llvm::StringRef log) -> llvm::Error {
    return llvm::createStringError(
        "NVRTC: %s '%s' for %s: %s%s%s", what.str().c_str(), name.str().c_str(),
        arch.str().c_str(), nvrtc.nvrtcGetErrorString(result),
        log.empty() ? "" : "\n", log.str().c_str());
  };

  std::string sourceText = source.str();
  std::string nameText = name.str();
  ProgramGuard guard{nvrtc};
  nvrtcResult result =
      nvrtc.nvrtcCreateProgram(&guard.program, sourceText.c_str(),
                               nameText.c_str(), 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS)
    return fail("cannot create a program for", result, "");

  std::vector<std::string> arguments = {"--gpu-architecture=" + arch.str(),
                                        "-default-device"};
  bool hasStd = llvm::any_of(options.extra, [](const std::string &option) {
    return llvm::StringRef(option).starts_with("--std") ||
           llvm::StringRef(option).starts_with("-std");
  });
  if (!hasStd)
    arguments.push_back("--std=c++17");
  std::string includeDir = findCudaIncludeDir();
  if (!includeDir.empty())
    arguments.push_back("--include-path=" + includeDir);
  llvm::append_range(arguments, options.extra);
  std::vector<const char *> argv;
  for (const std::string &argument : arguments)
    argv.push_back(argument.c_str());

  result =
      nvrtc.nvrtcCompileProgram(guard.program, int(argv.size()), argv.data());
  CompiledKernel compiled;
  size_t logSize = 0;
  if (nvrtc.nvrtcGetProgramLogSize(guard.program, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    compiled.log.resize(logSize);
    if (nvrtc.nvrtcGetProgramLog(guard.program, compiled.log.data()) !=
        NVRTC_SUCCESS)
      compiled.log.clear();
    // Drop the terminating NUL and trailing blank lines.
    compiled.log = llvm::StringRef(compiled.log.c_str()).rtrim().str();
  }
  if (result != NVRTC_SUCCESS)
    return fail("cannot compile", result, compiled.log);
  if (options.warningsAsErrors && nvrtcLogHasWarning(compiled.log))
    return llvm::createStringError(
        "NVRTC: '%s' for %s compiled with warnings, which are errors here:\n%s",
        nameText.c_str(), arch.str().c_str(), compiled.log.c_str());

  size_t size = 0;
  if ((result = nvrtc.nvrtcGetCUBINSize(guard.program, &size)) != NVRTC_SUCCESS)
    return fail("no cubin for", result, compiled.log);
  compiled.cubin.resize(size);
  if (size && (result = nvrtc.nvrtcGetCUBIN(
                   guard.program, compiled.cubin.data())) != NVRTC_SUCCESS)
    return fail("no cubin for", result, compiled.log);
  if ((result = nvrtc.nvrtcGetPTXSize(guard.program, &size)) != NVRTC_SUCCESS)
    return fail("no PTX for", result, compiled.log);
  compiled.ptx.resize(size);
  if (size && (result = nvrtc.nvrtcGetPTX(
                   guard.program, compiled.ptx.data())) != NVRTC_SUCCESS)
    return fail("no PTX for", result, compiled.log);
  // The PTX size counts the terminating NUL.
  while (!compiled.ptx.empty() && compiled.ptx.back() == '\0')
    compiled.ptx.pop_back();
  if (compiled.cubin.empty())
    return llvm::createStringError(
        "NVRTC: '%s' gave no cubin for %s (a virtual architecture such as "
        "compute_90 gives PTX only; pass a real one such as sm_90)",
        nameText.c_str(), arch.str().c_str());
  return compiled;
}
