//===- Identifier.h - C identifiers from model text -------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Names taken from a model (function names, hence task and group names) end
// up in generated CUDA source: kernel entry names, and the names a language
// model's kernel must have. An MLIR symbol may be any string, so they are
// made valid C identifiers first; text that goes into a comment is made one
// harmless line. Nothing a model names can then break or add to the code.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_CODEGEN_IDENTIFIER_H
#define KOPT_CODEGEN_IDENTIFIER_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::kopt {

/// The longest identifier `sanitizeIdentifier` returns, in bytes.
inline constexpr size_t kMaxIdentifierLength = 120;

/// Returns `name` as a C identifier, `[A-Za-z_][A-Za-z0-9_]*`, at most
/// kMaxIdentifierLength bytes. Every other byte (a '.', a '/', a space, a
/// quote, a control or non-ASCII byte) becomes '_', and a leading digit gets
/// a 'k' before it. A name that had to change (or was empty or longer, cut
/// there) gets '_' and 8 hex digits of its hash appended, so that distinct
/// names stay distinct; a name that was already a valid identifier of at
/// most kMaxIdentifierLength bytes is returned as it is.
std::string sanitizeIdentifier(llvm::StringRef name);

/// Returns `text` fit to follow `//` on one line of generated code: printable
/// ASCII only, with every other byte (a newline, a control or non-ASCII
/// byte) and every backslash (which would continue the comment onto the next
/// line) replaced by '?', and no "*/" or "/*" (the '/' replaced by '?'), so
/// that it is also safe inside a block comment.
std::string sanitizeCommentText(llvm::StringRef text);

} // namespace mlir::kopt

#endif // KOPT_CODEGEN_IDENTIFIER_H
