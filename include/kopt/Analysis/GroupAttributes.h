//===- GroupAttributes.h - Attribute names kopt puts on the -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_ANALYSIS_GROUPATTRIBUTES_H
#define KOPT_ANALYSIS_GROUPATTRIBUTES_H

#include "llvm/ADT/StringRef.h"

namespace mlir::kopt {

/// On group members, between fusion planning and outlining: the group's
/// number within its function (i64).
inline constexpr llvm::StringLiteral kGroupIdAttrName = "kopt.group_id";
/// On group members: the group's kind (string).
inline constexpr llvm::StringLiteral kGroupKindAttrName = "kopt.group_kind";
/// On an outlined function: a dictionary {id, kind, parent}; on its call
/// site: the group's number (i64).
inline constexpr llvm::StringLiteral kFusionGroupAttrName = "kopt.fusion_group";
/// On an outlined function and its call site: the group's SHA-256 key.
inline constexpr llvm::StringLiteral kKeyAttrName = "kopt.key";

} // namespace mlir::kopt

#endif // KOPT_ANALYSIS_GROUPATTRIBUTES_H
