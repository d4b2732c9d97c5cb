//===- GroupReport.cpp - Per-group facts for reports ------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Analysis/GroupReport.h"

#include "kopt/Analysis/GroupAttributes.h"
#include "kopt/Analysis/OpClassification.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/DebugStringHelper.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kopt;

std::string mlir::kopt::formatLocation(Location loc) {
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    return (fileLoc.getFilename().getValue() + ":" + Twine(fileLoc.getLine()) +
            ":" + Twine(fileLoc.getColumn()))
        .str();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    return formatLocation(nameLoc.getChildLoc());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string text = formatLocation(inner); !text.empty())
        return text;
  if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    return formatLocation(callSite.getCaller());
  return "";
}

std::string mlir::kopt::formatQuantity(double value, llvm::StringRef unit) {
  static const char *prefixes[] = {"", "K", "M", "G", "T", "P"};
  unsigned index = 0;
  while (std::fabs(value) >= 1000 && index + 1 < std::size(prefixes)) {
    value /= 1000;
    ++index;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format(index == 0 ? "%.0f " : "%.2f ", value) << prefixes[index]
     << unit;
  return text;
}

static TensorSummary summarizeTensor(Type type) {
  TensorSummary summary;
  summary.type = debugString(type);
  if (auto shaped = dyn_cast<ShapedType>(type)) {
    summary.elementType = debugString(shaped.getElementType());
    summary.shape.assign(shaped.getShape().begin(), shaped.getShape().end());
  } else {
    summary.elementType = summary.type;
  }
  summary.bytes = getTensorBytes(type);
  return summary;
}

std::vector<GroupSummary>
mlir::kopt::summarizeGroups(ModuleOp module, const DeviceRoofline &device) {
  std::vector<GroupSummary> summaries;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto group = func->getAttrOfType<DictionaryAttr>(kFusionGroupAttrName);
    if (!group || func.isExternal())
      continue;
    GroupSummary summary;
    if (auto id = group.getAs<IntegerAttr>("id"))
      summary.id = id.getInt();
    if (auto kind = group.getAs<StringAttr>("kind"))
      summary.kind = kind.str();
    if (auto parent = group.getAs<StringAttr>("parent"))
      summary.parent = parent.str();
    summary.function = func.getSymName().str();
    if (auto key = func->getAttrOfType<StringAttr>(kKeyAttrName))
      summary.key = key.str();
    for (Operation &op : func.getBody().front().without_terminator())
      if (!isCheapToClone(&op))
        summary.ops.push_back({describeOp(&op), formatLocation(op.getLoc())});
    for (Type type : func.getArgumentTypes())
      summary.inputs.push_back(summarizeTensor(type));
    for (Type type : func.getResultTypes())
      summary.outputs.push_back(summarizeTensor(type));
    summary.cost = computeGroupCost(func, device);
    summaries.push_back(std::move(summary));
  }
  // Outlined functions precede their parent in group order.
  return summaries;
}

void mlir::kopt::printGroupReport(llvm::raw_ostream &os, llvm::StringRef path,
                                  const std::vector<GroupSummary> &groups,
                                  const DeviceRoofline &device) {
  os << path << ": " << groups.size() << " fusion group"
     << (groups.size() == 1 ? "" : "s") << "\n";
  for (const GroupSummary &group : groups) {
    os << "\ngroup " << group.id << " of @" << group.parent << "  ("
       << group.kind << ", outlined as @" << group.function << ")\n";
    os << "  key      " << group.key << "\n";
    os << "  ops      ";
    for (auto [index, op] : llvm::enumerate(group.ops)) {
      if (index)
        os << "\n           ";
      os << op.description;
      if (!op.location.empty())
        os << "  (" << op.location << ")";
    }
    os << "\n";
    auto printTensors = [&](llvm::StringRef label,
                            const std::vector<TensorSummary> &tensors) {
      os << "  " << label;
      for (auto [index, tensor] : llvm::enumerate(tensors))
        os << (index ? ", " : "") << tensor.type;
      os << "\n";
    };
    printTensors("inputs   ", group.inputs);
    printTensors("outputs  ", group.outputs);
    const GroupCost &cost = group.cost;
    os << "  flops    " << formatQuantity(cost.flops, "FLOP") << "\n";
    os << "  bytes    unfused " << formatQuantity(cost.bytesUnfused, "B")
       << ", fused " << formatQuantity(cost.bytesFused, "B") << "\n";
    os << "  roofline " << llvm::format("%.2fx", cost.speedupBound)
       << " at most from fusion (unfused "
       << llvm::format("%.2f", cost.secondsUnfused * 1e6) << " us, fused "
       << llvm::format("%.2f", cost.secondsFused * 1e6) << " us, "
       << (cost.computeBound ? "compute" : "memory") << "-bound)\n";
  }
  if (!groups.empty())
    os << "\nroofline ceilings: " << device.name << ", "
       << formatQuantity(device.memoryBandwidth, "B/s") << ", "
       << formatQuantity(device.fp32Flops, "FLOP/s") << " fp32, "
       << formatQuantity(device.tensorFlops16, "FLOP/s")
       << " f16/bf16 tensor\n";
}

static llvm::json::Array tensorsToJson(const std::vector<TensorSummary> &list) {
  llvm::json::Array array;
  for (const TensorSummary &tensor : list) {
    llvm::json::Array shape;
    for (int64_t size : tensor.shape)
      shape.push_back(size);
    array.push_back(llvm::json::Object{{"type", tensor.type},
                                       {"element_type", tensor.elementType},
                                       {"shape", std::move(shape)},
                                       {"bytes", tensor.bytes}});
  }
  return array;
}

llvm::json::Object mlir::kopt::deviceToJson(const DeviceRoofline &device) {
  return llvm::json::Object{
      {"name", device.name},
      {"memory_bandwidth_bytes_per_s", device.memoryBandwidth},
      {"fp32_flops_per_s", device.fp32Flops},
      {"tensor16_flops_per_s", device.tensorFlops16}};
}

llvm::json::Object
mlir::kopt::groupReportToJson(llvm::StringRef path,
                              const std::vector<GroupSummary> &groups,
                              const std::vector<DiagnosticSummary> &diags) {
  llvm::json::Array groupArray;
  for (const GroupSummary &group : groups) {
    llvm::json::Array ops;
    for (const OpSummary &op : group.ops)
      ops.push_back(llvm::json::Object{{"op", op.description},
                                       {"location", op.location}});
    const GroupCost &cost = group.cost;
    groupArray.push_back(llvm::json::Object{
        {"id", group.id},
        {"kind", group.kind},
        {"parent", group.parent},
        {"function", group.function},
        {"key", group.key},
        {"ops", std::move(ops)},
        {"inputs", tensorsToJson(group.inputs)},
        {"outputs", tensorsToJson(group.outputs)},
        {"flops", cost.flops},
        {"bytes_unfused", cost.bytesUnfused},
        {"bytes_fused", cost.bytesFused},
        {"seconds_unfused", cost.secondsUnfused},
        {"seconds_fused", cost.secondsFused},
        {"roofline_speedup_bound", cost.speedupBound},
        {"bound_by", cost.computeBound ? "compute" : "memory"}});
  }
  llvm::json::Array diagArray;
  for (const DiagnosticSummary &diag : diags)
    diagArray.push_back(llvm::json::Object{{"severity", diag.severity},
                                           {"location", diag.location},
                                           {"message", diag.message}});
  return llvm::json::Object{{"path", path},
                            {"groups", std::move(groupArray)},
                            {"diagnostics", std::move(diagArray)}};
}
