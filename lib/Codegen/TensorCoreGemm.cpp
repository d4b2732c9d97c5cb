//===- TensorCoreGemm.cpp - fp32-accurate GEMMs on tensor cores -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The kernel is a fixed main loop (kGemmMainLoop, a template over the tile
// configuration, the operand layouts and the problem's sizes) and a
// generated entry: it picks the block's tile, runs the main loop into
// registers, then for each accumulator element emits the group's epilogue
// through TensorEmitter, with C at that element bound to the accumulator.
//
// The main loop, per block: `stages - 1` K tiles are requested with
// cp.async (16-byte copies where the contiguous dimension is a multiple of
// 4 floats, 4-byte ones otherwise; out-of-range elements zero-filled), then
// for each K tile: wait for it, request the tile `stages - 1` ahead into the
// buffer the previous iteration read, and multiply. Each warp reads its
// fragments from shared memory, splits every element into its big and small
// TF32 parts, and issues three mma.sync per 16x8x8 product into registers
// zeroed for the K tile, which are then added to the accumulators: the
// tensor cores add with truncation, and summing a K tile from zero keeps
// that error relative to the tile's sum rather than to the whole running
// sum (on inputs of one sign it would otherwise grow with K).
//
//===----------------------------------------------------------------------===//

#include "kopt/Codegen/TensorCoreGemm.h"

#include "GemmKernelParts.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"

using namespace mlir;
using namespace mlir::kopt;

/// The main loop, once per source (the guard keeps a second GEMM kernel of
/// the same source from redefining it).
static constexpr llvm::StringLiteral kGemmMainLoop = R"cuda(
#ifndef KOPT_TC_GEMM_MAIN_LOOP
#define KOPT_TC_GEMM_MAIN_LOOP
// fp32 GEMM on tensor cores, 3xTF32: x = big + small with big = tf32(x) and
// small = tf32(x - big); a * b accumulates small_a * big_b + big_a * small_b
// + big_a * big_b in fp32 (mma.sync m16n8k8), each K tile from zero.
namespace kopt_tc {

__device__ __forceinline__ unsigned sharedAddress(const void *pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

// Copies BYTES (16 or 4) to shared memory, or zeros when !valid (nothing
// is read then).
template <int BYTES>
__device__ __forceinline__ void copyAsync(float *to, const float *from,
                                          bool valid) {
  if (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                     sharedAddress(to)),
                 "l"(from), "r"(valid ? 16 : 0)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(
                     sharedAddress(to)),
                 "l"(from), "r"(valid ? 4 : 0)
                 : "memory");
}

__device__ __forceinline__ void commitCopies() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int PENDING> __device__ __forceinline__ void waitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

__device__ __forceinline__ void splitTf32(float x, unsigned &big,
                                          unsigned &small) {
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(big) : "f"(x));
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(small) : "f"(x - __uint_as_float(big)));
}

__device__ __forceinline__ void mmaTf32(float (&d)[4], const unsigned (&a)[4],
                                        const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// One block's BM x BN tile of C = A B for an M x N x K problem. TA: A is
// stored K x M (else M x K); TB: B is stored N x K (else K x N); VA, VB:
// floats per copy (4 when the operand's contiguous dimension allows).
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES,
          bool TA, bool TB, int VA, int VB, long long M, long long N,
          long long K>
struct Gemm {
  static constexpr int kThreads = 32 * WARPS_M * WARPS_N;
  static constexpr int kWarpM = BM / WARPS_M, kWarpN = BN / WARPS_N;
  static constexpr int kMi = kWarpM / 16, kNi = kWarpN / 8;
  // Shared tiles keep the operands' layouts: K-contiguous rows padded by 4
  // floats, M- or N-contiguous rows by 8, so that the fragment reads of a
  // warp fall in 32 different banks.
  static constexpr int kStrideA = TA ? BM + 8 : BK + 4;
  static constexpr int kStrideB = TB ? BK + 4 : BN + 8;
  static constexpr int kTileA = TA ? BK * kStrideA : BM * kStrideA;
  static constexpr int kTileB = TB ? BN * kStrideB : BK * kStrideB;
  static constexpr int kStage = kTileA + kTileB;
  static constexpr long long kTiles = (K + BK - 1) / BK;

  // Requests the ROWS x COLS tile whose row r, column c is at
  // `from[(row0 + r) * LD + col0 + c]` (in the matrix while row0 + r <
  // ROW_LIMIT and col0 + c < COL_LIMIT) into `to[r * STRIDE + c]`, V floats
  // per copy. A thread keeps one column and steps through the rows, so its
  // copies differ by constant offsets only.
  template <int ROWS, int COLS, int V, int STRIDE, long long LD,
            long long ROW_LIMIT, long long COL_LIMIT>
  static __device__ __forceinline__ void copyTile(float *to, const float *from,
                                                  long long row0,
                                                  long long col0) {
    constexpr int kChunks = COLS / V;
    static_assert(kThreads % kChunks == 0, "a thread keeps one column");
    constexpr int kRowsPerPass = kThreads / kChunks;
    const int r = threadIdx.x / kChunks, c = (threadIdx.x % kChunks) * V;
    const bool columnValid = col0 + c < COL_LIMIT;
    const float *source = from + (row0 + r) * LD + col0 + c;
    float *target = to + r * STRIDE + c;
#pragma unroll
    for (int j = 0; j < (ROWS + kRowsPerPass - 1) / kRowsPerPass; ++j) {
      if (ROWS % kRowsPerPass == 0 || r + j * kRowsPerPass < ROWS) {
        const bool valid =
            columnValid && row0 + r + j * kRowsPerPass < ROW_LIMIT;
        copyAsync<V * 4>(target + j * kRowsPerPass * STRIDE,
                         valid ? source + j * kRowsPerPass * LD : from, valid);
      }
    }
  }

  static __device__ __forceinline__ void loadTile(float *stage, const float *a,
                                                  const float *b, long long row0,
                                                  long long col0,
                                                  long long k0) {
    if (TA)
      copyTile<BK, BM, VA, kStrideA, M, K, M>(stage, a, k0, row0);
    else
      copyTile<BM, BK, VA, kStrideA, K, M, K>(stage, a, row0, k0);
    if (TB)
      copyTile<BN, BK, VB, kStrideB, K, N, K>(stage + kTileA, b, col0, k0);
    else
      copyTile<BK, BN, VB, kStrideB, N, K, N>(stage + kTileA, b, k0, col0);
  }

  static __device__ __forceinline__ void
  multiplyTile(const float *stage, float (&acc)[kMi][kNi][4], int warpRow,
               int warpCol, int lane) {
    const float *sa = stage;
    const float *sb = stage + kTileA;
    const int g = lane >> 2, t = lane & 3;
    float part[kMi][kNi][4];
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
        for (int h = 0; h < 4; ++h)
          part[mi][ni][h] = 0.0f;
    // Two k-steps unrolled: fully unrolled, the fragment loads of all four
    // are hoisted and the registers spill.
#pragma unroll 2
    for (int kk = 0; kk < BK; kk += 8) {
      // B fragment q: row (k) t + 4 q, column g; A fragment q: row
      // g + 8 (q & 1), column t + 4 (q >> 1). All of B's, then A's one
      // 16-row slice at a time, to keep few fragments live.
      unsigned bBig[kNi][2], bSmall[kNi][2];
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const int n = warpCol * kWarpN + ni * 8 + g;
          const int k = kk + t + q * 4;
          splitTf32(TB ? sb[n * kStrideB + k] : sb[k * kStrideB + n],
                    bBig[ni][q], bSmall[ni][q]);
        }
#pragma unroll
      for (int mi = 0; mi < kMi; ++mi) {
        unsigned aBig[4], aSmall[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int r = warpRow * kWarpM + mi * 16 + g + (q & 1) * 8;
          const int k = kk + t + (q >> 1) * 4;
          splitTf32(TA ? sa[k * kStrideA + r] : sa[r * kStrideA + k], aBig[q],
                    aSmall[q]);
        }
#pragma unroll
        for (int ni = 0; ni < kNi; ++ni) {
          mmaTf32(part[mi][ni], aSmall, bBig[ni]);
          mmaTf32(part[mi][ni], aBig, bSmall[ni]);
          mmaTf32(part[mi][ni], aBig, bBig[ni]);
        }
      }
    }
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
        for (int h = 0; h < 4; ++h)
          acc[mi][ni][h] += part[mi][ni][h];
  }

  // Accumulator h of fragment (mi, ni) is C's element (row0 + warp's row +
  // mi * 16 + lane / 4 + 8 (h / 2), col0 + warp's column + ni * 8 +
  // 2 (lane % 4) + h % 2).
  static __device__ __forceinline__ void run(float *smem, const float *a,
                                             const float *b, long long row0,
                                             long long col0,
                                             float (&acc)[kMi][kNi][4]) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int warpRow = warp / WARPS_N, warpCol = warp % WARPS_N;
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
        for (int h = 0; h < 4; ++h)
          acc[mi][ni][h] = 0.0f;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < kTiles)
        loadTile(smem + s * kStage, a, b, row0, col0, (long long)s * BK);
      commitCopies();
    }
    for (long long kt = 0; kt < kTiles; ++kt) {
      waitCopies<STAGES - 2>();
      __syncthreads();
      // The buffer the previous iteration read is free: every thread has
      // passed the barrier.
      const long long next = kt + STAGES - 1;
      if (next < kTiles)
        loadTile(smem + (next % STAGES) * kStage, a, b, row0, col0, next * BK);
      commitCopies();
      multiplyTile(smem + (kt % STAGES) * kStage, acc, warpRow, warpCol, lane);
    }
    waitCopies<0>();
  }
};

} // namespace kopt_tc
#endif // KOPT_TC_GEMM_MAIN_LOOP
)cuda";

/// The wgmma main loop, once per source.
static constexpr llvm::StringLiteral kWgmmaMainLoop = R"cuda(
#ifndef KOPT_WG_GEMM_MAIN_LOOP
#define KOPT_WG_GEMM_MAIN_LOOP
// fp32 GEMM on Hopper's wgmma (sm_90a), 3xTF32, for A [M, K] and B [N, K]
// (both K-major). 3 warpgroups: warpgroup 0 loads each K tile from global
// memory, splits every element into big = tf32(x) and small = tf32(x - big)
// and stores both parts in the 128-byte-swizzled layout wgmma reads;
// warpgroups 1 and 2 (64 rows each) multiply, small*big + big*small +
// big*big, each K tile from zero in PN-column chunks that are then added
// to the accumulators in fp32. Stages are handed over with mbarriers.
namespace kopt_wg {

__device__ __forceinline__ unsigned sharedAddress(const void *pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void barrierInit(unsigned long long *bar,
                                            unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(
                   sharedAddress(bar)),
               "r"(count)
               : "memory");
}

__device__ __forceinline__ void barrierArrive(unsigned long long *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(
                   sharedAddress(bar))
               : "memory");
}

// Waits for the completion of the barrier's phase of the given parity.
__device__ __forceinline__ void barrierWait(unsigned long long *bar,
                                            unsigned parity) {
  const unsigned address = sharedAddress(bar);
  unsigned done = 0;
  while (!done)
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n"
                 "}\n"
                 : "=r"(done)
                 : "r"(address), "r"(parity)
                 : "memory");
}

__device__ __forceinline__ void fenceRegister(float &r) {
  asm volatile("" : "+f"(r)::"memory");
}

// TF32 rounding (to nearest, ties away from zero), as cvt.rna.tf32.f32.
__device__ __forceinline__ float roundTf32(float x) {
  return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u);
}

// The descriptor of a K-major tile of 128-byte rows, 128-byte swizzle,
// 8-row groups 1024 bytes apart.
__device__ __forceinline__ unsigned long long descriptor(unsigned address) {
  return ((address & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) |
         (1ull << 62);
}

// d = A B^T + (scaleD ? d : 0), one m64n64k8 step, A and B K-major in
// shared memory.
__device__ __forceinline__ void wgmma64(float *d, unsigned long long descA,
                                        unsigned long long descB, int scaleD) {
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

// d = A B^T + (scaleD ? d : 0), one m64n128k8 step, A and B K-major in
// shared memory.
__device__ __forceinline__ void wgmma128(float *d, unsigned long long descA,
                                        unsigned long long descB, int scaleD) {
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

// The pipeline without its loads: a block's 128 x BN tile of C through
// `tiles` K tiles, each loaded by warpgroup 0 calling load(stage, tile),
// which stores its vectors with storeSplit.
template <int BN, int BK, int STAGES, int PN> struct Pipeline {
  static constexpr int kBM = 128;
  static constexpr int kAcc = BN / 2;
  static constexpr int kABytes = kBM * BK * 4, kBBytes = BN * BK * 4;
  // Per stage: big parts of A and B, then small parts of A and B.
  static constexpr int kHalfBytes = kABytes + kBBytes;
  static constexpr int kStageBytes = 2 * kHalfBytes;
  static_assert(BK == 32, "rows of 128 bytes");
  static_assert(BN % PN == 0 && (PN == 64 || PN == 128), "partial chunks");

  // Stores the big and small parts of 16-byte vector `vector` of a stage:
  // A's rows first, 8 vectors (32 floats of K) a row, at swizzled offsets.
  static __device__ __forceinline__ void storeSplit(unsigned char *stage,
                                                    int vector, float4 v) {
    unsigned offset = vector * 16;
    offset ^= ((offset >> 7) & 7) << 4;
    float4 big, small;
    big.x = roundTf32(v.x);
    big.y = roundTf32(v.y);
    big.z = roundTf32(v.z);
    big.w = roundTf32(v.w);
    small.x = roundTf32(v.x - big.x);
    small.y = roundTf32(v.y - big.y);
    small.z = roundTf32(v.z - big.z);
    small.w = roundTf32(v.w - big.w);
    *reinterpret_cast<float4 *>(stage + offset) = big;
    *reinterpret_cast<float4 *>(stage + kHalfBytes + offset) = small;
  }

  // Returns true on the 256 threads of warpgroups 1 and 2, whose acc[4 j +
  // h] is the tile's element (64 (warpgroup - 1) + 16 warp + lane / 4 +
  // 8 (h / 2), 8 j + 2 (lane % 4) + h % 2).
  template <class Load>
  static __device__ __forceinline__ bool run(unsigned char *smemRaw, int tiles,
                                             const Load &load,
                                             float (&acc)[kAcc]) {
    __shared__ __align__(8) unsigned long long readyBar[STAGES];
    __shared__ __align__(8) unsigned long long emptyBar[STAGES];
    unsigned char *smem = reinterpret_cast<unsigned char *>(
        (reinterpret_cast<unsigned long long>(smemRaw) + 1023) & ~1023ull);
    const int warpGroup = threadIdx.x / 128;
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        barrierInit(&readyBar[s], 128);
        barrierInit(&emptyBar[s], 256);
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (warpGroup == 0) {
      for (int tile = 0; tile < tiles; ++tile) {
        const int s = tile % STAGES;
        barrierWait(&emptyBar[s], ((tile / STAGES) & 1) ^ 1);
        load(smem + s * kStageBytes, tile);
        // The tensor cores read what these generic stores wrote.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        barrierArrive(&readyBar[s]);
      }
      return false;
    }

    const int half = warpGroup - 1;
#pragma unroll
    for (int i = 0; i < kAcc; ++i)
      acc[i] = 0.0f;
    const unsigned base = sharedAddress(smem);
    float part[PN / 2];
    for (int tile = 0; tile < tiles; ++tile) {
      const int s = tile % STAGES;
      barrierWait(&readyBar[s], (tile / STAGES) & 1);
      const unsigned bigA = base + s * kStageBytes + half * 64 * BK * 4;
      const unsigned smallA = bigA + kHalfBytes;
#pragma unroll
      for (int c = 0; c < BN / PN; ++c) {
        const unsigned bigB = base + s * kStageBytes + kABytes + c * PN * BK * 4;
        const unsigned smallB = bigB + kHalfBytes;
#pragma unroll
        for (int i = 0; i < PN / 2; ++i)
          fenceRegister(part[i]);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk) {
          const unsigned long long dBigA = descriptor(bigA + kk * 32);
          const unsigned long long dSmallA = descriptor(smallA + kk * 32);
          const unsigned long long dBigB = descriptor(bigB + kk * 32);
          const unsigned long long dSmallB = descriptor(smallB + kk * 32);
          if constexpr (PN == 128) {
            wgmma128(part, dSmallA, dBigB, kk > 0);
            wgmma128(part, dBigA, dSmallB, 1);
            wgmma128(part, dBigA, dBigB, 1);
          } else {
            wgmma64(part, dSmallA, dBigB, kk > 0);
            wgmma64(part, dBigA, dSmallB, 1);
            wgmma64(part, dBigA, dBigB, 1);
          }
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
        for (int i = 0; i < PN / 2; ++i) {
          fenceRegister(part[i]);
          acc[c * PN / 2 + i] += part[i];
        }
      }
      barrierArrive(&emptyBar[s]);
    }
    return true;
  }
};

template <int BN, int BK, int STAGES, int PN, long long M, long long N,
          long long K>
struct Gemm : Pipeline<BN, BK, STAGES, PN> {
  using Base = Pipeline<BN, BK, STAGES, PN>;
  static constexpr int kAcc = Base::kAcc;
  static_assert(K % BK == 0, "whole K tiles");

  // Loader thread t of warpgroup 0: its 16-byte vectors of each K tile are
  // t + 128 j, A's rows first (row t / 8 + 16 j, column 4 (t % 8)). Rows
  // past M or N are read at the last row instead: they only reach C's
  // elements that are not stored. Every load is issued before the first
  // store, so that a tile takes one trip to memory.
  static __device__ __forceinline__ void load(unsigned char *stage,
                                              const float *a, const float *b,
                                              long long row0, long long col0,
                                              int tile) {
    constexpr int kPerA = Base::kBM / 16, kPerB = BN / 16;
    const int t = threadIdx.x;
    const int r = t / 8;
    const long long column = (long long)tile * BK + (t % 8) * 4;
    float4 v[kPerA + kPerB];
#pragma unroll
    for (int j = 0; j < kPerA; ++j) {
      const long long row = min(row0 + r + j * 16, M - 1);
      v[j] = __ldg(reinterpret_cast<const float4 *>(a + row * K + column));
    }
#pragma unroll
    for (int j = 0; j < kPerB; ++j) {
      const long long row = min(col0 + r + j * 16, N - 1);
      v[kPerA + j] =
          __ldg(reinterpret_cast<const float4 *>(b + row * K + column));
    }
#pragma unroll
    for (int j = 0; j < kPerA + kPerB; ++j)
      Base::storeSplit(stage, t + j * 128, v[j]);
  }

  // Returns true on the 256 threads of warpgroups 1 and 2, whose acc[4 j +
  // h] is C's element (row0 + 64 (warpgroup - 1) + 16 warp + lane / 4 +
  // 8 (h / 2), col0 + 8 j + 2 (lane % 4) + h % 2).
  static __device__ __forceinline__ bool run(unsigned char *smemRaw,
                                             const float *a, const float *b,
                                             long long row0, long long col0,
                                             float (&acc)[kAcc]) {
    auto loadTile = [&](unsigned char *stage, int tile) {
      load(stage, a, b, row0, col0, tile);
    };
    return Base::run(smemRaw, int(K / BK), loadTile, acc);
  }
};

} // namespace kopt_wg
#endif // KOPT_WG_GEMM_MAIN_LOOP
)cuda";

std::string TensorCoreGemmConfig::getName() const {
  return "tc3xtf32_" + std::to_string(blockM) + "x" + std::to_string(blockN) +
         "x" + std::to_string(blockK) + "_w" + std::to_string(warpsM * warpsN) +
         "_s" + std::to_string(stages);
}

int64_t TensorCoreGemmConfig::getSharedBytes(const GemmForm &form) const {
  int64_t tileA =
      form.transposeA ? blockK * (blockM + 8) : blockM * (blockK + 4);
  int64_t tileB =
      form.transposeB ? blockN * (blockK + 4) : blockK * (blockN + 8);
  return int64_t(stages) * (tileA + tileB) * 4;
}

llvm::ArrayRef<TensorCoreGemmConfig> mlir::kopt::getTensorCoreGemmConfigs() {
  // Registers (ptxas for sm_90, no spills): about 255 for the 64x32 warp
  // tiles, 125 for the 32x32 ones (accumulators and the K tile's partial
  // sums are 2 x 32 of them).
  static const TensorCoreGemmConfig configs[] = {
      {128, 128, 32, 2, 4, 3, 1}, {128, 128, 32, 4, 4, 3, 1},
      {128, 128, 32, 4, 4, 4, 1}, {128, 64, 32, 4, 2, 4, 2},
      {64, 128, 32, 2, 4, 4, 2},
  };
  return configs;
}

/// The parameter name a leaf gets when the epilogue reads C at another
/// element than its own; never a plan tensor.
static constexpr llvm::StringLiteral kElsewhere = "kopt_c_elsewhere";

static std::string ll(int64_t value) { return std::to_string(value) + "LL"; }

/// Declares `tileM` and `tileN`, the block's output tile, from blockIdx.x
/// over a grid of `tilesM` x `tilesN` tiles, and `gb`, its batch: tiles go
/// in groups of 8 along M, so that the blocks running together share their
/// B panels in L2. `gb` (blockIdx.z) only when `batched`.
static void emitTileOrder(CodeWriter &code, int64_t tilesM, int64_t tilesN,
                          bool batched = true) {
  code.line("const int tilesM = " + std::to_string(tilesM) +
            ", tilesN = " + std::to_string(tilesN) + ";");
  code.line("const int perGroup = 8 * tilesN;");
  code.line("const int firstM = (int)blockIdx.x / perGroup * 8;");
  code.line("const int groupSize = min(tilesM - firstM, 8);");
  code.line("const int tileM = firstM + ((int)blockIdx.x % perGroup) % "
            "groupSize;");
  code.line("const int tileN = ((int)blockIdx.x % perGroup) / groupSize;");
  if (batched)
    code.line("const long long gb = blockIdx.z;");
}

/// The index, in a tensor of shape `to`, of the element at `index` in one of
/// shape `from` with the same row-major position. Both shapes are cut, from
/// the innermost dimension, into blocks of equal size; a block of one
/// dimension on either side maps by splitting or linearising the other's,
/// so the index keeps the dimensions apart where it can (the epilogue's
/// reads then meet C at the very index it is bound to). Otherwise the whole
/// linear position is split.
static SmallVector<AffineExpr> reshapeIndex(llvm::ArrayRef<AffineExpr> index,
                                            llvm::ArrayRef<int64_t> from,
                                            llvm::ArrayRef<int64_t> to) {
  if (from == to)
    return SmallVector<AffineExpr>(index.begin(), index.end());
  MLIRContext *context = index.front().getContext();
  SmallVector<AffineExpr> result(to.size());
  int i = int(from.size()), j = int(to.size());
  while (i > 0 || j > 0) {
    // Unit dimensions: index 0 on the way in, none on the way out.
    if (j > 0 && to[j - 1] == 1) {
      result[--j] = getAffineConstantExpr(0, context);
      continue;
    }
    if (i > 0 && from[i - 1] == 1) {
      --i;
      continue;
    }
    if (i == 0 || j == 0)
      break;
    int fromEnd = i, toEnd = j;
    int64_t fromSize = from[--i], toSize = to[--j];
    while (fromSize != toSize && (fromSize < toSize ? i : j) > 0)
      if (fromSize < toSize)
        fromSize *= from[--i];
      else
        toSize *= to[--j];
    if (fromSize != toSize)
      break;
    llvm::ArrayRef<AffineExpr> fromIndex = index.slice(i, fromEnd - i);
    llvm::ArrayRef<int64_t> toSizes = to.slice(j, toEnd - j);
    if (fromEnd - i == 1) {
      SmallVector<AffineExpr> parts =
          TensorEmitter::delinearize(fromIndex.front(), toSizes);
      llvm::copy(parts, result.begin() + j);
    } else if (toEnd - j == 1) {
      result[j] = TensorEmitter::linearize(fromIndex,
                                           from.slice(i, fromEnd - i), context);
    } else {
      // Several dimensions on both sides (256x768 as 2x12x128x64): through
      // the position within the group.
      SmallVector<AffineExpr> parts = TensorEmitter::delinearize(
          TensorEmitter::linearize(fromIndex, from.slice(i, fromEnd - i),
                                   context),
          toSizes);
      llvm::copy(parts, result.begin() + j);
    }
    if (i == 0 && j == 0)
      return result;
  }
  if (i == 0 && j == 0)
    return result;
  return TensorEmitter::delinearize(
      TensorEmitter::linearize(index, from, context), to);
}

/// The GEMM's product C [batch..., M, N] at (gb, gi, gj).
static llvm::Expected<ProductBinding> bindGemmProduct(MLIRContext *context,
                                                      const GemmForm &form) {
  int64_t batch = form.getBatch();
  if (batch > 65535)
    return llvm::createStringError("%lld batches do not fit a grid's z",
                                   (long long)batch);
  ProductBinding product;
  product.result = form.result;
  product.shape.assign(form.batchShape.begin(), form.batchShape.end());
  product.shape.push_back(form.m);
  product.shape.push_back(form.n);
  product.dims = {"gb", "gi", "gj"};
  if (!form.batchShape.empty())
    product.index = TensorEmitter::delinearize(getAffineDimExpr(0, context),
                                               form.batchShape);
  product.index.push_back(getAffineDimExpr(1, context));
  product.index.push_back(getAffineDimExpr(2, context));
  product.linear = "(gb * " + ll(form.m) + " + gi) * " + ll(form.n) + " + gj";
  return product;
}

llvm::Expected<GemmKernelParts> mlir::kopt::buildGemmKernelParts(
    MLIRContext *context, llvm::StringRef entry, const ProductBinding &product,
    const GemmOperands &operands, llvm::ArrayRef<KernelOutput> outputs,
    const TensorEmitter::LeafFn &leafOf) {
  if (outputs.empty())
    return llvm::createStringError("a kernel needs an output");
  int64_t elements = 1;
  for (int64_t size : product.shape)
    elements *= size;
  for (const KernelOutput &output : outputs) {
    int64_t count = 1;
    for (int64_t size : output.shape)
      count *= size;
    if (count != elements)
      return llvm::createStringError(
          "output '%s' does not have the product's number of elements",
          output.param.c_str());
  }

  // The epilogue, once, for the element the product's index names, whose
  // accumulator is `kopt_c`.
  const std::vector<int64_t> &shape = product.shape;
  CodeWriter epilogue;
  auto readC = [&](Value value) -> std::optional<LeafTensor> {
    if (value == product.result)
      return LeafTensor{kElsewhere.str(), ElementType::F32, shape};
    return leafOf(value);
  };
  TensorEmitter emitter(context, epilogue, product.dims, readC);
  emitter.enableStructuredReshapes();
  llvm::ArrayRef<AffineExpr> index = product.index;
  emitter.bind(product.result, index, "kopt_c");
  const std::string &linear = product.linear;
  // An output of another shape (a reshape of an epilogue value, such as
  // attention scores as [batch, heads, rows, columns]) is written at the
  // same row-major position.
  for (const KernelOutput &output : outputs) {
    auto computed =
        emitter.valueAt(output.value, reshapeIndex(index, shape, output.shape));
    if (!computed)
      return computed.takeError();
    epilogue.line(output.param + "[" + linear + "] = " +
                  convertFromCompute(output.elementType, *computed) + ";");
  }
  for (const LeafTensor &leaf : emitter.getLeaves()) {
    if (leaf.param != kElsewhere)
      continue;
    // Name the read, with the product's element in the kernel's variables.
    llvm::StringRef text = epilogue.str();
    size_t at = text.find(kElsewhere);
    llvm::StringRef read = text.substr(at).split('\n').first.rtrim(';');
    return llvm::createStringError(
        "the epilogue reads the product at another element than its own: " +
        read.str());
  }

  // Parameters: A and B, the epilogue's other leaves, the outputs.
  GemmKernelParts parts;
  GeneratedKernel &kernel = parts.kernel;
  kernel.entry = entry.str();
  std::string &signature = parts.parameters;
  auto addParameter = [&](const std::string &name, llvm::StringRef type,
                          bool isConst) {
    if (llvm::is_contained(kernel.args, name))
      return;
    signature += std::string(kernel.args.empty() ? "" : ", ") +
                 (isConst ? "const " : "") + type.str() + " *__restrict__ " +
                 name;
    kernel.args.push_back(name);
  };
  addParameter(operands.a, "float", true);
  addParameter(operands.b, "float", true);
  for (const LeafTensor &leaf : emitter.getLeaves())
    addParameter(leaf.param, getCudaStorageType(leaf.elementType), true);
  for (const KernelOutput &output : outputs)
    addParameter(output.param, getCudaStorageType(output.elementType), false);
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(epilogue.str()).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines)
    parts.epilogue.push_back(line.str());
  return parts;
}

llvm::Expected<GeneratedKernel> mlir::kopt::generateTensorCoreGemm(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    const GemmForm &form, const GemmOperands &operands,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const TensorCoreGemmConfig &config) {
  auto product = bindGemmProduct(context, form);
  if (!product)
    return product.takeError();
  auto parts =
      buildGemmKernelParts(context, entry, *product, operands, outputs, leafOf);
  if (!parts)
    return parts.takeError();
  GeneratedKernel kernel = parts->kernel;
  std::string signature = "extern \"C\" __global__ void __launch_bounds__(" +
                          std::to_string(config.getThreads()) + ", " +
                          std::to_string(config.minBlocks) + ") " +
                          entry.str() + "(" + parts->parameters + ")";
  int64_t batch = form.getBatch();

  int64_t tilesM = (form.m + config.blockM - 1) / config.blockM;
  int64_t tilesN = (form.n + config.blockN - 1) / config.blockN;
  int64_t contiguousA = form.transposeA ? form.m : form.k;
  int64_t contiguousB = form.transposeB ? form.k : form.n;
  std::string gemm =
      "kopt_tc::Gemm<" + std::to_string(config.blockM) + ", " +
      std::to_string(config.blockN) + ", " + std::to_string(config.blockK) +
      ", " + std::to_string(config.warpsM) + ", " +
      std::to_string(config.warpsN) + ", " + std::to_string(config.stages) +
      ", " + (form.transposeA ? "true" : "false") + ", " +
      (form.transposeB ? "true" : "false") + ", " +
      (contiguousA % 4 == 0 ? "4" : "1") + ", " +
      (contiguousB % 4 == 0 ? "4" : "1") + ", " + ll(form.m) + ", " +
      ll(form.n) + ", " + ll(form.k) + ">";

  CodeWriter code;
  code.comment(comment);
  code.line(signature + " {");
  code.indent();
  code.line("using Gemm = " + gemm + ";");
  code.line("extern __shared__ __align__(16) float kopt_smem[];");
  emitTileOrder(code, tilesM, tilesN);
  code.line("float kopt_acc[Gemm::kMi][Gemm::kNi][4];");
  code.line("Gemm::run(kopt_smem, " + operands.a + " + " +
            (form.batchedA ? "gb * " + ll(form.m * form.k) : std::string("0")) +
            ", " + operands.b + " + " +
            (form.batchedB ? "gb * " + ll(form.k * form.n) : std::string("0")) +
            ", (long long)tileM * " + std::to_string(config.blockM) +
            ", (long long)tileN * " + std::to_string(config.blockN) +
            ", kopt_acc);");
  code.line("const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;");
  code.line("const long long rowBase = (long long)tileM * " +
            std::to_string(config.blockM) + " + warp / " +
            std::to_string(config.warpsN) + " * Gemm::kWarpM + (lane >> 2);");
  code.line("const long long colBase = (long long)tileN * " +
            std::to_string(config.blockN) + " + warp % " +
            std::to_string(config.warpsN) +
            " * Gemm::kWarpN + (lane & 3) * 2;");
  code.line("#pragma unroll");
  code.line("for (int mi = 0; mi < Gemm::kMi; ++mi) {");
  code.indent();
  code.line("#pragma unroll");
  code.line("for (int ni = 0; ni < Gemm::kNi; ++ni) {");
  code.indent();
  code.line("#pragma unroll");
  code.line("for (int h = 0; h < 4; ++h) {");
  code.indent();
  code.line("const long long gi = rowBase + mi * 16 + (h >> 1) * 8;");
  code.line("const long long gj = colBase + ni * 8 + (h & 1);");
  code.line("if (gi < " + ll(form.m) + " && gj < " + ll(form.n) + ") {");
  code.indent();
  code.line("const float kopt_c = kopt_acc[mi][ni][h];");
  for (const std::string &line : parts->epilogue)
    code.line(line);
  for (int i = 0; i < 4; ++i) {
    code.dedent();
    code.line("}");
  }
  code.dedent();
  code.line("}");

  kernel.code = kGemmMainLoop.str() + code.str();
  kernel.grid = {std::to_string(tilesM * tilesN), "1", std::to_string(batch)};
  kernel.block = {std::to_string(config.getThreads()), "1", "1"};
  kernel.sharedBytes = config.getSharedBytes(form);
  return kernel;
}

std::string WgmmaGemmConfig::getName() const {
  return "wgmma3xtf32_128x" + std::to_string(blockN) + "x" +
         std::to_string(blockK) + "_s" + std::to_string(stages);
}

int64_t WgmmaGemmConfig::getSharedBytes() const {
  // Big and small parts of A's and B's tiles per stage, and the slack that
  // aligns the stages to 1024 bytes (the swizzle's period).
  return int64_t(stages) * 2 * (128 + blockN) * blockK * 4 + 1024;
}

GeneratedKernel mlir::kopt::finishWgmmaKernel(const GemmKernelParts &parts,
                                              const WgmmaEntry &entry,
                                              const WgmmaGemmConfig &config) {
  int64_t tilesM = (entry.m + 127) / 128;
  int64_t tilesN = (entry.n + config.blockN - 1) / config.blockN;
  std::string blockN = std::to_string(config.blockN);
  CodeWriter code;
  code.comment(entry.comment);
  code.line("extern \"C\" __global__ void __launch_bounds__(384, 1) " +
            parts.kernel.entry + "(" + parts.parameters + ") {");
  code.indent();
  code.line("using Block = " + entry.block + ";");
  code.line("extern __shared__ __align__(1024) unsigned char kopt_smem[];");
  emitTileOrder(code, tilesM, tilesN, entry.batched);
  code.line("float kopt_acc[Block::kAcc];");
  code.line("if (!Block::run(kopt_smem, " + entry.a + ", " + entry.b +
            ", (long long)tileM * 128, (long long)tileN * " + blockN +
            ", kopt_acc))");
  code.line("  return;");
  // Each of the 256 multiplying threads' accumulators, inside the product.
  code.line(
      "const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;");
  code.line("const long long rowBase = (long long)tileM * 128 + "
            "((int)threadIdx.x / 128 - 1) * 64 + warp * 16 + (lane >> 2);");
  code.line("const long long colBase = (long long)tileN * " + blockN +
            " + (lane & 3) * 2;");
  code.line("#pragma unroll");
  code.line("for (int j = 0; j < " + std::to_string(config.blockN / 8) +
            "; ++j) {");
  code.indent();
  code.line("#pragma unroll");
  code.line("for (int h = 0; h < 4; ++h) {");
  code.indent();
  code.line("const long long gi = rowBase + (h >> 1) * 8;");
  code.line("const long long gj = colBase + j * 8 + (h & 1);");
  code.line("if (gi < " + ll(entry.m) + " && gj < " + ll(entry.n) + ") {");
  code.indent();
  code.line("const float kopt_c = kopt_acc[j * 4 + h];");
  for (const std::string &line : parts.epilogue)
    code.line(line);
  for (int i = 0; i < 4; ++i) {
    code.dedent();
    code.line("}");
  }

  GeneratedKernel kernel = parts.kernel;
  kernel.code = kWgmmaMainLoop.str() + entry.loads.str() + code.str();
  kernel.grid = {std::to_string(tilesM * tilesN), "1",
                 std::to_string(entry.batch)};
  kernel.block = {"384", "1", "1"};
  kernel.sharedBytes = config.getSharedBytes();
  return kernel;
}

llvm::SmallVector<WgmmaGemmConfig> mlir::kopt::getWgmmaGemmConfigs(int64_t n) {
  // 128x256 tiles with 64-column partials (the accumulators and a partial
  // fit the 168 registers of 384 threads), 128x128 with 128-column ones;
  // narrow products (attention's `p @ v` over heads of 64) get 128x64
  // tiles, with the stages their smaller B tiles leave room for.
  llvm::SmallVector<WgmmaGemmConfig> configs;
  if (n > 128)
    configs.push_back({256, 32, 2, 64});
  configs.push_back({128, 32, 3, 128});
  if (n <= 64)
    configs.push_back({64, 32, 4, 64});
  return configs;
}

bool mlir::kopt::isWgmmaGemmForm(const GemmForm &form) {
  return !form.transposeA && form.transposeB && form.k % 32 == 0;
}

llvm::Expected<GeneratedKernel> mlir::kopt::generateWgmmaGemm(
    MLIRContext *context, llvm::StringRef entry, llvm::StringRef comment,
    const GemmForm &form, const GemmOperands &operands,
    llvm::ArrayRef<KernelOutput> outputs, const TensorEmitter::LeafFn &leafOf,
    const WgmmaGemmConfig &config) {
  if (!isWgmmaGemmForm(form))
    return llvm::createStringError(
        "the wgmma GEMM takes A [M, K] and B [N, K] with K a multiple of 32");
  auto product = bindGemmProduct(context, form);
  if (!product)
    return product.takeError();
  auto parts =
      buildGemmKernelParts(context, entry, *product, operands, outputs, leafOf);
  if (!parts)
    return parts.takeError();
  WgmmaEntry wgmma;
  wgmma.comment = comment.str();
  wgmma.block = "kopt_wg::Gemm<" + std::to_string(config.blockN) + ", " +
                std::to_string(config.blockK) + ", " +
                std::to_string(config.stages) + ", " +
                std::to_string(config.partialN) + ", " + ll(form.m) + ", " +
                ll(form.n) + ", " + ll(form.k) + ">";
  wgmma.a = operands.a + " + " +
            (form.batchedA ? "gb * " + ll(form.m * form.k) : std::string("0"));
  wgmma.b = operands.b + " + " +
            (form.batchedB ? "gb * " + ll(form.k * form.n) : std::string("0"));
  wgmma.m = form.m;
  wgmma.n = form.n;
  wgmma.batch = form.getBatch();
  return finishWgmmaKernel(*parts, wgmma, config);
}
