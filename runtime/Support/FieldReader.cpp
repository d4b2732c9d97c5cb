//===- FieldReader.cpp - Typed reads of JSON object fields ------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "Support/FieldReader.h"

using namespace kopt::runtime;

FieldReader::FieldReader(const json::Value &object, std::string where)
    : value(object), where(std::move(where)) {
  if (!object.isObject())
    fail("expected a JSON object");
}

void FieldReader::fail(const std::string &message) {
  if (problem.empty())
    problem = message;
}

Status FieldReader::status() const {
  if (problem.empty())
    return Status::success();
  return Status::error(StatusCode::InvalidArgument, where + ": " + problem);
}

const json::Value *FieldReader::get(std::string_view name, bool required,
                                    const char *what) {
  const json::Value *field = value.find(name);
  if (!field && required)
    fail("missing " + std::string(what) + " '" + std::string(name) + "'");
  return field;
}

std::string FieldReader::string(std::string_view name, bool required) {
  const json::Value *field = get(name, required, "string");
  if (!field)
    return "";
  if (const std::string *text = field->getString())
    return *text;
  fail("'" + std::string(name) + "' must be a string");
  return "";
}

int64_t FieldReader::integer(std::string_view name, int64_t fallback,
                             int64_t min, int64_t max, bool required) {
  const json::Value *field = get(name, required, "integer");
  if (!field)
    return fallback;
  std::optional<int64_t> number = field->getInteger();
  if (!number) {
    fail("'" + std::string(name) + "' must be an integer");
    return fallback;
  }
  if (*number < min || *number > max) {
    fail("'" + std::string(name) + "' is " + std::to_string(*number) +
         ", outside [" + std::to_string(min) + ", " + std::to_string(max) +
         "]");
    return fallback;
  }
  return *number;
}

double FieldReader::number(std::string_view name, double fallback,
                           bool required) {
  const json::Value *field = get(name, required, "number");
  if (!field)
    return fallback;
  if (std::optional<double> number = field->getNumber())
    return *number;
  fail("'" + std::string(name) + "' must be a number");
  return fallback;
}

bool FieldReader::boolean(std::string_view name, bool fallback, bool required) {
  const json::Value *field = get(name, required, "boolean");
  if (!field)
    return fallback;
  if (std::optional<bool> flag = field->getBool())
    return *flag;
  fail("'" + std::string(name) + "' must be a boolean");
  return fallback;
}

const json::Value *FieldReader::object(std::string_view name, bool required) {
  const json::Value *field = get(name, required, "object");
  if (field && !field->isObject()) {
    fail("'" + std::string(name) + "' must be an object");
    return nullptr;
  }
  return field;
}

const json::Value *FieldReader::array(std::string_view name, bool required) {
  const json::Value *field = get(name, required, "array");
  if (field && !field->isArray()) {
    fail("'" + std::string(name) + "' must be an array");
    return nullptr;
  }
  return field;
}

std::vector<std::string>
FieldReader::strings(std::string_view name, bool required, bool allowIntegers) {
  std::vector<std::string> result;
  const json::Value *field = array(name, required);
  if (!field)
    return result;
  for (size_t i = 0, e = field->size(); i < e; ++i) {
    const json::Value &item = field->at(i);
    if (const std::string *text = item.getString()) {
      result.push_back(*text);
    } else if (std::optional<int64_t> number = item.getInteger();
               number && allowIntegers) {
      result.push_back(std::to_string(*number));
    } else {
      fail("'" + std::string(name) + "' item " + std::to_string(i) +
           " must be a string");
      break;
    }
  }
  return result;
}
