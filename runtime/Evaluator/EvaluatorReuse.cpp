//===- EvaluatorReuse.cpp - The baseline's outputs across requests -*- C++ -*-//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Every request of round 0 validates the baseline beside one candidate, on
// the same input sets (one seed per round). The first request of a task
// that has room keeps the baseline's outputs of every set on the device,
// with the checksums of their inputs and outputs, once the baseline passed
// every check of that request. A later request for the same task, baseline
// plan and sets checks what was kept before it uses it:
//
// - every kept output still has the checksum it was kept with (a corrupted
//   copy is never compared with);
// - every set's inputs, drawn again, have the checksums they had (the key
//   names everything the inputs depend on; this proves it);
// - the baseline runs once on the last set with every check of a
//   validation run (poison, redzones, input checksums, unwritten elements),
//   and its outputs are bitwise the kept ones. Its runner then holds the
//   last set, as after validation, for timing.
//
// Then the candidates are compared with the kept outputs on every set, the
// fp64 references are checked on them, and the baseline is timed beside
// the candidates as always; each timed run of the baseline must again give
// the kept last set's checksum. After each candidate's runs the kept
// outputs are checksummed again: a candidate that wrote into them fails
// (`redzone`), and the baseline restores them. When any of this does not hold,
// the kept outputs are freed and the request validates the baseline as if
// nothing had been kept. A request for another task, plan or seed frees them
// first.
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/Engine.h"

#include "kopt/Runtime/Evaluator/InputGenerator.h"

using namespace kopt::runtime;
using namespace kopt::runtime::engine;

//===----------------------------------------------------------------------===//
// BaselineCache
//===----------------------------------------------------------------------===//

BaselineCache::BaselineCache() : impl(std::make_unique<Impl>()) {}
BaselineCache::~BaselineCache() = default;

void BaselineCache::clear() { impl->sets.clear(); }

size_t BaselineCache::getNumSets() const { return impl->sets.size(); }

uint64_t BaselineCache::getBytes() const {
  uint64_t bytes = 0;
  for (const KeptSet &set : impl->sets)
    for (const DeviceBuffer &output : set.outputs)
      bytes += uint64_t(output.getBytes());
  return bytes;
}

CUdeviceptr BaselineCache::getOutput(size_t set, size_t output) const {
  if (set >= impl->sets.size() || output >= impl->sets[set].outputs.size())
    return 0;
  return impl->sets[set].outputs[output].get();
}

/// The records of `sets`, without their device copies.
static std::vector<KeptSetRecord> getRecords(const std::vector<KeptSet> &sets) {
  std::vector<KeptSetRecord> records;
  for (const KeptSet &set : sets)
    records.push_back(set.record);
  return records;
}

//===----------------------------------------------------------------------===//
// The engine's side
//===----------------------------------------------------------------------===//

std::vector<BaselineSetKey> Engine::getBaselineKeys() const {
  std::vector<BaselineSetKey> keys;
  for (size_t s = 0; s < sets.size(); ++s)
    keys.push_back(makeBaselineSetKey(task, *candidates[0].plan, s,
                                      sets[s].seed, sets[s].distribution));
  return keys;
}

void Engine::dropForeignKeptOutputs() {
  BaselineCache *cache = options.baselineCache;
  if (!cache || cache->impl->sets.empty())
    return;
  if (matchesKeptSets(getRecords(cache->impl->sets), getBaselineKeys()))
    return;
  cache->clear();
  noteBaselineOutputs("the kept outputs were of another task, baseline or "
                      "seed, and were freed");
}

void Engine::dropKeptOutputsOverCap() {
  BaselineCache *cache = options.baselineCache;
  if (!cache || cache->impl->sets.empty())
    return;
  unsigned numKept = unsigned(cache->impl->sets.size());
  if (countKeptSetsUnderCap(*memory, numKept) >= numKept)
    return;
  std::optional<uint64_t> peak =
      estimatePeakWithKeptSets(*memory, numKept, numKept);
  cache->clear();
  noteBaselineOutputs(
      "the kept outputs were freed: beside this request's buffers they "
      "would take its peak to " +
      (peak ? formatBytes(*peak) : std::string("more than 16 EiB")) +
      ", over " + std::to_string(kTaskMemoryMultiple) +
      " times the task's tensors (" + formatBytes(memory->taskBytes) + ")");
}

bool Engine::freeKeptOutputsForMemory() {
  BaselineCache *cache = options.baselineCache;
  if (!cache || cache->impl->sets.empty())
    return false;
  cache->clear();
  noteBaselineOutputs("the kept outputs were freed: the request needs "
                      "their memory");
  return true;
}

void Engine::planBaselineOutputs() {
  BaselineCache *cache = options.baselineCache;
  if (!cache)
    return;
  keptBytesAtStart = cache->getBytes();
  if (!cache->impl->sets.empty()) {
    reusingBaseline = true;
    return;
  }
  KeepDecision decision = decideBaselineKeeping(
      *memory, numSets, getFreeToRequest() + keptBytesAtStart,
      candidates.size());
  keepingBaseline = decision.keep;
  keptBytesPlanned = decision.keptBytes;
  if (!decision.keep)
    noteBaselineOutputs(decision.reason);
}

bool Engine::reuseKeptBaseline() {
  BaselineCache &cache = *options.baselineCache;
  std::vector<KeptSet> &kept = cache.impl->sets;
  Candidate &baseline = candidates[0];
  // What makes this request keep its own outputs when the kept ones cannot
  // be used: the memory they held is free again.
  auto giveUp = [&](std::string why) {
    cache.clear();
    noteBaselineOutputs(std::move(why));
    KeepDecision decision = decideBaselineKeeping(
        *memory, numSets, getFreeToRequest() + keptBytesAtStart,
        candidates.size());
    keepingBaseline = decision.keep;
    keptBytesPlanned = decision.keptBytes;
    return false;
  };
  {
    PhaseTimer timer(baseline.phases.checksS);
    std::optional<KeptCorruption> corrupted = findCorruptedKeptOutput(
        getRecords(kept), [&](size_t set, size_t output) {
          return device->checksum(kept[set].outputs[output].get(),
                                  getByteCount(task.outputs[output]));
        });
    if (corrupted)
      return giveUp("the kept output '" + task.outputs[corrupted->output].name +
                    "' of input set " + std::to_string(corrupted->set) +
                    " was not used: " + corrupted->message);
  }
  for (size_t s = 0; s < numSets; ++s) {
    {
      PhaseTimer timer(baseline.phases.inputsS);
      if (Status status = loadInputs(*baseline.runner, sets[s]);
          !status.isOk()) {
        fail(baseline, makeFailure(FailedCheck::Crash, status.message()));
        return false;
      }
    }
    if (sets[s].inputSums != kept[s].record.inputSums)
      return giveUp("the inputs of input set " + std::to_string(s) +
                    " came out different from those the kept outputs were "
                    "computed from");
  }
  // The baseline once on the last set, with every check of a validation
  // run: its outputs must be the kept ones, bit for bit.
  std::vector<uint64_t> sums;
  if (std::optional<Failure> failure =
          runChecked(baseline, sets.back(), /*variant=*/0, false, sums)) {
    failure->evidence.set("input_set", json::Value(numSets - 1));
    fail(baseline, std::move(*failure));
    return false;
  }
  if (sums != kept.back().record.outputSums)
    return giveUp("the baseline's outputs on input set " +
                  std::to_string(numSets - 1) +
                  " differ from the kept ones; it was validated again");
  baseline.outputSums.clear();
  for (const KeptSet &set : kept)
    baseline.outputSums.push_back(set.record.outputSums);
  baselineRunnerSet = numSets - 1;
  return true;
}

std::vector<size_t> Engine::findChangedKeptSets() {
  std::vector<KeptSet> &kept = options.baselineCache->impl->sets;
  std::vector<size_t> changed;
  for (size_t s = 0; s < kept.size(); ++s)
    for (size_t o = 0; o < kept[s].outputs.size(); ++o) {
      auto sum = device->checksum(kept[s].outputs[o].get(),
                                  getByteCount(task.outputs[o]));
      if (!sum || *sum != kept[s].record.outputSums[o]) {
        changed.push_back(s);
        break;
      }
    }
  return changed;
}

void Engine::checkKeptAfterRuns(Candidate &candidate, size_t setIndex) {
  std::vector<size_t> changed;
  {
    PhaseTimer timer(candidate.phases.checksS);
    changed = findChangedKeptSets();
  }
  if (changed.empty())
    return;
  // Nothing but this candidate ran since the last check.
  Failure failure = makeFailure(
      FailedCheck::Redzone,
      "a write outside the candidate's buffers changed the baseline's kept "
      "outputs of input set " +
          std::to_string(changed.front()));
  failure.evidence.set("tensor", json::Value("baseline's kept outputs"));
  failure.evidence.set("kept_input_set", json::Value(changed.front()));
  failure.evidence.set("input_set", json::Value(setIndex));
  fail(candidate, std::move(failure));
  keptOverwritten = true;
  noteBaselineOutputs("a candidate wrote into the kept outputs, which were "
                      "restored from the baseline and freed at the end");
  for (size_t s : changed) {
    restoreKeptSet(s);
    if (!candidates[0].isValid() || contextLost)
      return;
  }
}

void Engine::restoreKeptSet(size_t setIndex) {
  Candidate &baseline = candidates[0];
  KeptSet &kept = options.baselineCache->impl->sets[setIndex];
  std::vector<uint64_t> sums;
  if (std::optional<Failure> failure =
          runChecked(baseline, sets[setIndex], /*variant=*/0, false, sums)) {
    failure->evidence.set("input_set", json::Value(setIndex));
    fail(baseline, std::move(*failure));
    return;
  }
  baselineRunnerSet = setIndex;
  if (sums != kept.record.outputSums) {
    Failure failure = makeFailure(
        FailedCheck::Nondeterministic,
        "the baseline's outputs of input set " + std::to_string(setIndex) +
            " differ from those it gave on the same inputs before");
    failure.evidence.set("input_set", json::Value(setIndex));
    fail(baseline, std::move(failure));
    return;
  }
  PhaseTimer timer(baseline.phases.checksS);
  for (size_t o = 0; o < task.outputs.size(); ++o)
    if (Status status = device->copy(
            kept.outputs[o].get(),
            baseline.runner->getDevicePointer(task.outputs[o].name),
            getByteCount(task.outputs[o]));
        !status.isOk()) {
      fail(baseline, makeFailure(FailedCheck::Crash, status.message()));
      return;
    }
}

void Engine::returnBaselineToLastSet() {
  if (!reusingBaseline || baselineRunnerSet == numSets - 1)
    return;
  restoreKeptSet(numSets - 1);
}

void Engine::keepBaselineSet(size_t setIndex) {
  Candidate &baseline = candidates[0];
  PhaseTimer timer(baseline.phases.checksS);
  auto copies = copyOutputs(*baseline.runner);
  if (!copies) {
    // Not kept; nothing else changes.
    keepingBaseline = false;
    pendingKept.clear();
    noteBaselineOutputs("the baseline's outputs could not be kept: " +
                        copies.status().message());
    return;
  }
  KeptSet set;
  set.record.key =
      makeBaselineSetKey(task, *baseline.plan, setIndex, sets[setIndex].seed,
                         sets[setIndex].distribution);
  set.record.inputSums = sets[setIndex].inputSums;
  set.record.outputSums = baseline.outputSums[setIndex];
  set.outputs = std::move(*copies);
  pendingKept.push_back(std::move(set));
}

void Engine::settleKeptOutputs() {
  BaselineCache *cache = options.baselineCache;
  if (!cache)
    return;
  bool baselineValid = !candidates.empty() && candidates[0].isValid();
  // A baseline that failed anything in this request, a lost context, or a
  // candidate that wrote into the kept outputs leaves nothing kept.
  if (reusingBaseline && (!baselineValid || contextLost || keptOverwritten))
    cache->clear();
  if (!keepingBaseline)
    return;
  if (baselineValid && !contextLost && pendingKept.size() == numSets) {
    cache->impl->sets = std::move(pendingKept);
  } else {
    keepingBaseline = false;
    noteBaselineOutputs("nothing was kept: the baseline failed");
  }
  pendingKept.clear();
}

json::Value Engine::describeBaselineOutputs() const {
  if (!options.baselineCache)
    return json::Value();
  json::Value evidence = json::Value::object();
  evidence.set("reused", json::Value(reusingBaseline));
  evidence.set("kept", json::Value(keepingBaseline));
  if (reusingBaseline || keepingBaseline)
    evidence.set("sets", json::Value(uint64_t(numSets)));
  if (!baselineOutputsNote.empty())
    evidence.set("note", json::Value(baselineOutputsNote));
  return evidence;
}

CUdeviceptr Engine::getOutputPointer(const Candidate &candidate,
                                     size_t outputIndex,
                                     size_t setIndex) const {
  if (&candidate == &candidates[0] && reusingBaseline)
    return options.baselineCache->impl->sets[setIndex]
        .outputs[outputIndex]
        .get();
  return candidate.runner->getDevicePointer(task.outputs[outputIndex].name);
}

CUdeviceptr Engine::getBaselineLastOutput(size_t outputIndex) const {
  if (reusingBaseline)
    return options.baselineCache->impl->sets.back().outputs[outputIndex].get();
  if (keepingBaseline && pendingKept.size() == numSets)
    return pendingKept.back().outputs[outputIndex].get();
  return candidates[0].lastOutputs[outputIndex].get();
}
