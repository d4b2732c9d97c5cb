//===- ModelFiles.h - The model graphs in files and folders -----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt warm FILES|DIRS` takes files and folders of model graphs: a file is
// taken as it is, a folder is searched for .mlir files.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_SUPPORT_MODELFILES_H
#define KOPT_SUPPORT_MODELFILES_H

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::kopt {

/// The .mlir files among `inputs`, folders searched recursively, sorted
/// within each folder; missing paths are errors. Symbolic links to folders
/// are followed, but each folder (device and inode) is searched once, so a
/// link back to an ancestor ends the descent instead of looping.
llvm::Expected<std::vector<std::string>>
collectModelFiles(const std::vector<std::string> &inputs);

} // namespace mlir::kopt

#endif // KOPT_SUPPORT_MODELFILES_H
