// What L2 itself delivers, against DRAM: the long-row norms that read a
// row a second time from L2 (bench/long_rows/waves.cu, ln_waves.cu), or
// read LayerNorm's weights from L2 every row, move two to three times a
// copy's bytes through L2, and the H200 runs them at a smaller fraction of
// its copy bandwidth than the H100 does. This measures, on all SMs with
// 16-byte loads and stores (a persistent grid, 8 vectors a thread in
// flight, one block of 1024 an SM):
//
// - reads of a buffer that stays in L2 (4 to 32 MB, read 64 times),
// - reads and writes of one that stays in L2 (half read, half written),
// - a device-to-device copy of 1 GB (DRAM, the floor's bandwidth),
// - reads of 1 GB (DRAM).
//
// Build: nvcc -O3 -arch=sm_90 -std=c++17 -o l2_bandwidth l2_bandwidth.cu
// Run:   ./l2_bandwidth
#include <cstdio>
#include <functional>
#include <vector>

#include <cuda_runtime.h>

#include "probe.cuh"

// Reads `n4` vectors `times` times, 8 a thread in flight; WRITE stores
// each again `n4` vectors further on, else a sum keeps the loads.
template <bool WRITE>
__global__ void __launch_bounds__(1024)
    repeat(float4 *buffer, long long n4, int times, float *sink) {
  float s = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (int p = 0; p < times; ++p) {
    for (long long i0 = blockIdx.x * (long long)blockDim.x + threadIdx.x;
         i0 < n4; i0 += 8 * stride) {
      float4 v[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        long long i = i0 + k * stride;
        v[k] = i < n4 ? __ldcg(buffer + i) : make_float4(0, 0, 0, 0);
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        long long i = i0 + k * stride;
        if (!WRITE)
          s += v[k].x + v[k].y + v[k].z + v[k].w;
        else if (i < n4)
          __stcg(buffer + n4 + i, v[k]);
      }
    }
  }
  if (s == 12345.678f)
    *sink = s;
}

// The median of `reps` runs of `launch`, the first run untimed (it brings
// the buffer into L2).
static float timeIt(const std::function<void()> &launch, int reps = 10) {
  std::vector<float> times;
  launch();
  for (int r = 0; r < reps; ++r)
    times.push_back(timeEvents([] {}, launch));
  return median(times);
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const size_t big = size_t(1) << 30;
  float4 *a, *b;
  float *sink;
  CK(cudaMalloc(&a, big));
  CK(cudaMalloc(&b, big));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(a, 0, big));
  printf("%s: %d SMs, L2 %.1f MB\n", prop.name, sms, prop.l2CacheSize / 1e6);

  float us = timeIt([&] {
    CK(cudaMemcpyAsync(b, a, big, cudaMemcpyDeviceToDevice));
  });
  printf("copy 1 GB device-to-device (DRAM)   %8.1f us  %6.2f TB/s moved\n", us,
         2 * big / us / 1e6);
  us = timeIt([&] {
    repeat<false><<<sms, 1024>>>(a, big / 16, 1, sink);
  });
  printf("read 1 GB (DRAM)                    %8.1f us  %6.2f TB/s\n", us,
         big / us / 1e6);
  for (size_t mb : {4, 8, 16, 32}) {
    const size_t bytes = mb << 20;
    const int reads = 64;
    us = timeIt([&] {
      repeat<false><<<sms, 1024>>>(a, bytes / 16, reads, sink);
    });
    printf("read %2zu MB x %d (L2)               %8.1f us  %6.2f TB/s\n", mb,
           reads, us, double(bytes) * reads / us / 1e6);
    us = timeIt(
        [&] { repeat<true><<<sms, 1024>>>(a, bytes / 32, reads, sink); });
    printf("read+write %2zu MB x %d (L2)         %8.1f us  %6.2f TB/s moved\n",
           mb, reads, us, double(bytes) * reads / us / 1e6);
  }
  return 0;
}
