//===- DynamicLibrary.cpp - Opening CUDA libraries at run -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "DynamicLibrary.h"

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

using namespace kopt::runtime;

Result<void *>
dynlib::openFirstLibrary(const std::vector<std::string> &candidates,
                         std::string_view missing) {
  std::string lastMessage;
  for (const std::string &candidate : candidates) {
    // RTLD_LOCAL: the CUDA libraries resolve their own dependencies; nothing
    // of theirs should interpose on later libraries.
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
    if (const char *message = dlerror())
      lastMessage = message;
  }
  std::string tried;
  for (const std::string &candidate : candidates)
    tried += (tried.empty() ? "" : ", ") + candidate;
  return Status::error(StatusCode::Unavailable,
                       std::string(missing) + " (tried " + tried +
                           "; last error: " + lastMessage + ")");
}

void *dynlib::lookupSymbol(void *library, const char *name) {
  return dlsym(library, name);
}

std::string dynlib::getEnvironment(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

std::vector<std::string> dynlib::listLibraries(const std::string &dir,
                                               std::string_view prefix) {
  std::vector<std::string> found;
  DIR *stream = opendir(dir.c_str());
  if (!stream)
    return found;
  while (const dirent *entry = readdir(stream)) {
    std::string_view file = entry->d_name;
    if (file.substr(0, prefix.size()) == prefix)
      found.push_back(dir + "/" + std::string(file));
  }
  closedir(stream);
  std::sort(found.begin(), found.end(),
            [](const std::string &a, const std::string &b) {
              return a.size() != b.size() ? a.size() > b.size() : a < b;
            });
  return found;
}

std::vector<std::string> dynlib::getCudaRoots() {
  std::vector<std::string> roots;
  auto add = [&](const std::string &root) {
    if (std::find(roots.begin(), roots.end(), root) == roots.end())
      roots.push_back(root);
  };
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string value = getEnvironment(variable);
    if (!value.empty())
      add(value);
  }
  // The toolkit's documented default prefix.
  add("/usr/local/cuda");
  return roots;
}

bool dynlib::pathExists(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

std::string_view dynlib::trimRight(std::string_view text) {
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' ||
          text.back() == '\v' || text.back() == '\f' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}
