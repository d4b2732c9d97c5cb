// Whether Hopper's bulk copies would bring the claiming softmax from 84% of
// the copy bandwidth to 85% or more, and what a copy itself reaches with
// fewer SMs. The generator's winner over 512 rows of 393,216 (KernelBench's
// size, fp32), `softmax_c8_claim_ex_bs512`, has clusters of 8 blocks claim
// rows from a counter, each block holding an eighth of the row in shared
// memory; its copies are `cp.async` of 16 bytes, one a vector, and its
// outputs plain stores from registers. The H200 holds 15 such clusters,
// so 120 of its 132 SMs work.
//
// Lines printed:
//   - the copy bandwidth as the suite measures it (a device-to-device copy
//     of 1 GiB, bytes read plus written), a grid-stride copy of 16-byte
//     vectors over every SM, the same held to 120 SMs (one block an SM,
//     kept there by its shared memory), and a copy by bulk copies through a
//     ring of shared-memory slots (one thread an SM issuing them) over 132
//     and over 120 SMs: whether 120 SMs can move what 132 do;
//   - the claiming softmax with its share landing by bulk copies, S stages
//     of it each completing on an mbarrier, the outputs written either from
//     registers (`stores`) or scaled in place and sent by bulk stores
//     (`bulk stores`), the next row's stage copied in as soon as the
//     stage is written;
//   - the same with the SMs no cluster fits on put to work (`lone SMs`):
//     a one-block-an-SM kernel on a second stream, beside the clusters,
//     whose blocks each take whole rows from the back of the same counter
//     (the clusters take them from the front) while more than a reserve
//     are left, and read a row twice, asking L2 to keep it the first
//     time. The line gives the rows they took.
// The floor is the bytes read and written once at the device-to-device
// copy's bandwidth; the error is the largest relative error against an
// fp64 host softmax over three rows (the last taken by a lone SM, where
// they run).
// Timing: CUDA events, median of 30 runs, a 512 MB write before each run
// to flush L2; the counter's zeroing is inside the timed region, as the
// generated plan's reset kernel is.
//
// Build: nvcc -O3 -arch=sm_90a -std=c++17 -o bulk_softmax bulk_softmax.cu
// Run:   ./bulk_softmax
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "probe.cuh"

namespace cg = cooperative_groups;

constexpr int ROWS = 512, LEN = 393216, C = 8, T = 512;
constexpr int SHARE = LEN / C; // floats a block holds

// ---- Bulk copies and mbarriers (sm_90) -------------------------------------

__device__ __forceinline__ void storeBulk(void *to, const void *from,
                                          unsigned bytes) {
  asm volatile(
      "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(to),
      "r"(smemAddress(from)), "r"(bytes)
      : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Until all but the newest N bulk stores have read their shared memory.
template <int N>
__device__ __forceinline__ void waitStoresRead() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void waitStoresDone() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
// Generic-proxy writes to shared memory made visible to bulk stores.
__device__ __forceinline__ void fenceToBulk() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void clusterArrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void clusterWait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// ---- Copies -----------------------------------------------------------------

__global__ void copyVectors(const float4 *__restrict__ from,
                            float4 *__restrict__ to, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x)
    to[i] = from[i];
}

// Four vectors a thread in flight; launched one block an SM.
__global__ void __launch_bounds__(1024, 1)
    copyVectorsWide(const float4 *__restrict__ from, float4 *__restrict__ to,
                    long long n4) {
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
       i += 4 * step) {
    float4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (i + u * step < n4)
        v[u] = from[i + u * step];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (i + u * step < n4)
        to[i + u * step] = v[u];
  }
}

constexpr int SLOTS = 6;
constexpr unsigned CHUNK = 32768;

// A ring of SLOTS chunks: each chunk's bulk store issued when its copy lands,
// a slot refilled when its store has read it.
__global__ void __launch_bounds__(32, 1)
    copyBulk(const char *__restrict__ from, char *__restrict__ to,
             long long chunks) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) unsigned long long full[SLOTS];
  if (threadIdx.x != 0)
    return;
  for (int s = 0; s < SLOTS; ++s)
    barrierInit(&full[s]);
  barrierInitFence();
  const long long first = blockIdx.x, stride = gridDim.x;
  const long long count = (chunks - first + stride - 1) / stride;
  auto chunk = [&](long long j) { return (first + j * stride) * CHUNK; };
  for (long long j = 0; j < SLOTS && j < count; ++j)
    loadBulk(ring + j * CHUNK, from + chunk(j), CHUNK, &full[j]);
  for (long long j = 0; j < count; ++j) {
    const int slot = j % SLOTS;
    waitBarrier(&full[slot], (j / SLOTS) & 1);
    storeBulk(to + chunk(j), ring + slot * CHUNK, CHUNK);
    if (j >= 1) {
      waitStoresRead<1>();
      const long long again = j - 1 + SLOTS;
      if (again < count)
        loadBulk(ring + ((j - 1) % SLOTS) * CHUNK, from + chunk(again), CHUNK,
                 &full[(j - 1) % SLOTS]);
    }
  }
  waitStoresDone();
}

// ---- The claiming softmax with bulk copies ---------------------------------

__device__ __forceinline__ void merge(float &m, float &s, float m2, float s2) {
  const float top = fmaxf(m, m2);
  if (top == -INFINITY)
    return;
  s = (m == top ? s : s * expf(m - top)) +
      (m2 == top ? s2 : s2 * expf(m2 - top));
  m = top;
}

// Rows are claimed from both ends of one 64-bit counter: clusters add 1
// (the low half counts rows taken from the front), lone SMs add 1 << 32
// (the high half counts rows taken from the back), so that no row is
// taken twice. A cluster's claim past the rows left returns ROWS.
__device__ __forceinline__ long long claimFront(unsigned long long *taken) {
  const unsigned long long seen = atomicAdd(taken, 1ULL);
  const long long front = (long long)(seen & 0xffffffffULL),
                  back = (long long)(seen >> 32);
  return front + back < ROWS ? front : ROWS;
}

// A lone SM takes a row from the back only while more than `reserve`
// rows are left, so that it does not finish long after the clusters.
__device__ __forceinline__ long long claimBack(unsigned long long *taken,
                                               int reserve) {
  unsigned long long seen = *(volatile unsigned long long *)taken;
  for (;;) {
    const long long front = (long long)(seen & 0xffffffffULL),
                    back = (long long)(seen >> 32);
    if (ROWS - front - back <= reserve)
      return -1;
    const unsigned long long was = atomicCAS(taken, seen, seen + (1ULL << 32));
    if (was == seen)
      return ROWS - 1 - back;
    seen = was;
  }
}

template <int S, bool BULK_STORES>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(T, 1)
    softmaxBulk(const float *__restrict__ x, float *__restrict__ y,
                unsigned long long *__restrict__ taken) {
  constexpr int V = SHARE / 4; // vectors a block holds
  constexpr int SV = V / S;    // vectors a stage
  constexpr int PER = SV / T;  // vectors a thread a stage
  static_assert(SV % T == 0, "a stage is whole vectors for every thread");
  constexpr unsigned STAGE_BYTES = SV * 16;
  extern __shared__ __align__(128) unsigned char smem[];
  float4 *const kept = reinterpret_cast<float4 *>(smem);
  __shared__ __align__(8) unsigned long long full[S];
  __shared__ float pair[2], warpM[T / 32], warpS[T / 32];
  __shared__ long long claimed;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const long long offset = (long long)rank * SHARE;
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int k = 0; k < S; ++k)
      barrierInit(&full[k]);
    barrierInitFence();
  }
  auto issue = [&](long long row, int k) {
    loadBulk(kept + k * SV,
             reinterpret_cast<const float4 *>(x + row * LEN + offset) + k * SV,
             STAGE_BYTES, &full[k]);
  };

  if (rank == 0 && tid == 0)
    claimed = claimFront(taken);
  cluster.sync();
  long long row = *cluster.map_shared_rank(&claimed, 0);
  clusterArrive();
  if (row < ROWS && tid == 0)
    for (int k = 0; k < S; ++k)
      issue(row, k);
  unsigned parity = 0;
  while (row < ROWS) {
    long long next = 0;
    if (rank == 0 && tid == 0)
      next = claimFront(taken);
    // Each stage's exponentials taken once as it lands and kept in place.
    float m = -INFINITY, s = 0.0f, stageMax[S];
#pragma unroll
    for (int k = 0; k < S; ++k) {
      waitBarrier(&full[k], parity);
      float top = -INFINITY;
#pragma unroll
      for (int i = 0; i < PER; ++i) {
        const float4 e = kept[k * SV + tid + i * T];
        top = fmaxf(top, fmaxf(fmaxf(e.x, e.y), fmaxf(e.z, e.w)));
      }
      const float grown = fmaxf(m, top);
      s = grown == m ? s : s * expf(m - grown);
      m = grown;
      stageMax[k] = grown;
      const float shift = grown == -INFINITY ? 0.0f : grown;
#pragma unroll
      for (int i = 0; i < PER; ++i) {
        float4 e = kept[k * SV + tid + i * T];
        e.x = expf(e.x - shift);
        e.y = expf(e.y - shift);
        e.z = expf(e.z - shift);
        e.w = expf(e.w - shift);
        s += (e.x + e.y) + (e.z + e.w);
        kept[k * SV + tid + i * T] = e;
      }
    }
    // The block's pair: warps by shuffles, then the first warp.
#pragma unroll
    for (int d = 16; d > 0; d /= 2)
      merge(m, s, __shfl_xor_sync(~0u, m, d), __shfl_xor_sync(~0u, s, d));
    if (tid % 32 == 0) {
      warpM[tid / 32] = m;
      warpS[tid / 32] = s;
    }
    __syncthreads();
    float bm = -INFINITY, bs = 0.0f;
    if (tid < 32) {
      bm = tid < T / 32 ? warpM[tid] : -INFINITY;
      bs = tid < T / 32 ? warpS[tid] : 0.0f;
#pragma unroll
      for (int d = 16; d > 0; d /= 2)
        merge(bm, bs, __shfl_xor_sync(~0u, bm, d), __shfl_xor_sync(~0u, bs, d));
    }
    // The previous row's pairs read by every block before they change.
    clusterWait();
    if (tid == 0) {
      pair[0] = bm;
      pair[1] = bs;
      if (rank == 0)
        claimed = next;
    }
    cluster.sync();
    float rm = -INFINITY, rs = 0.0f;
#pragma unroll
    for (int q = 0; q < C; ++q)
      merge(rm, rs, cluster.map_shared_rank(pair, q)[0],
            cluster.map_shared_rank(pair, q)[1]);
    next = *cluster.map_shared_rank(&claimed, 0);
    clusterArrive();
    const float inverse = 1.0f / rs;
    const bool more = next < ROWS;
    float4 *const out = reinterpret_cast<float4 *>(y + row * LEN + offset);
#pragma unroll
    for (int k = 0; k < S; ++k) {
      const float factor = expf(stageMax[k] - rm) * inverse;
      // The stage scaled: stored from registers, or in place for a bulk
      // store.
#pragma unroll
      for (int i = 0; i < PER; ++i) {
        const int v = k * SV + tid + i * T;
        float4 e = kept[v];
        e.x *= factor;
        e.y *= factor;
        e.z *= factor;
        e.w *= factor;
        if (BULK_STORES)
          kept[v] = e;
        else
          __stcs(out + v, e);
      }
      if (BULK_STORES)
        fenceToBulk();
      __syncthreads();
      if (!BULK_STORES) {
        if (tid == 0 && more)
          issue(next, k);
      } else if (tid == 0) {
        storeBulk(out + k * SV, kept + k * SV, STAGE_BYTES);
        if (k > 0) {
          waitStoresRead<1>();
          if (more)
            issue(next, k - 1);
        }
      }
    }
    if (BULK_STORES && tid == 0) {
      waitStoresRead<0>();
      if (more)
        issue(next, S - 1);
    }
    parity ^= 1;
    row = next;
  }
  clusterWait();
  if (BULK_STORES && tid == 0)
    waitStoresDone();
}

// A whole row on one SM, for the SMs no cluster of 8 fits on: the row's
// statistics in a first pass whose loads ask L2 to keep the row
// (evict_last), the outputs in a second that reads it again from L2.
constexpr int LONE_T = 1024;

__global__ void __launch_bounds__(LONE_T, 1)
    softmaxLone(const float *__restrict__ x, float *__restrict__ y,
                unsigned long long *__restrict__ taken, int reserve) {
  extern __shared__ __align__(16) unsigned char held[]; // keeps the SM alone
  __shared__ float warpM[LONE_T / 32], warpS[LONE_T / 32], rowM, rowS;
  __shared__ long long claimed;
  (void)held;
  constexpr int V = LEN / 4, U = 4;
  const unsigned long long keep = l2Policy(true), stream = l2Policy(false);
  for (;;) {
    if (threadIdx.x == 0)
      claimed = claimBack(taken, reserve);
    __syncthreads();
    const long long row = claimed;
    if (row < 0)
      return;
    const float4 *in = reinterpret_cast<const float4 *>(x + row * LEN);
    float4 *out = reinterpret_cast<float4 *>(y + row * LEN);
    float m = -INFINITY, s = 0.0f;
    for (int base = threadIdx.x; base < V; base += U * LONE_T) {
      float4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + u * LONE_T < V)
          v[u] = loadHinted(in + base + u * LONE_T, keep);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + u * LONE_T < V) {
          const float top = fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w));
          const float grown = fmaxf(m, top);
          s = (grown == m ? s : s * expf(m - grown)) +
              ((expf(v[u].x - grown) + expf(v[u].y - grown)) +
               (expf(v[u].z - grown) + expf(v[u].w - grown)));
          m = grown;
        }
    }
#pragma unroll
    for (int d = 16; d > 0; d /= 2)
      merge(m, s, __shfl_xor_sync(~0u, m, d), __shfl_xor_sync(~0u, s, d));
    if (threadIdx.x % 32 == 0) {
      warpM[threadIdx.x / 32] = m;
      warpS[threadIdx.x / 32] = s;
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      m = warpM[threadIdx.x];
      s = warpS[threadIdx.x];
#pragma unroll
      for (int d = 16; d > 0; d /= 2)
        merge(m, s, __shfl_xor_sync(~0u, m, d), __shfl_xor_sync(~0u, s, d));
      if (threadIdx.x == 0) {
        rowM = m;
        rowS = s;
      }
    }
    __syncthreads();
    const float top = rowM, inverse = 1.0f / rowS;
    for (int base = threadIdx.x; base < V; base += U * LONE_T) {
      float4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + u * LONE_T < V)
          v[u] = loadHinted(in + base + u * LONE_T, stream);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + u * LONE_T < V)
          __stcs(out + base + u * LONE_T,
                 make_float4(expf(v[u].x - top) * inverse,
                             expf(v[u].y - top) * inverse,
                             expf(v[u].z - top) * inverse,
                             expf(v[u].w - top) * inverse));
    }
    __syncthreads(); // `claimed` read by every thread before it changes
  }
}

// ---- Driver
// ------------------------------------------------------------------

__global__ void fill(float *x, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned long long h = (unsigned long long)i * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
    x[i] = (float)((h & 0xffffff) / 16777216.0) * 8.0f - 4.0f;
  }
}

struct Timer {
  char *flush;
  long long flushBytes = 512LL << 20;
  Timer() { CK(cudaMalloc(&flush, flushBytes)); }
  // Median ms of `runs` runs of f, L2 flushed before each, after two not
  // counted.
  template <class F>
  double time(F f, int runs = 30) {
    std::vector<float> ms;
    for (int r = 0; r < runs + 2; ++r) {
      float us = timeEvents(
          [&] { CK(cudaMemsetAsync(flush, r, flushBytes)); }, f);
      if (r >= 2)
        ms.push_back(us / 1000);
    }
    return median(ms);
  }
};

// The largest relative error (against the row's largest output) over three
// rows, against an fp64 softmax of the same inputs.
static double softmaxError(const float *x, const float *y) {
  double worst = 0;
  std::vector<float> hx(LEN), hy(LEN);
  for (long long row : {0LL, 255LL, (long long)ROWS - 1}) {
    CK(cudaMemcpy(hx.data(), x + row * LEN, LEN * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hy.data(), y + row * LEN, LEN * 4, cudaMemcpyDeviceToHost));
    double m = -INFINITY, s = 0, top = 0;
    for (float v : hx)
      m = std::max(m, (double)v);
    for (float v : hx)
      s += std::exp((double)v - m);
    std::vector<double> ref(LEN);
    for (int i = 0; i < LEN; ++i) {
      ref[i] = std::exp((double)hx[i] - m) / s;
      top = std::max(top, ref[i]);
    }
    for (int i = 0; i < LEN; ++i)
      worst = std::max(worst, std::fabs(hy[i] - ref[i]) / top);
  }
  return worst;
}

// With `reserve` >= 0, a one-block-an-SM kernel runs beside the clusters
// on a second stream (forked from and joined to the timed one by events),
// a block for each SM the clusters leave, taking rows from the back while
// more than `reserve` are left.
template <int S, bool BULK_STORES>
static void runSoftmax(const char *name, float *x, float *y,
                       unsigned long long *taken, Timer &timer, double copyBw,
                       int reserve = -1) {
  auto kernel = softmaxBulk<S, BULK_STORES>;
  const int smem = SHARE * 4;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          smem));
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(ROWS * C);
  config.blockDim = dim3(T);
  config.dynamicSmemBytes = smem;
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = C;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = 0;
  CK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  const int grid = clusters * C;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int lone = reserve >= 0 ? sms - grid : 0;
  CK(cudaMemset(y, 0, (long long)ROWS * LEN * 4));
  const int loneSmem = 200 * 1024;
  CK(cudaFuncSetAttribute(
      softmaxLone, cudaFuncAttributeMaxDynamicSharedMemorySize, loneSmem));
  static cudaStream_t side = nullptr;
  static cudaEvent_t fork, join;
  if (!side) {
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  }
  const double ms = timer.time([&] {
    CK(cudaMemsetAsync(taken, 0, 8));
    if (lone > 0)
      CK(cudaEventRecord(fork, 0));
    kernel<<<grid, T, smem>>>(x, y, taken);
    if (lone > 0) {
      CK(cudaStreamWaitEvent(side, fork, 0));
      softmaxLone<<<lone, LONE_T, loneSmem, side>>>(x, y, taken, reserve);
      CK(cudaEventRecord(join, side));
      CK(cudaStreamWaitEvent(0, join, 0));
    }
  });
  unsigned long long counts = 0;
  CK(cudaMemcpy(&counts, taken, 8, cudaMemcpyDeviceToHost));
  const double err = softmaxError(x, y);
  const double floor = 2.0 * ROWS * LEN * 4 / copyBw * 1e3;
  printf("softmax %-32s S=%d %2d clusters %8.1f us  %5.1f%% of copy  "
         "rel err %.1e",
         name, S, clusters, ms * 1e3, floor / ms * 100, err);
  if (lone > 0)
    printf("  (%d lone SMs, reserve %d: %llu rows from the back)", lone,
           reserve, counts >> 32);
  printf("\n");
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  printf("%s: %d SMs, L2 %.1f MB\n", prop.name, sms, prop.l2CacheSize / 1e6);
  Timer timer;

  // Copies of 1 GiB.
  const long long bytes = 1LL << 30;
  char *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  fill<<<sms * 8, 256>>>((float *)a, bytes / 4);
  const double memcpyMs = timer.time(
      [&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
  const double copyBw = 2.0 * bytes / (memcpyMs * 1e-3);
  printf("copy device-to-device 1 GiB            %8.1f us  %.2f TB/s\n",
         memcpyMs * 1e3, copyBw / 1e12);
  auto report = [&](const char *name, double ms) {
    printf("copy %-34s %8.1f us  %.2f TB/s  %5.1f%% of device-to-device\n",
           name, ms * 1e3, 2.0 * bytes / (ms * 1e-3) / 1e12,
           memcpyMs / ms * 100);
  };
  report("vectors, 4 blocks of 512 an SM", timer.time([&] {
    copyVectors<<<sms * 4, 512>>>((const float4 *)a, (float4 *)b, bytes / 16);
  }));
  const int held = 150 * 1024; // one block an SM
  CK(cudaFuncSetAttribute(copyVectorsWide,
                          cudaFuncAttributeMaxDynamicSharedMemorySize, held));
  for (int n : {sms, 120}) {
    char name[64];
    snprintf(name, sizeof name, "vectors x4, %d SMs", n);
    report(name, timer.time([&] {
      copyVectorsWide<<<n, 1024, held>>>((const float4 *)a, (float4 *)b,
                                         bytes / 16);
    }));
  }
  const int ring = SLOTS * CHUNK;
  CK(cudaFuncSetAttribute(copyBulk, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          ring));
  for (int n : {sms, 120}) {
    char name[64];
    snprintf(name, sizeof name, "bulk, %d x %u KB slots, %d SMs", SLOTS,
             CHUNK / 1024, n);
    report(name,
           timer.time([&] { copyBulk<<<n, 32, ring>>>(a, b, bytes / CHUNK); }));
  }
  {
    std::vector<char> ha(1 << 20), hb(1 << 20);
    bool same = true;
    for (long long at : {0LL, bytes / 2, bytes - (1 << 20)}) {
      CK(cudaMemcpy(ha.data(), a + at, 1 << 20, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hb.data(), b + at, 1 << 20, cudaMemcpyDeviceToHost));
      same = same && ha == hb;
    }
    printf("bulk copy's output %s its input (3 MB sampled)\n",
           same ? "equals" : "DIFFERS FROM");
  }
  CK(cudaFree(a));
  CK(cudaFree(b));

  // The softmax.
  float *x, *y;
  unsigned long long *taken;
  CK(cudaMalloc(&x, (long long)ROWS * LEN * 4));
  CK(cudaMalloc(&y, (long long)ROWS * LEN * 4));
  CK(cudaMalloc(&taken, 8));
  fill<<<sms * 8, 256>>>(x, (long long)ROWS * LEN);
  runSoftmax<4, false>("bulk loads, stores", x, y, taken, timer, copyBw);
  runSoftmax<8, false>("bulk loads, stores", x, y, taken, timer, copyBw);
  runSoftmax<4, true>("bulk loads, bulk stores", x, y, taken, timer, copyBw);
  runSoftmax<8, true>("bulk loads, bulk stores", x, y, taken, timer, copyBw);
  runSoftmax<4, false>("bulk loads, stores (again)", x, y, taken, timer,
                       copyBw);
  // The SMs no cluster fits on, put to work: the device's SMs less the
  // clusters' (12 on the H200 and H100).
  for (int reserve : {60, 120, 200})
    runSoftmax<8, false>("bulk loads, stores, lone SMs", x, y, taken, timer,
                         copyBw, reserve);
  runSoftmax<8, false>("bulk loads, stores (again)", x, y, taken, timer,
                       copyBw);
  return 0;
}
