//===- TestInputs.h - Committed inputs of the GPU tests ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Where the GPU tests find their committed inputs (tasks, plans, manifests)
// and how they read them. KOPT_SOURCE_DIR, the source tree the binary was
// built from, is defined for every GPU test (CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_RUNTIME_CUDA_TESTINPUTS_H
#define KOPT_TEST_RUNTIME_CUDA_TESTINPUTS_H

#include "kopt/Runtime/Json.h"
#include "kopt/Runtime/Status.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/stat.h>

namespace kopt::runtime::gputest {

/// The folder `relative` of the repository, with a trailing '/': `$envVar`
/// when set, else under the working directory when it is there (the
/// repository root, where scripts/gpu-check runs), else under the source
/// tree this binary was built from.
inline std::string findTestInputs(const char *envVar,
                                  const std::string &relative) {
  if (const char *dir = std::getenv(envVar))
    return std::string(dir) + "/";
  struct stat info;
  if (stat(relative.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    return relative + "/";
#ifdef KOPT_SOURCE_DIR
  return std::string(KOPT_SOURCE_DIR) + "/" + relative + "/";
#else
  return relative + "/";
#endif
}

/// The JSON document in the file at `path`.
inline Result<json::Value> readJsonFile(const std::string &path) {
  std::ifstream stream(path);
  if (!stream)
    return Status::error(StatusCode::IoError, "cannot read " + path);
  std::stringstream text;
  text << stream.rdbuf();
  return json::parse(text.str());
}

} // namespace kopt::runtime::gputest

#endif // KOPT_TEST_RUNTIME_CUDA_TESTINPUTS_H
