//===- DeviceChecks.cpp - The evaluator's own device kernels ----*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "runtime/Evaluator/DeviceChecks.h"

#include "kopt/Runtime/Cuda/Nvrtc.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

using namespace kopt::runtime;

namespace {
/// Element type codes shared with the kernels below.
enum TypeCode : int {
  kF16 = 0,
  kBF16 = 1,
  kF32 = 2,
  kF64 = 3,
  kI1 = 4,
  kI8 = 5,
  kI16 = 6,
  kI32 = 7,
  kI64 = 8,
};

int getTypeCode(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return kF16;
  case ElementType::BF16:
    return kBF16;
  case ElementType::F32:
    return kF32;
  case ElementType::F64:
    return kF64;
  case ElementType::I1:
    return kI1;
  case ElementType::I8:
    return kI8;
  case ElementType::I16:
    return kI16;
  case ElementType::I32:
    return kI32;
  case ElementType::I64:
    return kI64;
  }
  return kF32;
}

/// The kernels. The generator's arithmetic is InputGenerator.cpp's, step
/// for step, compiled with --fmad=false so nothing is contracted; the
/// narrow-float rounding is ElementCodec.cpp's `roundToNarrow` for finite
/// values.
const char *const kSource = R"(
typedef unsigned long long u64;
typedef long long i64;

#define KOPT_GRID_STRIDE(i, n)                                                \
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n);          \
       i += (u64)gridDim.x * blockDim.x)

__device__ u64 kopt_mix(u64 z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__device__ u64 kopt_draw_bits(u64 seed, u64 index, unsigned lane) {
  return kopt_mix(seed + 0x9e3779b97f4a7c15ull * (index * 4 + lane + 1));
}

__device__ double kopt_draw_normal(u64 seed, u64 index) {
  i64 sum = 0;
  for (unsigned lane = 0; lane < 3; ++lane) {
    u64 bits = kopt_draw_bits(seed, index, lane);
    for (unsigned chunk = 0; chunk < 4; ++chunk)
      sum += (i64)((bits >> (16 * chunk)) & 0xffff);
  }
  return ldexp((double)(sum - 393210), -16);
}

__device__ double kopt_draw_float(int distribution, u64 seed, u64 index,
                                  double spread, int maxExponent) {
  switch (distribution) {
  case 0:
    return kopt_draw_normal(seed, index);
  case 1: {
    double offset = spread * kopt_draw_normal(seed, index);
    return 1000.0 + offset;
  }
  case 2: {
    u64 bits = kopt_draw_bits(seed, index, 0);
    int exponent =
        (int)((bits & 0xffffffffull) % (u64)(2 * maxExponent)) - maxExponent;
    double significand =
        1.0 + ldexp((double)(kopt_draw_bits(seed, index, 1) >> 12), -52);
    double magnitude = ldexp(significand, exponent);
    return (bits >> 63) ? -magnitude : magnitude;
  }
  default:
    return (double)((i64)(kopt_draw_bits(seed, index, 0) % 17) - 8);
  }
}

__device__ unsigned kopt_round_narrow(double value, int m, int exponentBits,
                                      int bias) {
  unsigned signBit = 1u << (m + exponentBits);
  unsigned infinityBits = ((1u << exponentBits) - 1) << m;
  unsigned sign = signbit(value) ? signBit : 0u;
  double magnitude = fabs(value);
  if (isinf(magnitude))
    return sign | infinityBits;
  if (magnitude == 0.0)
    return sign;
  int frexpExponent;
  (void)frexp(magnitude, &frexpExponent);
  int exponent = frexpExponent - 1;
  if (exponent > bias)
    return sign | infinityBits;
  if (exponent < 1 - bias)
    exponent = 1 - bias;
  u64 significand = (u64)rint(ldexp(magnitude, m - exponent));
  if (significand == (2ull << m)) {
    significand >>= 1;
    ++exponent;
    if (exponent > bias)
      return sign | infinityBits;
  }
  if (significand < (1ull << m))
    return sign | (unsigned)significand;
  return sign | ((unsigned)(exponent + bias) << m) |
         (unsigned)(significand - (1ull << m));
}

extern "C" __global__ void kopt_generate(void *out, u64 n, int type,
                                         int distribution, u64 seed,
                                         double spread, int maxExponent,
                                         i64 bound) {
  KOPT_GRID_STRIDE(i, n) {
    if (type >= 4) {
      i64 value;
      if (type == 4)
        value = (i64)(kopt_draw_bits(seed, i, 0) >> 63);
      else
        value = (i64)(kopt_draw_bits(seed, i, 0) % (u64)(2 * bound + 1)) -
                bound;
      switch (type) {
      case 4:
      case 5:
        ((signed char *)out)[i] = (signed char)value;
        break;
      case 6:
        ((short *)out)[i] = (short)value;
        break;
      case 7:
        ((int *)out)[i] = (int)value;
        break;
      default:
        ((i64 *)out)[i] = value;
      }
      continue;
    }
    double value = kopt_draw_float(distribution, seed, i, spread, maxExponent);
    switch (type) {
    case 0:
      ((unsigned short *)out)[i] =
          (unsigned short)kopt_round_narrow(value, 10, 5, 15);
      break;
    case 1:
      ((unsigned short *)out)[i] =
          (unsigned short)kopt_round_narrow(value, 7, 8, 127);
      break;
    case 2:
      ((float *)out)[i] = __double2float_rn(value);
      break;
    default:
      ((double *)out)[i] = value;
    }
  }
}

extern "C" __global__ void kopt_fill(void *out, u64 n, int width,
                                     u64 pattern) {
  KOPT_GRID_STRIDE(i, n) {
    switch (width) {
    case 1:
      ((unsigned char *)out)[i] = (unsigned char)pattern;
      break;
    case 2:
      ((unsigned short *)out)[i] = (unsigned short)pattern;
      break;
    case 4:
      ((unsigned *)out)[i] = (unsigned)pattern;
      break;
    default:
      ((u64 *)out)[i] = pattern;
    }
  }
}

__device__ u64 kopt_load_bits(const void *data, u64 i, int width) {
  switch (width) {
  case 1:
    return ((const unsigned char *)data)[i];
  case 2:
    return ((const unsigned short *)data)[i];
  case 4:
    return ((const unsigned *)data)[i];
  default:
    return ((const u64 *)data)[i];
  }
}

// Block-wide sums, then one atomic per block and value.
__device__ void kopt_add_u64(u64 *target, u64 value) {
  __shared__ u64 partial[32];
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffffu, value, offset);
  __syncthreads();
  if ((threadIdx.x & 31) == 0)
    partial[threadIdx.x / 32] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    u64 sum = 0;
    for (unsigned w = 0; w < (blockDim.x + 31) / 32; ++w)
      sum += partial[w];
    if (sum)
      atomicAdd(target, sum);
  }
}

__device__ void kopt_add_f64(double *target, double value) {
  __shared__ double partial[32];
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffffu, value, offset);
  __syncthreads();
  if ((threadIdx.x & 31) == 0)
    partial[threadIdx.x / 32] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = 0;
    for (unsigned w = 0; w < (blockDim.x + 31) / 32; ++w)
      sum += partial[w];
    if (sum != 0.0)
      atomicAdd(target, sum);
  }
}

// results[0]: the sum over 8-byte words (the tail zero-padded) of
// mix(word + golden * (index + 1)).
extern "C" __global__ void kopt_checksum(const unsigned char *data, u64 bytes,
                                         u64 *results) {
  u64 words = (bytes + 7) / 8, sum = 0;
  KOPT_GRID_STRIDE(i, words) {
    u64 word = 0;
    if (i * 8 + 8 <= bytes) {
      word = ((const u64 *)data)[i];
    } else {
      for (u64 b = i * 8; b < bytes; ++b)
        word |= (u64)data[b] << (8 * (b - i * 8));
    }
    sum += kopt_mix(word + 0x9e3779b97f4a7c15ull * (i + 1));
  }
  kopt_add_u64(&results[0], sum);
}

// results[0]: how many elements equal `pattern`.
extern "C" __global__ void kopt_count_equal(const void *data, u64 n,
                                            int width, u64 pattern,
                                            u64 *results) {
  u64 count = 0;
  KOPT_GRID_STRIDE(i, n) count += kopt_load_bits(data, i, width) == pattern;
  kopt_add_u64(&results[0], count);
}

__device__ double kopt_narrow_to_double(unsigned bits, int m, int exponentBits,
                                        int bias) {
  unsigned exponentMask = (1u << exponentBits) - 1;
  bool negative = (bits >> (m + exponentBits)) & 1;
  unsigned exponent = (bits >> m) & exponentMask;
  unsigned mantissa = bits & ((1u << m) - 1);
  double magnitude;
  if (exponent == exponentMask)
    magnitude = mantissa ? __longlong_as_double(0x7ff8000000000000ll)
                         : __longlong_as_double(0x7ff0000000000000ll);
  else if (exponent == 0)
    magnitude = ldexp((double)mantissa, 1 - bias - m);
  else
    magnitude = ldexp((double)(mantissa | (1u << m)), (int)exponent - bias - m);
  return negative ? -magnitude : magnitude;
}

__device__ double kopt_load_float(const void *data, u64 i, int type) {
  switch (type) {
  case 0:
    return kopt_narrow_to_double(((const unsigned short *)data)[i], 10, 5, 15);
  case 1:
    return kopt_narrow_to_double(((const unsigned short *)data)[i], 7, 8, 127);
  case 2:
    return (double)((const float *)data)[i];
  default:
    return ((const double *)data)[i];
  }
}

__device__ i64 kopt_load_integer(const void *data, u64 i, int type) {
  switch (type) {
  case 4:
    return ((const unsigned char *)data)[i] != 0;
  case 5:
    return ((const signed char *)data)[i];
  case 6:
    return ((const short *)data)[i];
  case 7:
    return ((const int *)data)[i];
  default:
    return ((const i64 *)data)[i];
  }
}

// u64 results[0..2]: special mismatches, differing, finite pairs; double
// results[3..4]: sums of squared errors and of squared references.
extern "C" __global__ void kopt_compare(const void *actual,
                                        const void *expected, u64 n, int type,
                                        u64 *results) {
  u64 special = 0, differing = 0, finite = 0;
  double errorSquares = 0, referenceSquares = 0;
  KOPT_GRID_STRIDE(i, n) {
    if (type >= 4) {
      i64 out = kopt_load_integer(actual, i, type);
      i64 ref = kopt_load_integer(expected, i, type);
      double r = (double)ref;
      referenceSquares += r * r;
      if (out != ref) {
        ++differing;
        double e = (double)out - r;
        errorSquares += e * e;
      }
      continue;
    }
    double out = kopt_load_float(actual, i, type);
    double ref = kopt_load_float(expected, i, type);
    if (isnan(out) || isnan(ref)) {
      if (isnan(out) != isnan(ref)) {
        ++special;
        ++differing;
      }
      continue;
    }
    if (isinf(out) || isinf(ref)) {
      if (out != ref) {
        ++special;
        ++differing;
      }
      continue;
    }
    double e = out - ref;
    ++finite;
    differing += e != 0.0;
    errorSquares += e * e;
    referenceSquares += ref * ref;
  }
  kopt_add_u64(&results[0], special);
  kopt_add_u64(&results[1], differing);
  kopt_add_u64(&results[2], finite);
  kopt_add_f64((double *)&results[3], errorSquares);
  kopt_add_f64((double *)&results[4], referenceSquares);
}

// out[i] = the element at indices[i] of data, elementBytes bytes each.
extern "C" __global__ void kopt_gather(const unsigned char *data,
                                       const u64 *indices, u64 n,
                                       int elementBytes, unsigned char *out) {
  KOPT_GRID_STRIDE(i, n) {
    const unsigned char *from = data + indices[i] * (u64)elementBytes;
    for (int b = 0; b < elementBytes; ++b)
      out[i * (u64)elementBytes + b] = from[b];
  }
}
)";

constexpr size_t kResultSlots = 8;
} // namespace

struct DeviceChecks::Kernels {
  /// Owned by the context (`CudaContext::loadModule`).
  CUmodule module = nullptr;
  CUfunction generate = nullptr, fill = nullptr, checksum = nullptr,
             countEqual = nullptr, compare = nullptr, gather = nullptr;
  int smCount = 1;
};

/// NVRTC output per architecture, compiled once per process.
static Result<CompiledKernel> compileOnce(const std::string &arch) {
  static std::mutex mutex;
  static std::map<std::string, CompiledKernel> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(arch);
  if (it != cache.end())
    return it->second;
  NvrtcOptions options;
  options.extra = {"--fmad=false"};
  auto compiled = compileCuda(kSource, "kopt_device_checks.cu", arch, options);
  if (!compiled)
    return compiled.status().withContext("the evaluator's device checks");
  cache.emplace(arch, *compiled);
  return *compiled;
}

Result<std::unique_ptr<DeviceChecks>>
DeviceChecks::create(const CudaContext &context) {
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  auto compiled = compileOnce(context.getDeviceInfo().getArch());
  if (!compiled)
    return compiled.status();
  const CudaDriver &api = context.getDriver();
  auto kernels = std::make_unique<Kernels>();
  kernels->smCount = std::max(1, context.getDeviceInfo().smCount);
  auto module = context.loadModule(compiled->cubin);
  if (!module)
    return module.status().withContext("the device checks' module");
  kernels->module = *module;
  std::pair<CUfunction *, const char *> functions[] = {
      {&kernels->generate, "kopt_generate"},
      {&kernels->fill, "kopt_fill"},
      {&kernels->checksum, "kopt_checksum"},
      {&kernels->countEqual, "kopt_count_equal"},
      {&kernels->compare, "kopt_compare"},
      {&kernels->gather, "kopt_gather"}};
  for (auto &[function, name] : functions)
    if (Status status =
            api.check(api.cuModuleGetFunction(function, kernels->module, name),
                      std::string("cuModuleGetFunction(") + name + ")");
        !status.isOk())
      return status;
  auto results =
      DeviceBuffer::allocate(context, int64_t(kResultSlots * sizeof(uint64_t)));
  if (!results)
    return results.status();
  return std::unique_ptr<DeviceChecks>(
      new DeviceChecks(context, std::move(kernels), std::move(*results)));
}

DeviceChecks::DeviceChecks(const CudaContext &context,
                           std::unique_ptr<Kernels> kernels,
                           DeviceBuffer results)
    : context(context), kernels(std::move(kernels)),
      results(std::move(results)) {}

DeviceChecks::~DeviceChecks() = default;

Status DeviceChecks::launch(CUfunction function, uint64_t work,
                            void **arguments) {
  if (work == 0)
    return Status::success();
  constexpr unsigned threads = 256;
  // Enough blocks to fill the device; the kernels stride over the rest.
  uint64_t blocks = std::min<uint64_t>((work + threads - 1) / threads,
                                       uint64_t(kernels->smCount) * 16);
  const CudaDriver &api = context.getDriver();
  return api.check(api.cuLaunchKernel(function, unsigned(blocks), 1, 1, threads,
                                      1, 1, 0, context.getStream(), arguments,
                                      nullptr),
                   "cuLaunchKernel(device check)");
}

Status DeviceChecks::resetResults(const std::vector<uint64_t> &initial) {
  const CudaDriver &api = context.getDriver();
  std::vector<uint64_t> slots(kResultSlots, 0);
  std::copy(initial.begin(), initial.end(), slots.begin());
  return api.check(api.cuMemcpyHtoD(results.get(), slots.data(),
                                    slots.size() * sizeof(uint64_t)),
                   "cuMemcpyHtoD(device check results)");
}

Status DeviceChecks::readResults(void *to, size_t bytes) {
  const CudaDriver &api = context.getDriver();
  // The copy waits for the kernel: both are on the legacy default stream.
  return api.check(api.cuMemcpyDtoH(to, results.get(), bytes),
                   "cuMemcpyDtoH(device check results)");
}

Status DeviceChecks::generate(CUdeviceptr out, ElementType type,
                              uint64_t numElements,
                              InputDistribution distribution, uint64_t seed) {
  // The distributions' parameters come from the host generator itself.
  double spread = getLargeMeanSpread(type);
  int maxExponent = getWideRangeMaxExponent(type);
  long long bound = isIntegerType(type) && type != ElementType::I1
                        ? (long long)getIntegerBound(type)
                        : 0;
  int code = getTypeCode(type);
  int distributionCode = int(distribution);
  unsigned long long n = numElements, seedBits = seed;
  void *arguments[] = {&out,      &n,      &code,        &distributionCode,
                       &seedBits, &spread, &maxExponent, &bound};
  return launch(kernels->generate, numElements, arguments);
}

Status DeviceChecks::fill(CUdeviceptr out, uint64_t numElements,
                          const std::vector<uint8_t> &element) {
  int width = int(element.size());
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return Status::error(StatusCode::InvalidArgument,
                         "fill: elements of 1, 2, 4 or 8 bytes only");
  unsigned long long pattern = 0, n = numElements;
  for (size_t i = 0; i < element.size(); ++i)
    pattern |= (unsigned long long)element[i] << (8 * i);
  void *arguments[] = {&out, &n, &width, &pattern};
  return launch(kernels->fill, numElements, arguments);
}

Result<uint64_t> DeviceChecks::checksum(CUdeviceptr data, uint64_t bytes) {
  if (Status status = resetResults(); !status.isOk())
    return status;
  unsigned long long size = bytes;
  CUdeviceptr out = results.get();
  void *arguments[] = {&data, &size, &out};
  if (Status status = launch(kernels->checksum, (bytes + 7) / 8, arguments);
      !status.isOk())
    return status;
  uint64_t sum = 0;
  if (Status status = readResults(&sum, sizeof(sum)); !status.isOk())
    return status;
  return sum;
}

Result<uint64_t> DeviceChecks::countEqual(CUdeviceptr data,
                                          uint64_t numElements,
                                          const std::vector<uint8_t> &element) {
  int width = int(element.size());
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return Status::error(StatusCode::InvalidArgument,
                         "countEqual: elements of 1, 2, 4 or 8 bytes only");
  if (Status status = resetResults(); !status.isOk())
    return status;
  unsigned long long pattern = 0, n = numElements;
  for (size_t i = 0; i < element.size(); ++i)
    pattern |= (unsigned long long)element[i] << (8 * i);
  CUdeviceptr out = results.get();
  void *arguments[] = {&data, &n, &width, &pattern, &out};
  if (Status status = launch(kernels->countEqual, numElements, arguments);
      !status.isOk())
    return status;
  uint64_t count = 0;
  if (Status status = readResults(&count, sizeof(count)); !status.isOk())
    return status;
  return count;
}

Result<ComparisonSums> DeviceChecks::compare(ElementType type,
                                             CUdeviceptr actual,
                                             CUdeviceptr expected,
                                             uint64_t numElements) {
  if (Status status = resetResults(); !status.isOk())
    return status;
  int code = getTypeCode(type);
  unsigned long long n = numElements;
  CUdeviceptr out = results.get();
  void *arguments[] = {&actual, &expected, &n, &code, &out};
  if (Status status = launch(kernels->compare, numElements, arguments);
      !status.isOk())
    return status;
  uint64_t slots[5];
  if (Status status = readResults(slots, sizeof(slots)); !status.isOk())
    return status;
  ComparisonSums sums;
  sums.numElements = numElements;
  sums.numSpecialMismatches = slots[0];
  sums.numDiffering = slots[1];
  sums.numFinite = slots[2];
  std::memcpy(&sums.errorSquares, &slots[3], sizeof(double));
  std::memcpy(&sums.referenceSquares, &slots[4], sizeof(double));
  return sums;
}

Status DeviceChecks::copy(CUdeviceptr to, CUdeviceptr from, uint64_t bytes) {
  if (bytes == 0)
    return Status::success();
  const CudaDriver &api = context.getDriver();
  return api.check(api.cuMemcpyDtoD(to, from, bytes), "cuMemcpyDtoD");
}

Result<std::vector<uint8_t>>
DeviceChecks::gather(CUdeviceptr data, size_t elementBytes,
                     const std::vector<int64_t> &indices) {
  std::vector<uint8_t> gathered(indices.size() * elementBytes);
  if (indices.empty())
    return gathered;
  auto deviceIndices = DeviceBuffer::allocate(
      context, int64_t(indices.size() * sizeof(int64_t)));
  if (!deviceIndices)
    return deviceIndices.status();
  auto deviceOut = DeviceBuffer::allocate(context, int64_t(gathered.size()));
  if (!deviceOut)
    return deviceOut.status();
  const CudaDriver &api = context.getDriver();
  if (Status status =
          api.check(api.cuMemcpyHtoD(deviceIndices->get(), indices.data(),
                                     indices.size() * sizeof(int64_t)),
                    "cuMemcpyHtoD(sampled indices)");
      !status.isOk())
    return status;
  CUdeviceptr indicesPointer = deviceIndices->get(),
              outPointer = deviceOut->get();
  unsigned long long n = indices.size();
  int bytes = int(elementBytes);
  void *arguments[] = {&data, &indicesPointer, &n, &bytes, &outPointer};
  if (Status status = launch(kernels->gather, n, arguments); !status.isOk())
    return status;
  // The copy waits for the kernel: both are on the legacy default stream.
  if (Status status = api.check(
          api.cuMemcpyDtoH(gathered.data(), outPointer, gathered.size()),
          "cuMemcpyDtoH(sampled elements)");
      !status.isOk())
    return status;
  return gathered;
}
