//===- Npy.cpp - NumPy .npy files -------------------------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Npy.h"

#include "kopt/Runtime/Cuda/TensorData.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace kopt::runtime;

static Status invalid(std::string message) {
  return Status::error(StatusCode::InvalidArgument, std::move(message));
}

const char *kopt::runtime::getNpyDescr(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return "<f2";
  case ElementType::BF16:
  case ElementType::F32:
    return "<f4";
  case ElementType::F64:
    return "<f8";
  case ElementType::I1:
    return "|b1";
  case ElementType::I8:
    return "|i1";
  case ElementType::I16:
    return "<i2";
  case ElementType::I32:
    return "<i4";
  case ElementType::I64:
    return "<i8";
  }
  return "<f4";
}

/// NumPy's spellings of the same type: `<i1` and `|i1`, `=f4` and `<f4`.
static std::string normalizeDescr(std::string descr) {
  if (descr.size() == 3 && (descr[0] == '=' || descr[0] == '<' ||
                            (descr[0] == '|' && descr[2] == '1')))
    descr[0] = descr[2] == '1' ? '|' : '<';
  return descr;
}

static std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

/// The value of `key` in the header dict: the text after `'key':` up to the
/// next top-level comma or the closing brace.
static std::string findValue(std::string_view header, std::string_view key) {
  std::string quoted = "'" + std::string(key) + "'";
  size_t at = header.find(quoted);
  if (at == std::string_view::npos)
    return "";
  at = header.find(':', at + quoted.size());
  if (at == std::string_view::npos)
    return "";
  ++at;
  int depth = 0;
  size_t end = at;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    else if ((c == ',' || c == '}') && depth == 0)
      break;
  }
  std::string value(header.substr(at, end - at));
  size_t first = value.find_first_not_of(" \t");
  size_t last = value.find_last_not_of(" \t");
  return first == std::string::npos ? ""
                                    : value.substr(first, last - first + 1);
}

Result<NpyArray> kopt::runtime::parseNpy(std::string_view bytes,
                                         std::string_view name) {
  std::string where(name);
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    return invalid(where + ": not a .npy file (no NUMPY magic)");
  int major = uint8_t(bytes[6]);
  size_t headerLength = 0, headerStart = 0;
  if (major == 1) {
    headerLength = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return invalid(where + ": the .npy header is cut short");
    for (int i = 0; i < 4; ++i)
      headerLength |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    return Status::error(StatusCode::Unsupported, where + ": .npy version " +
                                                      std::to_string(major) +
                                                      " is not supported");
  }
  if (headerLength > bytes.size() - headerStart)
    return invalid(where + ": the .npy header is cut short");
  std::string_view header = bytes.substr(headerStart, headerLength);
  NpyArray array;
  std::string descr = findValue(header, "descr");
  if (descr.size() < 2 || descr.front() != '\'' || descr.back() != '\'')
    return invalid(where + ": the .npy header has no 'descr'");
  array.descr = normalizeDescr(descr.substr(1, descr.size() - 2));
  if (findValue(header, "fortran_order") != "False")
    return Status::error(StatusCode::Unsupported,
                         where + ": Fortran-order arrays are not supported "
                                 "(save a C-contiguous array)");
  std::string shape = findValue(header, "shape");
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    return invalid(where + ": the .npy header has no 'shape'");
  std::stringstream dims(shape.substr(1, shape.size() - 2));
  std::string dim;
  while (std::getline(dims, dim, ',')) {
    size_t first = dim.find_first_not_of(" \t");
    if (first == std::string::npos)
      continue;
    dim = dim.substr(first, dim.find_last_not_of(" \tL") - first + 1);
    char *end = nullptr;
    long long value = std::strtoll(dim.c_str(), &end, 10);
    if (dim.empty() || *end != '\0' || value < 0)
      return invalid(where + ": bad dimension '" + dim + "' in the shape");
    array.shape.push_back(int64_t(value));
  }
  array.data = std::string(bytes.substr(headerStart + headerLength));
  return array;
}

Result<NpyArray> kopt::runtime::readNpyFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(StatusCode::IoError, "cannot open '" + path + "'");
  std::ostringstream contents;
  contents << in.rdbuf();
  return parseNpy(contents.str(), path);
}

Result<std::string> kopt::runtime::npyToTensorBytes(const NpyArray &array,
                                                    const TensorSpec &tensor,
                                                    std::string_view what) {
  std::string where(what);
  std::string expected = getNpyDescr(tensor.elementType);
  if (array.descr != expected)
    return invalid(where + ": the file holds dtype '" + array.descr + "', " +
                   tensor.name + " is " +
                   stringifyElementType(tensor.elementType) + " (dtype '" +
                   expected + "')");
  if (array.shape != tensor.shape)
    return invalid(where + ": the file's shape is " + formatShape(array.shape) +
                   ", " + tensor.name + " has shape " +
                   formatShape(tensor.shape));
  // The file's elements may be wider than the tensor's (float32 for bf16),
  // so a size that fits the tensor can overflow in the file.
  int64_t count = tensor.getNumElements().value_or(-1);
  int64_t elementBytes = expected[2] - '0';
  if (count < 0 || count > INT64_MAX / elementBytes)
    return Status::error(StatusCode::OutOfRange,
                         where + ": the shape " + formatShape(tensor.shape) +
                             " is too large for a .npy file of dtype '" +
                             expected + "'");
  int64_t fileBytes = elementBytes * count;
  if (int64_t(array.data.size()) < fileBytes)
    return invalid(where + ": the file holds " +
                   std::to_string(array.data.size()) +
                   " bytes of data, the "
                   "shape needs " +
                   std::to_string(fileBytes));
  if (tensor.elementType != ElementType::BF16)
    return array.data.substr(0, size_t(fileBytes));
  std::string bytes(size_t(count) * 2, '\0');
  for (int64_t i = 0; i < count; ++i) {
    float value;
    std::memcpy(&value, array.data.data() + 4 * i, 4);
    uint16_t bits = floatToBFloat16(value);
    std::memcpy(&bytes[size_t(2 * i)], &bits, 2);
  }
  return bytes;
}

std::string kopt::runtime::tensorBytesToNpy(const TensorSpec &tensor,
                                            std::string_view bytes) {
  std::string header =
      "{'descr': '" + std::string(getNpyDescr(tensor.elementType)) +
      "', 'fortran_order': False, 'shape': " + formatShape(tensor.shape) +
      ", }";
  // Magic (6) + version (2) + length (2) + header + '\n', a multiple of 64.
  size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string file("\x93NUMPY\x01\x00", 8);
  file.push_back(char(header.size() & 0xff));
  file.push_back(char(header.size() >> 8));
  file += header;
  if (tensor.elementType != ElementType::BF16) {
    file += bytes;
    return file;
  }
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + i, 2);
    float value = bfloat16ToFloat(bits);
    file.append(reinterpret_cast<const char *>(&value), 4);
  }
  return file;
}

Status kopt::runtime::writeNpyFile(const std::string &path,
                                   const TensorSpec &tensor,
                                   std::string_view bytes,
                                   const ProtectedFiles &protect) {
  return writeOutputFile(path, tensorBytesToNpy(tensor, bytes), protect);
}
