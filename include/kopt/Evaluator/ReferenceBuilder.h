//===- ReferenceBuilder.h - fp64 references for set 0 -----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The caller's half of docs/Design.md's validation point 2 ("an fp64
// recomputation on at least one set"): the evaluate message's `reference`
// field. The inputs of validation set 0 come from the runtime's own generator
// (`generateInputSet` in include/kopt/Runtime/Evaluator/InputGenerator.h), the
// one the worker's engine draws set 0 with when a reference is present, so both
// sides see the same bytes. The outputs are then recomputed in fp64 at sampled
// points by the ReferenceInterpreter.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_EVALUATOR_REFERENCEBUILDER_H
#define KOPT_EVALUATOR_REFERENCEBUILDER_H

#include "kopt/Codegen/KernelTask.h"
#include "kopt/Runtime/Protocol.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace mlir::kopt {

/// The seed and distribution of validation set `inputSet` for an evaluation
/// seeded with `seed`, with no outputs yet: that set's distribution (set 0:
/// `normal`) and its derived stream `deriveSeed(seed, inputSet)`, with the
/// top bit cleared because the protocol's seeds are non-negative int64. The
/// engine draws the set from exactly these.
::kopt::runtime::ReferenceSet getReferenceSetSource(uint64_t seed,
                                                    unsigned inputSet = 0);

/// The bytes of every input of `task` for the reference's set 0: exactly
/// what the worker's engine generates when it receives `reference` (the same
/// `generateInputSet` call). Fails on an unknown distribution. The reference
/// itself reads the same values without materialising them.
llvm::Expected<std::vector<std::vector<uint8_t>>>
generateReferenceInputs(const KernelTask &task,
                        const ::kopt::runtime::ReferenceSet &reference);

/// The output points checked for an output of `numElements` elements: all of
/// them when there are at most `maxPoints`; otherwise an even stride of about
/// half of `maxPoints`, random points (from `seed`) for the rest, and the
/// last element. Sorted and without duplicates.
std::vector<int64_t> sampleOutputPoints(int64_t numElements, unsigned maxPoints,
                                        uint64_t seed);

/// Builds the evaluate message's `reference` (`inputSet` 0) or one of its
/// `laterReferences` for `group` (an outlined fusion group function) and its
/// `task`, for an evaluation seeded with `seed`: the set's inputs as
/// `generateReferenceInputs` gives them, and every output's
/// fp64 values at `sampleOutputPoints`. Points whose reference value is not
/// finite are left out (JSON has no NaN). Fails when the interpreter cannot
/// handle `group`, or when `group` and `task` disagree on the tensors.
///
/// The inputs are drawn element by element where the interpreter reads
/// them, never materialised, and the interpreter runs on up to `numThreads`
/// threads (0: one per hardware thread); the result is the same for any
/// number.
llvm::Expected<::kopt::runtime::ReferenceSet>
buildReferenceSet(func::FuncOp group, const KernelTask &task, uint64_t seed,
                  unsigned maxPointsPerOutput = 4096, unsigned inputSet = 0,
                  unsigned numThreads = 0);

/// `buildReferenceSet` for sets 0 to `numSets - 1` (at least set 0), built
/// side by side on up to `numThreads` threads in all (0: one per hardware
/// thread): the same references, sooner when a set alone cannot use every
/// thread (a few long rows). Entry i is set i's reference or why it could not
/// be built.
std::vector<llvm::Expected<::kopt::runtime::ReferenceSet>>
buildReferenceSets(func::FuncOp group, const KernelTask &task, uint64_t seed,
                   unsigned numSets, unsigned maxPointsPerOutput = 4096,
                   unsigned numThreads = 0);

} // namespace mlir::kopt

#endif // KOPT_EVALUATOR_REFERENCEBUILDER_H
