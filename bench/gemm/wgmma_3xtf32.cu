// Standalone 3xTF32 GEMM on Hopper's wgmma, with a fused bias + ReLU epilogue.
//
//   C[M,N] = relu(A[M,K] * W[N,K]^T + bias[N]),  fp32 in and out,
//   A and W row-major (both K-major, nn.Linear's layout).
//
// Each fp32 operand x is split into big = tf32(x) and small = tf32(x - big);
// the product accumulates small_a*big_b + big_a*small_b + big_a*big_b in fp32
// on wgmma.m64nNk8.f32.tf32.tf32 (A and B from shared memory).
//
// One CTA computes a 128 x BN tile with three warpgroups:
//   warp 0        issues the bulk tensor copies (TMA, 128B or 64B swizzle)
//                 of the raw fp32 A and W tiles into the stage's "big" buffer;
//   warps 1..3    split the stage in place: big buffer <- tf32(x), small
//                 buffer <- tf32(x - big) (elementwise, so the swizzled layout
//                 is kept), then fence the async proxy and arrive;
//   warpgroups 1,2 each issue the wgmmas for 64 rows x BN columns and apply
//                 the epilogue from registers.
// Stages are guarded by three mbarriers each: full (TMA bytes landed),
// split (operands split), empty (wgmmas that read the stage have completed).
//
// Build: nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 \
//          -o wgmma_3xtf32 wgmma_3xtf32.cu -ldl
// Run:   ./wgmma_3xtf32 [config] [M N K]    (config -1 = cuBLAS only)
// cuBLAS is loaded at run time (libcublas.so.13) for the comparison; without
// it only the wgmma kernel is timed.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                               \
  do {                                                                         \
    cudaError_t err_ = (x);                                                    \
    if (err_ != cudaSuccess) {                                                 \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,          \
                   cudaGetErrorString(err_));                                  \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace {

constexpr int kBM = 128;
constexpr int kThreads = 384;

//===----------------------------------------------------------------------===//
// Device helpers: mbarriers, TMA, wgmma.
//===----------------------------------------------------------------------===//

__device__ __forceinline__ uint32_t smemAddr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbarInit(uint64_t *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smemAddr(bar)),
               "r"(count)
               : "memory");
}

__device__ __forceinline__ void mbarArrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smemAddr(bar))
               : "memory");
}

__device__ __forceinline__ void mbarExpectTx(uint64_t *bar, unsigned bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
          smemAddr(bar)),
      "r"(bytes)
      : "memory");
}

// Waits until the phase of the given parity has completed. Traps after a
// very long spin so that a protocol bug ends the run instead of hanging it.
__device__ __forceinline__ void mbarWait(uint64_t *bar, unsigned parity) {
  uint32_t addr = smemAddr(bar);
  for (long long spin = 0;; ++spin) {
    uint32_t done;
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n"
                 "}\n"
                 : "=r"(done)
                 : "r"(addr), "r"(parity)
                 : "memory");
    if (done)
      return;
    if (spin > (1ll << 28))
      __trap();
  }
}

__device__ __forceinline__ void tmaLoad2d(void *dst, const CUtensorMap *map,
                                          uint64_t *bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
               "complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
                   smemAddr(dst)),
               "l"(reinterpret_cast<uint64_t>(map)), "r"(smemAddr(bar)),
               "r"(c0), "r"(c1)
               : "memory");
}

__device__ __forceinline__ void fenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void wgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

template <int Regs> __device__ __forceinline__ void setMaxRegsInc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
}
template <int Regs> __device__ __forceinline__ void setMaxRegsDec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
}

// Keeps the compiler from moving accumulator reads/writes across wgmma.
__device__ __forceinline__ void fenceReg(float &r) {
  asm volatile("" : "+f"(r)::"memory");
}

// Shared-memory matrix descriptor for a K-major operand tile whose rows are
// RowBytes long (128 -> 128B swizzle, 64 -> 64B swizzle), 8-row groups
// 8 * RowBytes apart.
template <int RowBytes>
__device__ __forceinline__ uint64_t makeDesc(uint32_t addr) {
  constexpr uint64_t kLayout = RowBytes == 128 ? 1 : 2;
  uint64_t desc = (addr & 0x3FFFF) >> 4;
  desc |= uint64_t(1) << 16;                    // leading offset (unused)
  desc |= uint64_t((8 * RowBytes) >> 4) << 32;  // stride offset
  desc |= kLayout << 62;
  return desc;
}

// d = A * B^T + (scaleD ? d : 0) for one m64n64k8 step, A and B K-major in shared memory.
__device__ __forceinline__ void wgmmaTf32N64(float *d, uint64_t descA,
                                              uint64_t descB, int scaleD) {
  asm volatile("{\n"
               ".reg .pred p;\n"
               "setp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n"
               "}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(descA), "l"(descB), "r"(scaleD)
               : "memory");
}

// d = A * B^T + (scaleD ? d : 0) for one m64n128k8 step, A and B K-major in shared memory.
__device__ __forceinline__ void wgmmaTf32N128(float *d, uint64_t descA,
                                              uint64_t descB, int scaleD) {
  asm volatile("{\n"
               ".reg .pred p;\n"
               "setp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n"
               "}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(descA), "l"(descB), "r"(scaleD)
               : "memory");
}

// Round to TF32 (nearest, ties away from zero) as a bit pattern.
__device__ __forceinline__ float roundTf32(float x) {
  return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u);
}

__device__ __forceinline__ void splitTf32(float4 v, float4 &b, float4 &r) {
  b.x = roundTf32(v.x);
  b.y = roundTf32(v.y);
  b.z = roundTf32(v.z);
  b.w = roundTf32(v.w);
  r.x = roundTf32(v.x - b.x);
  r.y = roundTf32(v.y - b.y);
  r.z = roundTf32(v.z - b.z);
  r.w = roundTf32(v.w - b.w);
}

// Byte offset of byte `off` of a K-major tile with RowBytes-long rows in the
// swizzled layout that the copy engine writes and wgmma reads: 16-byte chunk
// bits [4, 7) XOR row bits [7, 10) (128B) or [4, 6) XOR [7, 9) (64B).
template <int RowBytes> __device__ __forceinline__ uint32_t swizzle(uint32_t off) {
  constexpr uint32_t kMask = RowBytes == 128 ? 7 : 3;
  return off ^ (((off >> 7) & kMask) << 4);
}

//===----------------------------------------------------------------------===//
// The kernel.
//===----------------------------------------------------------------------===//

template <int BN, int BK, int Stages> struct Config {
  static constexpr int kABytes = kBM * BK * 4;
  static constexpr int kBBytes = BN * BK * 4;
  // Per stage: [bigA | bigB | smallA | smallB].
  static constexpr int kHalfBytes = kABytes + kBBytes;
  static constexpr int kStageBytes = 2 * kHalfBytes;
  static constexpr int kSmemBytes = Stages * kStageBytes + 1024;
};

template <int BN, int BK, int Stages, int PN, bool Tma>
__global__ void __launch_bounds__(kThreads, 1)
    gemm3xTf32(const __grid_constant__ CUtensorMap mapA,
               const __grid_constant__ CUtensorMap mapB,
               const float *__restrict__ a, const float *__restrict__ w,
               const float *__restrict__ bias, float *__restrict__ c, int M,
               int N, int K) {
  using Cfg = Config<BN, BK, Stages>;
  static_assert(BN % PN == 0, "partial width");
  extern __shared__ uint8_t smemRaw[];
  uint8_t *smem = reinterpret_cast<uint8_t *>(
      (reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~uintptr_t(1023));
  __shared__ __align__(8) uint64_t fullBar[Stages];
  __shared__ __align__(8) uint64_t splitBar[Stages];
  __shared__ __align__(8) uint64_t emptyBar[Stages];

  const int tid = threadIdx.x;
  const int warpGroup = tid / 128;
  const int m0 = blockIdx.x * kBM;
  const int n0 = blockIdx.y * BN;
  const int kBlocks = K / BK;
  constexpr int kSplitThreads = Tma ? 96 : 128;

  if (tid == 0) {
    for (int s = 0; s < Stages; ++s) {
      mbarInit(&fullBar[s], 1);
      mbarInit(&splitBar[s], kSplitThreads);
      mbarInit(&emptyBar[s], 256);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warpGroup == 0 && !Tma) {
    // Loaders: global -> registers -> split -> both swizzled buffers.
    constexpr int kRowVecs = BK / 4;
    constexpr int kVecsA = kBM * kRowVecs;
    constexpr int kPer = (kVecsA + BN * kRowVecs) / 128;
    static_assert(kVecsA % 128 == 0, "whole vectors per thread");
    for (int kb = 0; kb < kBlocks; ++kb) {
      const int s = kb % Stages;
      mbarWait(&emptyBar[s], ((kb / Stages) & 1) ^ 1);
      float4 v[kPer];
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int i = tid + j * 128;
        const float *src =
            i < kVecsA ? a + size_t(m0 + i / kRowVecs) * K
                       : w + size_t(n0 + (i - kVecsA) / kRowVecs) * K;
        v[j] = __ldg(reinterpret_cast<const float4 *>(src + kb * BK +
                                                      (i % kRowVecs) * 4));
      }
      uint8_t *stage = smem + s * Cfg::kStageBytes;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const uint32_t off = swizzle<BK * 4>((tid + j * 128) * 16);
        float4 b, r;
        splitTf32(v[j], b, r);
        *reinterpret_cast<float4 *>(stage + off) = b;
        *reinterpret_cast<float4 *>(stage + Cfg::kHalfBytes + off) = r;
      }
      fenceProxyAsync();
      mbarArrive(&splitBar[s]);
    }
  } else if (warpGroup == 0) {
    if (tid == 0) {
      // Copy engine issuer.
      for (int kb = 0; kb < kBlocks; ++kb) {
        int s = kb % Stages;
        mbarWait(&emptyBar[s], ((kb / Stages) & 1) ^ 1);
        uint8_t *stage = smem + s * Cfg::kStageBytes;
        mbarExpectTx(&fullBar[s], Cfg::kHalfBytes);
        tmaLoad2d(stage, &mapA, &fullBar[s], kb * BK, m0);
        tmaLoad2d(stage + Cfg::kABytes, &mapB, &fullBar[s], kb * BK, n0);
      }
    } else if (tid >= 32) {
      // Splitters: big <- tf32(x) in place, small <- tf32(x - big).
      const int st = tid - 32;
      for (int kb = 0; kb < kBlocks; ++kb) {
        int s = kb % Stages;
        mbarWait(&fullBar[s], (kb / Stages) & 1);
        float4 *big = reinterpret_cast<float4 *>(smem + s * Cfg::kStageBytes);
        float4 *small = reinterpret_cast<float4 *>(smem + s * Cfg::kStageBytes +
                                                   Cfg::kHalfBytes);
        constexpr int kVecs = Cfg::kHalfBytes / 16;
#pragma unroll 4
        for (int i = st; i < kVecs; i += kSplitThreads) {
          float4 b, r;
          splitTf32(big[i], b, r);
          big[i] = b;
          small[i] = r;
        }
        fenceProxyAsync();
        mbarArrive(&splitBar[s]);
      }
    }
  } else {

  // Consumers: warpgroup 1 -> rows 0..63, warpgroup 2 -> rows 64..127.
  // The tensor cores truncate when they add into a large accumulator, which
  // over K = 8192 leaves a biased error far above fp32's. So each k-block is
  // accumulated from zero into a partial (wgmma, scale-d = 0 first) and the
  // partial is added to the running sum with ordinary fp32 adds.
  const int cw = warpGroup - 1;
  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i)
    acc[i] = 0.f;

  const uint32_t smemBase = smemAddr(smem);
  // Each k-block runs in BN / PN column chunks: the chunk's wgmmas accumulate
  // into the partial p from zero, then p is added to acc. The other consumer
  // warpgroup keeps the tensor cores busy while one waits and adds.
  float p[PN / 2];
  for (int kb = 0; kb < kBlocks; ++kb) {
    const int s = kb % Stages;
    mbarWait(&splitBar[s], (kb / Stages) & 1);
    const uint32_t bigA = smemBase + s * Cfg::kStageBytes + cw * 64 * BK * 4;
    const uint32_t smallA = bigA + Cfg::kHalfBytes;
#pragma unroll
    for (int h = 0; h < BN / PN; ++h) {
      const uint32_t bigB = smemBase + s * Cfg::kStageBytes + Cfg::kABytes +
                            h * PN * BK * 4;
      const uint32_t smallB = bigB + Cfg::kHalfBytes;
#pragma unroll
      for (int i = 0; i < PN / 2; ++i)
        fenceReg(p[i]);
      wgmmaFence();
#pragma unroll
      for (int kk = 0; kk < BK / 8; ++kk) {
        uint64_t dBigA = makeDesc<BK * 4>(bigA + kk * 32);
        uint64_t dBigB = makeDesc<BK * 4>(bigB + kk * 32);
        uint64_t dSmallA = makeDesc<BK * 4>(smallA + kk * 32);
        uint64_t dSmallB = makeDesc<BK * 4>(smallB + kk * 32);
        if constexpr (PN == 128) {
          wgmmaTf32N128(p, dSmallA, dBigB, kk > 0);
          wgmmaTf32N128(p, dBigA, dSmallB, 1);
          wgmmaTf32N128(p, dBigA, dBigB, 1);
        } else {
          wgmmaTf32N64(p, dSmallA, dBigB, kk > 0);
          wgmmaTf32N64(p, dBigA, dSmallB, 1);
          wgmmaTf32N64(p, dBigA, dBigB, 1);
        }
      }
      wgmmaCommit();
      wgmmaWait<0>();
#pragma unroll
      for (int i = 0; i < PN / 2; ++i) {
        fenceReg(p[i]);
        acc[h * PN / 2 + i] += p[i];
      }
    }
    mbarArrive(&emptyBar[s]);
  }

  // Epilogue: bias + ReLU from registers.
  const int lt = tid % 128;
  const int warp = lt / 32, lane = lt % 32;
  const int row = m0 + cw * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    int col = n0 + j * 8 + (lane % 4) * 2;
    float2 bv = *reinterpret_cast<const float2 *>(bias + col);
    float2 lo, hi;
    lo.x = fmaxf(acc[j * 4 + 0] + bv.x, 0.f);
    lo.y = fmaxf(acc[j * 4 + 1] + bv.y, 0.f);
    hi.x = fmaxf(acc[j * 4 + 2] + bv.x, 0.f);
    hi.y = fmaxf(acc[j * 4 + 3] + bv.y, 0.f);
    *reinterpret_cast<float2 *>(c + size_t(row) * N + col) = lo;
    *reinterpret_cast<float2 *>(c + size_t(row + 8) * N + col) = hi;
  }
  }
}

//===----------------------------------------------------------------------===//
// Host side.
//===----------------------------------------------------------------------===//

using EncodeTiledFn = CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t,
                                   void *, const cuuint64_t *, const cuuint64_t *,
                                   const cuuint32_t *, const cuuint32_t *,
                                   CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion,
                                   CUtensorMapFloatOOBfill);

EncodeTiledFn getEncodeTiled() {
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                         cudaEnableDefault, &q));
  if (!fn || q != cudaDriverEntryPointSuccess) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled not found\n");
    std::exit(1);
  }
  return reinterpret_cast<EncodeTiledFn>(fn);
}

// A row-major [rows, K] fp32 matrix, boxes of [boxRows, boxK].
CUtensorMap makeMap(EncodeTiledFn encode, const float *ptr, int rows, int K,
                    int boxRows, int boxK) {
  CUtensorMap map;
  cuuint64_t dims[2] = {cuuint64_t(K), cuuint64_t(rows)};
  cuuint64_t strides[1] = {cuuint64_t(K) * 4};
  cuuint32_t box[2] = {cuuint32_t(boxK), cuuint32_t(boxRows)};
  cuuint32_t elemStrides[2] = {1, 1};
  CUtensorMapSwizzle swizzle = boxK * 4 == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                               : CU_TENSOR_MAP_SWIZZLE_64B;
  CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
                      const_cast<float *>(ptr), dims, strides, box, elemStrides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", int(r));
    std::exit(1);
  }
  return map;
}

struct Problem {
  int M, N, K;
  float *a, *w, *bias, *c;
  std::vector<float> hA, hW, hBias;
};

template <int BN, int BK, int Stages, int PN, bool Tma = true>
void launch(const Problem &p, EncodeTiledFn encode, cudaStream_t stream) {
  using Cfg = Config<BN, BK, Stages>;
  static bool once = false;
  static CUtensorMap mapA, mapB;
  if (!once) {
    CHECK(cudaFuncSetAttribute(gemm3xTf32<BN, BK, Stages, PN, Tma>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               Cfg::kSmemBytes));
    mapA = makeMap(encode, p.a, p.M, p.K, kBM, BK);
    mapB = makeMap(encode, p.w, p.N, p.K, BN, BK);
    once = true;
  }
  dim3 grid(p.M / kBM, p.N / BN);
  gemm3xTf32<BN, BK, Stages, PN, Tma><<<grid, kThreads, Cfg::kSmemBytes, stream>>>(
      mapA, mapB, p.a, p.w, p.bias, p.c, p.M, p.N, p.K);
}

// cuBLAS through dlopen, so that the binary runs without it.
struct Cublas {
  void *lib = nullptr;
  void *handle = nullptr;
  int (*create)(void **) = nullptr;
  int (*sgemm)(void *, int, int, int, int, int, const float *, const float *,
               int, const float *, int, const float *, float *, int) = nullptr;
  int (*setStream)(void *, cudaStream_t) = nullptr;
  bool load() {
    const char *names[] = {"libcublas.so.13", "libcublas.so"};
    for (const char *n : names)
      if ((lib = dlopen(n, RTLD_NOW | RTLD_GLOBAL)))
        break;
    if (!lib)
      return false;
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasCreate_v2"));
    sgemm = reinterpret_cast<decltype(sgemm)>(dlsym(lib, "cublasSgemm_v2"));
    setStream =
        reinterpret_cast<decltype(setStream)>(dlsym(lib, "cublasSetStream_v2"));
    if (!create || !sgemm || !setStream || create(&handle) != 0)
      return false;
    return true;
  }
  // C[M,N] row-major = A[M,K] * W[N,K]^T, i.e. column-major C^T = W * A^T.
  void run(const Problem &p, float *out, cudaStream_t stream) {
    const float one = 1.f, zero = 0.f;
    setStream(handle, stream);
    int r = sgemm(handle, /*CUBLAS_OP_T*/ 1, /*CUBLAS_OP_N*/ 0, p.N, p.M, p.K,
                  &one, p.w, p.K, p.a, p.K, &zero, out, p.N);
    if (r != 0) {
      std::fprintf(stderr, "cublasSgemm failed: %d\n", r);
      std::exit(1);
    }
  }
};

uint64_t rngState = 0x9E3779B97F4A7C15ull;
float uniform() {
  rngState = rngState * 6364136223846793005ull + 1442695040888963407ull;
  return float((rngState >> 40) & 0xFFFFFF) / float(1 << 24) * 2.f - 1.f;
}

struct Errors {
  double frob = 0, maxRel = 0;
};

// Compares relu(out + bias) (addBias) or out against relu(A W^T + bias) in
// fp64 on sampled elements. maxRel is max |err| / (sum_k |a_k w_k| + |bias|),
// frob the Frobenius norm of the error over that of the reference.
Errors check(const Problem &p, const std::vector<float> &out, bool addBias,
             const std::vector<std::pair<int, int>> &samples) {
  double num = 0, den = 0, maxRel = 0;
  for (auto [i, j] : samples) {
    double s = p.hBias[j], mag = std::fabs(p.hBias[j]);
    const float *ar = &p.hA[size_t(i) * p.K];
    const float *wr = &p.hW[size_t(j) * p.K];
    for (int k = 0; k < p.K; ++k) {
      s += double(ar[k]) * double(wr[k]);
      mag += std::fabs(double(ar[k]) * double(wr[k]));
    }
    double ref = std::max(s, 0.0);
    double got = out[size_t(i) * p.N + j];
    if (addBias)
      got = std::max(got + double(p.hBias[j]), 0.0);
    num += (got - ref) * (got - ref);
    den += ref * ref;
    maxRel = std::max(maxRel, std::fabs(got - ref) / mag);
  }
  return {std::sqrt(num / den), maxRel};
}

template <typename F>
double timeMedianMs(F &&fn, float *flush, size_t flushBytes,
                    cudaStream_t stream, int reps = 15) {
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i)
    fn();
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    CHECK(cudaMemsetAsync(flush, i, flushBytes, stream));
    CHECK(cudaEventRecord(e0, stream));
    fn();
    CHECK(cudaEventRecord(e1, stream));
    CHECK(cudaEventSynchronize(e1));
    float t;
    CHECK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  int config = argc > 1 ? std::atoi(argv[1]) : 0;
  Problem p;
  p.M = argc > 4 ? std::atoi(argv[2]) : 1024;
  p.N = argc > 4 ? std::atoi(argv[3]) : 8192;
  p.K = argc > 4 ? std::atoi(argv[4]) : 8192;
  if (p.M % kBM || p.N % 256 || p.K % 64) {
    std::fprintf(stderr, "M must be a multiple of 128, N of 256, K of 64\n");
    return 1;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, cc %d.%d\n", prop.name,
              prop.multiProcessorCount, prop.major, prop.minor);

  p.hA.resize(size_t(p.M) * p.K);
  p.hW.resize(size_t(p.N) * p.K);
  p.hBias.resize(p.N);
  for (float &x : p.hA)
    x = uniform();
  for (float &x : p.hW)
    x = uniform();
  for (float &x : p.hBias)
    x = uniform();
  CHECK(cudaMalloc(&p.a, p.hA.size() * 4));
  CHECK(cudaMalloc(&p.w, p.hW.size() * 4));
  CHECK(cudaMalloc(&p.bias, p.hBias.size() * 4));
  CHECK(cudaMalloc(&p.c, size_t(p.M) * p.N * 4));
  CHECK(cudaMemcpy(p.a, p.hA.data(), p.hA.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(p.w, p.hW.data(), p.hW.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(p.bias, p.hBias.data(), p.hBias.size() * 4,
                   cudaMemcpyHostToDevice));
  size_t flushBytes = size_t(256) << 20;
  float *flush;
  CHECK(cudaMalloc(&flush, flushBytes));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  std::vector<std::pair<int, int>> samples;
  for (int i = 0; i < 1024; ++i) {
    int r = int((uniform() * 0.5f + 0.5f) * p.M) % p.M;
    int c = int((uniform() * 0.5f + 0.5f) * p.N) % p.N;
    samples.push_back({r, c});
  }
  // Corners and tile edges too.
  for (int r : {0, 63, 64, 127, p.M - 1})
    for (int c : {0, 1, 7, 8, 127, 128, 255, p.N - 1})
      samples.push_back({r, c});

  const double flops = 2.0 * p.M * p.N * p.K;
  std::vector<float> out(size_t(p.M) * p.N);
  auto report = [&](const char *name, double ms, Errors e) {
    std::printf("%-28s M=%d N=%d K=%d  %8.3f ms  %7.2f TFLOP/s  "
                "rel-frob %.2e  max-rel %.2e\n",
                name, p.M, p.N, p.K, ms, flops / ms / 1e9, e.frob, e.maxRel);
  };

  if (config < 0) {
    Cublas cb;
    if (!cb.load()) {
      std::printf("cuBLAS not available\n");
      return 0;
    }
    cb.run(p, p.c, stream);
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(out.data(), p.c, out.size() * 4, cudaMemcpyDeviceToHost));
    Errors e = check(p, out, true, samples);
    double ms = timeMedianMs([&] { cb.run(p, p.c, stream); }, flush, flushBytes,
                             stream);
    report("cublasSgemm (fp32)", ms, e);
    return 0;
  }

  EncodeTiledFn encode = getEncodeTiled();
  auto runConfig = [&](const char *name, auto launcher) {
    CHECK(cudaMemset(p.c, 0xFF, out.size() * 4));
    launcher();
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(out.data(), p.c, out.size() * 4, cudaMemcpyDeviceToHost));
    Errors e = check(p, out, false, samples);
    double ms = timeMedianMs(launcher, flush, flushBytes, stream);
    report(name, ms, e);
  };
  switch (config) {
  case 0:
    runConfig("wgmma 3xtf32 128x128x32 s3 p128",
              [&] { launch<128, 32, 3, 128>(p, encode, stream); });
    break;
  case 1:
    runConfig("wgmma 3xtf32 128x128x16 s6 p128",
              [&] { launch<128, 16, 6, 128>(p, encode, stream); });
    break;
  case 2:
    runConfig("wgmma 3xtf32 128x256x16 s4 p64",
              [&] { launch<256, 16, 4, 64>(p, encode, stream); });
    break;
  case 3:
    runConfig("wgmma 3xtf32 128x256x32 s2 p64",
              [&] { launch<256, 32, 2, 64>(p, encode, stream); });
    break;
  case 4:
    runConfig("wgmma 3xtf32 128x128x32 s3 p64",
              [&] { launch<128, 32, 3, 64>(p, encode, stream); });
    break;
  case 5:
    runConfig("loads 3xtf32 128x256x32 s2 p64",
              [&] { launch<256, 32, 2, 64, false>(p, encode, stream); });
    break;
  case 6:
    runConfig("loads 3xtf32 128x128x32 s3 p128",
              [&] { launch<128, 32, 3, 128, false>(p, encode, stream); });
    break;
  case 7:
    runConfig("loads 3xtf32 128x256x16 s4 p64",
              [&] { launch<256, 16, 4, 64, false>(p, encode, stream); });
    break;
  default:
    std::fprintf(stderr, "unknown config %d\n", config);
    return 1;
  }
  return 0;
}
