// LayerNorm over few long rows with per-element weights, in waves: can it
// reach the copy's bandwidth when most of the weights stay in shared
// memory instead of being read again from L2 every row?
//
// Problem (KernelBench's size, fp32): LayerNorm over (64, 256, 256) for a
// batch of 16, so 16 rows of 4M with a weight and a bias of 4M each (16 MB
// a row, 32 MB of weights). The split form reads each row twice from DRAM
// (68% of the floor at best); the generator's wave form (waves.cu's
// `wavesSplit`, lib/Codegen/WaveSplitRows.cpp) declines it, because two
// rows in flight and the 32 MB of weights overflow L2; and on the H200 the
// weights read from L2 every row cost a traffic-only probe 191.6 us
// against 160.2 without them (weights_in_l2.cu).
//
// The form here: a persistent cooperative grid of a block an SM, each
// owning the same column range of every row; reader warps fold a row's
// range into its moments (read with L2 evict_last, leading the writers by
// at most a row) and publish them; writer warps wait until every block has
// published a row, gather the partials in one fixed order (bitwise
// reproducible), read the range again from L2 and write it. The block's
// first W4 float4s of its range of the weight and the bias are copied into
// shared memory once, before the first row; the rest of them are read from
// L2 every row (evict_last). W4 = 0 is the generator's form; the largest
// W4 that fits 227 KB keeps 91% of the weights on chip, leaving L2 the two
// rows in flight (32 MB) and 3 MB of weights.
//
// The ring form (`lnRing`) keeps the rows on chip instead: see there. On
// an H100 it lost to the weights on chip (385-420 us against 299).
//
// Beside them: the traffic alone (no statistics, no weights), and a
// device-to-device copy of a batch's rows, whose bandwidth gives the
// floor: the rows read and written once and the weights read once.
// Checked against an fp64 host reference on three rows; timed with CUDA
// events, L2 flushed before each run, median of LN_REPS (default 20).
// `./ln_waves TEXT` runs the forms whose name holds TEXT.
//
// Build: nvcc -O3 -arch=sm_90 -std=c++17 -o ln_waves ln_waves.cu
// Run:   ./ln_waves
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include <cuda_runtime.h>

#include "probe.cuh"

static const int kRows = 16;
static const long long kRow = 64LL * 256 * 256;

struct Params {
  const float4 *x, *w, *b;
  float4 *y;
  long long row4, range4;
  int shared4;        // float4s of the weight (and of the bias) in shared
  int ring4;          // float4s of the ring (lnRing)
  double2 *partials;  // [rows][blocks]: sum, sum of squares
  unsigned *counters; // [rows]: blocks that published
  bool useStatistics; // false: the traffic alone
  bool useWeights;
};

// <reader warps, writer warps, float4 a reader / writer thread a pass>
template <int READERS, int WRITERS, int VR, int VW>
__global__ void __launch_bounds__((READERS + WRITERS) * 32, 1)
    lnWaves(Params p) {
  extern __shared__ float4 weights[]; // [shared4] weight, then [shared4] bias
  __shared__ double2 warpPartials[2][READERS];
  __shared__ double2 writerPartials[WRITERS];
  __shared__ float statistics[2];
  __shared__ volatile int written; // rows the writers have finished
  constexpr int kReaderThreads = READERS * 32, kWriterThreads = WRITERS * 32;
  const long long begin = blockIdx.x * p.range4;
  const long long end = min(begin + p.range4, p.row4);
  const int count = int(max(end - begin, 0LL));
  const int onChip = min(p.shared4, count);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0)
    written = 0;
  if (p.useWeights)
    for (int i = threadIdx.x; i < onChip; i += blockDim.x) {
      weights[i] = p.w[begin + i];
      weights[p.shared4 + i] = p.b[begin + i];
    }
  __syncthreads();

  if (warp < READERS) {
    const unsigned long long keep = l2Policy(true);
    for (int a = 0; a < kRows; ++a) {
      if (threadIdx.x == 0)
        while (a - written > 1)
          __nanosleep(64);
      asm volatile("bar.sync 1, %0;" ::"n"(kReaderThreads) : "memory");
      const float4 *row = p.x + a * p.row4 + begin;
      double2 s = make_double2(0, 0);
      for (int i0 = threadIdx.x; i0 < count; i0 += VR * kReaderThreads) {
        float4 v[VR];
#pragma unroll
        for (int k = 0; k < VR; ++k) {
          int i = i0 + k * kReaderThreads;
          v[k] =
              i < count ? loadHinted(row + i, keep) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int k = 0; k < VR; ++k)
          fold(s, v[k]);
      }
      s = readersSum<READERS>(s, a, warp, lane, warpPartials);
      if (warp == 0 && lane == 0)
        publishPartial(p.partials, p.counters, a, s);
    }
    return;
  }

  // The writers.
  const int t = threadIdx.x - kReaderThreads;
  const unsigned long long last = l2Policy(false), keep = l2Policy(true);
  for (int b = 0; b < kRows; ++b) {
    if (p.useStatistics) {
      gatherStatistics<WRITERS>(p, b, t, writerPartials, statistics);
    } else if (t == 0) {
      statistics[0] = 0;
      statistics[1] = 1;
    }
    asm volatile("bar.sync 2, %0;" ::"n"(kWriterThreads) : "memory");
    const float mean = statistics[0], rstd = statistics[1];
    const float4 *row = p.x + b * p.row4 + begin;
    float4 *out = p.y + b * p.row4 + begin;
    for (int i0 = t; i0 < count; i0 += VW * kWriterThreads) {
      float4 v[VW], g[VW], h[VW];
#pragma unroll
      for (int k = 0; k < VW; ++k) {
        int i = i0 + k * kWriterThreads;
        if (i < count) {
          v[k] = loadHinted(row + i, last);
          if (!p.useWeights) {
            g[k] = make_float4(1, 1, 1, 1);
            h[k] = make_float4(0, 0, 0, 0);
          } else if (i < onChip) {
            g[k] = weights[i];
            h[k] = weights[p.shared4 + i];
          } else {
            g[k] = loadHinted(p.w + begin + i, keep);
            h[k] = loadHinted(p.b + begin + i, keep);
          }
        }
      }
#pragma unroll
      for (int k = 0; k < VW; ++k) {
        int i = i0 + k * kWriterThreads;
        if (i < count) {
          float4 r;
          r.x = (v[k].x - mean) * rstd * g[k].x + h[k].x;
          r.y = (v[k].y - mean) * rstd * g[k].y + h[k].y;
          r.z = (v[k].z - mean) * rstd * g[k].z + h[k].z;
          r.w = (v[k].w - mean) * rstd * g[k].w + h[k].w;
          __stcs(out + i, r);
        }
      }
    }
    // Every writer is past row b (and past reading `statistics`).
    asm volatile("bar.sync 2, %0;" ::"n"(kWriterThreads) : "memory");
    if (t == 0)
      written = b + 1;
  }
}

// The ring form: the same grid, but the readers put each row's range, as
// they load it (evict_first: the rows are read once), into a ring of
// shared memory that the writers read it back from, so that a row is never
// read again from L2; the weights and biases come from L2 (evict_last)
// every row. The ring holds `ring4` float4s in row order, more than one
// block's range of a row: the readers wait before a batch until the
// writers have read what it overwrites, the writers say after each batch
// how far they have read.
template <int READERS, int WRITERS, int VR, int VW>
__global__ void __launch_bounds__((READERS + WRITERS) * 32, 1)
    lnRing(Params p) {
  extern __shared__ float4 ring[];
  __shared__ double2 warpPartials[2][READERS];
  __shared__ double2 writerPartials[WRITERS];
  __shared__ float statistics[2];
  __shared__ volatile long long consumed; // ring entries the writers have read
  constexpr int kReaderThreads = READERS * 32, kWriterThreads = WRITERS * 32;
  const long long begin = blockIdx.x * p.range4;
  const long long end = min(begin + p.range4, p.row4);
  const int count = int(max(end - begin, 0LL));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0)
    consumed = 0;
  __syncthreads();

  if (warp < READERS) {
    const unsigned long long once = l2Policy(false);
    for (int a = 0; a < kRows; ++a) {
      const float4 *row = p.x + a * p.row4 + begin;
      const long long base = (long long)a * count;
      double2 s = make_double2(0, 0);
      for (int i0 = 0; i0 < count; i0 += VR * kReaderThreads) {
        const long long need =
            base + min(i0 + VR * kReaderThreads, count) - p.ring4;
        if (threadIdx.x == 0) {
          while (consumed < need)
            __nanosleep(32);
          __threadfence_block();
        }
        asm volatile("bar.sync 1, %0;" ::"n"(kReaderThreads) : "memory");
        int at = int((base + i0) % p.ring4) + threadIdx.x;
        float4 v[VR];
#pragma unroll
        for (int k = 0; k < VR; ++k) {
          int i = i0 + threadIdx.x + k * kReaderThreads;
          v[k] = i < count ? loadHinted(row + i, once) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int k = 0; k < VR; ++k) {
          int i = i0 + threadIdx.x + k * kReaderThreads;
          int slot = at + k * kReaderThreads;
          slot -= slot >= p.ring4 ? p.ring4 : 0;
          if (i < count)
            ring[slot] = v[k];
          fold(s, v[k]);
        }
      }
      s = readersSum<READERS>(s, a, warp, lane, warpPartials);
      if (warp == 0 && lane == 0)
        publishPartial(p.partials, p.counters, a, s);
    }
    return;
  }

  const int t = threadIdx.x - kReaderThreads;
  const unsigned long long keep = l2Policy(true);
  for (int b = 0; b < kRows; ++b) {
    gatherStatistics<WRITERS>(p, b, t, writerPartials, statistics);
    asm volatile("bar.sync 2, %0;" ::"n"(kWriterThreads) : "memory");
    const float mean = statistics[0], rstd = statistics[1];
    const long long base = (long long)b * count;
    float4 *out = p.y + b * p.row4 + begin;
    for (int i0 = 0; i0 < count; i0 += VW * kWriterThreads) {
      int at = int((base + i0) % p.ring4) + t;
      float4 v[VW], g[VW], h[VW];
#pragma unroll
      for (int k = 0; k < VW; ++k) {
        int i = i0 + t + k * kWriterThreads;
        if (i < count) {
          int slot = at + k * kWriterThreads;
          slot -= slot >= p.ring4 ? p.ring4 : 0;
          v[k] = ring[slot];
          g[k] = loadHinted(p.w + begin + i, keep);
          h[k] = loadHinted(p.b + begin + i, keep);
        }
      }
      // Every writer has its batch in registers: the readers may reuse it.
      asm volatile("bar.sync 2, %0;" ::"n"(kWriterThreads) : "memory");
      if (t == 0) {
        __threadfence_block();
        consumed = base + min(i0 + VW * kWriterThreads, count);
      }
#pragma unroll
      for (int k = 0; k < VW; ++k) {
        int i = i0 + t + k * kWriterThreads;
        if (i < count) {
          float4 r;
          r.x = (v[k].x - mean) * rstd * g[k].x + h[k].x;
          r.y = (v[k].y - mean) * rstd * g[k].y + h[k].y;
          r.z = (v[k].z - mean) * rstd * g[k].z + h[k].z;
          r.w = (v[k].w - mean) * rstd * g[k].w + h[k].w;
          __stcs(out + i, r);
        }
      }
    }
  }
}

struct Buffers {
  float *x, *y, *w, *b, *flush;
  double2 *partials;
  unsigned *counters;
  size_t flushBytes = size_t(512) << 20;
};

static float timeOne(const Buffers &m, int rep,
                     const std::function<void()> &launch) {
  return timeEvents(
      [&] {
        CK(cudaMemsetAsync(m.flush, rep, m.flushBytes));
        CK(cudaMemsetAsync(m.counters, 0, kRows * sizeof(unsigned)));
      },
      launch);
}

static double floorUs; // rows read and written once, weights read once
static int kReps = 20;
static const char *only = nullptr;

// The largest relative error of rows 0, 7 and 15 against fp64.
static double check(const Buffers &m, const std::vector<float> &hx,
                    const std::vector<float> &hw,
                    const std::vector<float> &hb) {
  double worst = 0;
  std::vector<float> hy(kRow);
  for (int r : {0, 7, 15}) {
    CK(cudaMemcpy(hy.data(), m.y + r * kRow, kRow * 4, cudaMemcpyDeviceToHost));
    const float *row = hx.data() + r * kRow;
    double mean, rstd, largest = 0, err = 0;
    rowMoments(row, kRow, 1e-5, mean, rstd);
    for (long long i = 0; i < kRow; ++i) {
      double ref = (row[i] - mean) * rstd * hw[i] + hb[i];
      largest = std::max(largest, std::fabs(ref));
      err = std::max(err, std::fabs(ref - hy[i]));
    }
    worst = std::max(worst, err / largest);
  }
  return worst;
}

// <reader warps, writer warps, float4 a reader / writer thread a pass>
template <int R, int W, int VR, int VW, bool RING = false>
static void run(const char *name, int shared4, bool useStatistics,
                bool useWeights, const Buffers &m, const std::vector<float> &hx,
                const std::vector<float> &hw, const std::vector<float> &hb) {
  if (only && !strstr(name, only))
    return;
  const void *kernel = RING ? (const void *)lnRing<R, W, VR, VW>
                            : (const void *)lnWaves<R, W, VR, VW>;
  int device, sms;
  CK(cudaGetDevice(&device));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int threads = (R + W) * 32;
  Params p;
  p.x = (const float4 *)m.x;
  p.w = (const float4 *)m.w;
  p.b = (const float4 *)m.b;
  p.y = (float4 *)m.y;
  p.row4 = kRow / 4;
  p.range4 = (p.row4 + sms - 1) / sms;
  p.shared4 = int(std::min<long long>(shared4, p.range4));
  p.partials = m.partials;
  p.counters = m.counters;
  p.useStatistics = useStatistics;
  p.useWeights = useWeights;
  // The ring: `shared4` float4s.
  p.ring4 = shared4;
  size_t shared = RING ? size_t(shared4) * 16 : size_t(2) * p.shared4 * 16;
  if (residentBlocks(kernel, threads, shared) < 1) {
    printf("%-40s skipped: does not fit an SM\n", name);
    return;
  }
  void *args[] = {&p};
  auto launch = [&] {
    CK(cudaLaunchCooperativeKernel(kernel, dim3(sms), dim3(threads), args,
                                   shared, 0));
  };
  std::vector<float> times;
  for (int rep = 0; rep < kReps; ++rep)
    times.push_back(timeOne(m, rep, launch));
  double us = median(times);
  CK(cudaMemset(m.y, 0, size_t(kRows) * kRow * 4));
  timeOne(m, 0, launch);
  CK(cudaDeviceSynchronize());
  printf("%-40s %3d x %4d, %3zu KB: %7.1f us  %5.1f%% of the floor", name, sms,
         threads, shared >> 10, us, 100 * floorUs / us);
  if (useStatistics && useWeights)
    printf("  max rel err %.1e\n", check(m, hx, hw, hb));
  else
    printf("  (traffic only)\n");
}

int main(int argc, char **argv) {
  if (argc > 1)
    only = argv[1];
  if (getenv("LN_REPS"))
    kReps = atoi(getenv("LN_REPS"));
  Buffers m;
  size_t bytes = size_t(kRows) * kRow * 4;
  CK(cudaMalloc(&m.x, bytes));
  CK(cudaMalloc(&m.y, bytes));
  CK(cudaMalloc(&m.w, kRow * 4));
  CK(cudaMalloc(&m.b, kRow * 4));
  CK(cudaMalloc(&m.flush, m.flushBytes));
  CK(cudaMalloc(&m.partials, size_t(kRows) * 1024 * sizeof(double2)));
  CK(cudaMalloc(&m.counters, kRows * sizeof(unsigned)));
  std::vector<float> hx(size_t(kRows) * kRow), hw(kRow), hb(kRow);
  unsigned s = 12345;
  auto uniform = [&] {
    s = s * 1664525u + 1013904223u;
    return (s >> 8) * (1.0f / 16777216.0f);
  };
  for (int r = 0; r < kRows; ++r) {
    float mean = 4 * uniform() - 2, spread = 0.5f + 2 * uniform();
    for (long long i = 0; i < kRow; ++i)
      hx[r * kRow + i] = mean + spread * (2 * uniform() - 1);
  }
  for (long long i = 0; i < kRow; ++i) {
    hw[i] = 0.5f + uniform();
    hb[i] = uniform() - 0.5f;
  }
  CK(cudaMemcpy(m.x, hx.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(m.w, hw.data(), kRow * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(m.b, hb.data(), kRow * 4, cudaMemcpyHostToDevice));

  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::vector<float> times;
  for (int rep = 0; rep < kReps; ++rep)
    times.push_back(timeOne(m, rep, [&] {
      CK(cudaMemcpyAsync(m.y, m.x, bytes, cudaMemcpyDeviceToDevice));
    }));
  double copyUs = median(times);
  double bandwidth = 2 * bytes / copyUs; // bytes a us
  floorUs = (2 * bytes + 2 * kRow * 4) / bandwidth;
  printf("%s: %d SMs, L2 %.1f MB; LayerNorm 16 rows of 4M with 4M weights\n",
         prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1e6);
  printf("copy device-to-device %.0f MB: %.1f us, %.2f TB/s; floor %.1f us\n",
         bytes / 1e6, copyUs, bandwidth / 1e6, floorUs);

  // Each block's range is 7945 float4 on 132 SMs: 227 KB (less the static
  // shared memory) hold 7232 of the weight's and of the bias's.
  const int kMostOnChip = 7232;
  run<8, 16, 8, 4>("traffic only, 8+16", 0, false, false, m, hx, hw, hb);
  run<8, 16, 8, 4>("weights from L2, 8+16", 0, true, true, m, hx, hw, hb);
  run<8, 16, 8, 4>("half the weights on chip, 8+16", kMostOnChip / 2, true,
                   true, m, hx, hw, hb);
  run<8, 16, 8, 4>("most weights on chip, 8+16", kMostOnChip, true, true, m, hx,
                   hw, hb);
  run<8, 24, 8, 2>("most weights on chip, 8+24", kMostOnChip, true, true, m, hx,
                   hw, hb);
  run<16, 16, 4, 2>("most weights on chip, 16+16", kMostOnChip, true, true, m,
                    hx, hw, hb);
  // The ring: 220 KB, a block's range of a row and most of the next.
  const int kRing = 14080;
  run<8, 16, 8, 4, true>("ring, 8+16", kRing, true, true, m, hx, hw, hb);
  run<8, 24, 8, 2, true>("ring, 8+24", kRing, true, true, m, hx, hw, hb);
  run<16, 16, 4, 2, true>("ring, 16+16", kRing, true, true, m, hx, hw, hb);
  run<8, 8, 8, 8, true>("ring, 8+8", kRing, true, true, m, hx, hw, hb);
  return 0;
}
