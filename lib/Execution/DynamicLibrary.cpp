//===- DynamicLibrary.cpp - Opening CUDA libraries at run -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "DynamicLibrary.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace mlir::kopt;

llvm::Expected<void *>
dynlib::openFirstLibrary(llvm::ArrayRef<std::string> candidates,
                         llvm::StringRef missing) {
  std::string lastMessage;
  for (const std::string &candidate : candidates) {
    // RTLD_LOCAL: the CUDA libraries resolve their own dependencies; nothing
    // of theirs should interpose on later libraries.
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
    if (const char *message = dlerror())
      lastMessage = message;
  }
  std::string tried = llvm::join(candidates, ", ");
  return llvm::createStringError("%s (tried %s; last error: %s)",
                                 missing.str().c_str(), tried.c_str(),
                                 lastMessage.c_str());
}

void *dynlib::lookupSymbol(void *library, const char *name) {
  return dlsym(library, name);
}

std::string dynlib::getEnvironment(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

std::vector<std::string> dynlib::listLibraries(llvm::StringRef dir,
                                               llvm::StringRef prefix) {
  std::vector<std::string> found;
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it(dir, error), end;
       it != end && !error; it.increment(error)) {
    llvm::StringRef file = llvm::sys::path::filename(it->path());
    if (file.starts_with(prefix))
      found.push_back(it->path());
  }
  llvm::sort(found, [](const std::string &a, const std::string &b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  return found;
}

std::vector<std::string> dynlib::getCudaRoots() {
  std::vector<std::string> roots;
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string value = getEnvironment(variable);
    if (!value.empty() && !llvm::is_contained(roots, value))
      roots.push_back(value);
  }
  // The toolkit's documented default prefix.
  if (!llvm::is_contained(roots, "/usr/local/cuda"))
    roots.push_back("/usr/local/cuda");
  return roots;
}
