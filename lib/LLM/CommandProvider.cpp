//===- CommandProvider.cpp - A program as the model -----------------------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The `command` provider: each call spawns the program in a process group of
// its own, writes the prompt to its stdin and reads its stdout and stderr
// with poll() until both close, all against one deadline. A program that
// runs past the deadline or writes more than the limit is killed with its
// whole group. SIGPIPE is blocked in the calling thread while it writes, so
// a program that exits without reading its input cannot take kopt down.
//
//===----------------------------------------------------------------------===//

#include "kopt/Support/SigpipeGuard.h"

#include "kopt/LLM/Provider.h"

#include "llvm/Support/FormatVariadic.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace mlir::kopt;
using Clock = std::chrono::steady_clock;

namespace {

/// The most of the program's stderr kept for messages.
constexpr size_t kStderrTail = 2000;

/// Closes a descriptor once.
struct Descriptor {
  int fd = -1;
  ~Descriptor() { reset(); }
  void reset() {
    if (fd >= 0)
      ::close(fd);
    fd = -1;
  }
};

std::string describeStatus(int status) {
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

class CommandProvider final : public LlmProvider {
public:
  explicit CommandProvider(CommandOptions options)
      : options(std::move(options)) {}

  llvm::Expected<LlmResponse> complete(const LlmRequest &request) override;
  llvm::StringRef getKind() const override { return "command"; }

private:
  CommandOptions options;
};

} // namespace

llvm::Expected<LlmResponse>
CommandProvider::complete(const LlmRequest &request) {
  Clock::time_point start = Clock::now();
  Clock::time_point deadline = start + options.timeout;
  const std::string &program = options.argv.front();
  std::string input = formatCommandInput(request);

  int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
  Descriptor ends[3][2];
  for (int i = 0; i < 3; ++i) {
    if (::pipe2(pipes[i], O_CLOEXEC) != 0)
      return llvm::createStringError(
          std::string("cannot create a pipe for the LLM command: ") +
          std::strerror(errno));
    ends[i][0].fd = pipes[i][0];
    ends[i][1].fd = pipes[i][1];
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipes[0][0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipes[1][1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipes[2][1], STDERR_FILENO);
  // The program and whatever it starts share a new process group, so a
  // timeout kills them all.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t noSignals, defaultSignals;
  sigemptyset(&noSignals);
  sigemptyset(&defaultSignals);
  sigaddset(&defaultSignals, SIGPIPE);
  posix_spawnattr_setsigmask(&attributes, &noSignals);
  posix_spawnattr_setsigdefault(&attributes, &defaultSignals);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK |
                                            POSIX_SPAWN_SETSIGDEF |
                                            POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> arguments = options.argv;
  std::vector<char *> argv;
  for (std::string &argument : arguments)
    argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int spawnError = ::posix_spawnp(&pid, program.c_str(), &actions, &attributes,
                                  argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawnError != 0)
    return llvm::createStringError("cannot run the LLM command '" + program +
                                   "': " + std::strerror(spawnError));
  ends[0][0].reset();
  ends[1][1].reset();
  ends[2][1].reset();
  for (int fd : {ends[0][1].fd, ends[1][0].fd, ends[2][0].fd})
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  std::string output, errors;
  std::string failure;
  size_t written = 0;
  if (input.empty())
    ends[0][1].reset();
  {
    SigpipeGuard guard;
    char buffer[65536];
    while (ends[1][0].fd >= 0 || ends[2][0].fd >= 0) {
      Clock::time_point now = Clock::now();
      if (now >= deadline) {
        failure =
            llvm::formatv("timed out after {0} ms", options.timeout.count())
                .str();
        break;
      }
      pollfd fds[3] = {{ends[0][1].fd, POLLOUT, 0},
                       {ends[1][0].fd, POLLIN, 0},
                       {ends[2][0].fd, POLLIN, 0}};
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      int ready = ::poll(fds, 3, static_cast<int>(left.count()) + 1);
      if (ready < 0 && errno != EINTR) {
        failure = std::string("poll failed: ") + std::strerror(errno);
        break;
      }
      if (ready <= 0)
        continue;
      if (fds[0].revents) {
        ssize_t count = ::write(ends[0][1].fd, input.data() + written,
                                input.size() - written);
        if (count > 0)
          written += static_cast<size_t>(count);
        // A program that stops reading gets no more; that is its choice.
        if ((count < 0 && errno != EAGAIN && errno != EINTR) ||
            written == input.size())
          ends[0][1].reset();
      }
      for (int i = 1; i <= 2; ++i) {
        if (!fds[i].revents)
          continue;
        ssize_t count = ::read(ends[i][0].fd, buffer, sizeof(buffer));
        if (count > 0) {
          std::string &sink = i == 1 ? output : errors;
          sink.append(buffer, static_cast<size_t>(count));
          if (i == 2 && errors.size() > 2 * kStderrTail)
            errors.erase(0, errors.size() - kStderrTail);
        } else if (count == 0 || (errno != EAGAIN && errno != EINTR)) {
          ends[i][0].reset();
        }
      }
      if (output.size() > options.maxOutputBytes) {
        failure = llvm::formatv("wrote more than the limit of {0} bytes",
                                options.maxOutputBytes)
                      .str();
        break;
      }
    }
    ends[0][1].reset();
  }

  // Both pipes are closed: the program is exiting, or it closed them early
  // and keeps running, which the deadline still bounds.
  int status = 0;
  bool reaped = false;
  while (failure.empty()) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) {
      reaped = done == pid;
      break;
    }
    if (Clock::now() >= deadline) {
      failure = llvm::formatv("timed out after {0} ms", options.timeout.count())
                    .str();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!failure.empty()) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
  }

  auto describeStderr = [&] {
    llvm::StringRef tail(errors);
    tail = tail.take_back(kStderrTail).trim();
    return tail.empty() ? std::string(" (no stderr)")
                        : ": " + std::string(tail);
  };
  if (!failure.empty())
    return llvm::createStringError("the LLM command '" + program + "' " +
                                   failure + describeStderr());
  if (!reaped || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return llvm::createStringError(
        "the LLM command '" + program + "' failed with " +
        (reaped ? describeStatus(status) : std::string("an unknown status")) +
        describeStderr());

  LlmResponse response;
  response.text = std::move(output);
  response.model = program;
  response.attempts = 1;
  response.latencySeconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  return response;
}

llvm::Expected<std::unique_ptr<LlmProvider>>
mlir::kopt::createCommandProvider(CommandOptions options) {
  if (options.argv.empty() || options.argv.front().empty())
    return llvm::createStringError(
        "the command provider needs a program to run (option 'command')");
  return std::make_unique<CommandProvider>(std::move(options));
}
