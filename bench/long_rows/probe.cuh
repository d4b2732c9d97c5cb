// What the long-row probes of this directory share: a CUDA call checked,
// the median of a run's times, and loads carrying an L2 eviction policy.
// Each probe still builds alone (`nvcc ... probe_name.cu`): this header is
// found beside it.
#ifndef KOPT_BENCH_LONG_ROWS_PROBE_CUH
#define KOPT_BENCH_LONG_ROWS_PROBE_CUH

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

#endif // KOPT_BENCH_LONG_ROWS_PROBE_CUH
