// What the long-row probes of this directory share: a CUDA call checked,
// a run timed by events, the median of a run's times, loads carrying an L2 eviction policy, bulk
// copies completing on mbarriers, and
// the norms' moments (folded, summed over a warp, waited for across the
// grid, and the host's fp64 reference).
// Each probe still builds alone (`nvcc ... probe_name.cu`): this header is
// found beside it.
#ifndef KOPT_BENCH_LONG_ROWS_PROBE_CUH
#define KOPT_BENCH_LONG_ROWS_PROBE_CUH

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include <cuda_runtime.h>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e = (x);                                                       \
    if (e != cudaSuccess) {                                                    \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static inline double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The microseconds one run of `launch` takes on the default stream, timed
// by CUDA events after `prepare` (an L2 flush, counters reset), which is
// not timed.
static inline float timeEvents(const std::function<void()> &prepare,
                               const std::function<void()> &launch) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  prepare();
  CK(cudaEventRecord(e0));
  launch();
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  CK(cudaGetLastError());
  float ms;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return ms * 1000;
}

// Opts `kernel` in to `shared` bytes of dynamic shared memory and returns
// how many blocks of `threads` an SM then holds.
static inline int residentBlocks(const void *kernel, int threads,
                                 size_t shared) {
  int resident;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          int(shared)));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, threads,
                                                   shared));
  return resident;
}

// An L2 policy for loads: evict_last where L2 should keep the lines,
// evict_first where they are read for the last time.
__device__ __forceinline__ unsigned long long l2Policy(bool keep) {
  unsigned long long p;
  if (keep)
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;"
                 : "=l"(p));
  else
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;"
                 : "=l"(p));
  return p;
}

// A read-only 16-byte load under `policy`.
__device__ __forceinline__ float4 loadHinted(const float4 *at,
                                             unsigned long long policy) {
  float4 v;
  asm volatile("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], "
               "%5;"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(at), "l"(policy));
  return v;
}

// Bulk copies completing on an mbarrier (sm_90).
__device__ __forceinline__ unsigned smemAddress(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void barrierInit(unsigned long long *bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smemAddress(bar))
               : "memory");
}
__device__ __forceinline__ void barrierInitFence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// The expected bytes announced and the copy issued, completing on `bar`.
__device__ __forceinline__ void
loadBulk(void *to, const void *from, unsigned bytes, unsigned long long *bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                   smemAddress(bar)),
               "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
               "bytes [%0], [%1], %2, [%3];" ::"r"(smemAddress(to)),
               "l"(from), "r"(bytes), "r"(smemAddress(bar))
               : "memory");
}
// The same under an L2 policy (l2Policy).
__device__ __forceinline__ void loadBulkHinted(void *to, const void *from,
                                               unsigned bytes,
                                               unsigned long long *bar,
                                               unsigned long long policy) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                   smemAddress(bar)),
               "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
               "bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
                   smemAddress(to)),
               "l"(from), "r"(bytes), "r"(smemAddress(bar)), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void waitBarrier(unsigned long long *bar,
                                            unsigned parity) {
  asm volatile("{\n"
               ".reg .pred done;\n"
               "WAIT%=:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra WAIT%=;\n"
               "}" ::"r"(smemAddress(bar)),
               "r"(parity)
               : "memory");
}

// A warp's sum of a pair (a sum and a sum of squares).
__device__ __forceinline__ double2 warpSum(double2 v) {
  for (int o = 16; o; o >>= 1) {
    v.x += __shfl_xor_sync(~0u, v.x, o);
    v.y += __shfl_xor_sync(~0u, v.y, o);
  }
  return v;
}

// Adds four elements to a sum and a sum of squares, in double.
__device__ __forceinline__ void fold(double2 &s, float4 v) {
  s.x += double(v.x) + double(v.y) + double(v.z) + double(v.w);
  s.y += double(v.x) * v.x + double(v.y) * v.y + double(v.z) * v.z +
         double(v.w) * v.w;
}

// Spins until `*counter` reaches `target` (an acquire); traps after ~2 s so
// that a broken grid stops instead of hanging the device.
__device__ __forceinline__ void waitCount(const unsigned *counter,
                                          unsigned target) {
  long long start = clock64();
  for (;;) {
    unsigned seen;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                 : "=r"(seen)
                 : "l"(counter)
                 : "memory");
    if (seen >= target)
      return;
    if (clock64() - start > 4000000000ll)
      __trap();
  }
}

__device__ __forceinline__ double2 add(double2 a, double2 b) {
  return make_double2(a.x + b.x, a.y + b.y);
}


// The sum of the pairs of a block's reader warps (WARPS warps behind named
// barrier 1, `warp` the warp's index among them) for row `a`, in their warp
// 0 (the others get their own warp's). `warpPartials` alternates by row, so that a row's
// writes need no barrier after the last row's reads.
template <int WARPS>
__device__ __forceinline__ double2 readersSum(double2 s, int a, int warp,
                                              int lane,
                                              double2 (&warpPartials)[2][WARPS]) {
  s = warpSum(s);
  if (lane == 0)
    warpPartials[a & 1][warp] = s;
  asm volatile("bar.sync 1, %0;" ::"n"(WARPS * 32) : "memory");
  if (warp != 0)
    return s;
  s = lane < WARPS ? warpPartials[a & 1][lane] : make_double2(0, 0);
  return warpSum(s);
}

// Stores the block's partial of row `a` and counts it done (a release).
__device__ __forceinline__ void publishPartial(double2 *partials,
                                               unsigned *counters, int a,
                                               double2 s) {
  partials[a * gridDim.x + blockIdx.x] = s;
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counters + a)
               : "memory");
}

// The writer warps' (WRITERS warps behind named barrier 2, `t` the
// thread's index among them) total of every block's partial of row `b`,
// once all are counted: they load them at once and sum them in one fixed
// order. The total is thread 0's.
template <int WRITERS>
__device__ __forceinline__ double2 gatherTotal(const double2 *partials,
                                               const unsigned *counters, int b,
                                               int t, double2 *writerPartials) {
  constexpr int kWriterThreads = WRITERS * 32;
  if (t == 0)
    waitCount(counters + b, gridDim.x);
  asm volatile("bar.sync 2, %0;" ::"n"(kWriterThreads) : "memory");
  double2 s = make_double2(0, 0);
  for (int k = t; k < gridDim.x; k += kWriterThreads)
    s = add(s, __ldcg(partials + b * gridDim.x + k));
  s = warpSum(s);
  if ((t & 31) == 0)
    writerPartials[t >> 5] = s;
  asm volatile("bar.sync 2, %0;" ::"n"(kWriterThreads) : "memory");
  double2 total = make_double2(0, 0);
  if (t == 0)
    for (int w = 0; w < WRITERS; ++w)
      total = add(total, writerPartials[w]);
  return total;
}

// A row of n elements' mean and 1 / sqrt(var + 1e-5) from its sum and sum
// of squares.
__device__ __forceinline__ float2 meanAndRstd(double2 total, double n) {
  double m = total.x / n;
  return make_float2(float(m), float(1.0 / sqrt(total.y / n - m * m + 1e-5)));
}

// The writers' mean and 1 / sqrt(var + eps) of row b, gathered
// (gatherTotal) from the partials and counters of a probe's parameters `p`
// (rows of `p.row4` float4s), left in `statistics`.
template <int WRITERS, class Params>
__device__ __forceinline__ void gatherStatistics(const Params &p, int b, int t,
                                                 double2 *writerPartials,
                                                 float *statistics) {
  double2 total =
      gatherTotal<WRITERS>(p.partials, p.counters, b, t, writerPartials);
  if (t == 0) {
    float2 st = meanAndRstd(total, double(p.row4) * 4);
    statistics[0] = st.x;
    statistics[1] = st.y;
  }
}

// A row's mean and 1 / sqrt(variance + eps) in fp64, the host reference
// the norms' probes check against.
static inline void rowMoments(const float *row, long long n, double eps,
                              double &mean, double &rstd) {
  double s = 0, ss = 0;
  for (long long i = 0; i < n; ++i)
    s += row[i];
  mean = s / n;
  for (long long i = 0; i < n; ++i)
    ss += (row[i] - mean) * (row[i] - mean);
  rstd = 1 / std::sqrt(ss / n + eps);
}

#endif // KOPT_BENCH_LONG_ROWS_PROBE_CUH
