// Few long rows read once from DRAM and written once, by chunks that any
// block may claim: the claiming form of waves.cu's GroupNorm, for the three
// problems the long-row forms are measured on (GroupNorm over 64 rows of
// 2M, LayerNorm over 16 rows of 4M with per-element weights, softmax over
// 512 rows of 393,216; fp32, KernelBench's sizes).
//
// No block owns a range of the rows. They are cut into chunks of CHUNK4
// float4s, and a producer thread in each block (one block an SM) claims
// the next chunk of all (a global counter, in row order) whenever one of
// its SLOTS shared-memory slots is free, and brings it there by one bulk
// copy; a block on a faster SM simply takes more chunks, where a block
// owning a range makes every row wait for the slowest. FOLDERS warps fold
// each chunk into its partial (one per chunk, wherever it was read) and
// count it in its row; a statistics warp combines each row's partials in
// chunk order once all are counted (the same on every block and every run)
// and leaves the row's statistics in shared memory; WRITERS warps apply
// them to each slot's chunk once its row's are in, write it with streaming
// stores and free the slot. Only running blocks claim, so nothing waits
// for a block that is not resident, and a row is held on chip only while
// its statistics settle.
//
// Checked against an fp64 host reference on three rows; timed with CUDA
// events, L2 flushed before each run, median of CLAIM_REPS (20); beside
// each, the device-to-device copy of the rows and the floor (rows read and
// written once, weights read once, at the copy's bandwidth). `./claim_rows
// TEXT` runs the forms whose name holds TEXT.
//
// Build: nvcc -O3 -arch=sm_90 -std=c++17 -o claim_rows claim_rows.cu
// Run:   ./claim_rows [TEXT]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "probe.cuh"

// GroupNorm: rows of channelsPerGroup channels of channel4 float4s each,
// per-channel weights; partials are (sum, sum of squares).
struct GroupNormOp {
  const float *w, *b;
  long long channel4;
  int channelsPerGroup, groupsPerSample;
  __device__ double2 zero() const { return make_double2(0, 0); }
  __device__ void fold(double2 &s, float4 v) const { ::fold(s, v); }
  __device__ double2 combine(double2 a, double2 b) const { return add(a, b); }
  __device__ float2 finish(double2 total, double n) const {
    return meanAndRstd(total, n);
  }
  __device__ float4 apply(float4 v, float2 st, int row, long long i) const {
    int c = (row % groupsPerSample) * channelsPerGroup + int(i / channel4);
    float scale = w[c] * st.y, shift = b[c] - st.x * scale;
    return make_float4(v.x * scale + shift, v.y * scale + shift,
                       v.z * scale + shift, v.w * scale + shift);
  }
};

// LayerNorm: per-element weights (a row's length of each), read from L2
// for every row.
struct LayerNormOp {
  const float4 *w, *b;
  __device__ double2 zero() const { return make_double2(0, 0); }
  __device__ void fold(double2 &s, float4 v) const { ::fold(s, v); }
  __device__ double2 combine(double2 a, double2 b) const { return add(a, b); }
  __device__ float2 finish(double2 total, double n) const {
    return meanAndRstd(total, n);
  }
  __device__ float4 apply(float4 v, float2 st, int, long long i) const {
    float4 g = __ldg(w + i), h = __ldg(b + i);
    return make_float4(
        (v.x - st.x) * st.y * g.x + h.x, (v.y - st.x) * st.y * g.y + h.y,
        (v.z - st.x) * st.y * g.z + h.z, (v.w - st.x) * st.y * g.w + h.w);
  }
};

// Softmax: partials are (largest, sum of exp(x - largest)).
struct SoftmaxOp {
  __device__ double2 zero() const { return make_double2(-INFINITY, 0); }
  __device__ void fold(double2 &s, float4 v) const {
    float m = float(s.x);
    float top = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)), next = fmaxf(m, top);
    float sum = float(s.y) * __expf(m - next) + __expf(v.x - next) +
                __expf(v.y - next) + __expf(v.z - next) + __expf(v.w - next);
    s = make_double2(next, sum);
  }
  __device__ double2 combine(double2 a, double2 b) const {
    double m = fmax(a.x, b.x);
    if (m == -INFINITY)
      return a;
    return make_double2(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
  }
  __device__ float2 finish(double2 total, double) const {
    return make_float2(float(total.x), float(1 / total.y));
  }
  __device__ float4 apply(float4 v, float2 st, int, long long) const {
    return make_float4(__expf(v.x - st.x) * st.y, __expf(v.y - st.x) * st.y,
                       __expf(v.z - st.x) * st.y, __expf(v.w - st.x) * st.y);
  }
};

struct Rows {
  const float4 *x;
  float4 *y;
  int rows;
  long long row4;
  double2 *partials;  // [rows][chunks a row]
  unsigned *counters; // [rows]: chunks folded; then the chunks claimed
  bool useStatistics; // false: the traffic alone, the ceiling
};

template <class Op>
__device__ __forceinline__ double2 warpCombine(const Op &op, double2 s) {
  for (int o = 16; o; o >>= 1) {
    double2 other = make_double2(__shfl_xor_sync(~0u, s.x, o),
                                 __shfl_xor_sync(~0u, s.y, o));
    s = op.combine(s, other);
  }
  return s;
}

constexpr int kMostRows = 1024;

template <class Op, int FOLDERS, int WRITERS, int CHUNK4, int SLOTS,
          int PRODUCERS>
__global__ void __launch_bounds__((2 + FOLDERS + WRITERS) * 32, 1)
    claimRows(Op op, Rows p) {
  extern __shared__ float4 held[];
  __shared__ __align__(8) unsigned long long full[SLOTS];
  __shared__ int chunkOf[SLOTS];
  __shared__ double2 warpPartials[2][FOLDERS];
  __shared__ float2 rowStatistics[kMostRows];
  __shared__ volatile int freed, rowsReady, folded; // this block's items
  constexpr int kFolderThreads = FOLDERS * 32, kWriterThreads = WRITERS * 32;
  const int chunksPerRow = int(p.row4 / CHUNK4);
  const int chunks = p.rows * chunksPerRow;
  unsigned *claimed = p.counters + p.rows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  static_assert(SLOTS % PRODUCERS == 0, "a slot fed by one producer");
  // A producer ends with an empty item (chunk -1); its later slots are
  // never filled, and the others' items go on past it.
  constexpr unsigned kAllEnded = (1u << PRODUCERS) - 1;
  if (threadIdx.x == 0) {
    freed = 0;
    rowsReady = 0;
    folded = 0;
    for (int k = 0; k < SLOTS; ++k)
      barrierInit(&full[k]);
    barrierInitFence();
  }
  __syncthreads();

  if (warp == 0) { // the producers
    if (lane >= PRODUCERS)
      return;
    // A chunk is claimed only once a slot is free for it: a claim waiting
    // for a slot could be the one chunk that the rows held in every slot
    // still wait for. PRODUCERS lanes, each filling every PRODUCERS-th slot
    // (SLOTS a multiple of it), keep that many claims in flight.
    const unsigned long long policy = l2Policy(false);
    for (int n = lane;; n += PRODUCERS) {
      long long started = clock64();
      while (n - freed >= SLOTS)
        if (clock64() - started > 4000000000ll)
          __trap();
      const int slot = n % SLOTS, c = atomicAdd(claimed, 1);
      if (c >= chunks) {
        chunkOf[slot] = -1;
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(
                         smemAddress(&full[slot]))
                     : "memory");
        return;
      }
      chunkOf[slot] = c;
      loadBulkHinted(held + slot * CHUNK4, p.x + (long long)c * CHUNK4,
                     CHUNK4 * 16, &full[slot], policy);
    }
  }
  if (warp == 1) { // the statistics, row after row
    for (int r = 0; r < p.rows; ++r) {
      float2 st = make_float2(0, 1);
      if (p.useStatistics) {
        if (lane == 0)
          waitCount(p.counters + r, chunksPerRow);
        __syncwarp();
        double2 s = op.zero();
        for (int k = lane; k < chunksPerRow; k += 32)
          s = op.combine(s,
                         __ldcg(p.partials + (long long)r * chunksPerRow + k));
        st = op.finish(warpCombine(op, s), double(p.row4) * 4);
      }
      if (lane == 0) {
        rowStatistics[r % kMostRows] = st;
        __threadfence_block();
        rowsReady = r + 1;
      }
    }
    return;
  }
  if (warp < 2 + FOLDERS) { // the folders
    const int t = threadIdx.x - 64, fw = warp - 2;
    unsigned ended = 0;
    for (int n = 0;; ++n) {
      const int slot = n % SLOTS;
      if (ended >> (n % PRODUCERS) & 1)
        continue;
      waitBarrier(&full[slot], (n / SLOTS) & 1);
      const int c = chunkOf[slot];
      if (c < 0) {
        ended |= 1u << (n % PRODUCERS);
        if (ended == kAllEnded)
          return;
        continue;
      }
      const float4 *from = held + slot * CHUNK4;
      double2 s = op.zero();
#pragma unroll 4
      for (int i = t; i < CHUNK4; i += kFolderThreads)
        op.fold(s, from[i]);
      s = warpCombine(op, s);
      if (lane == 0)
        warpPartials[n & 1][fw] = s;
      asm volatile("bar.sync 1, %0;" ::"n"(kFolderThreads) : "memory");
      if (fw == 0) {
        s = lane < FOLDERS ? warpPartials[n & 1][lane] : op.zero();
        s = warpCombine(op, s);
        if (lane == 0) {
          p.partials[c] = s;
          asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(
                           p.counters + c / chunksPerRow)
                       : "memory");
          folded = n + 1;
        }
      }
    }
  }

  // The writers.
  const int t = threadIdx.x - 64 - kFolderThreads;
  unsigned ended = 0;
  for (int n = 0;; ++n) {
    const int slot = n % SLOTS;
    if (!(ended >> (n % PRODUCERS) & 1)) {
      waitBarrier(&full[slot], (n / SLOTS) & 1);
      if (chunkOf[slot] < 0)
        ended |= 1u << (n % PRODUCERS);
    }
    if (ended >> (n % PRODUCERS) & 1) { // nothing to write: the slot is free
      asm volatile("bar.sync 2, %0;" ::"n"(kWriterThreads) : "memory");
      if (t == 0)
        freed = n + 1;
      if (ended == kAllEnded)
        return;
      continue;
    }
    const int c = chunkOf[slot];
    const int r = c / chunksPerRow;
    if (t == 0) {
      // This block's folders are past the chunk too (without the
      // statistics nothing else keeps the slot from being refilled first).
      long long started = clock64();
      while (rowsReady <= r || folded <= n)
        if (clock64() - started > 4000000000ll)
          __trap();
    }
    asm volatile("bar.sync 2, %0;" ::"n"(kWriterThreads) : "memory");
    const float2 st = rowStatistics[r % kMostRows];
    const long long first = (long long)(c % chunksPerRow) * CHUNK4;
    const float4 *from = held + slot * CHUNK4;
    float4 *out = p.y + (long long)r * p.row4 + first;
#pragma unroll 4
    for (int i = t; i < CHUNK4; i += kWriterThreads)
      __stcs(out + i, op.apply(from[i], st, r, first + i));
    asm volatile("bar.sync 2, %0;" ::"n"(kWriterThreads) : "memory");
    if (t == 0)
      freed = n + 1;
  }
}

static int kReps = 20;
static const char *only = nullptr;

// One problem's buffers and its host copy, the fp64 reference's input.
struct Problem {
  const char *name;
  int rows;
  long long row;
  std::vector<float> hx, hw, hb;
  float *x = nullptr, *y = nullptr, *w = nullptr, *b = nullptr;
  double2 *partials = nullptr;
  unsigned *counters = nullptr;
  float *flush = nullptr;
  size_t flushBytes = size_t(512) << 20;
  double copyUs = 0, floorUs = 0;
};

static unsigned seed = 12345;
static float uniform() {
  seed = seed * 1664525u + 1013904223u;
  return (seed >> 8) * (1.0f / 16777216.0f);
}

// Rows of different means and spreads; `weights` floats of weight and bias.
static void prepare(Problem &m, size_t weights) {
  size_t bytes = size_t(m.rows) * m.row * 4;
  m.hx.resize(size_t(m.rows) * m.row);
  for (int r = 0; r < m.rows; ++r) {
    float mean = 4 * uniform() - 2, spread = 0.5f + 2 * uniform();
    for (long long i = 0; i < m.row; ++i)
      m.hx[r * m.row + i] = mean + spread * (2 * uniform() - 1);
  }
  m.hw.resize(weights);
  m.hb.resize(weights);
  for (size_t c = 0; c < weights; ++c) {
    m.hw[c] = 0.5f + uniform();
    m.hb[c] = uniform() - 0.5f;
  }
  CK(cudaMalloc(&m.x, bytes));
  CK(cudaMalloc(&m.y, bytes));
  CK(cudaMalloc(&m.w, weights * 4 + 16));
  CK(cudaMalloc(&m.b, weights * 4 + 16));
  CK(cudaMalloc(&m.flush, m.flushBytes));
  CK(cudaMalloc(&m.partials, size_t(m.rows) * 4096 * sizeof(double2)));
  CK(cudaMalloc(&m.counters, (m.rows + 1) * sizeof(unsigned)));
  CK(cudaMemcpy(m.x, m.hx.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(m.w, m.hw.data(), weights * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(m.b, m.hb.data(), weights * 4, cudaMemcpyHostToDevice));
  std::vector<float> times;
  for (int rep = 0; rep < kReps; ++rep)
    times.push_back(timeEvents(
        [&] { CK(cudaMemsetAsync(m.flush, rep, m.flushBytes)); },
        [&] {
          CK(cudaMemcpyAsync(m.y, m.x, bytes, cudaMemcpyDeviceToDevice));
        }));
  m.copyUs = median(times);
  double bandwidth = 2 * bytes / m.copyUs; // bytes a microsecond
  m.floorUs = (2 * bytes + 2 * weights * 4) / bandwidth;
  printf("%s: %d rows of %lld; copy of %.0f MB %.1f us (%.2f TB/s); floor "
         "%.1f us\n",
         m.name, m.rows, m.row, bytes / 1e6, m.copyUs, bandwidth / 1e6,
         m.floorUs);
}

static void release(Problem &m) {
  for (void *p : {(void *)m.x, (void *)m.y, (void *)m.w, (void *)m.b,
                  (void *)m.flush, (void *)m.partials, (void *)m.counters})
    CK(cudaFree(p));
  m.hx.clear();
  m.hx.shrink_to_fit();
}

// The fp64 reference of one row of each problem, element i.
using Reference = std::vector<double> (*)(const Problem &, int row);

static std::vector<double> groupNormRow(const Problem &m, int r) {
  const float *row = m.hx.data() + r * m.row;
  double mean, rstd;
  rowMoments(row, m.row, 1e-5, mean, rstd);
  std::vector<double> out(m.row);
  long long channel = m.row / 8;
  for (long long i = 0; i < m.row; ++i) {
    int c = (r % 8) * 8 + int(i / channel);
    out[i] = (row[i] - mean) * rstd * m.hw[c] + m.hb[c];
  }
  return out;
}

static std::vector<double> layerNormRow(const Problem &m, int r) {
  const float *row = m.hx.data() + r * m.row;
  double mean, rstd;
  rowMoments(row, m.row, 1e-5, mean, rstd);
  std::vector<double> out(m.row);
  for (long long i = 0; i < m.row; ++i)
    out[i] = (row[i] - mean) * rstd * m.hw[i] + m.hb[i];
  return out;
}

static std::vector<double> softmaxRow(const Problem &m, int r) {
  const float *row = m.hx.data() + r * m.row;
  double top = -INFINITY, sum = 0;
  for (long long i = 0; i < m.row; ++i)
    top = std::max(top, double(row[i]));
  for (long long i = 0; i < m.row; ++i)
    sum += std::exp(row[i] - top);
  std::vector<double> out(m.row);
  for (long long i = 0; i < m.row; ++i)
    out[i] = std::exp(row[i] - top) / sum;
  return out;
}

// The largest relative error of the first, a middle and the last row.
static double check(const Problem &m, Reference reference) {
  double worst = 0;
  std::vector<float> hy(m.row);
  for (int r : {0, m.rows / 2 + 1, m.rows - 1}) {
    CK(cudaMemcpy(hy.data(), m.y + r * m.row, m.row * 4,
                  cudaMemcpyDeviceToHost));
    std::vector<double> ref = reference(m, r);
    double largest = 0, err = 0;
    for (long long i = 0; i < m.row; ++i) {
      largest = std::max(largest, std::fabs(ref[i]));
      err = std::max(err, std::fabs(ref[i] - hy[i]));
    }
    worst = std::max(worst, err / largest);
  }
  return worst;
}

template <class Op, int F, int W, int CHUNK4, int SLOTS, int P = 2>
static void run(const Problem &m, const Op &op, Reference reference,
                bool useStatistics) {
  std::string name = std::string(m.name) + " claim " + std::to_string(F) + "+" +
                     std::to_string(W) + ", " +
                     std::to_string(CHUNK4 * 16 / 1024) + " KB x " +
                     std::to_string(SLOTS) + ", " + std::to_string(P) +
                     " claiming" + (useStatistics ? "" : ", no statistics");
  if (only && !strstr(name.c_str(), only))
    return;
  if ((m.row / 4) % CHUNK4) {
    printf("%-44s skipped: rows not whole chunks\n", name.c_str());
    return;
  }
  const void *kernel = (const void *)claimRows<Op, F, W, CHUNK4, SLOTS, P>;
  const int threads = (2 + F + W) * 32;
  const size_t shared = size_t(SLOTS) * CHUNK4 * 16;
  if (residentBlocks(kernel, threads, shared) < 1) {
    printf("%-44s skipped: not resident\n", name.c_str());
    return;
  }
  int device, sms;
  CK(cudaGetDevice(&device));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  Rows p{(const float4 *)m.x, (float4 *)m.y, m.rows,       m.row / 4,
         m.partials,          m.counters,    useStatistics};
  auto launch = [&] {
    claimRows<Op, F, W, CHUNK4, SLOTS, P><<<sms, threads, shared>>>(op, p);
    CK(cudaGetLastError());
  };
  auto reset = [&](int rep) {
    CK(cudaMemsetAsync(m.flush, rep, m.flushBytes));
    CK(cudaMemsetAsync(m.counters, 0, (m.rows + 1) * sizeof(unsigned)));
  };
  std::vector<float> times;
  for (int rep = 0; rep < kReps; ++rep)
    times.push_back(timeEvents([&] { reset(rep); }, launch));
  double us = median(times);
  CK(cudaMemset(m.y, 0, size_t(m.rows) * m.row * 4));
  timeEvents([&] { reset(0); }, launch);
  CK(cudaDeviceSynchronize());
  printf("%-44s %.1f us  %5.1f%% of the floor", name.c_str(), us,
         100 * m.floorUs / us);
  if (useStatistics)
    printf("  max rel err %.1e\n", check(m, reference));
  else
    printf("  (statistics not used)\n");
}

// The forms tried on each problem: <folders, writers, chunk, slots>.
template <class Op>
static void runForms(const Problem &m, const Op &op, Reference reference) {
  run<Op, 8, 16, 2048, 6>(m, op, reference, true);
  run<Op, 8, 16, 2048, 6>(m, op, reference, false);
  run<Op, 8, 16, 2048, 6, 1>(m, op, reference, true);
  run<Op, 8, 16, 2048, 6, 3>(m, op, reference, true);
  run<Op, 8, 16, 1024, 12>(m, op, reference, true);
  run<Op, 8, 16, 1024, 12, 4>(m, op, reference, true);
  run<Op, 8, 16, 512, 24, 4>(m, op, reference, true);
  run<Op, 8, 16, 4096, 2>(m, op, reference, true);
  run<Op, 8, 8, 2048, 6>(m, op, reference, true);
  run<Op, 4, 16, 2048, 6>(m, op, reference, true);
}

int main(int argc, char **argv) {
  if (argc > 1)
    only = argv[1];
  if (getenv("CLAIM_REPS"))
    kReps = atoi(getenv("CLAIM_REPS"));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s: %d SMs, L2 %.1f MB\n", prop.name, prop.multiProcessorCount,
         prop.l2CacheSize / 1e6);
  // A problem is prepared unless TEXT names another one.
  const bool namesOne =
      only && (strstr(only, "groupnorm") || strstr(only, "layernorm") ||
               strstr(only, "softmax"));
  auto wanted = [&](const char *name) {
    return !namesOne || strstr(only, name);
  };
  if (wanted("groupnorm")) {
    Problem m{"groupnorm", 64, 2097152};
    prepare(m, 64);
    runForms(m, GroupNormOp{m.w, m.b, 262144 / 4, 8, 8}, groupNormRow);
    release(m);
  }
  if (wanted("layernorm")) {
    Problem m{"layernorm", 16, 4194304};
    prepare(m, 4194304);
    runForms(m, LayerNormOp{(const float4 *)m.w, (const float4 *)m.b},
             layerNormRow);
    release(m);
  }
  if (wanted("softmax")) {
    Problem m{"softmax", 512, 393216};
    prepare(m, 0);
    runForms(m, SoftmaxOp{}, softmaxRow);
    release(m);
  }
  return 0;
}
