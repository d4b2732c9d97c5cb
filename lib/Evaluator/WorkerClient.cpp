//===- WorkerClient.cpp - Start and drive an evaluator worker ---*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The worker runs under posix_spawn with two pipes as its stdin and stdout;
// it inherits stderr, and no other descriptor (every descriptor of ours is
// close-on-exec, and glibc closes the rest). Our ends of the pipes are
// non-blocking, and all I/O goes through poll() with the time left before
// the current deadline, so a worker that stops reading or writing costs at
// most that deadline. Frames are read here rather than with
// `kopt::runtime::readFrame`, which waits without a deadline.
//
//===----------------------------------------------------------------------===//

#include "kopt/Evaluator/WorkerClient.h"

#include "kopt/Support/SigpipeGuard.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iterator>
#include <limits>
#include <thread>
#include <variant>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace mlir;
using namespace mlir::kopt;
namespace rt = ::kopt::runtime;
using Clock = std::chrono::steady_clock;

/// The evidence key under which a failed request's reason is recorded.
static constexpr const char *kFailureKey = "worker_failure";

struct WorkerClient::IoResult {
  enum class Kind {
    /// The transfer completed.
    Ok,
    /// The deadline passed first.
    Timeout,
    /// The worker closed its end of the pipe (or the pipe failed).
    Closed,
    /// The worker sent something that is not a frame of the protocol.
    Protocol,
  };
  Kind kind = Kind::Ok;
  /// What happened, for the failure reason.
  std::string message;

  bool isOk() const { return kind == Kind::Ok; }
};

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Milliseconds left until `deadline`, rounded up, for poll().
static int getPollTimeout(Clock::time_point deadline) {
  auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(
      std::clamp<int64_t>(left.count(), 0, std::numeric_limits<int>::max()));
}

/// `payload` with its frame header: the length as 4 bytes, little end
/// first.
static std::string makeFrame(const std::string &payload) {
  uint32_t length = static_cast<uint32_t>(payload.size());
  std::string frame;
  frame.reserve(4 + payload.size());
  for (int shift = 0; shift < 32; shift += 8)
    frame.push_back(static_cast<char>((length >> shift) & 0xFF));
  return frame + payload;
}

/// `signal 6 (Aborted)` or `exit status 1`, from a waitpid() status.
static std::string describeWaitStatus(int status) {
  if (WIFSIGNALED(status)) {
    int signal = WTERMSIG(status);
    std::string text = "signal " + std::to_string(signal);
    if (const char *name = ::strsignal(signal))
      text += std::string(" (") + name + ")";
    return text;
  }
  if (WIFEXITED(status))
    return "exit status " + std::to_string(WEXITSTATUS(status));
  return "wait status " + std::to_string(status);
}

/// Returns `fd` moved to a descriptor number of at least 3 (close-on-exec),
/// so that placing it on the child's stdin or stdout is a real dup2() that
/// clears close-on-exec; -1 on failure, with `fd` closed.
static int moveAboveStdio(int fd) {
  if (fd > 2)
    return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

std::vector<std::string>
mlir::kopt::makeWorkerEnvironment(const std::vector<std::string> &overrides,
                                  char *const *parent) {
  auto nameOf = [](const std::string &entry) {
    return entry.substr(0, entry.find('='));
  };
  std::vector<std::string> forced(std::begin(kMulticastOffEnvironment),
                                  std::end(kMulticastOffEnvironment));
  auto isSet = [&](const std::vector<std::string> &entries,
                   const std::string &name) {
    return std::any_of(
        entries.begin(), entries.end(),
        [&](const std::string &other) { return nameOf(other) == name; });
  };
  std::vector<std::string> result;
  for (char *const *entry = parent; entry && *entry; ++entry) {
    std::string text(*entry);
    std::string name = nameOf(text);
    if (!isSet(overrides, name) && !isSet(forced, name))
      result.push_back(std::move(text));
  }
  for (const std::string &entry : overrides)
    if (!isSet(forced, nameOf(entry)))
      result.push_back(entry);
  result.insert(result.end(), forced.begin(), forced.end());
  return result;
}

/// One report per candidate of `request`, each failed with `check` and
/// `reason`.
static std::vector<rt::EvalReport>
makeFailedReports(const rt::EvaluateMessage &request, rt::FailedCheck check,
                  const std::string &reason) {
  std::vector<rt::EvalReport> reports;
  for (size_t i = 0, e = request.candidates.size(); i < e; ++i) {
    rt::EvalReport report;
    report.candidate = static_cast<int64_t>(i);
    report.failedCheck = check;
    report.evidence.set(kFailureKey, reason);
    reports.push_back(std::move(report));
  }
  return reports;
}

std::string mlir::kopt::getDefaultWorkerPath() {
  // Any function of this binary serves as the address getMainExecutable
  // needs where /proc/self/exe is unavailable.
  std::string executable = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&getDefaultWorkerPath));
  if (executable.empty())
    return "";
  llvm::SmallString<256> path(llvm::sys::path::parent_path(executable));
  llvm::sys::path::append(path, "kopt-worker");
  return std::string(path);
}

std::string mlir::kopt::getWorkerFailureReason(const rt::EvalReport &report) {
  const rt::json::Value *reason = report.evidence.find(kFailureKey);
  const std::string *text = reason ? reason->getString() : nullptr;
  return text ? *text : "";
}

void mlir::kopt::setWorkerFailureReason(rt::EvalReport &report,
                                        const std::string &reason) {
  report.evidence.set(kFailureKey, reason);
}

bool mlir::kopt::isWorkerDeath(const std::vector<rt::EvalReport> &reports) {
  for (const rt::EvalReport &report : reports)
    if (report.failedCheck == rt::FailedCheck::Crash &&
        !getWorkerFailureReason(report).empty())
      return true;
  return false;
}

//===----------------------------------------------------------------------===//
// WorkerClient
//===----------------------------------------------------------------------===//

WorkerClient::WorkerClient(WorkerOptions options)
    : options(std::move(options)) {
  if (this->options.executable.empty())
    this->options.executable = getDefaultWorkerPath();
}

WorkerClient::~WorkerClient() { shutdown(); }

llvm::Error WorkerClient::spawn() {
  if (options.executable.empty())
    options.executable = getDefaultWorkerPath();
  const std::string &path = options.executable;
  if (path.empty())
    return llvm::createStringError(
        "cannot locate kopt-worker: the running executable's path is "
        "unknown; name the worker executable explicitly");

  int input[2], output[2];
  if (::pipe2(input, O_CLOEXEC) != 0)
    return llvm::createStringError(llvm::Twine("cannot create a pipe: ") +
                                   std::strerror(errno));
  if (::pipe2(output, O_CLOEXEC) != 0) {
    int error = errno;
    ::close(input[0]);
    ::close(input[1]);
    return llvm::createStringError(llvm::Twine("cannot create a pipe: ") +
                                   std::strerror(error));
  }
  input[0] = moveAboveStdio(input[0]);
  output[1] = moveAboveStdio(output[1]);
  auto closeAll = [&] {
    for (int fd : {input[0], input[1], output[0], output[1]})
      if (fd >= 0)
        ::close(fd);
  };
  if (input[0] < 0 || output[1] < 0) {
    int error = errno;
    closeAll();
    return llvm::createStringError(
        llvm::Twine("cannot prepare the worker's pipes: ") +
        std::strerror(error));
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
  // Descriptors that someone opened without close-on-exec stay ours.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
#endif

  // The worker starts with no blocked signals, and with default actions for
  // the signals a caller commonly ignores.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t noSignals, defaultSignals;
  sigemptyset(&noSignals);
  sigemptyset(&defaultSignals);
  sigaddset(&defaultSignals, SIGPIPE);
  sigaddset(&defaultSignals, SIGXFSZ);
  posix_spawnattr_setsigmask(&attributes, &noSignals);
  posix_spawnattr_setsigdefault(&attributes, &defaultSignals);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> arguments = {path};
  arguments.insert(arguments.end(), options.arguments.begin(),
                   options.arguments.end());
  std::vector<char *> argv;
  for (std::string &argument : arguments)
    argv.push_back(argument.data());
  argv.push_back(nullptr);
  std::vector<std::string> environment =
      makeWorkerEnvironment(options.environment, environ);
  std::vector<char *> envp;
  for (std::string &entry : environment)
    envp.push_back(entry.data());
  envp.push_back(nullptr);

  pid_t child = -1;
  int error = ::posix_spawn(&child, path.c_str(), &actions, &attributes,
                            argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(input[0]);
  ::close(output[1]);
  if (error != 0) {
    ::close(input[1]);
    ::close(output[0]);
    return llvm::createStringError(llvm::Twine("cannot run '") + path +
                                   "': " + std::strerror(error));
  }
  ::fcntl(input[1], F_SETFL, ::fcntl(input[1], F_GETFL) | O_NONBLOCK);
  ::fcntl(output[0], F_SETFL, ::fcntl(output[0], F_GETFL) | O_NONBLOCK);
  pid = child;
  toWorker = input[1];
  fromWorker = output[0];
  readBuffer.clear();
  ++startCount;
  return llvm::Error::success();
}

WorkerClient::IoResult WorkerClient::writeBefore(const std::string &data,
                                                 Clock::time_point deadline) {
  SigpipeGuard guard;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t count = ::write(toWorker, data.data() + done, data.size() - done);
    if (count >= 0) {
      done += static_cast<size_t>(count);
      continue;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return {IoResult::Kind::Closed,
              std::string("cannot write to the worker: ") +
                  std::strerror(errno)};
    if (Clock::now() >= deadline)
      return {IoResult::Kind::Timeout, "the worker stopped reading"};
    pollfd entry = {toWorker, POLLOUT, 0};
    int ready = ::poll(&entry, 1, getPollTimeout(deadline));
    if (ready < 0 && errno != EINTR)
      return {IoResult::Kind::Closed,
              std::string("poll failed: ") + std::strerror(errno)};
    if (ready == 0)
      return {IoResult::Kind::Timeout, "the worker stopped reading"};
  }
  return {};
}

WorkerClient::IoResult
WorkerClient::readFrameBefore(std::string &payload,
                              Clock::time_point deadline) {
  char chunk[65536];
  while (true) {
    if (readBuffer.size() >= 4) {
      auto byte = [&](size_t i) {
        return static_cast<uint32_t>(static_cast<unsigned char>(readBuffer[i]));
      };
      uint32_t length = byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24;
      if (length > options.maxFrameBytes)
        return {IoResult::Kind::Protocol,
                "frame of " + std::to_string(length) +
                    " bytes is over the limit of " +
                    std::to_string(options.maxFrameBytes) + " bytes"};
      if (readBuffer.size() >= 4 + size_t(length)) {
        payload = readBuffer.substr(4, length);
        readBuffer.erase(0, 4 + size_t(length));
        return {};
      }
    }
    ssize_t count = ::read(fromWorker, chunk, sizeof(chunk));
    if (count > 0) {
      readBuffer.append(chunk, static_cast<size_t>(count));
      continue;
    }
    if (count == 0)
      return {IoResult::Kind::Closed,
              readBuffer.empty() ? "the worker closed its output"
                                 : "the worker closed its output inside a "
                                   "frame"};
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return {IoResult::Kind::Closed,
              std::string("cannot read from the worker: ") +
                  std::strerror(errno)};
    // Checked here too, so that a worker trickling bytes cannot outlast
    // the deadline.
    if (Clock::now() >= deadline)
      return {IoResult::Kind::Timeout, "no answer from the worker"};
    pollfd entry = {fromWorker, POLLIN, 0};
    int ready = ::poll(&entry, 1, getPollTimeout(deadline));
    if (ready < 0 && errno != EINTR)
      return {IoResult::Kind::Closed,
              std::string("poll failed: ") + std::strerror(errno)};
    if (ready == 0)
      return {IoResult::Kind::Timeout, "no answer from the worker"};
  }
}

bool WorkerClient::reapBefore(Clock::time_point deadline, int &waitStatus) {
  while (true) {
    pid_t done = ::waitpid(pid, &waitStatus, WNOHANG);
    if (done == pid)
      return true;
    if (done < 0 && errno == EINTR)
      continue;
    if (done < 0) {
      // Someone else reaped it (SIGCHLD ignored, for one): it is gone, and
      // its status with it.
      waitStatus = -1;
      return true;
    }
    if (Clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void WorkerClient::killAndReap() {
  if (pid <= 0)
    return;
  ::kill(pid, SIGKILL);
  int status;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  forgetProcess();
}

void WorkerClient::forgetProcess() {
  if (toWorker >= 0)
    ::close(toWorker);
  if (fromWorker >= 0)
    ::close(fromWorker);
  toWorker = fromWorker = -1;
  pid = -1;
  readBuffer.clear();
}

std::string WorkerClient::failWorker(const IoResult &io,
                                     std::chrono::milliseconds timeout) {
  std::string reason;
  switch (io.kind) {
  case IoResult::Kind::Ok:
    assert(false && "failWorker needs a failed transfer");
    [[fallthrough]];
  case IoResult::Kind::Protocol:
    reason = "protocol error: " + io.message;
    killAndReap();
    break;
  case IoResult::Kind::Timeout:
    reason = "timeout after " + std::to_string(timeout.count()) + " ms";
    killAndReap();
    break;
  case IoResult::Kind::Closed: {
    // A worker that closed its pipes is normally exiting; give it a moment
    // to do so, so that the reason can name its exit status or signal.
    int status = 0;
    auto grace = std::min<std::chrono::milliseconds>(options.shutdownGrace,
                                                     std::chrono::seconds(1));
    if (reapBefore(Clock::now() + grace, status)) {
      reason = status == -1 ? "crash: " + io.message
                            : "crash: " + describeWaitStatus(status);
      forgetProcess();
    } else {
      reason = "crash: " + io.message + " but kept running";
      killAndReap();
    }
    break;
  }
  }
  lastFailure = reason;
  return reason;
}

llvm::Error WorkerClient::start() {
  if (isRunning())
    return llvm::Error::success();
  if (llvm::Error error = spawn())
    return error;

  std::string payload;
  IoResult io = readFrameBefore(payload, Clock::now() + options.startTimeout);
  std::string reason;
  if (!io.isOk()) {
    reason = failWorker(io, options.startTimeout);
  } else {
    rt::Result<rt::Message> message = rt::decode(payload);
    if (!message) {
      reason =
          failWorker({IoResult::Kind::Protocol, message.status().message()},
                     options.startTimeout);
    } else if (auto *first = std::get_if<rt::HelloMessage>(&*message)) {
      hello = std::move(*first);
      return llvm::Error::success();
    } else if (auto *error = std::get_if<rt::ErrorMessage>(&*message)) {
      // A worker without a device says so instead of hello.
      reason = "the worker reported: " + error->message;
      lastFailure = reason;
      killAndReap();
    } else {
      reason = failWorker({IoResult::Kind::Protocol,
                           std::string("expected 'hello' first, got '") +
                               rt::getMessageType(*message) + "'"},
                          options.startTimeout);
    }
  }
  return llvm::createStringError(llvm::Twine("worker '") + options.executable +
                                 "' did not start: " + reason);
}

llvm::Expected<std::vector<rt::EvalReport>>
WorkerClient::evaluate(const rt::EvaluateMessage &request,
                       std::optional<std::chrono::milliseconds> timeout) {
  if (request.candidates.empty())
    return llvm::createStringError("evaluate: no candidates (the first "
                                   "candidate is the baseline)");
  std::string payload = rt::encode(request);
  if (payload.size() > options.maxFrameBytes)
    return llvm::createStringError(
        llvm::Twine("evaluate: the request of ") + llvm::Twine(payload.size()) +
        " bytes is over the frame limit of " +
        llvm::Twine(options.maxFrameBytes) + " bytes");

  // A worker that died between requests is replaced before this request
  // is blamed for it.
  if (isRunning()) {
    int status;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno == ECHILD))
      forgetProcess();
  }
  if (llvm::Error error = start())
    return error;

  std::chrono::milliseconds limit = timeout.value_or(options.requestTimeout);
  Clock::time_point deadline = Clock::now() + limit;
  auto fail = [&](rt::FailedCheck check, const std::string &reason) {
    return makeFailedReports(request, check, reason);
  };
  auto failIo = [&](const IoResult &io) {
    std::string reason = failWorker(io, limit);
    return fail(io.kind == IoResult::Kind::Timeout ? rt::FailedCheck::Timeout
                                                   : rt::FailedCheck::Crash,
                reason);
  };

  if (IoResult io = writeBefore(makeFrame(payload), deadline); !io.isOk())
    return failIo(io);

  std::string answer;
  if (IoResult io = readFrameBefore(answer, deadline); !io.isOk())
    return failIo(io);
  auto protocolError = [&](const std::string &message) {
    return failIo({IoResult::Kind::Protocol, message});
  };
  rt::Result<rt::Message> message = rt::decode(answer);
  if (!message)
    return protocolError(message.status().message());

  if (auto *error = std::get_if<rt::ErrorMessage>(&*message)) {
    if (error->requestId && *error->requestId != request.requestId)
      return protocolError(
          "an error for request " + std::to_string(*error->requestId) +
          " while waiting for request " + std::to_string(request.requestId));
    return llvm::createStringError(llvm::Twine("the worker refused request ") +
                                   llvm::Twine(request.requestId) + ": " +
                                   error->message);
  }
  auto *report = std::get_if<rt::ReportMessage>(&*message);
  if (!report)
    return protocolError(std::string("expected 'report', got '") +
                         rt::getMessageType(*message) + "'");
  if (report->requestId != request.requestId)
    return protocolError(
        "a report for request " + std::to_string(report->requestId) +
        " while waiting for request " + std::to_string(request.requestId));
  if (report->reports.size() != request.candidates.size())
    return protocolError(
        std::to_string(report->reports.size()) + " reports for " +
        std::to_string(request.candidates.size()) + " candidates");
  for (size_t i = 0, e = report->reports.size(); i < e; ++i)
    if (report->reports[i].candidate != static_cast<int64_t>(i))
      return protocolError("report " + std::to_string(i) +
                           " is for candidate " +
                           std::to_string(report->reports[i].candidate));
  return std::move(report->reports);
}

void WorkerClient::shutdown() {
  if (!isRunning())
    return;
  Clock::time_point deadline = Clock::now() + options.shutdownGrace;
  // A worker that cannot take the message is killed below all the same.
  (void)writeBefore(makeFrame(rt::encode(rt::ShutdownMessage())), deadline);
  // End of input asks the worker to exit too.
  ::close(toWorker);
  toWorker = -1;
  int status;
  if (reapBefore(deadline, status)) {
    forgetProcess();
    return;
  }
  killAndReap();
}
