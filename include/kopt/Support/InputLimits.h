//===- InputLimits.h - Bounds on what kopt reads ----------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// kopt reads files and answers it did not write: model graphs, jobs from a
// shared queue, LLM answers and their recordings. The parsers of MLIR and of
// llvm::json recurse once per level of nesting, so deep input would exhaust
// the stack; a FIFO or a device would block or never end. Every such input
// goes through these bounds first (docs/Limits.md):
//
// - only regular files (or stdin named as `-`) are read, at most
//   `getMaxInputBytes()` bytes;
// - MLIR may nest brackets at most `kMaxMlirNesting` deep, and is parsed on
//   a thread whose stack fits that (`kParserStackBytes`);
// - JSON may nest at most `kMaxJsonNesting` deep, as the runtime's reader.
//
// LLVM Support only, so the LLM providers can use it without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SUPPORT_INPUTLIMITS_H
#define KOPT_SUPPORT_INPUTLIMITS_H

#include "llvm/ADT/FunctionExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>

namespace mlir::kopt {

/// Default of `getMaxInputBytes()`: 1 GiB.
constexpr uint64_t kDefaultMaxInputBytes = uint64_t(1) << 30;

/// The environment variable that overrides `kDefaultMaxInputBytes`.
constexpr const char *kMaxInputBytesVariable = "KOPT_MAX_INPUT_BYTES";

/// Deepest nesting of brackets (`{`, `(`, `[`, `<`) kopt accepts in MLIR.
constexpr unsigned kMaxMlirNesting = 1000;

/// Stack of the thread that parses MLIR: `kMaxMlirNesting` levels of the
/// costliest construct (nested regions) take well under a quarter of it.
constexpr unsigned kParserStackBytes = 256u << 20;

/// Deepest nesting of arrays and objects kopt accepts in JSON; the same as
/// the runtime's reader (`kopt::runtime::json::ParseLimits`).
constexpr unsigned kMaxJsonNesting = 128;

/// The input size limit: `KOPT_MAX_INPUT_BYTES` when set to a positive
/// integer, else `kDefaultMaxInputBytes`.
uint64_t getMaxInputBytes();

/// Reads `path` (`-`: stdin) whole. Refuses, with an error that names
/// `path`, a missing or unreadable path, a directory, anything that is not
/// a regular file (a FIFO, a device, a socket) and a file larger than
/// `getMaxInputBytes()`. A FIFO is refused without blocking on it.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readInputFile(llvm::StringRef path);

/// Checks that `text` (MLIR, named `name` in the error) nests brackets at
/// most `kMaxMlirNesting` deep, skipping strings and comments. The error
/// gives the line and column where the limit is passed.
llvm::Error checkMlirNesting(llvm::StringRef text, llvm::StringRef name);

/// Checks that the JSON `text` nests arrays and objects at most
/// `kMaxJsonNesting` deep.
llvm::Error checkJsonNesting(llvm::StringRef text);

/// `llvm::json::parse` after `checkJsonNesting`: the one way kopt parses
/// JSON with LLVM's reader.
llvm::Expected<llvm::json::Value> parseJson(llvm::StringRef text);

/// Runs `work` on a thread with a `kParserStackBytes` stack and waits for
/// it.
void runOnParserStack(llvm::unique_function<void()> work);

} // namespace mlir::kopt

#endif // KOPT_SUPPORT_INPUTLIMITS_H
