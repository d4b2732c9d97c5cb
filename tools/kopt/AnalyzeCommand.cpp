//===- AnalyzeCommand.cpp - kopt analyze ------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Reads model graphs, plans fusion groups and prints, per group, its ops,
// tensors, key, FLOPs, bytes moved unfused and fused, and the roofline bound
// on the speedup fusion can bring. `--json` prints the same as the document
// described in docs/Analyze.md.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "kopt/Analysis/GroupReport.h"
#include "kopt/InitAll.h"
#include "kopt/Runtime/OutputFile.h"
#include "kopt/Support/ModelLoader.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_os_ostream.h"

using namespace mlir;
using namespace mlir::kopt;
namespace cl = llvm::cl;

static cl::SubCommand analyzeCommand(
    "analyze",
    "Find the fusion groups of model graphs and report, per group, its ops, "
    "key, FLOPs, bytes moved unfused and fused, and the roofline bound on the "
    "speedup fusion can bring on an NVIDIA H200");

static cl::list<std::string> inputFiles(cl::Positional, cl::OneOrMore,
                                        cl::desc("<model.mlir>..."),
                                        cl::sub(analyzeCommand));
static cl::opt<bool>
    emitJson("json",
             cl::desc("Print a machine-readable JSON document "
                      "(schema kopt.analyze/1, see docs/Analyze.md)"),
             cl::sub(analyzeCommand));
static cl::opt<std::string> outputFile("o", cl::desc("Write the report here"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::sub(analyzeCommand));

bool mlir::kopt::isAnalyzeCommandSelected() {
  return static_cast<bool>(analyzeCommand);
}

static std::string severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Remark:
    return "remark";
  case DiagnosticSeverity::Note:
    return "note";
  }
  return "unknown";
}

namespace {
/// What analysing one file produced.
struct FileResult {
  bool ok = false;
  std::vector<GroupSummary> groups;
  std::vector<DiagnosticSummary> diagnostics;
};
} // namespace

static FileResult analyzeFile(llvm::StringRef path, DialectRegistry &registry,
                              const DeviceRoofline &device) {
  FileResult result;
  MLIRContext context(registry);
  // Remarks point at the source line; the op dump would only repeat it.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  // Diagnostics print as file:line:col on stderr; remarks and warnings are
  // also kept for the JSON document. Handlers run newest first, and the
  // collector declines each diagnostic so the printer still sees it.
  SourceMgrDiagnosticHandler printer(sourceMgr, &context, llvm::errs());
  ScopedDiagnosticHandler collector(&context, [&](Diagnostic &diag) {
    result.diagnostics.push_back({severityName(diag.getSeverity()),
                                  formatLocation(diag.getLocation()),
                                  diag.str()});
    return failure();
  });

  auto module = loadModelGraph(path, context, sourceMgr);
  if (!module) {
    std::string message = llvm::toString(module.takeError());
    llvm::WithColor::error(llvm::errs(), "kopt") << message << "\n";
    result.diagnostics.push_back({"error", path.str(), message});
    return result;
  }
  if (failed(prepareModelGraph(**module)))
    return result;
  result.groups = summarizeGroups(**module, device);
  result.ok = true;
  return result;
}

int mlir::kopt::runAnalyzeCommand() {
  DialectRegistry registry;
  registerAllDialects(registry);
  DeviceRoofline device = DeviceRoofline::h200();

  ::kopt::runtime::ProtectedFiles protect;
  for (const std::string &path : inputFiles)
    protect.addInput(path);
  auto output = ::kopt::runtime::OutputFile::open(outputFile, protect);
  if (!output) {
    llvm::WithColor::error(llvm::errs(), "kopt")
        << output.status().message() << "\n";
    return 1;
  }
  llvm::raw_os_ostream os((*output)->stream());

  bool allOk = true;
  llvm::json::Array files;
  for (const std::string &path : inputFiles) {
    FileResult result = analyzeFile(path, registry, device);
    allOk &= result.ok;
    if (emitJson) {
      llvm::json::Object file =
          groupReportToJson(path, result.groups, result.diagnostics);
      file["ok"] = result.ok;
      files.push_back(std::move(file));
    } else if (result.ok) {
      if (&path != &inputFiles.front())
        os << "\n";
      printGroupReport(os, path, result.groups, device);
    }
  }
  if (emitJson) {
    llvm::json::Value document =
        llvm::json::Object{{"schema", kAnalyzeSchema},
                           {"device", deviceToJson(device)},
                           {"files", std::move(files)}};
    os << llvm::formatv("{0:2}", document) << "\n";
  }
  os.flush();
  if (::kopt::runtime::Status status = (*output)->commit(); !status.isOk()) {
    llvm::WithColor::error(llvm::errs(), "kopt") << status.message() << "\n";
    return 1;
  }
  return allOk ? 0 : 1;
}
