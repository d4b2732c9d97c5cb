//===- ModelFiles.cpp - The model graphs in files and folders ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Support/ModelFiles.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <set>

llvm::Expected<std::vector<std::string>>
mlir::kopt::collectModelFiles(const std::vector<std::string> &inputs) {
  std::vector<std::string> files;
  std::set<llvm::sys::fs::UniqueID> searched;
  for (const std::string &input : inputs) {
    if (!llvm::sys::fs::is_directory(input)) {
      if (!llvm::sys::fs::exists(input))
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "no such file or folder: '" + input +
                                           "'");
      files.push_back(input);
      continue;
    }
    llvm::sys::fs::UniqueID root;
    if (!llvm::sys::fs::getUniqueID(input, root) &&
        !searched.insert(root).second)
      continue;
    std::vector<std::string> found;
    std::error_code error;
    for (llvm::sys::fs::recursive_directory_iterator it(input, error), end;
         it != end && !error; it.increment(error)) {
      llvm::ErrorOr<llvm::sys::fs::basic_file_status> status = it->status();
      if (status &&
          status->type() == llvm::sys::fs::file_type::directory_file) {
        llvm::sys::fs::UniqueID id;
        if (llvm::sys::fs::getUniqueID(it->path(), id) ||
            !searched.insert(id).second)
          it.no_push();
        continue;
      }
      if (llvm::sys::path::extension(it->path()) == ".mlir")
        found.push_back(it->path());
    }
    if (error)
      return llvm::createStringError(error, "reading '" + input +
                                                "': " + error.message());
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}
