//===- ReferenceParallel.cpp - Threads of the fp64 reference ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Spreads an evaluation of sampled points over threads
// (ReferenceInterpreter.cpp describes the evaluation). Which elements a point
// reads depends only on indices, never on values (but for a body's
// `tensor.extract`, whose elements are left to the thread that reads them), so
// the memoised elements the points read through elementwise nodes (a row's
// reduction, a softmax row, a GEMM element) are known before anything is
// computed. They are computed first, node after node in the function's order,
// each node's elements in parallel; what they read in turn is computed by the
// thread that needs it, once, while other threads needing the same element wait
// for it. The points come last, in parallel blocks, and find every costly
// element memoised. Each thread owns a Frame; the memoised elements are shared.
// A value is computed by the same operations in the same order whichever thread
// computes it, so the values do not depend on the number of threads.
//
//===----------------------------------------------------------------------===//

#include "ReferenceInterpreterImpl.h"

#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <algorithm>
#include <atomic>

using namespace mlir;
using namespace mlir::kopt;
using namespace mlir::kopt::reference;

/// Points evaluated per task once the memoised elements are known.
static constexpr int64_t kPointsPerTask = 32;

void reference::forEachItem(llvm::ThreadPoolInterface *pool,
                            std::vector<Frame> &frames, int64_t count,
                            llvm::function_ref<void(Frame &, int64_t)> body) {
  if (!pool) {
    for (int64_t item = 0; item < count; ++item)
      body(frames.front(), item);
    return;
  }
  std::atomic<int64_t> next(0);
  for (Frame &frame : frames)
    pool->async([&] {
      for (int64_t item = next++; item < count; item = next++)
        body(frame, item);
    });
  pool->wait();
}

std::string ReferenceInterpreter::Impl::evaluateInParallel(
    TensorNode *node, ArrayRef<int64_t> points, double *values,
    unsigned numThreads) {
  unsigned hardware = llvm::hardware_concurrency().compute_thread_count();
  if (numThreads == 0 || numThreads > hardware)
    numThreads = hardware;
  if (numThreads <= 1 || points.size() <= 1) {
    Frame frame = makeFrame();
    gather(frame, node, points, values);
    return frame.error;
  }

  // The memoised elements the points read through elementwise nodes, by
  // node in the function's order (a topological one).
  DenseSet<std::pair<TensorNode *, int64_t>> seen;
  std::vector<std::pair<TensorNode *, int64_t>> demand;
  for (int64_t point : points)
    collectDemand(node, point, seen, demand);
  std::stable_sort(
      demand.begin(), demand.end(),
      [](const auto &a, const auto &b) { return a.first->id < b.first->id; });

  llvm::DefaultThreadPool pool(llvm::hardware_concurrency(numThreads));
  std::vector<Frame> frames;
  for (unsigned t = 0; t < numThreads; ++t)
    frames.push_back(makeFrame());
  for (size_t begin = 0; begin < demand.size();) {
    TensorNode *demanded = demand[begin].first;
    size_t end = begin;
    while (end < demand.size() && demand[end].first == demanded)
      ++end;
    // Neighbouring elements often share what they read (one row); taken
    // strided, the elements computed at the same time are far apart.
    int64_t count = int64_t(end - begin);
    int64_t stride = (count + numThreads - 1) / numThreads;
    std::vector<int64_t> order;
    for (int64_t j = 0; j < stride; ++j)
      for (int64_t t = 0; t < numThreads; ++t)
        if (t * stride + j < count)
          order.push_back(t * stride + j);
    forEachItem(&pool, frames, count, [&](Frame &frame, int64_t item) {
      int64_t index = demand[begin + order[item]].second;
      if (demanded->kind == TensorNode::Kind::Softmax)
        softmaxRow(frame, demanded, index);
      else
        memoisedAt(frame, demanded, index);
    });
    begin = end;
  }

  int64_t numTasks =
      (int64_t(points.size()) + kPointsPerTask - 1) / kPointsPerTask;
  forEachItem(&pool, frames, numTasks, [&](Frame &frame, int64_t task) {
    int64_t start = task * kPointsPerTask;
    ArrayRef<int64_t> block = points.slice(
        start, std::min<int64_t>(kPointsPerTask, points.size() - start));
    gather(frame, node, block, values + start);
  });
  for (const Frame &frame : frames)
    if (!frame.error.empty())
      return frame.error;
  return "";
}
