//===- MockServer.cpp - A scripted HTTP server on loopback ----------------===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "MockServer.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace mlir::kopt::test;

namespace {

/// Waits up to 50 ms for `events` on `fd`; returns poll's revents, or 0.
short waitFor(int fd, short events) {
  pollfd entry = {fd, events, 0};
  if (::poll(&entry, 1, 50) <= 0)
    return 0;
  return entry.revents;
}

/// Sends all of `data` unless the peer goes away or the server stops.
bool sendAll(int fd, const char *data, size_t size,
             const std::atomic<bool> &stopping) {
  while (size > 0 && !stopping) {
    if (!(waitFor(fd, POLLOUT) & POLLOUT))
      continue;
    ssize_t count = ::send(fd, data, size, MSG_NOSIGNAL);
    if (count < 0)
      return false;
    data += count;
    size -= static_cast<size_t>(count);
  }
  return size == 0;
}

std::string getReason(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 401:
    return "Unauthorized";
  case 429:
    return "Too Many Requests";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  default:
    return "Status";
  }
}

} // namespace

MockServer::MockServer() {
  listenFd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listenFd < 0)
    return;
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(listenFd, reinterpret_cast<sockaddr *>(&address), length) != 0 ||
      ::listen(listenFd, 64) != 0 ||
      ::getsockname(listenFd, reinterpret_cast<sockaddr *>(&address),
                    &length) != 0) {
    ::close(listenFd);
    listenFd = -1;
    return;
  }
  port = ntohs(address.sin_port);
  acceptor = std::thread([this] { acceptLoop(); });
}

MockServer::~MockServer() {
  stopping = true;
  if (acceptor.joinable())
    acceptor.join();
  for (std::thread &connection : connections)
    connection.join();
  if (listenFd >= 0)
    ::close(listenFd);
}

std::string MockServer::getEndpoint() const {
  return "http://127.0.0.1:" + std::to_string(port) + "/v1";
}

void MockServer::setScript(std::vector<MockReply> replies) {
  std::lock_guard<std::mutex> lock(mutex);
  script = std::move(replies);
  nextIndex = 0;
}

std::vector<ReceivedRequest> MockServer::getReceived() {
  std::lock_guard<std::mutex> lock(mutex);
  return received;
}

MockReply MockServer::nextReply() {
  std::lock_guard<std::mutex> lock(mutex);
  if (script.empty())
    return MockReply{MockReply::Kind::Normal, 500, {}, "no script", 0};
  MockReply reply = script[std::min(nextIndex, script.size() - 1)];
  ++nextIndex;
  return reply;
}

void MockServer::acceptLoop() {
  while (!stopping) {
    if (!(waitFor(listenFd, POLLIN) & POLLIN))
      continue;
    int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    std::lock_guard<std::mutex> lock(mutex);
    connections.emplace_back([this, fd] {
      serve(fd);
      ::close(fd);
    });
  }
}

void MockServer::serve(int fd) {
  // Read the head, then as much body as Content-Length says.
  std::string data;
  size_t headEnd = std::string::npos;
  size_t bodyLength = 0;
  MockReply reply;
  char buffer[65536];
  while (!stopping) {
    if (headEnd != std::string::npos && data.size() >= headEnd + bodyLength)
      break;
    if (!(waitFor(fd, POLLIN) & (POLLIN | POLLHUP)))
      continue;
    ssize_t count = ::recv(fd, buffer, sizeof(buffer), 0);
    if (count <= 0)
      return;
    data.append(buffer, static_cast<size_t>(count));
    if (headEnd == std::string::npos) {
      size_t end = data.find("\r\n\r\n");
      if (end == std::string::npos)
        continue;
      headEnd = end + 4;
      std::string head = data.substr(0, end);
      std::string lower = head;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      size_t at = lower.find("\r\ncontent-length:");
      if (at != std::string::npos)
        bodyLength = std::stoul(head.substr(at + 17));
      reply = nextReply();
      if (reply.kind == MockReply::Kind::CloseAfterHead)
        break;
    }
  }
  if (stopping)
    return;

  ReceivedRequest request;
  size_t lineEnd = data.find("\r\n");
  request.requestLine = data.substr(0, lineEnd);
  request.headers = data.substr(lineEnd + 2, headEnd - lineEnd - 2);
  request.body = data.substr(headEnd, bodyLength);
  {
    std::lock_guard<std::mutex> lock(mutex);
    received.push_back(std::move(request));
  }
  if (reply.kind == MockReply::Kind::CloseAfterHead)
    return;

  if (reply.kind == MockReply::Kind::Hang) {
    // Until the client gives up (EOF) or the server stops.
    while (!stopping) {
      if (waitFor(fd, POLLIN) && ::recv(fd, buffer, sizeof(buffer), 0) <= 0)
        return;
    }
    return;
  }
  size_t announced =
      reply.kind == MockReply::Kind::Huge ? reply.hugeBytes : reply.body.size();
  std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " +
                     getReason(reply.status) +
                     "\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(announced) + "\r\nConnection: close\r\n";
  for (const std::string &header : reply.headers)
    head += header + "\r\n";
  head += "\r\n";
  if (!sendAll(fd, head.data(), head.size(), stopping))
    return;
  switch (reply.kind) {
  case MockReply::Kind::Normal:
    sendAll(fd, reply.body.data(), reply.body.size(), stopping);
    break;
  case MockReply::Kind::DropMidBody:
    sendAll(fd, reply.body.data(), reply.body.size() / 2, stopping);
    break;
  case MockReply::Kind::Huge: {
    std::string chunk(65536, 'x');
    for (size_t sent = 0; sent < reply.hugeBytes; sent += chunk.size())
      if (!sendAll(fd, chunk.data(),
                   std::min(chunk.size(), reply.hugeBytes - sent), stopping))
        break;
    break;
  }
  case MockReply::Kind::Hang:
  case MockReply::Kind::CloseAfterHead:
    break;
  }
  ::shutdown(fd, SHUT_WR);
}
