//===- ProtocolTest.cpp - Tests of the worker protocol ----------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Protocol.h"

#include "gtest/gtest.h"

#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace kopt::runtime;

namespace {

/// Reads a file of test/Runtime/Inputs.
std::string readInput(const std::string &name) {
  std::ifstream file(std::string(KOPT_SOURCE_DIR) + "/test/Runtime/Inputs/" +
                     name);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_FALSE(text.str().empty()) << "cannot read " << name;
  return text.str();
}

/// Parses `text` as JSON, failing the test on an error.
json::Value parseOk(std::string_view text) {
  Result<json::Value> value = json::parse(text);
  EXPECT_TRUE(value.isOk()) << value.status().message();
  return value.isOk() ? *value : json::Value();
}

/// Encodes, decodes and compares `message`.
void expectRoundTrip(const Message &message) {
  std::string text = encode(message);
  Result<Message> back = decode(text);
  ASSERT_TRUE(back.isOk()) << back.status().message() << "\n" << text;
  EXPECT_TRUE(*back == message) << text;
  EXPECT_EQ(encode(*back), text);
}

/// The error message of decoding `text`, or "" when it decodes.
std::string decodeError(std::string_view text) {
  Result<Message> message = decode(text);
  return message.isOk() ? "" : message.status().message();
}

HelloMessage makeHello() {
  HelloMessage hello;
  hello.device.name = "NVIDIA H200";
  hello.device.computeCapabilityMajor = 9;
  hello.device.computeCapabilityMinor = 0;
  hello.device.smCount = 132;
  hello.device.l2Bytes = 52428800;
  hello.device.memoryBandwidthGBps = 4022.5;
  hello.driverVersion = "12.8";
  hello.nvrtcVersion = "12.6";
  return hello;
}

EvalReport makeFailedReport() {
  EvalReport report;
  report.candidate = 2;
  report.compiled = true;
  report.compileLog = "warning: unused variable \"x\"\n";
  report.valid = false;
  report.failedCheck = FailedCheck::OutputMismatch;
  report.evidence = parseOk(R"({"input_set":1,"worst":[{"index":[3,17],
      "expected":0.25,"actual":0.2501,"abs_error":1e-4}],"rel_error":3.2e-3})");
  return report;
}

EvalReport makeTimedReport() {
  EvalReport report;
  report.candidate = 0;
  report.compiled = true;
  report.valid = true;
  report.times = Timing{12.5, 12.25, 12.3, 13.125, 50};
  report.speedup = 1.0;
  report.smClockMhz = 1980;
  report.temperatureC = 41.5;
  return report;
}

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

TEST(ProtocolTest, RoundTripsEveryMessage) {
  expectRoundTrip(makeHello());

  EvaluateMessage evaluate;
  evaluate.requestId = 7;
  evaluate.task = parseOk(readInput("mlp_block_g1.task.json"));
  evaluate.candidates.push_back(
      parseOk(readInput("mlp_block_g1.baseline.plan.json")));
  evaluate.candidates.push_back(
      parseOk(readInput("mlp_block_g1.builtin.plan.json")));
  evaluate.options.validationSets = 6;
  evaluate.options.repetitions = 50;
  evaluate.options.warmupMs = 12.5;
  evaluate.options.seed = 1234567890123;
  expectRoundTrip(evaluate);
  EXPECT_EQ(encode(evaluate).find("incumbent_speedup"), std::string::npos);

  // With the best speedup of the task so far.
  evaluate.options.incumbentSpeedup = 2.5;
  expectRoundTrip(evaluate);
  EXPECT_NE(encode(evaluate).find("\"incumbent_speedup\":2.5"),
            std::string::npos);

  // With fp64 references for set 0 and a later set.
  ReferenceSet first;
  first.seed = 11;
  first.distribution = "normal";
  first.outputs.push_back({"out0", {0, 5, 9}, {1.5, -2.25, 0.0}});
  ReferenceSet later = first;
  later.inputSet = 2;
  later.seed = 12;
  later.distribution = "wide-range";
  evaluate.reference = first;
  evaluate.laterReferences = {later};
  expectRoundTrip(evaluate);

  // With plans to compile ahead for later requests.
  evaluate.compileAhead = {evaluate.candidates[1]};
  expectRoundTrip(evaluate);

  ReportMessage report;
  report.requestId = 7;
  report.reports = {makeTimedReport(), makeFailedReport()};
  EvalReport suspicious = makeTimedReport();
  suspicious.candidate = 1;
  suspicious.speedup = 14.5;
  suspicious.suspicious = true;
  report.reports.push_back(suspicious);
  EvalReport uncompiled;
  uncompiled.candidate = 3;
  uncompiled.compileLog = "main.cu(3): error: identifier \"y\" is undefined";
  uncompiled.failedCheck = FailedCheck::Compile;
  report.reports.push_back(uncompiled);
  expectRoundTrip(report);

  // With the worker's phases.
  EvalPhases phases;
  phases.compileS = 0.25;
  phases.inputsS = 0.125;
  phases.timedKernelS = 0.0625;
  phases.totalS = 1.5;
  phases.requestS = 2.75;
  report.reports[0].phases = phases;
  expectRoundTrip(report);
  EXPECT_NE(encode(report).find("\"timed_kernel_s\":0.0625"),
            std::string::npos);

  expectRoundTrip(ErrorMessage{std::nullopt, "no CUDA device"});
  expectRoundTrip(ErrorMessage{7, "task: schema 'kopt.task/2' is not "
                                  "supported"});
  expectRoundTrip(ShutdownMessage());
}

TEST(ProtocolTest, EncodesTheDocumentedLayout) {
  EXPECT_EQ(encode(ShutdownMessage()),
            R"({"protocol":"kopt.worker/1","type":"shutdown"})");
  EXPECT_EQ(encode(makeHello()),
            R"({"protocol":"kopt.worker/1","type":"hello","device":)"
            R"({"name":"NVIDIA H200","compute_capability":[9,0],)"
            R"("sm_count":132,"l2_bytes":52428800,)"
            R"("memory_bandwidth_gbps":4022.5},"driver_version":"12.8",)"
            R"("nvrtc_version":"12.6"})");
  ReportMessage report;
  report.requestId = 3;
  report.reports = {makeTimedReport()};
  EXPECT_EQ(encode(report),
            R"({"protocol":"kopt.worker/1","type":"report","id":3,"reports":)"
            R"([{"candidate":0,"compiled":true,"compile_log":"","valid":true,)"
            R"("evidence":{},"times":{"median_us":12.5,"min_us":12.25,)"
            R"("p10_us":12.300000000000001,"p90_us":13.125,)"
            R"("repetitions":50},"speedup":1,"sm_clock_mhz":1980,)"
            R"("temperature_c":41.5}]})");
  EXPECT_EQ(encode(ErrorMessage{std::nullopt, "x"}),
            R"({"protocol":"kopt.worker/1","type":"error","message":"x"})");
}

TEST(ProtocolTest, AppliesEvaluateDefaultsAndIgnoresUnknownFields) {
  Result<Message> message = decode(
      R"({"protocol":"kopt.worker/1","type":"evaluate","id":1,"task":{},)"
      R"("candidates":[{}],"added_later":{"x":1}})");
  ASSERT_TRUE(message.isOk()) << message.status().message();
  const auto &evaluate = std::get<EvaluateMessage>(*message);
  EXPECT_EQ(evaluate.options, EvaluateOptions());
  EXPECT_EQ(evaluate.options.validationSets, 5);
  EXPECT_EQ(evaluate.options.repetitions, 20);
  EXPECT_EQ(evaluate.candidates.size(), 1u);
}

TEST(ProtocolTest, RefusesOtherProtocolsAndVersions) {
  Result<Message> newer =
      decode(R"({"protocol":"kopt.worker/2","type":"shutdown"})");
  ASSERT_FALSE(newer.isOk());
  EXPECT_EQ(newer.status().code(), StatusCode::Unsupported);
  EXPECT_EQ(newer.status().message(),
            "message: protocol version 2 is not supported (this side speaks "
            "'kopt.worker/1')");
  EXPECT_EQ(decodeError(R"({"type":"shutdown"})"),
            "message: missing 'protocol' (expected 'kopt.worker/1')");
  EXPECT_EQ(decodeError(R"({"protocol":"lsp/1","type":"shutdown"})"),
            "message: protocol 'lsp/1' is not 'kopt.worker/1'");
  for (const char *bad :
       {"kopt.worker/", "kopt.worker/01", "kopt.worker/1.1", "kopt.worker/x"})
    EXPECT_NE(decodeError(std::string(R"({"protocol":")") + bad +
                          R"(","type":"shutdown"})")
                  .find("malformed protocol"),
              std::string::npos)
        << bad;
  EXPECT_EQ(decodeError(R"({"protocol":1,"type":"shutdown"})"),
            "message: 'protocol' must be a string");
  Result<Message> unknown =
      decode(R"({"protocol":"kopt.worker/1","type":"profile"})");
  ASSERT_FALSE(unknown.isOk());
  EXPECT_EQ(unknown.status().code(), StatusCode::Unsupported);
  EXPECT_EQ(unknown.status().message(), "message: unknown type 'profile'");
  EXPECT_EQ(decodeError(R"({"protocol":"kopt.worker/1"})"),
            "message: missing string 'type'");
  EXPECT_EQ(decodeError("[]"), "message: expected a JSON object");
  EXPECT_EQ(decodeError("{"),
            "message: 1:2: syntax error while parsing object key - "
            "unexpected end of input; expected string literal");
}

TEST(ProtocolTest, ValidatesLaterReferences) {
  EvaluateMessage evaluate;
  evaluate.requestId = 1;
  evaluate.task = json::Value::object();
  evaluate.candidates.push_back(json::Value::object());
  evaluate.options.validationSets = 3;
  ReferenceSet later;
  later.inputSet = 1;
  later.outputs.push_back({"out0", {0}, {1.0}});
  evaluate.laterReferences = {later, later};
  EXPECT_NE(decodeError(encode(evaluate)).find("set 1 has two references"),
            std::string::npos);
  evaluate.laterReferences = {later};
  evaluate.laterReferences[0].inputSet = 3;
  EXPECT_NE(decodeError(encode(evaluate))
                .find("'set' must be within [1, validation_sets)"),
            std::string::npos)
      << decodeError(encode(evaluate));
  evaluate.laterReferences[0].inputSet = 2;
  EXPECT_EQ(decodeError(encode(evaluate)), "");
  // Set 0's reference says set 0.
  evaluate.reference = later;
  EXPECT_NE(decodeError(encode(evaluate)).find("'set' must be 0"),
            std::string::npos);
}

TEST(ProtocolTest, ValidatesMessageFields) {
  const std::string head = R"({"protocol":"kopt.worker/1",)";
  struct Case {
    const char *body;
    const char *error;
  } cases[] = {
      {R"("type":"evaluate","id":1,"task":{},"candidates":[]})",
       "evaluate: 'candidates' is empty"},
      {R"("type":"evaluate","id":1,"task":{},"candidates":[3]})",
       "evaluate: candidate 0 is not an object"},
      {R"("type":"evaluate","task":{},"candidates":[{}]})",
       "evaluate: missing integer 'id'"},
      {R"("type":"evaluate","id":-1,"task":{},"candidates":[{}]})",
       "evaluate: 'id' is -1, outside [0, 9223372036854775807]"},
      {R"("type":"evaluate","id":1,"task":[],"candidates":[{}]})",
       "evaluate: 'task' must be an object"},
      {R"("type":"evaluate","id":1,"task":{},"candidates":[{}],)"
       R"("options":{"repetitions":0}})",
       "evaluate: options: 'repetitions' is 0, outside [1, 1000000]"},
      {R"("type":"evaluate","id":1,"task":{},"candidates":[{}],)"
       R"("options":{"validation_sets":2.5}})",
       "evaluate: options: 'validation_sets' must be an integer"},
      {R"("type":"evaluate","id":1,"task":{},"candidates":[{}],)"
       R"("options":{"warmup_ms":-1}})",
       "evaluate: options: 'warmup_ms' must be within [0, 600000]"},
      {R"("type":"evaluate","id":1,"task":{},"candidates":[{}],)"
       R"("options":{"incumbent_speedup":-2}})",
       "evaluate: options: 'incumbent_speedup' must be within [0, 1e9]"},
      {R"("type":"hello","driver_version":"1","nvrtc_version":"1"})",
       "hello: missing object 'device'"},
      {R"("type":"hello","driver_version":"1","nvrtc_version":"1",)"
       R"("device":{"name":"x","compute_capability":[9],"sm_count":1,)"
       R"("l2_bytes":0,"memory_bandwidth_gbps":1}})",
       "hello: device: 'compute_capability' must be [major, minor]"},
      {R"("type":"report","id":1,"reports":[{"candidate":0,)"
       R"("compiled":true,"valid":false}]})",
       "reports[0]: report of candidate 0: an invalid candidate needs "
       "'failed_check'"},
      {R"("type":"report","id":1,"reports":[{"candidate":0,)"
       R"("compiled":true,"valid":false,"failed_check":"vibes"}]})",
       "unknown failed check 'vibes'"},
      {R"("type":"report","id":1,"reports":[{"candidate":0,)"
       R"("compiled":true,"valid":true,"failed_check":"redzone"}]})",
       "a valid candidate names failed check 'redzone'"},
      {R"("type":"report","id":1,"reports":[{"candidate":0,)"
       R"("compiled":true,"valid":true,"times":{"median_us":1}}]})",
       "report: times: missing number 'min_us'"},
      {R"("type":"report","id":1,"reports":[{"candidate":0,)"
       R"("compiled":"yes","valid":true}]})",
       "report: 'compiled' must be a boolean"},
      {R"("type":"error"})", "error: missing string 'message'"},
  };
  for (const Case &test : cases) {
    std::string error = decodeError(head + test.body);
    EXPECT_NE(error.find(test.error), std::string::npos)
        << test.body << "\n  gave: " << error;
  }
}

TEST(ProtocolTest, NamesEveryFailedCheck) {
  const char *names[] = {"compile",
                         "output-mismatch",
                         "unwritten-output",
                         "redzone",
                         "input-modified",
                         "nondeterministic",
                         "input-independent",
                         "launch-count",
                         "post-timing-mismatch",
                         "below-physical-floor",
                         "crash",
                         "timeout"};
  for (const char *name : names) {
    std::optional<FailedCheck> check = parseFailedCheck(name);
    ASSERT_TRUE(check.has_value()) << name;
    EXPECT_STREQ(stringifyFailedCheck(*check), name);
    EXPECT_NE(*check, FailedCheck::None);
  }
  EXPECT_EQ(parseFailedCheck(""), std::nullopt);
  EXPECT_EQ(parseFailedCheck("Compile"), std::nullopt);
  EXPECT_STREQ(stringifyFailedCheck(FailedCheck::None), "");
}

//===----------------------------------------------------------------------===//
// Frames
//===----------------------------------------------------------------------===//

/// A pair of connected descriptors, closed on destruction.
struct Channel {
  int fds[2] = {-1, -1};
  ~Channel() {
    closeEnd(0);
    closeEnd(1);
  }
  void closeEnd(int index) {
    if (fds[index] >= 0)
      ::close(fds[index]);
    fds[index] = -1;
  }
  int reader() const { return fds[0]; }
  int writer() const { return fds[1]; }
};

Channel makePipe() {
  Channel channel;
  EXPECT_EQ(::pipe(channel.fds), 0);
  return channel;
}

Channel makeSocketPair() {
  Channel channel;
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, channel.fds), 0);
  return channel;
}

/// Writes raw bytes, failing the test on a short write.
void writeRaw(int fd, const std::string &bytes) {
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
}

TEST(ProtocolTest, FramesMessagesOverAPipe) {
  Channel channel = makePipe();
  ASSERT_TRUE(writeMessage(channel.writer(), makeHello()).isOk());
  ASSERT_TRUE(writeMessage(channel.writer(), ShutdownMessage()).isOk());
  ASSERT_TRUE(writeFrame(channel.writer(), "").isOk());
  channel.closeEnd(1);

  Result<Message> hello = readMessage(channel.reader());
  ASSERT_TRUE(hello.isOk()) << hello.status().message();
  EXPECT_TRUE(*hello == Message(makeHello()));
  Result<Message> shutdown = readMessage(channel.reader());
  ASSERT_TRUE(shutdown.isOk()) << shutdown.status().message();
  EXPECT_TRUE(std::holds_alternative<ShutdownMessage>(*shutdown));
  Result<std::string> empty = readFrame(channel.reader());
  ASSERT_TRUE(empty.isOk());
  EXPECT_EQ(*empty, "");
  Result<std::string> end = readFrame(channel.reader());
  ASSERT_FALSE(end.isOk());
  EXPECT_EQ(end.status().code(), StatusCode::Closed);
}

TEST(ProtocolTest, WritesTheLengthLittleEndian) {
  Channel channel = makePipe();
  std::string payload(0x010203, 'x');
  ASSERT_TRUE(::fcntl(channel.writer(), F_SETFL, O_NONBLOCK) == 0);
  std::thread writer([&] {
    EXPECT_TRUE(writeFrame(channel.writer(), payload).isOk());
    channel.closeEnd(1);
  });
  unsigned char header[4];
  ASSERT_EQ(::read(channel.reader(), header, 4), 4);
  EXPECT_EQ(header[0], 0x03);
  EXPECT_EQ(header[1], 0x02);
  EXPECT_EQ(header[2], 0x01);
  EXPECT_EQ(header[3], 0x00);
  std::string rest;
  char buffer[4096];
  ssize_t count;
  while ((count = ::read(channel.reader(), buffer, sizeof(buffer))) > 0)
    rest.append(buffer, count);
  writer.join();
  EXPECT_EQ(rest, payload);
}

TEST(ProtocolTest, SurvivesShortReadsAndWrites) {
  // A small non-blocking socket buffer forces many partial writes (EAGAIN,
  // then poll), and a reader that trickles forces partial reads.
  Channel channel = makeSocketPair();
  int small = 4096;
  ::setsockopt(channel.writer(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  ::setsockopt(channel.reader(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  ASSERT_EQ(::fcntl(channel.writer(), F_SETFL, O_NONBLOCK), 0);
  ASSERT_EQ(::fcntl(channel.reader(), F_SETFL, O_NONBLOCK), 0);

  ReportMessage report;
  report.requestId = 99;
  for (int i = 0; i < 200; ++i) {
    EvalReport entry = makeFailedReport();
    entry.candidate = i;
    entry.compileLog = std::string(5000, 'a' + i % 26);
    report.reports.push_back(entry);
  }
  ASSERT_GT(encode(report).size(), 1000000u);

  std::thread writer([&] {
    for (int round = 0; round < 3; ++round)
      EXPECT_TRUE(writeMessage(channel.writer(), report).isOk());
    EXPECT_TRUE(writeMessage(channel.writer(), ShutdownMessage()).isOk());
  });
  for (int round = 0; round < 3; ++round) {
    Result<Message> message = readMessage(channel.reader());
    ASSERT_TRUE(message.isOk()) << message.status().message();
    EXPECT_TRUE(*message == Message(report));
  }
  Result<Message> last = readMessage(channel.reader());
  ASSERT_TRUE(last.isOk());
  EXPECT_TRUE(std::holds_alternative<ShutdownMessage>(*last));
  writer.join();
}

TEST(ProtocolTest, ReadsAFrameDeliveredByteByByte) {
  Channel channel = makeSocketPair();
  std::string frame;
  std::string payload = encode(makeHello());
  uint32_t length = payload.size();
  for (int i = 0; i < 4; ++i)
    frame += static_cast<char>((length >> (8 * i)) & 0xFF);
  frame += payload;
  std::thread writer([&] {
    for (char byte : frame) {
      ASSERT_EQ(::write(channel.writer(), &byte, 1), 1);
      std::this_thread::yield();
    }
  });
  Result<Message> message = readMessage(channel.reader());
  writer.join();
  ASSERT_TRUE(message.isOk()) << message.status().message();
  EXPECT_TRUE(*message == Message(makeHello()));
}

TEST(ProtocolTest, ReportsEndOfInputInsideAFrame) {
  {
    Channel channel = makePipe();
    writeRaw(channel.writer(), std::string("\x10\x00", 2));
    channel.closeEnd(1);
    Result<std::string> frame = readFrame(channel.reader());
    ASSERT_FALSE(frame.isOk());
    EXPECT_EQ(frame.status().code(), StatusCode::IoError);
    EXPECT_EQ(frame.status().message(),
              "end of input inside a frame header (2 of 4 bytes)");
  }
  {
    Channel channel = makePipe();
    writeRaw(channel.writer(),
             std::string("\x64\x00\x00\x00", 4) + std::string(10, '{'));
    channel.closeEnd(1);
    Result<std::string> frame = readFrame(channel.reader());
    ASSERT_FALSE(frame.isOk());
    EXPECT_EQ(frame.status().code(), StatusCode::IoError);
    EXPECT_EQ(frame.status().message(),
              "end of input inside a frame (10 of 100 payload bytes)");
  }
}

TEST(ProtocolTest, RefusesOversizeFrames) {
  Channel channel = makePipe();
  // 0x80000000 bytes announced: refused before anything is allocated.
  writeRaw(channel.writer(), std::string("\x00\x00\x00\x80", 4));
  Result<std::string> frame = readFrame(channel.reader(), 1 << 20);
  ASSERT_FALSE(frame.isOk());
  EXPECT_EQ(frame.status().code(), StatusCode::OutOfRange);
  EXPECT_EQ(frame.status().message(), "frame of 2147483648 bytes is over the "
                                      "limit of 1048576 bytes");

  Status status = writeFrame(channel.writer(), std::string(101, 'x'), 100);
  EXPECT_EQ(status.code(), StatusCode::OutOfRange);
  EXPECT_EQ(status.message(),
            "frame payload of 101 bytes is over the limit of 100 bytes");
}

TEST(ProtocolTest, ReportsAClosedReaderWithoutSignals) {
  Channel channel = makeSocketPair();
  channel.closeEnd(0);
  Status status = writeMessage(channel.writer(), ShutdownMessage());
  EXPECT_EQ(status.code(), StatusCode::IoError);
  EXPECT_NE(status.message().find("write failed"), std::string::npos);
}

TEST(ProtocolTest, ReportsAFrameThatIsNotAMessage) {
  Channel channel = makePipe();
  ASSERT_TRUE(writeFrame(channel.writer(), "{\"protocol\":").isOk());
  Result<Message> message = readMessage(channel.reader());
  ASSERT_FALSE(message.isOk());
  EXPECT_EQ(message.status().message(),
            "message: 1:13: syntax error while parsing value - unexpected "
            "end of input; expected '[', '{', or a literal");
}

//===----------------------------------------------------------------------===//
// KernelTask and KernelPlan
//===----------------------------------------------------------------------===//

TEST(ProtocolTest, ReadsATaskWrittenByTheCompiler) {
  Result<KernelTask> task =
      kernelTaskFromJson(parseOk(readInput("mlp_block_g1.task.json")));
  ASSERT_TRUE(task.isOk()) << task.status().message();
  EXPECT_EQ(task->key,
            "a4873cfc186937f8b9cea6b2bcb5756d411837454756967fca7e9639e8271c48");
  EXPECT_EQ(task->name, "mlp_block_kopt_g1_contraction");
  EXPECT_EQ(task->kind, "contraction");
  EXPECT_EQ(task->precision, "fp32");
  ASSERT_EQ(task->inputs.size(), 3u);
  EXPECT_EQ(task->inputs[1].name, "in1");
  EXPECT_EQ(task->inputs[1].shape, (std::vector<int64_t>{4096, 1024}));
  EXPECT_EQ(task->inputs[2].shape, (std::vector<int64_t>{1024}));
  ASSERT_EQ(task->outputs.size(), 1u);
  EXPECT_EQ(task->outputs[0].name, "out0");
  EXPECT_EQ(task->outputs[0].elementType, ElementType::F32);
  EXPECT_EQ(task->outputs[0].getBytes(), 512 * 1024 * 4);
  EXPECT_EQ(task->tolerance.relative, 1e-5);
  EXPECT_DOUBLE_EQ(task->tolerance.absolute, 1e-6);
  EXPECT_NE(task->mlir.find("linalg.matmul"), std::string::npos);
  EXPECT_EQ(task->findTensor("in0"), &task->inputs[0]);
  EXPECT_EQ(task->findTensor("tmp0"), nullptr);

  Result<KernelTask> again = kernelTaskFromJson(toJson(*task));
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(json::write(toJson(*again)), json::write(toJson(*task)));
}

TEST(ProtocolTest, ReadsPlansWrittenByTheCompiler) {
  Result<KernelPlan> baseline =
      kernelPlanFromJson(parseOk(readInput("mlp_block_g1.baseline.plan.json")));
  ASSERT_TRUE(baseline.isOk()) << baseline.status().message();
  EXPECT_EQ(baseline->proposer, "baseline");
  EXPECT_EQ(baseline->variant, "per-op");
  EXPECT_EQ(baseline->taskKey,
            "a4873cfc186937f8b9cea6b2bcb5756d411837454756967fca7e9639e8271c48");
  ASSERT_EQ(baseline->temporaries.size(), 1u);
  EXPECT_EQ(baseline->temporaries[0].name, "tmp0");
  ASSERT_EQ(baseline->steps.size(), 2u);
  const PlanStep &gemm = baseline->steps[0];
  ASSERT_EQ(gemm.kind, PlanStep::Kind::Gemm);
  EXPECT_EQ(gemm.gemm.a, "in0");
  EXPECT_EQ(gemm.gemm.b, "in1");
  EXPECT_EQ(gemm.gemm.c, "tmp0");
  EXPECT_EQ(gemm.gemm.m, 512);
  EXPECT_EQ(gemm.gemm.n, 1024);
  EXPECT_EQ(gemm.gemm.k, 4096);
  EXPECT_EQ(gemm.gemm.activation, "none");
  const PlanStep &launch = baseline->steps[1];
  ASSERT_EQ(launch.kind, PlanStep::Kind::Launch);
  EXPECT_EQ(launch.launch.entry, "mlp_block_kopt_g1_contraction_op_0");
  ASSERT_NE(baseline->findSource(launch.launch.source), nullptr);
  EXPECT_NE(baseline->findSource(launch.launch.source)
                ->code.find(launch.launch.entry),
            std::string::npos);
  EXPECT_EQ(baseline->countLaunches(), 1u);

  Result<KernelPlan> builtin =
      kernelPlanFromJson(parseOk(readInput("mlp_block_g1.builtin.plan.json")));
  ASSERT_TRUE(builtin.isOk()) << builtin.status().message();
  EXPECT_EQ(builtin->proposer, "builtin");
  EXPECT_EQ(builtin->variant, "library_bs256_v4");

  for (const KernelPlan *plan : {&*baseline, &*builtin}) {
    Result<KernelPlan> again = kernelPlanFromJson(toJson(*plan));
    ASSERT_TRUE(again.isOk()) << again.status().message();
    EXPECT_EQ(json::write(toJson(*again)), json::write(toJson(*plan)));
  }
}

TEST(ProtocolTest, WritesTheArithmeticOnlyWhenNotFp32) {
  std::string text = readInput("mlp_block_g1.builtin.plan.json");
  Result<KernelPlan> plan = kernelPlanFromJson(parseOk(text));
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  // Plans written before the field existed read as fp32, and fp32 plans
  // write as they did.
  EXPECT_EQ(plan->arithmetic, "fp32");
  EXPECT_EQ(toJson(*plan).find("arithmetic"), nullptr);
  plan->arithmetic = "3xtf32";
  json::Value written = toJson(*plan);
  ASSERT_NE(written.find("arithmetic"), nullptr);
  Result<KernelPlan> again = kernelPlanFromJson(written);
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(again->arithmetic, "3xtf32");
  written.set("arithmetic", "tf32");
  Result<KernelPlan> unknown = kernelPlanFromJson(written);
  ASSERT_FALSE(unknown.isOk());
  EXPECT_EQ(unknown.status().message(),
            "plan: unknown arithmetic 'tf32' (expected fp32 or 3xtf32)");
}

TEST(ProtocolTest, WritesTheArchitectureOnlyWhenSet) {
  std::string text = readInput("mlp_block_g1.builtin.plan.json");
  Result<KernelPlan> plan = kernelPlanFromJson(parseOk(text));
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  EXPECT_EQ(plan->arch, "");
  EXPECT_EQ(toJson(*plan).find("arch"), nullptr);
  plan->arch = "sm_90a";
  json::Value written = toJson(*plan);
  ASSERT_NE(written.find("arch"), nullptr);
  Result<KernelPlan> again = kernelPlanFromJson(written);
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(again->arch, "sm_90a");
  for (const char *bad : {"sm_90", "", "compute_90a", "sm_a"}) {
    written.set("arch", bad);
    Result<KernelPlan> refused = kernelPlanFromJson(written);
    ASSERT_FALSE(refused.isOk()) << bad;
    EXPECT_EQ(refused.status().message(),
              std::string("plan: arch '") + bad +
                  "' is not an architecture-specific target such as sm_90a");
  }
}

TEST(ProtocolTest, RoundTripsAConvolutionStep) {
  KernelPlan plan;
  plan.taskKey = "k";
  plan.proposer = "builtin";
  PlanStep step;
  step.kind = PlanStep::Kind::Conv;
  step.conv = {"in0", "in1", "out0", "nhwc_hwcf", {2, 2}, {1, 3}};
  plan.steps.push_back(step);
  Result<KernelPlan> again = kernelPlanFromJson(toJson(plan));
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(again->steps[0].conv.strides, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(again->steps[0].conv.dilations, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(again->steps[0].conv.layout, "nhwc_hwcf");
  EXPECT_EQ(again->steps[0].conv.groups, 1);
  // An ungrouped step writes no `groups`, as before groups existed.
  EXPECT_EQ(json::write(toJson(plan)).find("groups"), std::string::npos);
}

TEST(ProtocolTest, RoundTripsGroupedAndThreeDimensionalConvSteps) {
  KernelPlan plan;
  plan.taskKey = "k";
  plan.proposer = "baseline";
  PlanStep step;
  step.kind = PlanStep::Kind::Conv;
  step.conv = {"in0", "in1", "out0", "ngcdhw_gfcdhw", {1, 2, 2}, {1, 1, 3}, 4};
  plan.steps.push_back(step);
  step.conv = {"in0", "in1", "out0", "ncw_cw", {2}, {3}, 8};
  plan.steps.push_back(step);
  Result<KernelPlan> again = kernelPlanFromJson(toJson(plan));
  ASSERT_TRUE(again.isOk()) << again.status().message();
  const ConvStep &grouped = again->steps[0].conv;
  EXPECT_EQ(grouped.layout, "ngcdhw_gfcdhw");
  EXPECT_EQ(grouped.strides, (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(grouped.dilations, (std::vector<int64_t>{1, 1, 3}));
  EXPECT_EQ(grouped.groups, 4);
  const ConvStep &depthwise = again->steps[1].conv;
  EXPECT_EQ(depthwise.strides, (std::vector<int64_t>{2}));
  EXPECT_EQ(depthwise.dilations, (std::vector<int64_t>{3}));
  EXPECT_EQ(depthwise.groups, 8);
}

TEST(ProtocolTest, RoundTripsConvPaddingAndWritesNoneWithout) {
  KernelPlan plan;
  plan.taskKey = "k";
  plan.proposer = "baseline";
  PlanStep step;
  step.kind = PlanStep::Kind::Conv;
  step.conv = {"in0", "in1", "out0", "nchw_fchw", {4, 4}, {1, 1}};
  step.conv.padding = {2, 0};
  plan.steps.push_back(step);
  Result<KernelPlan> again = kernelPlanFromJson(toJson(plan));
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(again->steps[0].conv.padding, (std::vector<int64_t>{2, 0}));
  // Without padding the step reads and writes as before padding existed.
  plan.steps[0].conv.padding.clear();
  EXPECT_EQ(json::write(toJson(plan)).find("padding"), std::string::npos);
  again = kernelPlanFromJson(toJson(plan));
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_TRUE(again->steps[0].conv.padding.empty());

  auto parse = [](const std::string &padding) {
    return kernelPlanFromJson(*json::parse(
        R"({"schema": "kopt.plan/1", "task_key": "k", "proposer": "baseline",
            "variant": "per-op", "temporaries": [], "sources": [],
            "steps": [{"kind": "conv", "input": "in0", "filter": "in1",
                       "output": "out0", "layout": "nchw_fchw",
                       "strides": [1, 1], "dilations": [1, 1],
                       "padding": )" +
        padding + "}]}"));
  };
  EXPECT_TRUE(parse("[1, 0]").isOk());
  auto count = parse("[1]");
  ASSERT_FALSE(count.isOk());
  EXPECT_NE(count.status().message().find("'padding' needs 2 entries"),
            std::string::npos)
      << count.status().message();
  auto negative = parse("[1, -1]");
  ASSERT_FALSE(negative.isOk());
  EXPECT_NE(negative.status().message().find(
                "'padding' entries must be integers of at least 0"),
            std::string::npos)
      << negative.status().message();
}

TEST(ProtocolTest, ReadsConvStepsWrittenBeforeGroups) {
  // A 2-D step as plans stored in databases carry it: two strides, two
  // dilations, no `groups`.
  auto plan = kernelPlanFromJson(*json::parse(R"({
    "schema": "kopt.plan/1", "task_key": "k", "proposer": "baseline",
    "variant": "per-op", "temporaries": [], "sources": [],
    "steps": [{"kind": "conv", "input": "in0", "filter": "in1",
               "output": "out0", "layout": "nchw_fchw",
               "strides": [2, 1], "dilations": [1, 2]}]})"));
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  const ConvStep &conv = plan->steps[0].conv;
  EXPECT_EQ(conv.layout, "nchw_fchw");
  EXPECT_EQ(conv.strides, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(conv.dilations, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(conv.groups, 1);
}

TEST(ProtocolTest, RefusesConvStridesThatDoNotFitTheLayout) {
  auto parse = [](const std::string &layout, const std::string &strides,
                  const std::string &extra) {
    return kernelPlanFromJson(*json::parse(
        R"({"schema": "kopt.plan/1", "task_key": "k", "proposer": "baseline",
            "variant": "per-op", "temporaries": [], "sources": [],
            "steps": [{"kind": "conv", "input": "in0", "filter": "in1",
                       "output": "out0", "layout": ")" +
        layout + R"(", "strides": )" + strides + R"(, "dilations": )" +
        strides + extra + "}]}"));
  };
  auto oneD = parse("ncw_fcw", "[1, 1]", "");
  ASSERT_FALSE(oneD.isOk());
  EXPECT_NE(oneD.status().message().find("'strides' needs 1 entries"),
            std::string::npos)
      << oneD.status().message();
  auto unknown = parse("nchw_hwcf", "[1, 1]", "");
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("unknown layout 'nchw_hwcf'"),
            std::string::npos)
      << unknown.status().message();
  auto groups = parse("nchw_chw", "[1, 1]", R"(, "groups": 0)");
  EXPECT_FALSE(groups.isOk());
  EXPECT_TRUE(parse("ncdhw_fcdhw", "[1, 2, 3]", "").isOk());
}

/// Replaces the first `from` in `text` by `to`.
std::string replaced(std::string text, const std::string &from,
                     const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

TEST(ProtocolTest, RefusesMalformedTasks) {
  std::string task = readInput("mlp_block_g1.task.json");
  auto errorOf = [](const std::string &text) -> Status {
    Result<KernelTask> parsed = kernelTaskFromJson(parseOk(text));
    return parsed.isOk() ? Status::success() : parsed.status();
  };
  Status newer = errorOf(replaced(task, "\"kopt.task/1\"", "\"kopt.task/2\""));
  EXPECT_EQ(newer.code(), StatusCode::Unsupported);
  EXPECT_EQ(newer.message(), "task: schema 'kopt.task/2' is not supported "
                             "(this kopt reads 'kopt.task/1')");
  EXPECT_EQ(errorOf(replaced(task, "\"schema\"", "\"schemata\"")).message(),
            "task: missing 'schema' (expected 'kopt.task/1')");
  EXPECT_EQ(errorOf(replaced(task, "\"key\"", "\"kee\"")).message(),
            "task: missing string 'key'");
  EXPECT_EQ(errorOf(replaced(task, "\"f32\"", "\"f31\"")).message(),
            "task: inputs[0]: tensor 'in0': unknown element type 'f31'");
  EXPECT_EQ(errorOf(replaced(task, "512", "-512")).message(),
            "task: inputs[0]: tensor 'in0': dimension 0 is not a "
            "non-negative integer");
  EXPECT_EQ(errorOf(replaced(task, "\"in1\"", "\"in0\"")).message(),
            "task: tensor name 'in0' is used twice");
  EXPECT_EQ(
      errorOf(replaced(task, "\"precision\": \"fp32\"", "\"precision\": 32"))
          .message(),
      "task: 'precision' must be a string");
  EXPECT_EQ(errorOf("[]").message(), "task: expected a JSON object");
}

TEST(ProtocolTest, RefusesMalformedPlans) {
  std::string plan = readInput("mlp_block_g1.baseline.plan.json");
  auto errorOf = [](const std::string &text) -> std::string {
    Result<KernelPlan> parsed = kernelPlanFromJson(parseOk(text));
    return parsed.isOk() ? "" : parsed.status().message();
  };
  EXPECT_EQ(errorOf(replaced(plan, "\"kopt.plan/1\"", "\"kopt.plan/9\"")),
            "plan: schema 'kopt.plan/9' is not supported (this kopt reads "
            "'kopt.plan/1')");
  EXPECT_EQ(errorOf(replaced(plan, "\"gemm\"", "\"fft\"")),
            "plan: step 0: unknown kind 'fft' (expected launch, gemm or "
            "conv)");
  EXPECT_EQ(errorOf(replaced(plan, "\"m\": 512", "\"m\": \"512\"")),
            "plan: step 0: 'm' must be an integer");
  EXPECT_EQ(errorOf(replaced(plan, "\"activation\": \"none\"",
                             "\"activation\": \"swish\"")),
            "plan: step 0: unknown activation 'swish'");
  EXPECT_EQ(
      errorOf(replaced(plan, "\"source\": \"main\"", "\"source\": \"other\"")),
      "plan: step 1: unknown source 'other'");
  EXPECT_EQ(
      errorOf(replaced(plan, "\"shared_bytes\": 0", "\"shared_bytes\": -4")),
      "plan: step 1: 'shared_bytes' is -4, outside [0, 2147483647]");
  EXPECT_EQ(errorOf(replaced(plan, "\"task_key\"", "\"task\"")),
            "plan: missing string 'task_key'");
  EXPECT_EQ(errorOf(replaced(plan, "\"steps\"", "\"stages\"")),
            "plan: missing array 'steps'");
}

TEST(ProtocolTest, CarriesCompilerDocumentsThroughAFrame) {
  EvaluateMessage evaluate;
  evaluate.requestId = 11;
  evaluate.task = parseOk(readInput("mlp_block_g1.task.json"));
  evaluate.candidates = {parseOk(readInput("mlp_block_g1.baseline.plan.json")),
                         parseOk(readInput("mlp_block_g1.builtin.plan.json"))};
  Channel channel = makeSocketPair();
  std::thread writer(
      [&] { EXPECT_TRUE(writeMessage(channel.writer(), evaluate).isOk()); });
  Result<Message> message = readMessage(channel.reader());
  writer.join();
  ASSERT_TRUE(message.isOk()) << message.status().message();
  const auto *received = std::get_if<EvaluateMessage>(&*message);
  ASSERT_NE(received, nullptr);
  EXPECT_EQ(received->requestId, 11);
  Result<KernelTask> task = kernelTaskFromJson(received->task);
  ASSERT_TRUE(task.isOk()) << task.status().message();
  ASSERT_EQ(received->candidates.size(), 2u);
  for (const json::Value &candidate : received->candidates) {
    Result<KernelPlan> plan = kernelPlanFromJson(candidate);
    ASSERT_TRUE(plan.isOk()) << plan.status().message();
    EXPECT_EQ(plan->taskKey, task->key);
  }
}

} // namespace
