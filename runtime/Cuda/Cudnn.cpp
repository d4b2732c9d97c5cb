//===- Cudnn.cpp - Convolution steps through cuDNN --------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/Cudnn.h"

#include "kopt/Runtime/ConvLayout.h"

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
  X(cudnnSetTensorNdDescriptorEx)                                              \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnSetFilterNdDescriptor)                                                \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnSetConvolutionNdDescriptor)                                           \
  X(cudnnSetConvolutionGroupCount)                                             \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnGetConvolutionNdForwardOutputDim)                                     \
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

/// cuDNN reads a grouped filter as [K][C/G][spatial...] (channels first) or
/// [K][spatial...][C/G] (channels last), K = G * F with the group outer.
/// Filters in other orders (HWCF, HWC, FGCHW, ...) are copied into that
/// order before every run (the filter is an input and may change between
/// runs); the copy reads dimension i of the packed order at `stride[i]`.
static const char *kFilterPackSource = R"cuda(
struct FilterDims {
  long long size[6];
  long long stride[6];
};
extern "C" __global__ void kopt_pack_filter(const float *__restrict__ in,
                                            float *__restrict__ out,
                                            long long total, FilterDims dims) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= total)
    return;
  long long rest = i, offset = 0;
  for (int d = 5; d >= 0; --d) {
    offset += (rest % dims.size[d]) * dims.stride[d];
    rest /= dims.size[d];
  }
  out[i] = in[offset];
}
)cuda";

namespace {
/// The kernel's `FilterDims`, dimensions in order and padded with size 1.
struct FilterDims {
  long long size[6];
  long long stride[6];
};
} // namespace

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
  /// For filters not in cuDNN's order: the packed copy and the kernel that
  /// makes it.
  bool packFilter = false;
  DeviceBuffer filterCopy;
  CUmodule module = nullptr;
  CUfunction pack = nullptr;
  long long filterElements = 0;
  FilterDims filterDims = {};

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

/// cuDNN's logical dimensions of a tensor: N (or K), C, then the spatial
/// sizes, with a leading 1 for 1-D convolutions (cuDNN needs at least 2).
static std::vector<int> logicalDims(int64_t outer, int64_t channels,
                                    const std::vector<int64_t> &spatial) {
  std::vector<int> dims = {int(outer), int(channels)};
  if (spatial.size() == 1)
    dims.push_back(1);
  for (int64_t size : spatial)
    dims.push_back(int(size));
  return dims;
}

/// Loads the kernel that packs filters into cuDNN's order.
static Status loadFilterPack(const CudaContext &context,
                             CudnnConv::Impl &impl) {
  auto compiled = compileCuda(kFilterPackSource, "kopt_pack_filter.cu",
                              context.getDeviceInfo().getArch());
  if (!compiled)
    return compiled.status();
  auto module = context.loadModule(compiled->cubin);
  if (!module)
    return module.status().withContext("the filter copy");
  impl.module = *module;
  const CudaDriver &driver = context.getDriver();
  return driver.check(
      driver.cuModuleGetFunction(&impl.pack, impl.module, "kopt_pack_filter"),
      "cuModuleGetFunction(kopt_pack_filter)");
}

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
    if (!std::all_of(tensor->shape.begin(), tensor->shape.end(), fitsInt))
      return Status::error(StatusCode::InvalidArgument,
                           "conv tensor '" + tensor->name +
                               "' has sizes cuDNN cannot take");
  }
  Result<ConvProblem> described = describeConv(step, input, filter, output);
  if (!described)
    return described.status();
  const ConvProblem &problem = *described;
  // Strides and dilations are at least 1; padding may be 0.
  auto fitsPadding = [](int64_t value) {
    return value >= 0 && value <= INT32_MAX;
  };
  bool fits =
      std::all_of(problem.strides.begin(), problem.strides.end(), fitsInt) &&
      std::all_of(problem.dilations.begin(), problem.dilations.end(),
                  fitsInt) &&
      std::all_of(problem.padding.begin(), problem.padding.end(), fitsPadding);
  if (!fits)
    return Status::error(StatusCode::InvalidArgument,
                         "conv strides, dilations and padding must fit an int");
  int64_t channels = problem.groups * problem.channelsPerGroup;
  int64_t features = problem.groups * problem.featuresPerGroup;
  if (!fitsInt(channels) || !fitsInt(features))
    return Status::error(StatusCode::InvalidArgument,
                         "conv '" + output.name + "' has too many channels");

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
  cudnnTensorFormat_t format =
      problem.channelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  std::vector<int> inputDims =
      logicalDims(problem.batch, channels, problem.inputSpatial);
  std::vector<int> filterDims =
      logicalDims(features, problem.channelsPerGroup, problem.filterSpatial);
  int nbDims = int(inputDims.size());
  if (Status status =
          dnn.check(dnn.cudnnCreateTensorDescriptor(&impl->inputDesc),
                    "cudnnCreateTensorDescriptor");
      !status.isOk())
    return status;
  if (Status status = dnn.check(dnn.cudnnSetTensorNdDescriptorEx(
                                    impl->inputDesc, format, CUDNN_DATA_FLOAT,
                                    nbDims, inputDims.data()),
                                "cudnnSetTensorNdDescriptorEx(input)");
      !status.isOk())
    return status;
  if (Status status =
          dnn.check(dnn.cudnnCreateFilterDescriptor(&impl->filterDesc),
                    "cudnnCreateFilterDescriptor");
      !status.isOk())
    return status;
  if (Status status = dnn.check(
          dnn.cudnnSetFilterNdDescriptor(impl->filterDesc, CUDNN_DATA_FLOAT,
                                         format, nbDims, filterDims.data()),
          "cudnnSetFilterNdDescriptor");
      !status.isOk())
    return status;
  if (Status status =
          dnn.check(dnn.cudnnCreateConvolutionDescriptor(&impl->convDesc),
                    "cudnnCreateConvolutionDescriptor");
      !status.isOk())
    return status;
  // kopt's convolutions are cross-correlations, zero-padded symmetrically.
  std::vector<int> pads, strides, dilations;
  if (problem.strides.size() == 1) {
    pads.push_back(0);
    strides.push_back(1);
    dilations.push_back(1);
  }
  for (size_t i = 0; i < problem.strides.size(); ++i) {
    pads.push_back(int(problem.padding[i]));
    strides.push_back(int(problem.strides[i]));
    dilations.push_back(int(problem.dilations[i]));
  }
  if (Status status = dnn.check(dnn.cudnnSetConvolutionNdDescriptor(
                                    impl->convDesc, nbDims - 2, pads.data(),
                                    strides.data(), dilations.data(),
                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                                "cudnnSetConvolutionNdDescriptor");
      !status.isOk())
    return status;
  if (Status status = dnn.check(dnn.cudnnSetConvolutionGroupCount(
                                    impl->convDesc, int(problem.groups)),
                                "cudnnSetConvolutionGroupCount");
      !status.isOk())
    return status;
  // CUDNN_DEFAULT_MATH lets fp32 convolutions use TF32 tensor cores on
  // Ampere and newer; FMA math keeps full fp32 precision.
  if (Status status = dnn.check(
          dnn.cudnnSetConvolutionMathType(impl->convDesc, CUDNN_FMA_MATH),
          "cudnnSetConvolutionMathType");
      !status.isOk())
    return status;

  std::vector<int> outputDims(size_t(nbDims), 0);
  if (Status status =
          dnn.check(dnn.cudnnGetConvolutionNdForwardOutputDim(
                        impl->convDesc, impl->inputDesc, impl->filterDesc,
                        nbDims, outputDims.data()),
                    "cudnnGetConvolutionNdForwardOutputDim");
      !status.isOk())
    return status;
  if (outputDims != logicalDims(problem.batch, features, problem.outputSpatial))
    return Status::error(StatusCode::InvalidArgument,
                         "conv output '" + output.name +
                             "' has the wrong shape for its input, filter, "
                             "strides and dilations");
  if (Status status =
          dnn.check(dnn.cudnnCreateTensorDescriptor(&impl->outputDesc),
                    "cudnnCreateTensorDescriptor");
      !status.isOk())
    return status;
  if (Status status = dnn.check(dnn.cudnnSetTensorNdDescriptorEx(
                                    impl->outputDesc, format, CUDNN_DATA_FLOAT,
                                    nbDims, outputDims.data()),
                                "cudnnSetTensorNdDescriptorEx(output)");
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

  if (!problem.isFilterPacked()) {
    impl->packFilter = true;
    std::optional<int64_t> filterBytes = filter.getBytes();
    if (!filterBytes || problem.filterSizes.size() > 6)
      return Status::error(StatusCode::OutOfRange,
                           "conv filter '" + filter.name + "' is too large");
    impl->filterElements = *filterBytes / int64_t(sizeof(float));
    size_t pad = 6 - problem.filterSizes.size();
    for (size_t i = 0; i < 6; ++i) {
      bool padded = i < pad;
      impl->filterDims.size[i] = padded ? 1 : problem.filterSizes[i - pad];
      impl->filterDims.stride[i] = padded ? 0 : problem.filterStrides[i - pad];
    }
    auto copy = DeviceBuffer::allocate(context, *filterBytes);
    if (!copy)
      return copy.status();
    impl->filterCopy = std::move(*copy);
    if (Status status = loadFilterPack(context, *impl); !status.isOk())
      return status;
  }
  return std::unique_ptr<CudnnConv>(new CudnnConv(std::move(impl)));
}

Status CudnnConv::run(CUstream stream, const ConvBuffers &buffers) const {
  const CudnnLibrary &dnn = *impl->dnn;
  CUdeviceptr filter = buffers.filter;
  if (impl->packFilter) {
    const CudaDriver &driver = impl->context->getDriver();
    CUdeviceptr in = buffers.filter, out = impl->filterCopy.get();
    long long total = impl->filterElements;
    void *args[] = {&in, &out, &total, &impl->filterDims};
    unsigned blocks = unsigned((total + 255) / 256);
    if (Status status =
            driver.check(driver.cuLaunchKernel(impl->pack, blocks, 1, 1, 256, 1,
                                               1, 0, stream, args, nullptr),
                         "cuLaunchKernel(kopt_pack_filter)");
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
