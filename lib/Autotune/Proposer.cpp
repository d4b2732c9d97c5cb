//===- Proposer.cpp - The proposer interface and registry -------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Autotune/Proposer.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::kopt;

Proposer::~Proposer() = default;

std::optional<ProposerChoice> Proposer::getChoice() const {
  return std::nullopt;
}

void Proposer::summarize(GroupOutcome &) const {}

ProposerFactory::~ProposerFactory() = default;

void ProposerFactory::setArch(llvm::StringRef) {}

void ProposerRegistry::add(llvm::StringRef name, Maker maker) {
  makers.emplace_back(name.str(), std::move(maker));
}

llvm::Expected<const ProposerRegistry::Maker *>
ProposerRegistry::lookup(llvm::StringRef name) const {
  for (const auto &[known, maker] : makers)
    if (known == name)
      return &maker;
  return llvm::createStringError(
      "unknown proposer '" + name +
      "' (available: " + llvm::join(getNames(), ", ") + ")");
}

std::vector<std::string> ProposerRegistry::getNames() const {
  std::vector<std::string> names;
  for (const auto &entry : makers)
    names.push_back(entry.first);
  return names;
}
