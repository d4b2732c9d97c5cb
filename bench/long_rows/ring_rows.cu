// Standalone measure of a one-read form for few long rows on Hopper: a
// persistent cooperative grid, one block an SM, each block owning the same
// column range of every row. A producer warp streams the block's ranges
// through a ring of shared-memory slots with bulk copies (the copy engine,
// completing on one mbarrier a slot); the compute warps fold a step of B
// rows' statistics from the slots, publish the block's partials, arrive at
// the step's grid barrier and, L steps later, combine the partials of all
// blocks and write the outputs from the slots, freeing each slot through
// its own mbarrier. DRAM then reads each row once, and the next rows'
// copies stay in flight while a step's barrier settles. LayerNorm's ranges
// (127 KB a block) leave the ring room for half a row ahead at most, so it
// is also measured as `ln_regs`: the block's range of this row in registers
// (512 threads x 16 float4), of the next row landing in shared memory
// meanwhile, a whole row in flight; its weights read in several ways to
// see what they cost (ln_regs' W), and as `ln_pipe`, which arrives at the
// next row's barrier before it waits at this row's (also for GroupNorm).
//
// Problems (KernelBench's sizes, fp32): GroupNorm over 8x64x512x512 in 8
// groups (64 rows of 2M, per-channel weights), LayerNorm over 16 rows of 4M
// (per-element weights, read again every row), softmax over 512 rows of
// 393,216. Each
// configuration is checked against an fp64 host reference on three rows
// and timed (CUDA events, L2 flushed before each run, median of 20) beside
// a device copy of 512 MB, whose rate is the floor's bandwidth.
//
// Build: nvcc -O3 -arch=sm_90 -std=c++17 -o ring_rows ring_rows.cu
// Run:   ./ring_rows [gn|ln|sm]...   (all three by default)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "probe.cuh"

enum { LN = 0, GN = 1, SM = 2 };

struct Params {
  const float *x;
  float *y;
  const float *w;
  const float *b;
  long long R, N; // rows, row length
  long long S;    // range per block (floats, multiple of 4)
  int K;          // chunks per row range (max over blocks)
  int slotFloats; // floats per slot
  int Q;          // slots
  int chanLen;    // GN: elements per channel; channels per group = N / chanLen
  int groupsPerSample; // GN: groups per sample; channels = groups * N/chanLen
  float2 *partials;    // [steps][B][P]
  unsigned *counters;  // [steps]
};

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(unsigned long long *bar,
                                          unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(count));
}
__device__ __forceinline__ void mbar_arrive(unsigned long long *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar))
               : "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned long long *bar,
                                            unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                   smem_addr(bar)),
               "r"(bytes)
               : "memory");
}
// Waits for the barrier's phase of this parity; traps after 2 s, so that a
// mistake stops the run instead of hanging the GPU machine's call.
__device__ __forceinline__ void mbar_wait(unsigned long long *bar,
                                          unsigned parity) {
  unsigned long long started = 0;
  for (;;) {
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done)
                 : "r"(smem_addr(bar)), "r"(parity)
                 : "memory");
    if (done)
      return;
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (started == 0)
      started = now;
    else if (now - started > 2000000000ull)
      __trap();
  }
}
__device__ __forceinline__ void bulk_load(void *dst, const void *src,
                                          unsigned bytes,
                                          unsigned long long *bar,
                                          unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::"
      "cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}
__device__ __forceinline__ unsigned long long policy_evict_first() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;"
               : "=l"(p));
  return p;
}
__device__ __forceinline__ unsigned long long policy_evict_last() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ float4 ld_policy(const float4 *p,
                                            unsigned long long pol) {
  float4 v;
  asm volatile("ld.global.nc.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p), "l"(pol));
  return v;
}

// Stats accumulator: LN/GN: shifted sums (s1, s2) about shift c; SM: (max,
// sum).
struct Acc {
  float a, b;
};

template <int MODE>
__device__ __forceinline__ Acc merge(Acc x, Acc y) {
  if (MODE == SM) {
    float m = fmaxf(x.a, y.a);
    if (m == -INFINITY)
      return {m, 0.f};
    return {m, x.b * __expf(x.a - m) + y.b * __expf(y.a - m)};
  }
  return {x.a + y.a, x.b + y.b};
}

// A block's (mean, M2) from its `len` elements' sums of (x - shift) and of
// its square.
__device__ __forceinline__ float2 block_moments(float shift, float s1, float s2,
                                                long long len) {
  if (len <= 0)
    return make_float2(0.f, 0.f);
  float n = (float)len;
  return make_float2(shift + s1 / n, fmaxf(s2 - s1 * s1 / n, 0.f));
}

// The grid barrier of one step, by thread 0 of each block: its partials
// released with the arrival, then all P arrivals awaited (an acquire).
__device__ __forceinline__ void grid_arrive(unsigned *counter) {
  __threadfence();
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter)
               : "memory");
}
__device__ __forceinline__ void grid_wait(const unsigned *counter,
                                          unsigned blocks) {
  unsigned arrived;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                 : "=r"(arrived)
                 : "l"(counter)
                 : "memory");
  } while (arrived < blocks);
  __threadfence();
}

// Lane-parallel Chan merge of the P blocks' (mean, M2) partials of one row,
// block q holding min(S, N - q * S) elements; every lane gets (mean, M2 / n).
__device__ __forceinline__ float2 combine_moments(const float2 *parts, int P,
                                                  long long S, long long N,
                                                  int lane) {
  float n = 0.f, mean = 0.f, m2 = 0.f;
  for (int q = lane; q < P; q += 32) {
    float2 part = __ldcg(&parts[q]);
    float nb = (float)max(0LL, min(S, N - (long long)q * S));
    if (nb == 0.f)
      continue;
    float nn = n + nb, d = part.x - mean;
    mean += d * nb / nn;
    m2 += part.y + d * d * n * nb / nn;
    n = nn;
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    float n2 = __shfl_xor_sync(~0u, n, off),
          mean2 = __shfl_xor_sync(~0u, mean, off),
          m22 = __shfl_xor_sync(~0u, m2, off);
    if (n2 != 0.f) {
      float nn = n + n2, d = mean2 - mean;
      mean += d * n2 / nn;
      m2 += m22 + d * d * n * n2 / nn;
      n = nn;
    }
  }
  return make_float2(mean, m2 / n);
}

template <int MODE, int B, int L, int T, int VPT>
__global__ void __launch_bounds__(T + 32, 1) ring_rows(Params p) {
  extern __shared__ __align__(128) unsigned char smem[];
  float *slots = reinterpret_cast<float *>(smem);
  unsigned long long *full = reinterpret_cast<unsigned long long *>(
      smem + (size_t)p.Q * p.slotFloats * 4);
  unsigned long long *empty = full + p.Q;
  __shared__ Acc red[T / 32][B];
  __shared__ float2 stat[B]; // (mean, rstd) or (max, 1/sum)
  __shared__ float shift[B];

  const int P = gridDim.x, blk = blockIdx.x, tid = threadIdx.x;
  const long long begin = (long long)blk * p.S;
  const long long len = max(0LL, min(p.S, p.N - begin));
  const int K = (int)((len + p.slotFloats - 1) / p.slotFloats);
  const long long steps = p.R / B;
  const long long total = steps * B * K;
  unsigned long long pol = policy_evict_first();
  unsigned long long wpol = policy_evict_last();

  if (tid == 0) {
    for (int q = 0; q < p.Q; ++q) {
      mbar_init(&full[q], 1);
      mbar_init(&empty[q], T / 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (tid >= T) {
    // The producer warp: one lane fills the ring in the order the chunks are
    // used.
    if (tid != T)
      return;
    for (long long t = 0; t < total; ++t) {
      long long st = t / (B * K);
      int within = (int)(t % (B * K));
      int j = within / K, k = within % K;
      long long row = st * B + j;
      long long off = (long long)k * p.slotFloats;
      unsigned bytes = (unsigned)(min((long long)p.slotFloats, len - off) * 4);
      int q = (int)(t % p.Q);
      if (t >= p.Q)
        mbar_wait(&empty[q], (unsigned)(((t / p.Q) - 1) & 1));
      mbar_expect(&full[q], bytes);
      bulk_load(slots + (size_t)q * p.slotFloats, p.x + row * p.N + begin + off,
                bytes, &full[q], pol);
    }
    return;
  }
  auto sync = [&]() { asm volatile("bar.sync 1, %0;" ::"r"(T) : "memory"); };

  for (long long s = 0; s < steps + L; ++s) {
    if (s < steps) {
      // Statistics of step s.
      Acc acc[B];
#pragma unroll
      for (int j = 0; j < B; ++j)
        acc[j] = MODE == SM ? Acc{-INFINITY, 0.f} : Acc{0.f, 0.f};
#pragma unroll
      for (int j = 0; j < B; ++j) {
        float c = 0.f;
        for (int k = 0; k < K; ++k) {
          long long t = (s * B + j) * K + k;
          int q = (int)(t % p.Q);
          mbar_wait(&full[q], (unsigned)((t / p.Q) & 1));
          const float *slot = slots + (size_t)q * p.slotFloats;
          if (MODE != SM && k == 0)
            c = slot[0];
          long long off = (long long)k * p.slotFloats;
          int n4 = (int)(min((long long)p.slotFloats, len - off) / 4);
#pragma unroll
          for (int i = 0; i < VPT; ++i) {
            int v = tid + i * T;
            if (v >= n4)
              break;
            float4 x = reinterpret_cast<const float4 *>(slot)[v];
            if (MODE == SM) {
              float m = fmaxf(fmaxf(x.x, x.y), fmaxf(x.z, x.w));
              float mn = fmaxf(acc[j].a, m);
              acc[j].b = acc[j].b * __expf(acc[j].a - mn) + __expf(x.x - mn) +
                         __expf(x.y - mn) + __expf(x.z - mn) + __expf(x.w - mn);
              acc[j].a = mn;
            } else {
              float d0 = x.x - c, d1 = x.y - c, d2 = x.z - c, d3 = x.w - c;
              acc[j].a += (d0 + d1) + (d2 + d3);
              acc[j].b += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
            }
          }
        }
        if (MODE != SM && tid == 0)
          shift[j] = c;
      }
#pragma unroll
      for (int j = 0; j < B; ++j) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
          Acc y{__shfl_xor_sync(~0u, acc[j].a, o),
                __shfl_xor_sync(~0u, acc[j].b, o)};
          acc[j] = merge<MODE>(acc[j], y);
        }
        if ((tid & 31) == 0)
          red[tid >> 5][j] = acc[j];
      }
      sync();
      if (tid < 32) {
#pragma unroll
        for (int j = 0; j < B; ++j) {
          Acc a = tid < T / 32
                      ? red[tid][j]
                      : (MODE == SM ? Acc{-INFINITY, 0.f} : Acc{0.f, 0.f});
#pragma unroll
          for (int o = 16; o > 0; o >>= 1) {
            Acc y{__shfl_xor_sync(~0u, a.a, o), __shfl_xor_sync(~0u, a.b, o)};
            a = merge<MODE>(a, y);
          }
          if (tid == 0)
            p.partials[(s * B + j) * P + blk] =
                MODE == SM ? make_float2(a.a, a.b)
                           : block_moments(shift[j], a.a, a.b, len);
        }
        if (tid == 0)
          grid_arrive(p.counters + s);
      }
      sync();
    }
    if (s >= L) {
      long long o = s - L;
      // Wait for step o's barrier, combine its partials.
      if (tid == 0)
        grid_wait(p.counters + o, (unsigned)P);
      sync();
      const int warp = tid >> 5, lane = tid & 31;
      for (int j = warp; j < B; j += T / 32) {
        if (MODE == SM) {
          // (max, sum) over the P blocks.
          Acc a{-INFINITY, 0.f};
          for (int q = lane; q < P; q += 32) {
            float2 part = __ldcg(&p.partials[(o * B + j) * P + q]);
            a = merge<SM>(a, {part.x, part.y});
          }
#pragma unroll
          for (int off = 16; off > 0; off >>= 1)
            a = merge<SM>(a, {__shfl_xor_sync(~0u, a.a, off),
                              __shfl_xor_sync(~0u, a.b, off)});
          if (lane == 0)
            stat[j] = make_float2(a.a, 1.f / a.b);
        } else {
          float2 mv =
              combine_moments(p.partials + (o * B + j) * P, P, p.S, p.N, lane);
          if (lane == 0)
            stat[j] = make_float2(mv.x, rsqrtf(mv.y + 1e-5f));
        }
      }
      sync();
      // Outputs of step o, freeing each slot after it; LayerNorm's weights
      // loaded a chunk ahead.
      float4 wn[VPT], bn[VPT];
      auto loadW = [&](long long off) {
#pragma unroll
        for (int i = 0; i < VPT; ++i) {
          int v = tid + i * T;
          if (MODE == LN && off + 4LL * v < len) {
            long long e = begin + off + 4LL * v;
            wn[i] = ld_policy(reinterpret_cast<const float4 *>(p.w + e), wpol);
            bn[i] = ld_policy(reinterpret_cast<const float4 *>(p.b + e), wpol);
          }
        }
      };
      for (int j = 0; j < B; ++j) {
        long long row = o * B + j;
        float2 st = stat[j];
        if (MODE == LN)
          loadW(0);
        for (int k = 0; k < K; ++k) {
          long long t = (o * B + j) * K + k;
          int q = (int)(t % p.Q);
          const float *slot = slots + (size_t)q * p.slotFloats;
          long long off = (long long)k * p.slotFloats;
          int n4 = (int)(min((long long)p.slotFloats, len - off) / 4);
          long long gbase = row * p.N + begin + off;
          float4 wc[VPT], bc[VPT];
#pragma unroll
          for (int i = 0; i < VPT; ++i) {
            wc[i] = wn[i];
            bc[i] = bn[i];
          }
          if (MODE == LN && k + 1 < K)
            loadW(off + p.slotFloats);
#pragma unroll
          for (int i = 0; i < VPT; ++i) {
            int v = tid + i * T;
            if (v >= n4)
              break;
            float4 x = reinterpret_cast<const float4 *>(slot)[v];
            float4 y;
            if (MODE == SM) {
              y = make_float4(
                  __expf(x.x - st.x) * st.y, __expf(x.y - st.x) * st.y,
                  __expf(x.z - st.x) * st.y, __expf(x.w - st.x) * st.y);
            } else if (MODE == LN) {
              float4 w = wc[i], b = bc[i];
              y = make_float4((x.x - st.x) * st.y * w.x + b.x,
                              (x.y - st.x) * st.y * w.y + b.y,
                              (x.z - st.x) * st.y * w.z + b.z,
                              (x.w - st.x) * st.y * w.w + b.w);
            } else {
              long long e = begin + off + 4LL * v;
              int ch = (int)(row % p.groupsPerSample) * (int)(p.N / p.chanLen) +
                       (int)(e / p.chanLen);
              float w = __ldg(p.w + ch), b = __ldg(p.b + ch);
              float sc = st.y * w, sh = b - st.x * sc;
              y = make_float4(x.x * sc + sh, x.y * sc + sh, x.z * sc + sh,
                              x.w * sc + sh);
            }
            __stcs(reinterpret_cast<float4 *>(p.y + gbase) + v, y);
          }
          __syncwarp();
          if ((tid & 31) == 0)
            mbar_arrive(&empty[q]);
        }
      }
    }
  }
}

// The pieces ln_regs and ln_pipe share: a block's range of one row
// (`len` floats at `begin`) copied into shared memory by thread 0, its
// float4s copied into a thread's registers, its shifted sums folded and
// summed over the block, and the affine outputs.
__device__ __forceinline__ void fill_range(const Params &p, long long row,
                                           long long begin, long long len,
                                           unsigned char *smem,
                                           unsigned long long *bar,
                                           unsigned long long policy) {
  if (threadIdx.x != 0 || row >= p.R)
    return;
  unsigned bytes = (unsigned)(len * 4);
  mbar_expect(bar, bytes);
  if (bytes)
    bulk_load(smem, p.x + row * p.N + begin, bytes, bar, policy);
}
template <int T, int V>
__device__ __forceinline__ void load_range(float4 (&x)[V], const float4 *buf,
                                           int n4) {
#pragma unroll
  for (int i = 0; i < V; ++i) {
    int v = threadIdx.x + i * T;
    x[i] = v < n4 ? buf[v] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
}
// Adds x's deviations from c to s1 and their squares to s2.
__device__ __forceinline__ void add_shifted(float4 x, float c, float &s1,
                                            float &s2) {
  float d0 = x.x - c, d1 = x.y - c, d2 = x.z - c, d3 = x.w - c;
  s1 += (d0 + d1) + (d2 + d3);
  s2 += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
}
// The block's sums of (s1, s2), in every lane of warp 0 (the other warps
// get nothing of use); `red` holds a pair a warp.
template <int T>
__device__ __forceinline__ Acc block_sums(float s1, float s2, Acc *red) {
  const int tid = threadIdx.x;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    s1 += __shfl_xor_sync(~0u, s1, o);
    s2 += __shfl_xor_sync(~0u, s2, o);
  }
  if ((tid & 31) == 0)
    red[tid >> 5] = {s1, s2};
  __syncthreads();
  Acc a{0.f, 0.f};
  if (tid < 32) {
    a = tid < T / 32 ? red[tid] : Acc{0.f, 0.f};
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      a.a += __shfl_xor_sync(~0u, a.a, o);
      a.b += __shfl_xor_sync(~0u, a.b, o);
    }
  }
  return a;
}
// (x - mean) * rstd * w + b, `st` holding (mean, rstd).
__device__ __forceinline__ float4 affine4(float4 x, float2 st, float4 w,
                                          float4 b) {
  return make_float4((x.x - st.x) * st.y * w.x + b.x,
                     (x.y - st.x) * st.y * w.y + b.y,
                     (x.z - st.x) * st.y * w.z + b.z,
                     (x.w - st.x) * st.y * w.w + b.w);
}

// LayerNorm with the block's range of this row in registers and of the next
// row landing in shared memory meanwhile (one bulk copy, one mbarrier): a
// whole row is in flight while this row's barrier settles and its outputs
// are written. The range must fit T * V float4 (127 KB at 512 x 16).
// W picks how the weights are read, to see what they cost: 0 with an L2
// evict_last policy, 1 with plain read-only loads, 2 not at all (weight 1,
// bias 0: LayerNorm without its affine), 3 plain loads of the first 64K
// weights only (e modulo 65536, a set that stays cached; the host check
// knows).
template <int T, int V, int W>
__global__ void __launch_bounds__(T, 1) ln_regs(Params p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const float4 *buf = reinterpret_cast<const float4 *>(smem);
  unsigned long long *bar =
      reinterpret_cast<unsigned long long *>(smem + p.S * 4);
  __shared__ Acc red[T / 32];
  __shared__ float2 stat;
  const int P = gridDim.x, blk = blockIdx.x, tid = threadIdx.x;
  const long long begin = (long long)blk * p.S;
  const long long len = max(0LL, min(p.S, p.N - begin));
  const int n4 = (int)(len / 4);
  unsigned long long pol = policy_evict_first();
  unsigned long long wpol = policy_evict_last();
  if (tid == 0) {
    mbar_init(bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  fill_range(p, 0, begin, len, smem, bar, pol);
  for (long long r = 0; r < p.R; ++r) {
    mbar_wait(bar, (unsigned)(r & 1));
    float4 x[V];
    load_range<T, V>(x, buf, n4);
    const float c = len > 0 ? reinterpret_cast<const float *>(smem)[0] : 0.f;
    // The next row's copy overwrites what every thread just read.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    fill_range(p, r + 1, begin, len, smem, bar, pol);
    float s1 = 0.f, s2 = 0.f;
#pragma unroll
    for (int i = 0; i < V; ++i)
      if (tid + i * T < n4)
        add_shifted(x[i], c, s1, s2);
    Acc a = block_sums<T>(s1, s2, red);
    if (tid < 32) {
      if (tid == 0) {
        p.partials[r * P + blk] = block_moments(c, a.a, a.b, len);
        grid_arrive(p.counters + r);
        grid_wait(p.counters + r, (unsigned)P);
      }
      __syncwarp();
      float2 mv = combine_moments(p.partials + r * P, P, p.S, p.N, tid);
      if (tid == 0)
        stat = make_float2(mv.x, rsqrtf(mv.y + 1e-5f));
    }
    __syncthreads();
    const float2 st = stat;
    float4 *out = reinterpret_cast<float4 *>(p.y + r * p.N + begin);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      int v = tid + i * T;
      if (v < n4) {
        long long e = begin + 4LL * v;
        float4 w = make_float4(1.f, 1.f, 1.f, 1.f);
        float4 b = make_float4(0.f, 0.f, 0.f, 0.f);
        if constexpr (W == 0) {
          w = ld_policy(reinterpret_cast<const float4 *>(p.w + e), wpol);
          b = ld_policy(reinterpret_cast<const float4 *>(p.b + e), wpol);
        } else if constexpr (W == 1 || W == 3) {
          long long at = W == 3 ? e % 65536 : e;
          w = __ldg(reinterpret_cast<const float4 *>(p.w + at));
          b = __ldg(reinterpret_cast<const float4 *>(p.b + at));
        }
        __stcs(out + v, affine4(x[i], st, w, b));
      }
    }
  }
}

// LayerNorm pipelined over rows: a block's range of row r in registers, of
// row r + 1 in shared memory. Each step folds row r + 1's statistics from
// shared memory and arrives at its grid barrier without waiting, then
// waits at row r's barrier (arrived a step earlier, so settled), writes row
// r's outputs, and moves row r + 1 into the registers, freeing the buffer
// for row r + 2's bulk copy, whose reading overlaps the writes of row r.
// The weights come through a ring of D groups in shared memory, each
// thread copying (cp.async) and reading only its own 32 bytes a group, so
// that D groups' loads are in flight without holding registers.
__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(
                   smem_addr(dst)),
               "l"(src)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

template <int MODE, int T, int V, int D, int W>
__global__ void __launch_bounds__(T, 1) ln_pipe(Params p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const float4 *buf = reinterpret_cast<const float4 *>(smem);
  float4 *ring = reinterpret_cast<float4 *>(smem + p.S * 4);
  unsigned long long *bar =
      reinterpret_cast<unsigned long long *>(ring + 2 * D * T);
  __shared__ Acc red[T / 32];
  __shared__ float2 stat;
  const int P = gridDim.x, blk = blockIdx.x, tid = threadIdx.x;
  const long long begin = (long long)blk * p.S;
  const long long len = max(0LL, min(p.S, p.N - begin));
  const int n4 = (int)(len / 4);
  unsigned long long pol = policy_evict_first();
  if (tid == 0) {
    mbar_init(bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  auto fill = [&](long long row) {
    fill_range(p, row, begin, len, smem, bar, pol);
  };
  // Row `row`'s statistics from the buffer: the block's partial published
  // and its arrival at the row's barrier, not waited for.
  auto foldAndArrive = [&](long long row) {
    mbar_wait(bar, (unsigned)(row & 1));
    const float c = len > 0 ? reinterpret_cast<const float *>(smem)[0] : 0.f;
    float s1 = 0.f, s2 = 0.f;
#pragma unroll
    for (int i = 0; i < V; ++i)
      if (tid + i * T < n4)
        add_shifted(buf[tid + i * T], c, s1, s2);
    Acc a = block_sums<T>(s1, s2, red);
    if (tid == 0) {
      p.partials[row * P + blk] = block_moments(c, a.a, a.b, len);
      grid_arrive(p.counters + row);
    }
  };
  auto weights = [&](int i) {
    int v = tid + i * T;
    float4 *slot = ring + 2 * ((i % D) * T + tid);
    long long at = begin + 4LL * v;
    if (W == 3)
      at %= 65536;
    if (v < n4 && W != 2 && MODE == LN) {
      cp_async16(slot, p.w + at);
      cp_async16(slot + 1, p.b + at);
    }
    cp_async_commit();
  };
  float4 x[V];
  fill(0);
  foldAndArrive(0);
  load_range<T, V>(x, buf, n4);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  fill(1);
  for (long long r = 0; r < p.R; ++r) {
#pragma unroll
    for (int i = 0; i < D; ++i)
      weights(i);
    if (r + 1 < p.R)
      foldAndArrive(r + 1);
    if (tid < 32) {
      if (tid == 0)
        grid_wait(p.counters + r, (unsigned)P);
      __syncwarp();
      float2 mv = combine_moments(p.partials + r * P, P, p.S, p.N, tid);
      if (tid == 0)
        stat = make_float2(mv.x, rsqrtf(mv.y + 1e-5f));
    }
    __syncthreads();
    const float2 st = stat;
    float4 *out = reinterpret_cast<float4 *>(p.y + r * p.N + begin);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      cp_async_wait<D - 1>();
      const float4 *slot = ring + 2 * ((i % D) * T + tid);
      int v = tid + i * T;
      if (v < n4) {
        float4 w = make_float4(1.f, 1.f, 1.f, 1.f);
        float4 b = make_float4(0.f, 0.f, 0.f, 0.f);
        if (MODE == GN) {
          // GroupNorm's weights are per channel: the four share one.
          long long e = begin + 4LL * v;
          int ch = (int)(r % p.groupsPerSample) * (int)(p.N / p.chanLen) +
                   (int)(e / p.chanLen);
          float wc = __ldg(p.w + ch), bc = __ldg(p.b + ch);
          w = make_float4(wc, wc, wc, wc);
          b = make_float4(bc, bc, bc, bc);
        } else if (W != 2) {
          w = slot[0];
          b = slot[1];
        }
        __stcs(out + v, affine4(x[i], st, w, b));
      }
      if (i + D < V)
        weights(i + D);
      else
        cp_async_commit();
    }
    if (r + 1 < p.R) {
      load_range<T, V>(x, buf, n4);
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      __syncthreads();
      fill(r + 2);
    }
  }
  cp_async_wait<0>();
}

__global__ void copy_kernel(const float4 *__restrict__ a,
                            float4 *__restrict__ b, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    __stcs(b + i, __ldcs(a + i));
}

template <int MODE, int B, int L, int T, int VPT, bool REGS = false,
          int W = 0, int PIPE = 0>
static void run(const char *name, long long R, long long N, int chanLen,
                int groupsPerSample, int reps) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int P = prop.multiProcessorCount;
  long long S = ((N + P - 1) / P + 3) / 4 * 4;
  int slotFloats = (int)std::min<long long>(VPT * T * 4, S);
  slotFloats = (slotFloats + 3) / 4 * 4;
  int K = (int)((S + slotFloats - 1) / slotFloats);
  int Q = (int)std::min<long long>((200 * 1024) / (slotFloats * 4), 64);
  if (REGS && (long long)T * VPT * 4 < S) {
    printf("%s: a range of %lld floats exceeds the registers\n", name, S);
    return;
  }
  if (!REGS && Q < (L + 1) * B * K) {
    printf("%s: ring too small (Q %d, need %d)\n", name, Q, (L + 1) * B * K);
    return;
  }
  size_t sh = REGS ? (size_t)S * 4 + 16 : (size_t)Q * slotFloats * 4 + Q * 16;
  if (PIPE)
    sh = (size_t)S * 4 + (size_t)2 * PIPE * T * 16 + 16;
  const int threads = REGS ? T : T + 32;
  void (*kern)(Params);
  if constexpr (PIPE > 0)
    kern = ln_pipe<MODE, T, VPT, PIPE, W>;
  else if constexpr (REGS)
    kern = ln_regs<T, VPT, W>;
  else
    kern = ring_rows<MODE, B, L, T, VPT>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int)sh));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, threads, sh));
  if (occ < 1) {
    printf("%s: no occupancy\n", name);
    return;
  }
  long long elems = R * N;
  float *x, *y, *w = nullptr, *b = nullptr, *flush;
  float2 *parts;
  unsigned *cnt;
  long long wn = MODE == LN   ? N
                 : MODE == GN ? (long long)groupsPerSample * (N / chanLen)
                              : 0;
  CK(cudaMalloc(&x, elems * 4));
  CK(cudaMalloc(&y, elems * 4));
  if (wn) {
    CK(cudaMalloc(&w, wn * 4));
    CK(cudaMalloc(&b, wn * 4));
  }
  long long steps = R / B;
  CK(cudaMalloc(&parts, steps * B * P * sizeof(float2)));
  CK(cudaMalloc(&cnt, steps * 4));
  size_t flushBytes = 512 << 20;
  CK(cudaMalloc(&flush, flushBytes));
  std::vector<float> hx(elems), hw(wn), hb(wn);
  unsigned long long st = 12345;
  auto rnd = [&]() {
    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((st >> 40) & 0xffffff) / 16777216.0f;
  };
  for (long long i = 0; i < elems; ++i)
    hx[i] = MODE == SM ? rnd() * 8.f - 4.f : rnd() * 2.f + 3.f;
  for (long long i = 0; i < wn; ++i) {
    hw[i] = W == 2 ? 1.f : rnd() + 0.5f;
    hb[i] = W == 2 ? 0.f : rnd() - 0.5f;
  }
  CK(cudaMemcpy(x, hx.data(), elems * 4, cudaMemcpyHostToDevice));
  if (wn) {
    CK(cudaMemcpy(w, hw.data(), wn * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, hb.data(), wn * 4, cudaMemcpyHostToDevice));
  }
  Params pr{x,     y,  w,          b, R,       N,
            S,     K,  slotFloats, Q, chanLen, groupsPerSample,
            parts, cnt};
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> tk, tc, tm;
  long long bytes = elems * 8 + (W == 2 ? 0 : W == 3 ? 65536 * 8 : wn * 8);
  for (int r = 0; r < reps + 2; ++r) {
    CK(cudaMemsetAsync(flush, r, flushBytes));
    CK(cudaMemsetAsync(cnt, 0, steps * 4));
    void *args[] = {&pr};
    CK(cudaEventRecord(e0));
    CK(cudaLaunchCooperativeKernel((void *)kern, dim3(P), dim3(threads), args,
                                   sh));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 2)
      tk.push_back(ms);
    CK(cudaMemsetAsync(flush, r, flushBytes));
    CK(cudaEventRecord(e0));
    copy_kernel<<<P * 8, 512>>>((const float4 *)x, (float4 *)flush,
                                std::min<long long>(elems, flushBytes / 4) / 4);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 2)
      tc.push_back(ms);
    CK(cudaMemsetAsync(flush, r, flushBytes));
    CK(cudaEventRecord(e0));
    CK(cudaMemcpyAsync(flush, x, std::min<long long>(elems * 4, flushBytes),
                       cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 2)
      tm.push_back(ms);
  }
  CK(cudaGetLastError());
  long long copied = std::min<long long>(elems, flushBytes / 4) * 8;
  double copyBw = copied / (std::min(median(tc), median(tm)) * 1e-3);
  double kt = median(tk) * 1e-3;
  double floor = bytes / copyBw;
  // Check against fp64 on a few rows.
  std::vector<float> hy(elems);
  CK(cudaMemcpy(hy.data(), y, elems * 4, cudaMemcpyDeviceToHost));
  double maxErr = 0;
  for (long long r : {0LL, R / 3, R - 1}) {
    const float *xr = &hx[r * N];
    double a = 0, bb = 0;
    if (MODE == SM) {
      a = -1e300;
      for (long long i = 0; i < N; ++i)
        a = std::max(a, (double)xr[i]);
      for (long long i = 0; i < N; ++i)
        bb += std::exp(xr[i] - a);
    } else {
      for (long long i = 0; i < N; ++i)
        a += xr[i];
      a /= N;
      for (long long i = 0; i < N; ++i)
        bb += (xr[i] - a) * (xr[i] - a);
      bb = 1.0 / std::sqrt(bb / N + 1e-5);
    }
    for (long long i = 0; i < N; ++i) {
      double ref;
      if (MODE == SM)
        ref = std::exp(xr[i] - a) / bb;
      else if (MODE == LN)
        ref = (xr[i] - a) * bb * hw[W == 3 ? i % 65536 : i] +
              hb[W == 3 ? i % 65536 : i];
      else {
        int ch = (int)(r % groupsPerSample) * (int)(N / chanLen) +
                 (int)(i / chanLen);
        ref = (xr[i] - a) * bb * hw[ch] + hb[ch];
      }
      double err = std::fabs(ref - hy[r * N + i]) /
                   (std::fabs(ref) + (MODE == SM ? 1e-30 : 1.0));
      maxErr = std::max(maxErr, err);
    }
  }
  printf("%-26s R=%lld N=%lld P=%d threads=%d B=%d L=%d S=%lld K=%d slot=%dB "
         "Q=%d occ=%d: %.1f us, copy %.2f TB/s, floor %.1f us, %.1f%% of copy, "
         "max rel err %.2e\n",
         name, R, N, P, threads, B, L, S, K, slotFloats * 4, Q, occ, kt * 1e6,
         copyBw / 1e12, floor * 1e6, 100 * floor / kt, maxErr);
  cudaFree(x);
  cudaFree(y);
  if (w) {
    cudaFree(w);
    cudaFree(b);
  }
  cudaFree(parts);
  cudaFree(cnt);
  cudaFree(flush);
}

static bool wanted(int argc, char **argv, const char *problem) {
  if (argc < 2)
    return true;
  for (int i = 1; i < argc; ++i)
    if (!strcmp(argv[i], problem))
      return true;
  return false;
}

int main(int argc, char **argv) {
  const int reps = 20;
  // run<MODE, B rows a step, L steps of lag, T compute threads, VPT float4
  // a thread a slot>: a slot holds T * VPT * 16 bytes.
  if (wanted(argc, argv, "gn")) {
    // 64 rows of 2M, channels of 262144, 8 groups a sample.
    run<GN, 1, 1, 512, 2>("gn B1 L1 16K", 64, 2097152, 262144, 8, reps);
    run<GN, 1, 0, 512, 2>("gn B1 L0 16K", 64, 2097152, 262144, 8, reps);
    run<GN, 1, 2, 512, 2>("gn B1 L2 16K", 64, 2097152, 262144, 8, reps);
    run<GN, 1, 1, 256, 4>("gn B1 L1 16K T256", 64, 2097152, 262144, 8, reps);
    run<GN, 1, 1, 512, 1>("gn B1 L1 8K", 64, 2097152, 262144, 8, reps);
    run<GN, 1, 0, 512, 8, true, 0, 2>("gn pipe", 64, 2097152, 262144, 8, reps);
  }
  if (wanted(argc, argv, "ln")) {
    // A block's range of a row is 127 KB: no room for a second row.
    run<LN, 1, 0, 512, 2>("ln B1 L0 16K", 16, 4194304, 1, 1, reps);
    run<LN, 1, 0, 512, 1>("ln B1 L0 8K", 16, 4194304, 1, 1, reps);
    run<LN, 1, 0, 256, 4>("ln B1 L0 16K T256", 16, 4194304, 1, 1, reps);
    run<LN, 1, 0, 512, 4>("ln B1 L0 32K", 16, 4194304, 1, 1, reps);
    run<LN, 1, 0, 512, 16, true>("ln regs T512", 16, 4194304, 1, 1, reps);
    run<LN, 1, 0, 512, 16, true, 1>("ln regs T512 ldg", 16, 4194304, 1, 1,
                                    reps);
    run<LN, 1, 0, 512, 16, true, 2>("ln regs T512 no affine", 16, 4194304, 1,
                                    1, reps);
    run<LN, 1, 0, 512, 16, true, 3>("ln regs T512 64K weights", 16, 4194304,
                                    1, 1, reps);
    run<LN, 1, 0, 512, 16, true, 0, 2>("ln pipe D2", 16, 4194304, 1, 1, reps);
    run<LN, 1, 0, 512, 16, true, 0, 4>("ln pipe D4", 16, 4194304, 1, 1, reps);
    run<LN, 1, 0, 512, 16, true, 2, 4>("ln pipe no affine", 16, 4194304, 1, 1,
                                       reps);
    run<LN, 1, 0, 512, 16, true, 3, 4>("ln pipe D4 64K weights", 16, 4194304,
                                       1, 1, reps);
  }
  if (wanted(argc, argv, "sm")) {
    run<SM, 4, 1, 512, 2>("sm B4 L1", 512, 393216, 1, 1, reps);
    run<SM, 8, 0, 512, 2>("sm B8 L0", 512, 393216, 1, 1, reps);
    run<SM, 2, 3, 512, 2>("sm B2 L3", 512, 393216, 1, 1, reps);
    run<SM, 4, 2, 512, 2>("sm B4 L2", 512, 393216, 1, 1, reps);
    run<SM, 2, 1, 512, 2>("sm B2 L1", 512, 393216, 1, 1, reps);
  }
  return 0;
}
