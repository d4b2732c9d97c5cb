//===- Replay.cpp - Store exported entries instead of tuning ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The whole file is read and checked up front, so that a malformed line
// fails the run before anything is stored; each task's lines are then
// imported as they are, in the order the file gives them.
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Replay.h"
#include "kopt/Support/InputLimits.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::unique_ptr<ReplaySource>>
ReplaySource::load(const std::string &path) {
  auto buffer = readInputFile(path);
  if (!buffer)
    return makeError("replay file: " + llvm::toString(buffer.takeError()));
  auto source = std::unique_ptr<ReplaySource>(new ReplaySource());
  source->path = path;
  llvm::StringRef rest = (*buffer)->getBuffer();
  for (size_t lineNumber = 1; !rest.empty(); ++lineNumber) {
    llvm::StringRef line;
    std::tie(line, rest) = rest.split('\n');
    if (line.trim().empty())
      continue;
    auto malformed = [&](const llvm::Twine &why) {
      return makeError(path + ":" + llvm::Twine(lineNumber) + ": " + why);
    };
    rt::Result<rt::json::Value> value =
        rt::json::parse(std::string_view(line.data(), line.size()));
    if (!value)
      return malformed(value.status().message());
    const rt::json::Value *type = value->find("type");
    const std::string *typeName = type ? type->getString() : nullptr;
    std::string taskKey;
    if (typeName && *typeName == "kernel" && value->find("record")) {
      rt::Result<rt::KernelRecord> record =
          rt::kernelRecordFromJson(*value->find("record"));
      if (!record)
        return malformed(record.status().message());
      taskKey = record->taskKey;
      source->fingerprints.emplace(record->fingerprint.hash(),
                                   record->fingerprint);
    } else if (typeName && *typeName == "attempt" && value->find("attempt")) {
      rt::Result<rt::AttemptRecord> attempt =
          rt::attemptRecordFromJson(*value->find("attempt"));
      if (!attempt)
        return malformed(attempt.status().message());
      taskKey = attempt->taskKey;
    } else {
      return malformed("not a kernel or attempt line, as 'kopt db export' "
                       "writes them");
    }
    std::string &lines = source->linesByKey[taskKey];
    lines.append(line.data(), line.size());
    lines.push_back('\n');
  }
  return source;
}

bool ReplaySource::hasTask(llvm::StringRef taskKey) const {
  return linesByKey.find(taskKey) != linesByKey.end();
}

llvm::Expected<rt::ImportSummary>
ReplaySource::storeTask(rt::KernelDatabase &database,
                        llvm::StringRef taskKey) const {
  auto it = linesByKey.find(taskKey);
  if (it == linesByKey.end())
    return rt::ImportSummary();
  rt::Result<rt::ImportSummary> summary =
      database.importJsonLines(std::string_view(it->second), path);
  if (!summary)
    return makeError("replaying " + taskKey + " from '" + path +
                     "': " + summary.status().message());
  return *summary;
}
