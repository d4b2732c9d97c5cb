//===- Autotuner.h - Look up, tune and store fusion groups ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The autotuning loop of docs/Design.md ("kernel database", "rewrite") for one
// outlined fusion group at a time: build its KernelTask, look its key up in
// the kernel database for this device, and on a miss (when a GPU is present
// and tuning is allowed) run the proposers' rounds (Proposer.h), every
// round's candidates evaluated beside the baseline in a kopt-worker, keep
// the fastest valid plan (the baseline unless a candidate beats it by the
// margin), store it with every attempt, and tag the group with the chosen
// plan.
//
// The devices are probed in-process from their attributes only (no context,
// no GPU work): a full cache hit starts no worker and runs nothing on the
// GPU. A group that may be tuned holds one worker (one GPU) from its lookup
// to its end, and is looked up, timed and stored under that GPU's
// fingerprint, so a box with two GPU models keeps their results apart.
// Without a GPU the target fingerprint is `--target` or, when the database
// holds exactly one, that one; missed groups keep the baseline. With a
// replay file, a miss stores the file's entries for the group instead of
// tuning it (Replay.h), and no GPU is used.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_AUTOTUNE_AUTOTUNER_H
#define KOPT_AUTOTUNE_AUTOTUNER_H

#include "kopt/Autotune/TuneProgress.h"
#include "kopt/LLM/LlmSearch.h"
#include "kopt/Runtime/KernelDatabase.h"
#include "kopt/Runtime/Protocol.h"
#include "kopt/Runtime/RuntimeModule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kopt {

/// The version of the code generator, part of every fingerprint: bump it
/// when generated code changes, so older entries no longer match.
inline constexpr const char *kCodegenVersion = "1";

/// When a group is tuned.
enum class TuneMode {
  /// Never: database hits or the baseline.
  Never,
  /// On a database miss (the default).
  Missing,
  /// Always, keeping the better of the new and the stored winner.
  Always,
  /// Never here: a miss becomes a job in the database's tuning queue, for
  /// GPU workers (`kopt serve-worker`); needs a PostgreSQL database.
  Enqueue,
};

/// An evaluator's timing (microseconds) as the database keeps it
/// (milliseconds).
::kopt::runtime::TimingSummary
toTimingSummary(const ::kopt::runtime::Timing &times);

/// Parses `never`, `missing`, `always` or `enqueue`.
std::optional<TuneMode> parseTuneMode(llvm::StringRef text);

/// The proposers named in a comma-separated list, each trimmed (an empty
/// item is dropped; a blank one stays, for the caller to refuse).
std::vector<std::string> splitProposerList(llvm::StringRef list);

/// Adds one `key=value` provider option to `options`. Fails on anything
/// else, and on `api-key`: the key only ever comes from KOPT_LLM_API_KEY.
/// The message names neither the value nor the option; the caller prefixes
/// the option's name.
llvm::Error addProviderOption(ProviderOptions &options, llvm::StringRef option);

/// The `llm` proposer's settings (docs/LLM.md).
struct LlmTuneOptions {
  /// Who answers: `openai`, `command` or `replay` (Provider.h), and the
  /// provider's `key=value` options.
  std::string provider;
  ProviderOptions providerOptions;
  SearchBudget budget;
  TokenPrices prices;
  unsigned parallelRequests = 4;
  unsigned maxAnswerTokens = 8192;
  double temperature = 0.7;
};

struct AutotuneOptions {
  /// The kernel database: a SQLite file (created when missing) or a
  /// postgresql:// URL (see openKernelDatabase).
  std::string databasePath = "kopt.db";
  TuneMode mode = TuneMode::Missing;
  /// Proposers beyond the baseline, which always runs first: `builtin`,
  /// `llm` (`baseline` may be named too; a name given twice counts once).
  /// Proposer.h gives the interface and the registry of names.
  std::vector<std::string> proposers = {"builtin"};
  /// The `llm` proposer, when `proposers` names it.
  LlmTuneOptions llm;
  /// Candidates in the first round of a task, the baseline included; the
  /// `llm` proposer's later rounds have the budget in `llm`.
  unsigned maxCandidates = 16;
  /// The precision policy: `fp32`, `tf32` or `bf16`.
  std::string precision = "fp32";
  /// A candidate must beat the baseline's median by this factor to win.
  double minSpeedup = 1.03;
  /// The fingerprint hash to look up without a GPU (see the file comment).
  std::string target;
  /// kopt-worker; empty for the one beside the running executable.
  std::string workerPath;
  /// Validation sets and timed repetitions per evaluation.
  unsigned validationSets = 5;
  unsigned repetitions = 20;
  /// Per-evaluation deadline in seconds (a hung worker is killed).
  unsigned evaluationTimeoutSeconds = 600;
  /// When all tuning ends; none for no limit. No evaluation is started that
  /// would run past it (estimated from those of the group so far), one
  /// still running then is abandoned, each group keeps the best valid
  /// candidate measured by then, and groups not begun keep the stored plan
  /// or the baseline, with a note.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  /// Seconds one group may be tuned for, under the same rule; 0 for no
  /// limit.
  double groupBudgetSeconds = 0;
  /// Told of each group's tuning and each candidate's verdict; none for
  /// silence.
  TuneProgressSink onProgress;
  /// JSON lines as `kopt db export` writes them, whose entries are stored
  /// for the groups that miss instead of tuning them (see Replay.h); empty
  /// for none. The device is then not probed: the target is `target`, or
  /// the fingerprint of the file's records when they have only one.
  std::string replayPath;
};

/// The plan a group was given, as a runtime module takes it
/// (ModuleEmitter.h).
struct ChosenPlan {
  /// The group's task, and the plan the group is tagged with.
  ::kopt::runtime::KernelTask task;
  ::kopt::runtime::KernelPlan plan;
  /// The fingerprint the plan is stored under in the kernel database (a
  /// hit, a tuned or a replayed group); none for the baseline of a miss.
  std::optional<::kopt::runtime::DeviceFingerprint> storedFor;
  /// The stored record's binaries, built for `storedFor`'s architecture;
  /// empty for none.
  std::vector<::kopt::runtime::SourceBinary> binaries;
};

/// What happened to one group.
/// What one candidate's evaluation cost, for the report's breakdown
/// (docs/Evaluator.md, "Where the time goes").
struct CandidateCost {
  /// `proposer/variant`.
  std::string name;
  unsigned round = 0;
  bool valid = false;
  /// The failed check's name, empty when valid.
  std::string failedCheck;
  /// Taken from an earlier run's attempt: nothing was spent now.
  bool stored = false;
  /// The request's round trip to the worker, in seconds.
  double seconds = 0;
  /// Making its request first (the host's fp64 references), in seconds.
  double requestSeconds = 0;
  /// The worker's phases, when it measured them.
  std::optional<::kopt::runtime::EvalPhases> phases;
  /// The worker's peak device memory for the request, the device's L2
  /// flush buffer and shared GEMM workspace inside it (fixed costs per
  /// device), and the task's own tensors, when known.
  std::optional<int64_t> peakDeviceBytes;
  std::optional<int64_t> flushDeviceBytes;
  std::optional<int64_t> workspaceDeviceBytes;
  std::optional<int64_t> taskBytes;
  /// The worker compared with the baseline's outputs kept from an earlier
  /// request instead of validating the baseline again.
  bool baselineReused = false;
  /// Timed only briefly because it could not win (the timing cut).
  bool timingCut = false;
};

struct GroupOutcome {
  enum class Source {
    /// Found in the database.
    Hit,
    /// Tuned now.
    Tuned,
    /// Missed and not tuned: the baseline stands.
    Baseline,
    /// Missed, and stored now from the replay file.
    Replayed,
  };
  std::string function;
  std::string kind;
  std::string taskKey;
  Source source = Source::Baseline;
  /// The chosen plan.
  std::string proposer = "baseline";
  std::string variant;
  /// The chosen plan's arithmetic: `fp32`, or `3xtf32` for tensor-core
  /// GEMMs (KernelPlan::arithmetic).
  std::string arithmetic = "fp32";
  /// Medians in microseconds, when measured (now or when stored).
  std::optional<double> winnerUs;
  std::optional<double> baselineUs;
  /// Valid candidates out of those evaluated (tuned groups), and how many
  /// of those were taken from attempts an earlier, stopped run stored.
  unsigned validCandidates = 0;
  unsigned evaluatedCandidates = 0;
  unsigned storedCandidates = 0;
  /// The tuning budget ran out before every candidate was tried; the
  /// candidates not tried (`proposer/variant`, in order).
  bool budgetSpent = false;
  std::vector<std::string> notTried;
  /// Why the group kept the baseline, or what went wrong.
  std::string note;
  /// Tuning was tried and failed (`note` says why); the group kept the
  /// stored plan or the baseline.
  bool tuningFailed = false;
  /// A warning for the user, empty for none: the database's record for the
  /// task cannot be used (it is then a miss).
  std::string warning;
  /// With the `llm` proposer: the search in one line, and one line per
  /// attempt with its verdict.
  std::string llmSummary;
  std::vector<std::string> llmAttempts;
  /// Each candidate evaluated (or taken from the database), in order.
  std::vector<CandidateCost> candidateCosts;
  /// The task and the plan the group was tagged with (every outcome
  /// `processGroup` returns has one).
  std::optional<ChosenPlan> chosen;

  std::optional<double> getSpeedup() const;
};

/// The name of a source (`hit`, `tuned`, `baseline`, `replayed`).
llvm::StringRef getSourceName(GroupOutcome::Source source);

/// Attributes the autotuner sets on each group function and its calls.
inline constexpr llvm::StringLiteral kPlanAttrName = "kopt.plan";
inline constexpr llvm::StringLiteral kPlanHashAttrName = "kopt.plan_hash";
inline constexpr llvm::StringLiteral kFingerprintAttrName = "kopt.fingerprint";

class Autotuner {
public:
  /// Opens the database and probes the device. Fails on a database that
  /// cannot be opened, on an ambiguous target without a GPU, and on
  /// `options` that make no sense.
  static llvm::Expected<std::unique_ptr<Autotuner>>
  create(const AutotuneOptions &options);
  ~Autotuner();

  /// Looks up, tunes when allowed, stores, and tags `group` (an outlined
  /// fusion group function).
  llvm::Expected<GroupOutcome> processGroup(func::FuncOp group);

  /// Whether a GPU was found (tuning is possible).
  bool hasDevice() const;
  /// How many groups can be tuned at once: one per worker, that is per
  /// visible device (1 without a GPU). `processGroup` may be called from
  /// that many threads at once; only the evaluations overlap.
  unsigned getWorkerCount() const;
  /// Device 0's fingerprint, or the target's without a GPU (null without
  /// either: every lookup misses). Groups that are not tuned here are looked
  /// up under it; a group that may be tuned uses its GPU's
  /// (`getDeviceFingerprints`).
  const ::kopt::runtime::DeviceFingerprint *getFingerprint() const;
  /// The fingerprint of every device, one per worker, in the order of
  /// CUDA_VISIBLE_DEVICES (empty without a GPU). A group is looked up,
  /// tuned and stored for the device of the worker it is tuned on, so a
  /// box with two GPU models keeps their records apart.
  const std::vector<::kopt::runtime::DeviceFingerprint> &
  getDeviceFingerprints() const;
  /// A one-line description of the device or the target.
  std::string describeTarget() const;

  struct Impl;

private:
  explicit Autotuner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// The fingerprint of device 0 for `precision`, from its attributes only (no
/// context, no GPU work), with the number of devices in `count`; or none,
/// with the reason in `why`, when there is no driver or device. With fake
/// workers (`KOPT_WORKER_TEST_MODE=fake[:<ms>]`, docs/Evaluator.md) a
/// made-up device, so the tuning loop runs without a GPU.
std::optional<::kopt::runtime::DeviceFingerprint>
probeDeviceFingerprint(const std::string &precision, std::string &why,
                       int &count);

/// The fingerprint of every device this process sees, in the driver's order
/// (which is that of CUDA_VISIBLE_DEVICES, so entry `i` is the device of a
/// WorkerPool's worker `i`); empty, with the reason in `why`, when there is
/// no driver or device. With fake workers, one made-up device per entry of
/// CUDA_VISIBLE_DEVICES (one when it is unset): an H200-like one, or for an
/// entry `fake-sm_<NN>` one of that architecture, so that a box with two
/// GPU models can be tested without a GPU.
std::vector<::kopt::runtime::DeviceFingerprint>
probeDeviceFingerprints(const std::string &precision, std::string &why);

/// Why the worker that sent `hello` does not run on the device of
/// `fingerprint`, or "" when it does: its own report of its device (the
/// architecture, SM count, L2 size, driver and NVRTC versions; not the
/// bandwidth, which a worker measures) must match what was probed for it,
/// or its results cannot be stored under that fingerprint.
std::string
describeWorkerMismatch(const ::kopt::runtime::HelloMessage &hello,
                       const ::kopt::runtime::DeviceFingerprint &fingerprint);

/// Sets the autotuner's attributes of `group` (see above) on every
/// `func.call` of it in `module`.
void tagCallsOfGroup(ModuleOp module, func::FuncOp group);

/// Runs `tuner` over every outlined fusion group of `module` in order: warns
/// on the group when its outcome carries a warning, tags its calls, and
/// calls `onGroup` (when set) with each outcome. What the kopt-autotune pass
/// and `kopt compile` do.
llvm::Expected<std::vector<GroupOutcome>>
autotuneModule(ModuleOp module, Autotuner &tuner,
               const std::function<void(const GroupOutcome &)> &onGroup = {});

} // namespace mlir::kopt

#endif // KOPT_AUTOTUNE_AUTOTUNER_H
