//===- ModelLoader.cpp - Read and prepare a model graph ---------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Support/ModelLoader.h"
#include "kopt/Support/InputLimits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;
using namespace mlir::kopt;

/// The elements of `attr` as a dense attribute, or null when its blob is
/// absent (elided), does not fit its type, or its element type is neither
/// an integer nor a float. Blobs hold the elements row-major in their
/// type's bytes (one byte per i1).
static DenseElementsAttr toDenseElements(DenseResourceElementsAttr attr) {
  AsmResourceBlob *blob = attr.getRawHandle().getBlob();
  ShapedType type = attr.getType();
  Type element = type.getElementType();
  if (!blob || !type.hasStaticShape() || !element.isIntOrFloat())
    return nullptr;
  ArrayRef<char> data = blob->getData();
  if (element.isInteger(1)) {
    if (int64_t(data.size()) != type.getNumElements())
      return nullptr;
    SmallVector<bool> values;
    for (char byte : data)
      values.push_back(byte != 0);
    return DenseElementsAttr::get(type, values);
  }
  bool splat = false;
  if (!DenseElementsAttr::isValidRawBuffer(type, data, splat))
    return nullptr;
  return DenseElementsAttr::getFromRawBuffer(type, data);
}

/// Gives every attribute that holds a dense resource (torch-mlir writes
/// index tables and captured tensors so) its elements as a dense attribute:
/// what kopt reads of a constant (kernels, runtime modules, the reference)
/// takes dense elements, and a resource is only a way to store them.
static void inlineDenseResources(ModuleOp module) {
  module.walk([](Operation *op) {
    for (NamedAttribute named : llvm::to_vector(op->getAttrs()))
      if (auto resource = dyn_cast<DenseResourceElementsAttr>(named.getValue()))
        if (DenseElementsAttr dense = toDenseElements(resource))
          op->setAttr(named.getName(), dense);
  });
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::kopt::parseModelBuffer(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                             llvm::StringRef name) {
  llvm::StringRef text =
      sourceMgr.getMemoryBuffer(sourceMgr.getNumBuffers())->getBuffer();
  if (llvm::Error error = checkMlirNesting(text, name))
    return std::move(error);
  // The parser recurses once per level: give it a stack that fits the
  // nesting limit rather than whatever the calling thread has.
  OwningOpRef<ModuleOp> module;
  runOnParserStack([&] {
    module = parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  });
  if (!module)
    return llvm::createStringError("'%s' could not be parsed",
                                   name.str().c_str());
  inlineDenseResources(*module);
  return module;
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::kopt::loadModelGraph(llvm::StringRef path, MLIRContext &context,
                           llvm::SourceMgr &sourceMgr) {
  auto buffer = readInputFile(path);
  if (!buffer)
    return buffer.takeError();
  if ((*buffer)->getBuffer().trim().empty())
    return llvm::createStringError("'%s' is empty: nothing to work on",
                                   path.str().c_str());
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  auto module = parseModelBuffer(sourceMgr, context, path);
  if (!module)
    return module.takeError();
  if ((*module)->getBody()->empty())
    return llvm::createStringError(
        "'%s' holds an empty module: nothing to work on", path.str().c_str());
  return module;
}

bool mlir::kopt::containsTosa(ModuleOp module) {
  bool found = false;
  module.walk([&](Operation *op) {
    if (isa_and_nonnull<tosa::TosaDialect>(op->getDialect()))
      found = true;
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}
