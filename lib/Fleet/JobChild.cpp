//===- JobChild.cpp - One attempt at a job, in a child process --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Fleet/JobChild.h"
#include "kopt/Fleet/ChildProcess.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

namespace {
/// A temporary file, removed at the end of its scope.
struct TemporaryFile {
  llvm::SmallString<128> path;
  ~TemporaryFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};
} // namespace

JobResult mlir::kopt::runJobInChildProcess(const rt::TuningJob &job,
                                           const JobChildCommand &command) {
  JobResult result;
  TemporaryFile jobFile, outcome;
  if (std::error_code code = llvm::sys::fs::createTemporaryFile(
          "kopt-job", "json", jobFile.path)) {
    result.error = "cannot create a job file: " + code.message();
    return result;
  }
  if (std::error_code code = llvm::sys::fs::createTemporaryFile(
          "kopt-job-outcome", "json", outcome.path)) {
    result.error = "cannot create an outcome file: " + code.message();
    return result;
  }
  {
    rt::json::Value document = rt::json::Value::object();
    document.set("id", rt::json::Value(job.id));
    document.set("task_key", rt::json::Value(job.taskKey));
    document.set("task", job.task);
    std::error_code code;
    llvm::raw_fd_ostream out(jobFile.path, code);
    out << rt::json::write(document);
    out.close();
    if (code || out.has_error()) {
      result.error =
          "cannot write the job file '" + jobFile.path.str().str() + "'";
      out.clear_error();
      return result;
    }
  }

  std::vector<std::string> argv = command.program;
  argv.push_back("--run-job=" + jobFile.path.str().str());
  argv.push_back("--job-outcome=" + outcome.path.str().str());
  argv.insert(argv.end(), command.arguments.begin(), command.arguments.end());
  ChildExit exit =
      runChildProcess(argv, command.environment, command.timeoutSeconds);
  if (!exit.succeeded()) {
    result.error = exit.describe(command.timeoutSeconds);
    return result;
  }
  rt::json::Value document;
  if (auto text = llvm::MemoryBuffer::getFile(outcome.path))
    if (auto parsed = rt::json::parse((*text)->getBuffer().str()))
      document = std::move(*parsed);
  const rt::json::Value *error = document.find("error");
  const rt::json::Value *how = document.find("how");
  if (!error || !error->getString() || !how || !how->getString()) {
    result.error = "the compile child exited without an outcome";
    return result;
  }
  result.finished = true;
  result.error = *error->getString();
  result.how = *how->getString();
  return result;
}

llvm::Expected<rt::TuningJob> mlir::kopt::readJobFile(llvm::StringRef path) {
  auto text = llvm::MemoryBuffer::getFile(path);
  if (!text)
    return llvm::createStringError("cannot read job file '" + path +
                                   "': " + text.getError().message());
  auto document = rt::json::parse((*text)->getBuffer().str());
  if (!document)
    return llvm::createStringError("job file '" + path +
                                   "': " + document.status().message());
  rt::TuningJob job;
  if (const rt::json::Value *id = document->find("id"))
    job.id = id->getInteger().value_or(0);
  if (const rt::json::Value *key = document->find("task_key"))
    if (const std::string *keyText = key->getString())
      job.taskKey = *keyText;
  if (const rt::json::Value *task = document->find("task"))
    job.task = *task;
  return job;
}

llvm::Error mlir::kopt::writeJobOutcome(llvm::StringRef path,
                                        llvm::StringRef error,
                                        llvm::StringRef how) {
  rt::json::Value result = rt::json::Value::object();
  result.set("error", rt::json::Value(error.str()));
  result.set("how", rt::json::Value(how.str()));
  std::error_code code;
  llvm::raw_fd_ostream out(path, code);
  if (code)
    return llvm::createStringError("cannot write '" + path +
                                   "': " + code.message());
  out << rt::json::write(result);
  out.close();
  if (out.has_error()) {
    std::string message = out.error().message();
    // An error left on the stream would end the process when it closes.
    out.clear_error();
    return llvm::createStringError("cannot write '" + path + "': " + message);
  }
  return llvm::Error::success();
}
