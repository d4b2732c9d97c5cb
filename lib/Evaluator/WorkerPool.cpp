//===- WorkerPool.cpp - One evaluator worker per GPU ------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A slot marked busy belongs to the one thread that marked it: only that
// thread touches its WorkerClient until it clears the mark under the lock.
// Everything else in a slot is read and written under the lock.
//
//===----------------------------------------------------------------------===//

#include "kopt/Evaluator/WorkerPool.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir::kopt;
namespace rt = ::kopt::runtime;

std::vector<std::string>
mlir::kopt::resolvePoolDevices(const WorkerPoolOptions &options,
                               const char *visibleDevices) {
  if (!options.devices.empty())
    return options.devices;
  if (visibleDevices) {
    std::vector<std::string> entries;
    std::string text(visibleDevices);
    size_t begin = 0;
    while (begin <= text.size()) {
      size_t end = text.find(',', begin);
      if (end == std::string::npos)
        end = text.size();
      std::string entry = text.substr(begin, end - begin);
      entry.erase(0, entry.find_first_not_of(" \t"));
      entry.erase(entry.find_last_not_of(" \t") + 1);
      if (!entry.empty())
        entries.push_back(entry);
      begin = end + 1;
    }
    if (entries.empty())
      return {text};
    if (options.deviceCount && options.deviceCount < entries.size())
      entries.resize(options.deviceCount);
    return entries;
  }
  std::vector<std::string> ordinals;
  for (unsigned i = 0, e = std::max(options.deviceCount, 1u); i < e; ++i)
    ordinals.push_back(std::to_string(i));
  return ordinals;
}

WorkerPool::WorkerPool(WorkerPoolOptions options) {
  for (const std::string &device :
       resolvePoolDevices(options, std::getenv("CUDA_VISIBLE_DEVICES"))) {
    WorkerOptions workerOptions = options.worker;
    workerOptions.environment.push_back("CUDA_VISIBLE_DEVICES=" + device);
    Slot slot;
    slot.client = std::make_unique<WorkerClient>(std::move(workerOptions));
    slot.entry.device = device;
    slots.push_back(std::move(slot));
  }
}

WorkerPool::~WorkerPool() { shutdown(); }

void WorkerPool::refresh(Slot &slot) {
  const WorkerClient &client = *slot.client;
  slot.entry.pid = client.getPid();
  slot.entry.startCount = client.getStartCount();
  slot.entry.hello = client.getHello();
  slot.entry.lastFailure = client.getLastFailure();
}

llvm::Error WorkerPool::start() {
  llvm::Error first = llvm::Error::success();
  for (size_t i = 0; i < slots.size(); ++i) {
    std::unique_lock<std::mutex> lock(mutex);
    Slot &slot = slots[i];
    if (slot.entry.busy || slot.client->isRunning())
      continue;
    slot.entry.busy = true;
    lock.unlock();
    llvm::Error error = slot.client->start();
    lock.lock();
    slot.entry.busy = false;
    refresh(slot);
    freed.notify_all();
    if (error && !first)
      first = llvm::createStringError(
          "worker " + std::to_string(i) + " (CUDA_VISIBLE_DEVICES=" +
          slot.entry.device + "): " + llvm::toString(std::move(error)));
    else
      llvm::consumeError(std::move(error));
  }
  return first;
}

std::optional<size_t> WorkerPool::acquire(WorkerFilter accept) {
  auto allowed = [&](size_t index) { return !accept || accept(index); };
  bool any = false;
  for (size_t index = 0; index < slots.size(); ++index)
    any |= allowed(index);
  if (!any)
    return std::nullopt;
  std::unique_lock<std::mutex> lock(mutex);
  size_t index = 0;
  freed.wait(lock, [&] {
    for (index = 0; index < slots.size(); ++index)
      if (!slots[index].entry.busy && allowed(index))
        return true;
    return false;
  });
  slots[index].entry.busy = true;
  return index;
}

void WorkerPool::release(size_t index) {
  std::lock_guard<std::mutex> lock(mutex);
  Slot &slot = slots.at(index);
  slot.entry.busy = false;
  refresh(slot);
  // Every waiter rechecks; notify_one could wake a shutdown() waiting for
  // all slots instead of a request waiting for one.
  freed.notify_all();
}

llvm::Expected<std::vector<::kopt::runtime::EvalReport>>
WorkerPool::evaluateHeld(size_t index,
                         const ::kopt::runtime::EvaluateMessage &request,
                         std::optional<std::chrono::milliseconds> timeout) {
  Slot &slot = slots.at(index);
  auto reports = slot.client->evaluate(request, timeout);
  std::lock_guard<std::mutex> lock(mutex);
  refresh(slot);
  return reports;
}

llvm::Expected<std::vector<::kopt::runtime::EvalReport>>
WorkerPool::evaluateOn(size_t &index,
                       const ::kopt::runtime::EvaluateMessage &request,
                       std::optional<std::chrono::milliseconds> timeout,
                       WorkerFilter accept, std::vector<std::string> *deaths) {
  auto reports = evaluateHeld(index, request, timeout);
  if (!reports || !isWorkerDeath(*reports))
    return reports;
  size_t dead = index;
  auto another = [&](size_t i) { return i != dead && (!accept || accept(i)); };
  bool hasAnother = false;
  for (size_t i = 0; i < slots.size(); ++i)
    hasAnother |= another(i);
  // Nothing to retry on: the caller keeps its worker, which starts afresh
  // on its next request.
  if (!hasAnother)
    return reports;
  // The dead worker is given back before another is waited for, so that two
  // callers whose workers die at once cannot wait for each other.
  release(dead);
  index = *acquire(another);
  auto describe = [&](size_t i, const std::vector<rt::EvalReport> &failed) {
    std::string reason;
    for (const rt::EvalReport &report : failed)
      if (reason.empty())
        reason = getWorkerFailureReason(report);
    return "CUDA_VISIBLE_DEVICES=" + slots[i].entry.device + ": " + reason;
  };
  std::string first = describe(dead, *reports);
  if (deaths)
    deaths->push_back(first);
  auto retried = evaluateHeld(index, request, timeout);
  if (!retried || !isWorkerDeath(*retried))
    return retried;
  // Dead on two devices: the request, not a GPU, is the likely cause.
  std::string both =
      "crash on two devices: " + first + "; then " + describe(index, *retried);
  for (rt::EvalReport &report : *retried)
    if (report.failedCheck == rt::FailedCheck::Crash &&
        !getWorkerFailureReason(report).empty())
      setWorkerFailureReason(report, both);
  return retried;
}

llvm::Expected<std::vector<::kopt::runtime::EvalReport>>
WorkerPool::evaluate(const ::kopt::runtime::EvaluateMessage &request,
                     std::optional<std::chrono::milliseconds> timeout,
                     size_t *workerIndex) {
  if (slots.empty())
    return llvm::createStringError("the worker pool has no devices");
  size_t index = *acquire();
  auto reports = evaluateOn(index, request, timeout);
  release(index);
  if (workerIndex)
    *workerIndex = index;
  return reports;
}

void WorkerPool::shutdown() {
  std::unique_lock<std::mutex> lock(mutex);
  for (Slot &slot : slots) {
    freed.wait(lock, [&] { return !slot.entry.busy; });
    slot.entry.busy = true;
    lock.unlock();
    slot.client->shutdown();
    lock.lock();
    slot.entry.busy = false;
    refresh(slot);
    freed.notify_all();
  }
}

WorkerPoolEntry WorkerPool::getWorker(size_t index) const {
  std::lock_guard<std::mutex> lock(mutex);
  return slots.at(index).entry;
}

WorkerOptions &WorkerPool::getWorkerOptions(size_t index) {
  return slots.at(index).client->getOptions();
}
