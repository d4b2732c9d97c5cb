//===- Nvrtc.cpp - Compiling CUDA C++ with NVRTC ----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/Nvrtc.h"

#include "DynamicLibrary.h"

#include <nvrtc.h>

#include <algorithm>
#include <memory>

using namespace kopt::runtime;

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
  Status error;
};
} // namespace

static NvrtcLoad loadNvrtcOnce() {
  NvrtcLoad load;
  // The loader's search first (LD_LIBRARY_PATH, the system cache), then the
  // toolkit folders.
  std::vector<std::string> candidates = {"libnvrtc.so.13", "libnvrtc.so"};
  for (const std::string &root : dynlib::getCudaRoots())
    for (const char *lib : {"/lib64", "/lib"})
      for (std::string &found :
           dynlib::listLibraries(root + lib, "libnvrtc.so"))
        candidates.push_back(std::move(found));
  auto handle = dynlib::openFirstLibrary(
      candidates, "NVRTC (libnvrtc.so.13) not found: install the CUDA 13 "
                  "toolkit or set CUDA_HOME");
  if (!handle) {
    load.error = handle.status();
    return load;
  }
  auto library = std::make_unique<NvrtcLibrary>();
#define KOPT_RESOLVE_NVRTC_SYMBOL(symbol)                                      \
  library->symbol = reinterpret_cast<decltype(library->symbol)>(               \
      dynlib::lookupSymbol(*handle, #symbol));                                 \
  if (!library->symbol) {                                                      \
    load.error = Status::error(StatusCode::Unavailable,                        \
                               "NVRTC lacks " #symbol                          \
                               " (NVRTC 12 or newer is needed)");              \
    return load;                                                               \
  }
  KOPT_NVRTC_SYMBOLS(KOPT_RESOLVE_NVRTC_SYMBOL)
#undef KOPT_RESOLVE_NVRTC_SYMBOL
  load.library = std::move(library);
  return load;
}

static Result<const NvrtcLibrary *> loadNvrtc() {
  static const NvrtcLoad load = loadNvrtcOnce();
  if (!load.library)
    return load.error;
  return load.library.get();
}

Result<std::pair<int, int>> kopt::runtime::getNvrtcVersion() {
  auto nvrtc = loadNvrtc();
  if (!nvrtc)
    return nvrtc.status();
  int major = 0, minor = 0;
  if ((*nvrtc)->nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return Status::error(StatusCode::Internal, "nvrtcVersion failed");
  return std::make_pair(major, minor);
}

bool kopt::runtime::nvrtcLogHasWarning(std::string_view log) {
  while (true) {
    size_t end = log.find('\n');
    std::string_view line = log.substr(0, end);
    if (line.find(": warning") != std::string_view::npos ||
        line.substr(0, 7) == "warning")
      return true;
    if (end == std::string_view::npos)
      return false;
    log.remove_prefix(end + 1);
  }
}

/// The include folder of the first CUDA toolkit found, or empty. NVRTC 13
/// does not carry cuda_fp16.h and cuda_bf16.h built in: it needs the
/// toolkit's headers on its include path.
static std::string findCudaIncludeDir() {
  for (const std::string &root : dynlib::getCudaRoots()) {
    std::string dir = root + "/include";
    if (dynlib::pathExists(dir + "/cuda_fp16.h"))
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

Result<CompiledKernel> kopt::runtime::compileCuda(std::string_view source,
                                                  std::string_view name,
                                                  std::string_view arch,
                                                  const NvrtcOptions &options) {
  auto loaded = loadNvrtc();
  if (!loaded)
    return loaded.status();
  const NvrtcLibrary &nvrtc = **loaded;
  std::string sourceText(source);
  std::string nameText(name);
  std::string archText(arch);
  // Failures of the source (it does not compile, or warns when warnings are
  // errors) are InvalidArgument: the plan is at fault, not the machine.
  auto fail = [&](std::string_view what, nvrtcResult result,
                  const std::string &log) -> Status {
    return Status::error(StatusCode::InvalidArgument,
                         "NVRTC: " + std::string(what) + " '" + nameText +
                             "' for " + archText + ": " +
                             nvrtc.nvrtcGetErrorString(result) +
                             (log.empty() ? "" : "\n") + log);
  };

  ProgramGuard guard{nvrtc};
  nvrtcResult result =
      nvrtc.nvrtcCreateProgram(&guard.program, sourceText.c_str(),
                               nameText.c_str(), 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS)
    return fail("cannot create a program for", result, "");

  std::vector<std::string> arguments = {"--gpu-architecture=" + archText,
                                        "-default-device"};
  bool hasStd = std::any_of(options.extra.begin(), options.extra.end(),
                            [](const std::string &option) {
                              return option.rfind("--std", 0) == 0 ||
                                     option.rfind("-std", 0) == 0;
                            });
  if (!hasStd)
    arguments.push_back("--std=c++17");
  std::string includeDir = findCudaIncludeDir();
  if (!includeDir.empty())
    arguments.push_back("--include-path=" + includeDir);
  // The toolkit's C++ library (cuda/std/...), which cooperative_groups.h
  // includes, lives in its own folder since CUDA 13.
  if (!includeDir.empty() && dynlib::pathExists(includeDir + "/cccl"))
    arguments.push_back("--include-path=" + includeDir + "/cccl");
  arguments.insert(arguments.end(), options.extra.begin(), options.extra.end());
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
    compiled.log = std::string(dynlib::trimRight(compiled.log.c_str()));
  }
  if (result != NVRTC_SUCCESS)
    return fail("cannot compile", result, compiled.log);
  if (options.warningsAsErrors && nvrtcLogHasWarning(compiled.log))
    return Status::error(StatusCode::InvalidArgument,
                         "NVRTC: '" + nameText + "' for " + archText +
                             " compiled with warnings, which are errors "
                             "here:\n" +
                             compiled.log);

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
    return Status::error(
        StatusCode::InvalidArgument,
        "NVRTC: '" + nameText + "' gave no cubin for " + archText +
            " (a virtual architecture such as compute_90 gives PTX only; pass "
            "a real one such as sm_90)");
  return compiled;
}
