//===- Replay.h - Store exported entries instead of tuning ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `kopt warm --replay=FILE` stores the entries of FILE (JSON lines, as
// `kopt db export` writes them) for the tasks that miss the database, instead
// of tuning them: a CPU test seam for the warm loop, and a way to distribute
// results tuned elsewhere. The entries go through the database's import
// path, one transaction per task, so a replayed task is stored exactly as an
// import of its lines would store it.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_AUTOTUNE_REPLAY_H
#define KOPT_AUTOTUNE_REPLAY_H

#include "kopt/Runtime/KernelDatabase.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <string>

namespace mlir::kopt {

/// The lines of an exported database, grouped by task key.
class ReplaySource {
public:
  /// Reads the file at `path`. Fails when it cannot be read or when a line is
  /// not a record or an attempt as `exportJsonLines` writes them (the error
  /// names `path:LINE:`).
  static llvm::Expected<std::unique_ptr<ReplaySource>>
  load(const std::string &path);

  /// The file's path, as given to `load`.
  const std::string &getPath() const { return path; }

  /// The fingerprints of the file's records, by hash.
  const std::map<std::string, ::kopt::runtime::DeviceFingerprint> &
  getFingerprints() const {
    return fingerprints;
  }

  /// Whether the file has a record or an attempt for `taskKey`.
  bool hasTask(llvm::StringRef taskKey) const;

  /// Merges every line of `taskKey` (its records, for any fingerprint, and
  /// its attempts) into `database` through `importJsonLines`, in one
  /// transaction. Does nothing for a key the file does not have.
  llvm::Expected<::kopt::runtime::ImportSummary>
  storeTask(::kopt::runtime::KernelDatabase &database,
            llvm::StringRef taskKey) const;

private:
  std::string path;
  /// The lines of each task key, each ending in a newline.
  std::map<std::string, std::string, std::less<>> linesByKey;
  std::map<std::string, ::kopt::runtime::DeviceFingerprint> fingerprints;
};

} // namespace mlir::kopt

#endif // KOPT_AUTOTUNE_REPLAY_H
