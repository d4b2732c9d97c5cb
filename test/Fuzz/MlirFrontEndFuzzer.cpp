//===- MlirFrontEndFuzzer.cpp - libFuzzer target: model graphs --*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Feeds text, as a model graph, through what `kopt analyze` does with a file
// (tools/kopt/AnalyzeCommand.cpp): the nesting check and the parse on the
// parser's stack (parseModelBuffer), TOSA lowering and fusion planning
// (prepareModelGraph), and the group report, as text and JSON. Errors are
// diagnostics; only a crash, a hang or a sanitizer report is a finding.
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/GroupReport.h"
#include "kopt/InitAll.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;
using namespace mlir::kopt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    auto *dialects = new DialectRegistry();
    registerAllDialects(*dialects);
    return dialects;
  }();
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  if (text.trim().empty())
    return 0;

  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "input.mlir"), llvm::SMLoc());
  auto module = parseModelBuffer(sourceMgr, context, "input.mlir");
  if (!module) {
    llvm::consumeError(module.takeError());
    return 0;
  }
  if ((*module)->getBody()->empty() || failed(prepareModelGraph(**module)))
    return 0;

  DeviceRoofline device = DeviceRoofline::h200();
  std::vector<GroupSummary> groups = summarizeGroups(**module, device);
  std::string report;
  llvm::raw_string_ostream os(report);
  printGroupReport(os, "input.mlir", groups, device);
  os << llvm::json::Value(groupReportToJson("input.mlir", groups, {}));
  return 0;
}
