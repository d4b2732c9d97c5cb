//===- WorkerProtocolFuzzer.cpp - libFuzzer target: worker frames -*- C++ -*-//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Feeds bytes, as the stream a worker or its caller reads, to the frame
// reader and message decoder of the evaluator's protocol
// (include/kopt/Runtime/Protocol.h), message after message until the stream
// ends or fails. Every decoded message must encode and decode back to the
// same text; an `evaluate` request then goes where kopt-worker sends it
// before the GPU: its task and plans are read and each plan is verified
// against the task.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "kopt/Runtime/PlanVerifier.h"
#include "kopt/Runtime/Protocol.h"

#include <cstddef>
#include <cstdint>
#include <sys/mman.h>
#include <unistd.h>

using namespace kopt::runtime;
using kopt::fuzz::check;

/// What kopt-worker does with a request before it needs a GPU.
static void readRequest(const EvaluateMessage &request) {
  Result<KernelTask> task = kernelTaskFromJson(request.task);
  if (!task)
    return;
  for (const json::Value &candidate : request.candidates) {
    Result<KernelPlan> plan = kernelPlanFromJson(candidate);
    if (plan)
      verifyPlan(*plan, *task).ignore();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The frames come through a file descriptor, as from the worker's pipe.
  static int fd = ::memfd_create("kopt-fuzz-frames", 0);
  check(fd >= 0, "memfd_create failed");
  check(::ftruncate(fd, 0) == 0 && ::pwrite(fd, data, size, 0) == ssize_t(size),
        "cannot fill the memory file");
  check(::lseek(fd, 0, SEEK_SET) == 0, "cannot rewind the memory file");
  for (;;) {
    Result<Message> message = readMessage(fd);
    if (!message)
      break;
    std::string text = encode(*message);
    Result<Message> back = decode(text);
    check(back.isOk(), "an encoded message does not decode",
          back.status().message() + " in " + text);
    check(encode(*back) == text, "a message changed on a round trip", text);
    if (const auto *request = std::get_if<EvaluateMessage>(&*message))
      readRequest(*request);
  }
  return 0;
}
