//===- RuntimeModuleFuzzer.cpp - libFuzzer target: .kmod files --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Feeds bytes to the runtime module reader (readRuntimeModule, what
// `kopt-run` and libkoptrt's koptModuleLoad read a .kmod file with), which
// checks the module's consistency before it returns it. A module that reads
// must write and read back to the same bytes.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "kopt/Runtime/RuntimeModule.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace kopt::runtime;
using kopt::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  Result<RuntimeModule> module = readRuntimeModule(bytes, "input.kmod");
  if (!module)
    return 0;
  check(module->verify().isOk(), "a module that reads does not verify");
  std::string written = writeRuntimeModule(*module);
  Result<RuntimeModule> again = readRuntimeModule(written, "written.kmod");
  check(again.isOk(), "a written module does not read",
        again.status().message());
  check(writeRuntimeModule(*again) == written,
        "a module changed on a round trip");
  return 0;
}
