//===- CublasLt.cpp - GEMM steps through cuBLASLt ---------------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Cuda/CublasLt.h"

#include "DynamicLibrary.h"

#include <cublasLt.h>

using namespace kopt::runtime;

/// cuBLASLt functions kopt uses; none has a versioned name in cuBLASLt 13.
#define KOPT_CUBLASLT_SYMBOLS(X)                                               \
  X(cublasLtGetVersion)                                                        \
  X(cublasLtGetStatusName)                                                     \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)                                          \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmul)

namespace {
struct CublasLtLibrary {
#define KOPT_DECLARE_CUBLASLT_FUNCTION(symbol)                                 \
  decltype(&::symbol) symbol = nullptr;
  KOPT_CUBLASLT_SYMBOLS(KOPT_DECLARE_CUBLASLT_FUNCTION)
#undef KOPT_DECLARE_CUBLASLT_FUNCTION

  Status check(cublasStatus_t status, std::string_view call) const {
    if (status == CUBLAS_STATUS_SUCCESS)
      return Status::success();
    return Status::error(StatusCode::Internal,
                         std::string(call) +
                             " failed: " + cublasLtGetStatusName(status) +
                             " (" + cublasLtGetStatusString(status) + ")");
  }
};

struct CublasLtLoad {
  std::unique_ptr<CublasLtLibrary> library;
  Status error;
};
} // namespace

static CublasLtLoad loadCublasLtOnce() {
  CublasLtLoad load;
  std::vector<std::string> candidates = {"libcublasLt.so.13"};
  for (const std::string &root : dynlib::getCudaRoots())
    for (const char *lib : {"/lib64/", "/lib/"})
      candidates.push_back(root + lib + "libcublasLt.so.13");
  auto handle = dynlib::openFirstLibrary(
      candidates, "cuBLASLt (libcublasLt.so.13) not found: install the CUDA "
                  "13 toolkit or set CUDA_HOME");
  if (!handle) {
    load.error = handle.status();
    return load;
  }
  auto library = std::make_unique<CublasLtLibrary>();
#define KOPT_RESOLVE_CUBLASLT_SYMBOL(symbol)                                   \
  library->symbol = reinterpret_cast<decltype(library->symbol)>(               \
      dynlib::lookupSymbol(*handle, #symbol));                                 \
  if (!library->symbol) {                                                      \
    load.error =                                                               \
        Status::error(StatusCode::Unavailable, "cuBLASLt lacks " #symbol);     \
    return load;                                                               \
  }
  KOPT_CUBLASLT_SYMBOLS(KOPT_RESOLVE_CUBLASLT_SYMBOL)
#undef KOPT_RESOLVE_CUBLASLT_SYMBOL
  load.library = std::move(library);
  return load;
}

static Result<const CublasLtLibrary *> loadCublasLt() {
  static const CublasLtLoad load = loadCublasLtOnce();
  if (!load.library)
    return load.error;
  return load.library.get();
}

Result<size_t> kopt::runtime::getCublasLtVersion() {
  auto library = loadCublasLt();
  if (!library)
    return library.status();
  return (*library)->cublasLtGetVersion();
}

//===----------------------------------------------------------------------===//
// CublasLtGemm
//===----------------------------------------------------------------------===//

struct CublasLtGemm::Impl {
  const CublasLtLibrary *lt = nullptr;
  GemmStep step;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t operation = nullptr;
  /// Layouts of cuBLASLt's A (our B), B (our A) and C/D (our C).
  cublasLtMatrixLayout_t layoutA = nullptr, layoutB = nullptr,
                         layoutC = nullptr;
  cublasLtMatmulAlgo_t algorithm = {};

  ~Impl() {
    if (!lt)
      return;
    for (cublasLtMatrixLayout_t layout : {layoutA, layoutB, layoutC})
      if (layout)
        lt->cublasLtMatrixLayoutDestroy(layout);
    if (operation)
      lt->cublasLtMatmulDescDestroy(operation);
    if (handle)
      lt->cublasLtDestroy(handle);
  }

  /// A column-major `rows` x `cols` fp32 layout with leading dimension
  /// `ld`, repeated for each batch entry right after the previous one.
  Result<cublasLtMatrixLayout_t> makeLayout(int64_t rows, int64_t cols,
                                            int64_t ld) {
    cublasLtMatrixLayout_t layout = nullptr;
    if (Status status = lt->check(
            lt->cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, uint64_t(rows),
                                           uint64_t(cols), ld),
            "cublasLtMatrixLayoutCreate");
        !status.isOk())
      return status;
    int32_t batch = int32_t(step.batch);
    int64_t stride = rows * cols;
    if (Status status =
            lt->check(lt->cublasLtMatrixLayoutSetAttribute(
                          layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                          sizeof(batch)),
                      "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
        !status.isOk()) {
      lt->cublasLtMatrixLayoutDestroy(layout);
      return status;
    }
    if (Status status =
            lt->check(lt->cublasLtMatrixLayoutSetAttribute(
                          layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                          &stride, sizeof(stride)),
                      "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
        !status.isOk()) {
      lt->cublasLtMatrixLayoutDestroy(layout);
      return status;
    }
    return layout;
  }

  Status setOperation(cublasLtMatmulDescAttributes_t attribute,
                      const void *value, size_t size, std::string_view what) {
    return lt->check(
        lt->cublasLtMatmulDescSetAttribute(operation, attribute, value, size),
        "cublasLtMatmulDescSetAttribute(" + std::string(what) + ")");
  }
};

CublasLtGemm::CublasLtGemm(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
CublasLtGemm::~CublasLtGemm() = default;

static Result<cublasLtEpilogue_t> getEpilogue(const GemmStep &step) {
  bool bias = !step.bias.empty();
  if (step.activation == "none")
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  if (step.activation == "relu")
    return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  if (step.activation == "gelu")
    return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  return Status::error(StatusCode::InvalidArgument,
                       "unknown GEMM activation '" + step.activation + "'");
}

Result<std::unique_ptr<CublasLtGemm>>
CublasLtGemm::create(const CudaContext &context, const GemmStep &step,
                     ElementType elementType) {
  if (elementType != ElementType::F32)
    return Status::error(StatusCode::InvalidArgument,
                         "GEMM steps run in fp32 only; '" + step.c + "' is " +
                             stringifyElementType(elementType));
  if (step.batch < 1 || step.m < 1 || step.n < 1 || step.k < 1 ||
      step.batch > INT32_MAX)
    return Status::error(StatusCode::InvalidArgument,
                         "GEMM sizes out of range");
  auto epilogue = getEpilogue(step);
  if (!epilogue)
    return epilogue.status();
  auto library = loadCublasLt();
  if (!library)
    return library.status();
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;

  auto impl = std::make_unique<Impl>();
  impl->lt = *library;
  impl->step = step;
  const CublasLtLibrary &lt = **library;
  if (Status status =
          lt.check(lt.cublasLtCreate(&impl->handle), "cublasLtCreate");
      !status.isOk())
    return status;
  if (Status status =
          lt.check(lt.cublasLtMatmulDescCreate(&impl->operation,
                                               CUBLAS_COMPUTE_32F, CUDA_R_32F),
                   "cublasLtMatmulDescCreate");
      !status.isOk())
    return status;

  // Row-major C (M x N) = op(A) (M x K) · op(B) (K x N) is column-major
  // C^T (N x M) = op(B)^T · op(A)^T: cuBLASLt's A is our B, its B our A,
  // and its m, n are our N, M. A matrix stored row-major R x C reads as
  // column-major C x R; a transposed operand is flagged with OP_T.
  int64_t m = step.m, n = step.n, k = step.k;
  cublasOperation_t transA = step.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t transB = step.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (Status status = impl->setOperation(CUBLASLT_MATMUL_DESC_TRANSA, &transA,
                                         sizeof(transA), "TRANSA");
      !status.isOk())
    return status;
  if (Status status = impl->setOperation(CUBLASLT_MATMUL_DESC_TRANSB, &transB,
                                         sizeof(transB), "TRANSB");
      !status.isOk())
    return status;
  cublasLtEpilogue_t epilogueValue = *epilogue;
  if (Status status =
          impl->setOperation(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogueValue,
                             sizeof(epilogueValue), "EPILOGUE");
      !status.isOk())
    return status;
  if (!step.bias.empty()) {
    cudaDataType_t biasType = CUDA_R_32F;
    if (Status status =
            impl->setOperation(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                               sizeof(biasType), "BIAS_DATA_TYPE");
        !status.isOk())
      return status;
    // One bias vector for every batch entry.
    int64_t biasStride = 0;
    if (Status status = impl->setOperation(
            CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &biasStride,
            sizeof(biasStride), "BIAS_BATCH_STRIDE");
        !status.isOk())
      return status;
  }

  // Our B, stored K x N (or N x K when transposed).
  auto layoutA =
      step.transposeB ? impl->makeLayout(k, n, k) : impl->makeLayout(n, k, n);
  if (!layoutA)
    return layoutA.status();
  impl->layoutA = *layoutA;
  // Our A, stored M x K (or K x M when transposed).
  auto layoutB =
      step.transposeA ? impl->makeLayout(m, k, m) : impl->makeLayout(k, m, k);
  if (!layoutB)
    return layoutB.status();
  impl->layoutB = *layoutB;
  auto layoutC = impl->makeLayout(n, m, n);
  if (!layoutC)
    return layoutC.status();
  impl->layoutC = *layoutC;

  cublasLtMatmulPreference_t preference = nullptr;
  if (Status status = lt.check(lt.cublasLtMatmulPreferenceCreate(&preference),
                               "cublasLtMatmulPreferenceCreate");
      !status.isOk())
    return status;
  uint64_t workspace = kWorkspaceBytes;
  cublasStatus_t heuristic = lt.cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof(workspace));
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  if (heuristic == CUBLAS_STATUS_SUCCESS)
    heuristic = lt.cublasLtMatmulAlgoGetHeuristic(
        impl->handle, impl->operation, impl->layoutA, impl->layoutB,
        impl->layoutC, impl->layoutC, preference, 1, &result, &found);
  lt.cublasLtMatmulPreferenceDestroy(preference);
  if (Status status = lt.check(heuristic, "cublasLtMatmulAlgoGetHeuristic");
      !status.isOk())
    return status;
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return Status::error(StatusCode::Unsupported,
                         "cuBLASLt has no algorithm for the GEMM " +
                             std::to_string(m) + "x" + std::to_string(n) + "x" +
                             std::to_string(k) + " (batch " +
                             std::to_string(step.batch) + ", activation " +
                             step.activation + ")");
  impl->algorithm = result.algo;
  return std::unique_ptr<CublasLtGemm>(new CublasLtGemm(std::move(impl)));
}

Status CublasLtGemm::run(CUstream stream, const GemmBuffers &buffers,
                         CUdeviceptr workspace) const {
  const CublasLtLibrary &lt = *impl->lt;
  if (!impl->step.bias.empty()) {
    const void *bias = reinterpret_cast<const void *>(buffers.bias);
    if (Status status = impl->setOperation(CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                           &bias, sizeof(bias), "BIAS_POINTER");
        !status.isOk())
      return status;
  }
  float alpha = static_cast<float>(impl->step.scale), beta = 0.0f;
  auto pointer = [](CUdeviceptr address) {
    return reinterpret_cast<void *>(address);
  };
  return lt.check(lt.cublasLtMatmul(
                      impl->handle, impl->operation, &alpha, pointer(buffers.b),
                      impl->layoutA, pointer(buffers.a), impl->layoutB, &beta,
                      pointer(buffers.c), impl->layoutC, pointer(buffers.c),
                      impl->layoutC, &impl->algorithm, pointer(workspace),
                      kWorkspaceBytes, reinterpret_cast<cudaStream_t>(stream)),
                  "cublasLtMatmul");
}

/// The key of the shared GEMM workspace in `CudaContext::getShared`.
static constexpr std::string_view kGemmWorkspaceKey = "kopt.gemm_workspace";

Result<DeviceBuffer *>
kopt::runtime::getSharedGemmWorkspace(const CudaContext &context) {
  if (Status status = context.makeCurrent(); !status.isOk())
    return status;
  auto shared = context.getShared(
      kGemmWorkspaceKey, [&]() -> Result<std::shared_ptr<void>> {
        auto buffer =
            DeviceBuffer::allocate(context, CublasLtGemm::kWorkspaceBytes);
        if (!buffer)
          return buffer.status().withContext("the shared GEMM workspace");
        return std::shared_ptr<void>(
            std::make_shared<DeviceBuffer>(std::move(*buffer)));
      });
  if (!shared)
    return shared.status();
  return static_cast<DeviceBuffer *>(shared->get());
}

int64_t kopt::runtime::getSharedGemmWorkspaceBytes(const CudaContext &context) {
  std::shared_ptr<void> shared = context.findShared(kGemmWorkspaceKey);
  return shared ? static_cast<DeviceBuffer *>(shared.get())->getBytes() : 0;
}
