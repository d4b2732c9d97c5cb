//===- MockServer.h - A scripted HTTP server on loopback --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A stand-in for an OpenAI-compatible server in the LLM provider tests: it
// listens on 127.0.0.1 at an ephemeral port, answers each request with the
// next scripted reply (the last one repeats), and keeps what it received.
// One thread accepts; each connection is served on a thread of its own, so
// requests from several client threads are in flight together.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_TEST_LLM_MOCKSERVER_H
#define KOPT_TEST_LLM_MOCKSERVER_H

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mlir::kopt::test {

/// One scripted reply.
struct MockReply {
  enum class Kind {
    /// Sends the status, headers and body, then closes.
    Normal,
    /// Reads the request and never answers.
    Hang,
    /// Announces the whole body but sends half of it, then closes.
    DropMidBody,
    /// Sends `hugeBytes` of body, or as much as the client takes.
    Huge,
    /// Closes the connection as soon as the request's head has arrived,
    /// without reading its body.
    CloseAfterHead,
  };
  Kind kind = Kind::Normal;
  int status = 200;
  /// Extra header lines without line ends (`Retry-After: 1`).
  std::vector<std::string> headers;
  std::string body;
  size_t hugeBytes = 0;
};

/// One request as the server received it.
struct ReceivedRequest {
  /// The request line (`POST /v1/chat/completions HTTP/1.1`).
  std::string requestLine;
  /// The header lines, as sent.
  std::string headers;
  std::string body;
};

/// A loopback HTTP server that plays a script.
class MockServer {
public:
  /// Starts listening; `getPort()` is 0 when that failed.
  MockServer();
  /// Stops accepting, ends every connection and joins every thread.
  ~MockServer();
  MockServer(const MockServer &) = delete;
  MockServer &operator=(const MockServer &) = delete;

  /// The port the server listens on.
  int getPort() const { return port; }
  /// The base URL to give the provider (`http://127.0.0.1:PORT/v1`).
  std::string getEndpoint() const;
  /// Replaces the script: requests get `replies` in order, and the last one
  /// from then on.
  void setScript(std::vector<MockReply> replies);
  /// The requests received so far.
  std::vector<ReceivedRequest> getReceived();

private:
  void acceptLoop();
  void serve(int fd);
  MockReply nextReply();

  int listenFd = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::mutex mutex;
  std::vector<MockReply> script;
  size_t nextIndex = 0;
  std::vector<ReceivedRequest> received;
  std::vector<std::thread> connections;
  std::thread acceptor;
};

} // namespace mlir::kopt::test

#endif // KOPT_TEST_LLM_MOCKSERVER_H
