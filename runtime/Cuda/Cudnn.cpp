//===- Cudnn.cpp - Convolution steps through cuDNN --------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/Cudnn.h"

#include "DynamicLibrary.h"
#include "kopt/Runtime/Cuda/Nvrtc.h"

#include <cudnn.h>

#include <algorithm>

using namespace kopt::runtime;

/// cuDNN functions kopt uses (the legacy convolution API, still in cuDNN 9).
#define KOPT_CUDNN_SYMBOLS(X)                                                  \
  X(cudnnGetVersion)                                                           \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnSetTensor4dDescriptor)                                                \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnSetFilter4dDescriptor)                                                \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnSetConvolution2dDescriptor)                                           \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnGetConvolution2dForwardOutputDim)                                     \
  X(cudnnGetConvolutionForwardAlgorithmMaxCount)                               \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                    \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                   \
  X(cudnnConvolutionForward)

namespace {
struct CudnnLibrary {
#define KOPT_DECLARE_CUDNN_FUNCTION(symbol)                                    \
  decltype(&::symbol) symbol = nullptr;
  KOPT_CUDNN_SYMBOLS(KOPT_DECLARE_CUDNN_FUNCTION)
#undef KOPT_DECLARE_CUDNN_FUNCTION

  Status check(cudnnStatus_t status, std::string_view call) const {
    if (status == CUDNN_STATUS_SUCCESS)
      return Status::success();
    return Status::error(StatusCode::Internal,
                         std::string(call) +
                             " failed: " + cudnnGetErrorString(status) + " (" +
                             std::to_string(int(status)) + ")");
  }
};

struct CudnnLoad {
  std::unique_ptr<CudnnLibrary> library;
  Status error;
};
} // namespace

static CudnnLoad loadCudnnOnce() {
  CudnnLoad load;
  std::vector<std::string> candidates = {"libcudnn.so.9"};
  std::string dir = dynlib::getEnvironment("KOPT_CUDNN_DIR");
  if (!dir.empty()) {
    candidates.push_back(dir + "/libcudnn.so.9");
    candidates.push_back(dir + "/lib/libcudnn.so.9");
  }
  for (const std::string &root : dynlib::getCudaRoots())
    for (const char *lib : {"/lib64/", "/lib/"})
      candidates.push_back(root + lib + "libcudnn.so.9");
  auto handle = dynlib::openFirstLibrary(
      candidates, "cuDNN 9 (libcudnn.so.9) not found: put its folder on "
                  "LD_LIBRARY_PATH or in KOPT_CUDNN_DIR");
  if (!handle) {
    load.error = handle.status();
    return load;
  }
  auto library = std::make_unique<CudnnLibrary>();
#define KOPT_RESOLVE_CUDNN_SYMBOL(symbol)                                      \
  library->symbol = reinterpret_cast<decltype(library->symbol)>(               \
      dynlib::lookupSymbol(*handle, #symbol));                                 \
  if (!library->symbol) {                                                      \
    load.error = Status::error(StatusCode::Unavailable,                        \
                               "cuDNN lacks " #symbol " (cuDNN 9 is needed)"); \
    return load;                                                               \
  }
  KOPT_CUDNN_SYMBOLS(KOPT_RESOLVE_CUDNN_SYMBOL)
#undef KOPT_RESOLVE_CUDNN_SYMBOL
  load.library = std::move(library);
  return load;
}

static Result<const CudnnLibrary *> loadCudnn() {
  static const CudnnLoad load = loadCudnnOnce();
  if (!load.library)
    return load.error;
  return load.library.get();
}

Result<size_t> kopt::runtime::getCudnnVersion() {
  auto library = loadCudnn();
  if (!library)
    return library.status();
  return (*library)->cudnnGetVersion();
}

//===----------------------------------------------------------------------===//
// CudnnConv
//===----------------------------------------------------------------------===//

/// cuDNN reads NHWC filters as KRSC (F, KH, KW, C) and has no RSCK (HWCF)
/// filter format, so an HWCF filter is transposed into a temporary before
/// every run (the filter is an input and may change between runs).
static const char *kFilterTransposeSource = R"cuda(
extern "C" __global__ void kopt_hwcf_to_fhwc(const float *__restrict__ in,
                                             float *__restrict__ out,
                                             long long kh, long long kw,
                                             long long c, long long f) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= kh * kw * c * f)
    return;
  long long ci = i % c;
  long long t = i / c;
  long long s = t % kw;
  t /= kw;
  long long r = t % kh;
  long long fi = t / kh;
  out[i] = in[((r * kw + s) * c + ci) * f + fi];
}
)cuda";

struct CudnnConv::Impl {
  const CudnnLibrary *dnn = nullptr;
  const CudaContext *context = nullptr;
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t inputDesc = nullptr, outputDesc = nullptr;
  cudnnFilterDescriptor_t filterDesc = nullptr;
  cudnnConvolutionDescriptor_t convDesc = nullptr;
  cudnnConvolutionFwdAlgo_t algorithm =
      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  DeviceBuffer workspace;
  /// For HWCF filters: the transposed copy and the kernel that makes it.
  bool transposeFilter = false;
  DeviceBuffer filterCopy;
  CUmodule module = nullptr;
  CUfunction transpose = nullptr;
  long long kh = 0, kw = 0, channels = 0, features = 0;

  ~Impl() {
    // `module` belongs to the context (`CudaContext::loadModule`).
    if (!dnn)
      return;
    if (convDesc)
      dnn->cudnnDestroyConvolutionDescriptor(convDesc);
    if (filterDesc)
      dnn->cudnnDestroyFilterDescriptor(filterDesc);
    for (cudnnTensorDescriptor_t desc : {inputDesc, outputDesc})
      if (desc)
        dnn->cudnnDestroyTensorDescriptor(desc);
    if (handle)
      dnn->cudnnDestroy(handle);
  }
};

CudnnConv::CudnnConv(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
CudnnConv::~CudnnConv() = default;

/// Checks that `value` fits cuDNN's `int` dimensions.
static bool fitsInt(int64_t value) { return value >= 1 && value <= INT32_MAX; }

Result<std::unique_ptr<CudnnConv>> CudnnConv::create(const CudaContext &context,
                                                     const ConvStep &step,
                                                     const TensorSpec &input,
                                                     const TensorSpec &filter,
                                                     const TensorSpec &output) {
  for (const TensorSpec *tensor : {&input, &filter, &output}) {
    if (tensor->elementType != ElementType::F32)
      return Status::error(StatusCode::InvalidArgument,
                           "conv steps run in fp32 only; '" + tensor->name +
                               "' is " +
                               stringifyElementType(tensor->elementType));
    if (tensor->shape.size() != 4 ||
        !std::all_of(tensor->shape.begin(), tensor->shape.end(), fitsInt))
      return Status::error(StatusCode::InvalidArgument,
                           "conv tensor '" + tensor->name +
                               "' must be 4-D with positive sizes");
  }
  for (int64_t value :
       {step.strides[0], step.strides[1], step.dilations[0], step.dilations[1]})
    if (!fitsInt(value))
      return Status::error(StatusCode::InvalidArgument,
                           "conv strides and dilations must be positive");
  bool nhwc = step.layout == "nhwc_hwcf";
  if (!nhwc && step.layout != "nchw_fchw")
    return Status::error(StatusCode::InvalidArgument,
                         "unknown conv layout '" + step.layout + "'");
  // Logical N, C, H, W of the input and F, C, KH, KW of the filter.
  const std::vector<int64_t> &in = input.shape, &fl = filter.shape;
  int64_t n = in[0], c = nhwc ? in[3] : in[1], h = nhwc ? in[1] : in[2],
          w = nhwc ? in[2] : in[3];
  int64_t f = nhwc ? fl[3] : fl[0], fc = nhwc ? fl[2] : fl[1],
          kh = nhwc ? fl[0] : fl[2], kw = nhwc ? fl[1] : fl[3];
  if (fc != c)
    return Status::error(StatusCode::InvalidArgument,
                         "conv filter '" + filter.name + "' has " +
                             std::to_string(fc) + " channels, the input '" +
                             input.name + "' " + std::to_string(c));

  auto library = loadCudnn();
  if (!library)
    return library.status();
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  const CudnnLibrary &dnn = **library;
  auto impl = std::make_unique<Impl>();
  impl->dnn = &dnn;
  impl->context = &context;
  if (Status status = dnn.check(dnn.cudnnCreate(&impl->handle), "cudnnCreate");
      !status.isOk())
    return status;
  cudnnTensorFormat_t format = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  if (Status status =
          dnn.check(dnn.cudnnCreateTensorDescriptor(&impl->inputDesc),
                    "cudnnCreateTensorDescriptor");
      !status.isOk())
    return status;
  if (Status status = dnn.check(dnn.cudnnSetTensor4dDescriptor(
                                    impl->inputDesc, format, CUDNN_DATA_FLOAT,
                                    int(n), int(c), int(h), int(w)),
                                "cudnnSetTensor4dDescriptor(input)");
      !status.isOk())
    return status;
  if (Status status =
          dnn.check(dnn.cudnnCreateFilterDescriptor(&impl->filterDesc),
                    "cudnnCreateFilterDescriptor");
      !status.isOk())
    return status;
  if (Status status = dnn.check(dnn.cudnnSetFilter4dDescriptor(
                                    impl->filterDesc, CUDNN_DATA_FLOAT, format,
                                    int(f), int(c), int(kh), int(kw)),
                                "cudnnSetFilter4dDescriptor");
      !status.isOk())
    return status;
  if (Status status =
          dnn.check(dnn.cudnnCreateConvolutionDescriptor(&impl->convDesc),
                    "cudnnCreateConvolutionDescriptor");
      !status.isOk())
    return status;
  // kopt's convolutions are cross-correlations with no padding.
  if (Status status = dnn.check(
          dnn.cudnnSetConvolution2dDescriptor(
              impl->convDesc, 0, 0, int(step.strides[0]), int(step.strides[1]),
              int(step.dilations[0]), int(step.dilations[1]),
              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
      !status.isOk())
    return status;
  // CUDNN_DEFAULT_MATH lets fp32 convolutions use TF32 tensor cores on
  // Ampere and newer; FMA math keeps full fp32 precision.
  if (Status status = dnn.check(
          dnn.cudnnSetConvolutionMathType(impl->convDesc, CUDNN_FMA_MATH),
          "cudnnSetConvolutionMathType");
      !status.isOk())
    return status;

  int on = 0, oc = 0, oh = 0, ow = 0;
  if (Status status = dnn.check(dnn.cudnnGetConvolution2dForwardOutputDim(
                                    impl->convDesc, impl->inputDesc,
                                    impl->filterDesc, &on, &oc, &oh, &ow),
                                "cudnnGetConvolution2dForwardOutputDim");
      !status.isOk())
    return status;
  std::vector<int64_t> expected = nhwc ? std::vector<int64_t>{on, oh, ow, oc}
                                       : std::vector<int64_t>{on, oc, oh, ow};
  if (expected != output.shape)
    return Status::error(StatusCode::InvalidArgument,
                         "conv output '" + output.name +
                             "' has the wrong shape for its input, filter, "
                             "strides and dilations");
  if (Status status =
          dnn.check(dnn.cudnnCreateTensorDescriptor(&impl->outputDesc),
                    "cudnnCreateTensorDescriptor");
      !status.isOk())
    return status;
  if (Status status = dnn.check(
          dnn.cudnnSetTensor4dDescriptor(impl->outputDesc, format,
                                         CUDNN_DATA_FLOAT, on, oc, oh, ow),
          "cudnnSetTensor4dDescriptor(output)");
      !status.isOk())
    return status;

  // The heuristics rank algorithms; take the best that runs with FMA math
  // on the caller's stream. The FFT algorithms run part of their work on
  // cuDNN's own streams (seen on an H200: fft2d_r2c on a second stream),
  // which the evaluator's launch accounting rightly rejects.
  int maxCount = 0;
  if (Status status = dnn.check(dnn.cudnnGetConvolutionForwardAlgorithmMaxCount(
                                    impl->handle, &maxCount),
                                "cudnnGetConvolutionForwardAlgorithmMaxCount");
      !status.isOk())
    return status;
  std::vector<cudnnConvolutionFwdAlgoPerf_t> results(
      size_t(std::max(maxCount, 1)));
  int returned = 0;
  if (Status status = dnn.check(
          dnn.cudnnGetConvolutionForwardAlgorithm_v7(
              impl->handle, impl->inputDesc, impl->filterDesc, impl->convDesc,
              impl->outputDesc, int(results.size()), &returned, results.data()),
          "cudnnGetConvolutionForwardAlgorithm_v7");
      !status.isOk())
    return status;
  auto rankedEnd =
      results.begin() + std::clamp(returned, 0, int(results.size()));
  auto chosen = std::find_if(
      results.begin(), rankedEnd,
      [](const cudnnConvolutionFwdAlgoPerf_t &result) {
        return result.status == CUDNN_STATUS_SUCCESS &&
               result.algo != CUDNN_CONVOLUTION_FWD_ALGO_FFT &&
               result.algo != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
               result.mathType != CUDNN_TENSOR_OP_MATH &&
               result.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
      });
  if (chosen == rankedEnd)
    return Status::error(StatusCode::Unsupported,
                         "cuDNN has no fp32 FMA algorithm for conv output '" +
                             output.name + "'");
  impl->algorithm = chosen->algo;
  size_t workspaceBytes = 0;
  if (Status status = dnn.check(
          dnn.cudnnGetConvolutionForwardWorkspaceSize(
              impl->handle, impl->inputDesc, impl->filterDesc, impl->convDesc,
              impl->outputDesc, impl->algorithm, &workspaceBytes),
          "cudnnGetConvolutionForwardWorkspaceSize");
      !status.isOk())
    return status;
  auto workspace = DeviceBuffer::allocate(context, int64_t(workspaceBytes));
  if (!workspace)
    return workspace.status();
  impl->workspace = std::move(*workspace);

  if (nhwc) {
    impl->transposeFilter = true;
    impl->kh = kh;
    impl->kw = kw;
    impl->channels = c;
    impl->features = f;
    std::optional<int64_t> filterBytes = filter.getBytes();
    if (!filterBytes)
      return Status::error(StatusCode::OutOfRange,
                           "conv filter '" + filter.name + "' is too large");
    auto copy = DeviceBuffer::allocate(context, *filterBytes);
    if (!copy)
      return copy.status();
    impl->filterCopy = std::move(*copy);
    auto compiled = compileCuda(kFilterTransposeSource, "kopt_hwcf_to_fhwc.cu",
                                context.getDeviceInfo().getArch());
    if (!compiled)
      return compiled.status();
    const CudaDriver &driver = context.getDriver();
    auto module = context.loadModule(compiled->cubin);
    if (!module)
      return module.status().withContext("the filter transpose");
    impl->module = *module;
    if (Status status = driver.check(
            driver.cuModuleGetFunction(&impl->transpose, impl->module,
                                       "kopt_hwcf_to_fhwc"),
            "cuModuleGetFunction(kopt_hwcf_to_fhwc)");
        !status.isOk())
      return status;
  }
  return std::unique_ptr<CudnnConv>(new CudnnConv(std::move(impl)));
}

Status CudnnConv::run(CUstream stream, const ConvBuffers &buffers) const {
  const CudnnLibrary &dnn = *impl->dnn;
  CUdeviceptr filter = buffers.filter;
  if (impl->transposeFilter) {
    const CudaDriver &driver = impl->context->getDriver();
    CUdeviceptr in = buffers.filter, out = impl->filterCopy.get();
    long long total = impl->kh * impl->kw * impl->channels * impl->features;
    void *args[] = {
        &in, &out, &impl->kh, &impl->kw, &impl->channels, &impl->features};
    unsigned blocks = unsigned((total + 255) / 256);
    if (Status status = driver.check(
            driver.cuLaunchKernel(impl->transpose, blocks, 1, 1, 256, 1, 1, 0,
                                  stream, args, nullptr),
            "cuLaunchKernel(kopt_hwcf_to_fhwc)");
        !status.isOk())
      return status;
    filter = out;
  }
  if (Status status =
          dnn.check(dnn.cudnnSetStream(impl->handle,
                                       reinterpret_cast<cudaStream_t>(stream)),
                    "cudnnSetStream");
      !status.isOk())
    return status;
  float alpha = 1.0f, beta = 0.0f;
  return dnn.check(
      dnn.cudnnConvolutionForward(
          impl->handle, &alpha, impl->inputDesc,
          reinterpret_cast<const void *>(buffers.input), impl->filterDesc,
          reinterpret_cast<const void *>(filter), impl->convDesc,
          impl->algorithm, reinterpret_cast<void *>(impl->workspace.get()),
          size_t(impl->workspace.getBytes()), &beta, impl->outputDesc,
          reinterpret_cast<void *>(buffers.output)),
      "cudnnConvolutionForward");
}
