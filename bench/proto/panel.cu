// Latency floor of one 64-tile's POTRF and TRSM (f64) in one block of 128 threads, outside the
// scheduler: how short can a factorization's chain step be? Three ways each:
//   col   - one barrier-separated step per column over shared memory (the textbook loop);
//   rec32 - recursive in 32-blocks: a 32-block factored by one warp in registers (lane = row,
//           warp shuffles, no barrier), the panel solved one row per lane against the factor
//           in shared memory (no barrier), the trailing block updated by all threads;
//   rec16 - the same in 16-blocks.
// Each variant reads the tile from global memory and writes it back, as a task would. Timed with
// %globaltimer inside the kernel around the body (thread 0, after a barrier), median of 50, and
// with events around the launch. Checked against a host reference.
//
// build: nvcc -O3 -arch=sm_90 -o panel panel.cu
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

constexpr int N = 64;
constexpr int LD = N + 1;  // shared row stride: a column read by 32 lanes hits 32 banks pairs
constexpr unsigned FULL = 0xffffffffu;

__device__ __forceinline__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// 128 threads: every load in flight before the first store to shared memory.
__device__ void load_tile(double* s, const double* g, bool lower) {
  double v[N * N / 128];
#pragma unroll
  for (int k = 0; k < N * N / 128; ++k) v[k] = g[threadIdx.x + 128 * k];
#pragma unroll
  for (int k = 0; k < N * N / 128; ++k) {
    int i = threadIdx.x + 128 * k, r = i / N, c = i % N;
    s[r * LD + c] = (!lower || c <= r) ? v[k] : 0.0;
  }
}
__device__ void store_tile(double* g, const double* s, bool lower) {
#pragma unroll
  for (int k = 0; k < N * N / 128; ++k) {
    int i = threadIdx.x + 128 * k, r = i / N, c = i % N;
    if (!lower || c <= r) g[i] = s[r * LD + c];
  }
}

// ---------- POTRF, textbook: a barrier per column ----------
__device__ void potrf_col(double* s, double* inv) {
  for (int c = 0; c < N; ++c) {
    if (threadIdx.x == 0) {
      double d = sqrt(s[c * LD + c]);
      s[c * LD + c] = d;
      inv[c] = 1.0 / d;
    }
    __syncthreads();
    for (int r = c + 1 + threadIdx.x; r < N; r += blockDim.x) s[r * LD + c] *= inv[c];
    __syncthreads();
    int m = N - c - 1;
    for (int i = threadIdx.x; i < m * m; i += blockDim.x) {
      int r = c + 1 + i / m, q = c + 1 + i % m;
      if (q <= r) s[r * LD + q] -= s[r * LD + c] * s[q * LD + c];
    }
    __syncthreads();
  }
}

// ---------- POTRF of a B-block at (o, o) by one warp, in registers ----------
// Lane r < B holds row o + r. Each column: the pivot by shuffle, the column scaled, then every
// later column updated with the shuffled L[q][c]. Entries above the diagonal are updated too
// (never read, never stored), so no lane waits on a predicate. Writes 1/L[c][c] to inv.
template <int B>
__device__ void chol_warp(double* s, int o, double* inv) {
  int lane = threadIdx.x & 31;
  int r = lane < B ? lane : B - 1;
  double row[B];
#pragma unroll
  for (int q = 0; q < B; ++q) row[q] = s[(o + r) * LD + o + q];
#pragma unroll
  for (int c = 0; c < B; ++c) {
    double piv = __shfl_sync(FULL, row[c], c);
    double iv = rsqrt(piv);
    row[c] = lane == c ? piv * iv : row[c] * iv;
    if (lane == 0) inv[o + c] = iv;
#pragma unroll
    for (int q = c + 1; q < B; ++q) {
      double lqc = __shfl_sync(FULL, row[c], q);
      row[q] = fma(-row[c], lqc, row[q]);
    }
  }
  if (lane < B) {
#pragma unroll
    for (int q = 0; q < B; ++q)
      if (q <= lane) s[(o + lane) * LD + o + q] = row[q];
  }
}

// chol_warp with the column handed out through shared memory: each lane stores its L[r][c], the
// warp meets (__syncwarp), and every lane reads L[q][c] for q > c by broadcast loads. A copy of
// chol_warp but for that, kept whole: the two are the A/B of proto.txt in panel32-h100
// (git show b958dab:bench/results/panel32-h100/proto.txt).
template <int B>
__device__ void chol_warp_smem(double* s, int o, double* inv, double* col) {
  int lane = threadIdx.x & 31;
  int r = lane < B ? lane : B - 1;
  double row[B];
#pragma unroll
  for (int q = 0; q < B; ++q) row[q] = q <= r ? s[(o + r) * LD + o + q] : 0.0;
#pragma unroll
  for (int c = 0; c < B; ++c) {
    double piv = __shfl_sync(FULL, row[c], c);
    double iv = rsqrt(piv);
    row[c] = lane == c ? piv * iv : row[c] * iv;
    if (lane == 0) inv[o + c] = iv;
    double* cc = col + (c & 1) * 32;
    cc[lane] = row[c];
    __syncwarp();
#pragma unroll
    for (int q = c + 1; q < B; ++q) {
      double lqc = cc[q];
      row[q] = fma(-row[c], lqc, row[q]);
    }
  }
  if (lane < B) {
#pragma unroll
    for (int q = 0; q < B; ++q)
      if (q <= lane) s[(o + lane) * LD + o + q] = row[q];
  }
}

// Rows [r0, r1) of columns [o, o+B): x := x·L⁻ᵀ for the factored block at (o, o), one row per
// thread (any warp), L read from shared memory by broadcast.
template <int B>
__device__ void trsm_rows(double* s, const double* l, int ldl, const double* inv, int o, int r0,
                          int r1, int lo) {
  for (int r = r0 + threadIdx.x; r < r1; r += blockDim.x) {
    double x[B];
#pragma unroll
    for (int q = 0; q < B; ++q) x[q] = s[r * LD + o + q];
#pragma unroll
    for (int c = 0; c < B; ++c) {
      x[c] *= inv[lo + c];
#pragma unroll
      for (int q = c + 1; q < B; ++q) x[q] = fma(-x[c], l[(lo + q) * ldl + lo + c], x[q]);
    }
#pragma unroll
    for (int q = 0; q < B; ++q) s[r * LD + o + q] = x[q];
  }
}

// A[r][q] -= Σ_k P[r][k]·Q[q][k] for r in [r0, r1), q in [q0, q1) (lower only when tri), k over
// [k0, k1); P rows from s, Q rows from l.
__device__ void update(double* s, const double* l, int ldl, int r0, int r1, int q0, int q1, int k0,
                       int k1, bool tri) {
  int w = q1 - q0;
  for (int i = threadIdx.x; i < (r1 - r0) * w; i += blockDim.x) {
    int r = r0 + i / w, q = q0 + i % w;
    if (tri && q > r) continue;
    double acc = s[r * LD + q];
    for (int k = k0; k < k1; ++k) acc = fma(-s[r * LD + k], l[q * ldl + k], acc);
    s[r * LD + q] = acc;
  }
}

template <int B, bool SM = false>
__device__ void potrf_rec(double* s, double* inv) {
  for (int o = 0; o < N; o += B) {
    if (threadIdx.x < 32) {
      if (SM) chol_warp_smem<B>(s, o, inv, inv + N);
      else chol_warp<B>(s, o, inv);
    }
    __syncthreads();
    if (o + B == N) break;
    trsm_rows<B>(s, s, LD, inv, o, o + B, N, o);
    __syncthreads();
    update(s, s, LD, o + B, N, o + B, N, o, o + B, true);
    __syncthreads();
  }
}

// ---------- TRSM: X := X·L⁻ᵀ, X 64×64 (all rows independent), L 64×64 lower ----------
__device__ void trsm_col(double* x, const double* l, double* inv) {
  // Textbook: a barrier per column; each thread owns rows.
  if (threadIdx.x < N) inv[threadIdx.x] = 1.0 / l[threadIdx.x * LD + threadIdx.x];
  __syncthreads();
  for (int c = 0; c < N; ++c) {
    for (int r = threadIdx.x; r < N; r += blockDim.x) x[r * LD + c] *= inv[c];
    __syncthreads();
    int m = N - c - 1;
    for (int i = threadIdx.x; i < N * m; i += blockDim.x) {
      int r = i / m, q = c + 1 + i % m;
      x[r * LD + q] -= x[r * LD + c] * l[q * LD + c];
    }
    __syncthreads();
  }
}

template <int B>
__device__ void trsm_rec(double* x, const double* l, double* inv) {
  if (threadIdx.x < N) inv[threadIdx.x] = 1.0 / l[threadIdx.x * LD + threadIdx.x];
  __syncthreads();
  for (int o = 0; o < N; o += B) {
    trsm_rows<B>(x, l, LD, inv, o, 0, N, o);
    __syncthreads();
    if (o + B == N) break;
    // X[:, o+B..] -= X[:, o..o+B]·L[o+B.., o..o+B]ᵀ
    update(x, l, LD, 0, N, o + B, N, o, o + B, false);
    __syncthreads();
  }
}

enum Op { POTRF_COL, POTRF_R32, POTRF_R16, TRSM_COL, TRSM_R32, TRSM_R16, W32, T32, U32, W16, W32S, POTRF_R32S };
const char* names[] = {"potrf col", "potrf rec32", "potrf rec16", "trsm col", "trsm rec32",
                       "trsm rec16", "[warp chol32]", "[rows trsm32]", "[update 32]",
                       "[warp chol16]", "[warp chol32 smem]", "potrf rec32 smem"};

// Keeps every SM busy for `ns` nanoseconds, so that the clocks are up when the timed kernel runs.
__global__ void spin(unsigned long long ns) {
  unsigned long long t0 = now();
  while (now() - t0 < ns) {
  }
}

// Each of `reps` repetitions restores the tile from `in`, then times the body (the load from
// global memory, the operation, the store back) in nanoseconds and in SM cycles.
__global__ void __launch_bounds__(128) kern(int op, const double* in, double* a, const double* lg,
                                            unsigned long long* ns, long long* cyc, int reps) {
  extern __shared__ double sm[];
  double* s = sm;
  double* l = sm + N * LD;
  double* inv = sm + 2 * N * LD;
  bool potrf = op <= POTRF_R16 || op >= W32;
  for (int rep = 0; rep < reps; ++rep) {
  for (int i = threadIdx.x; i < N * N; i += blockDim.x) a[i] = in[i];
  __threadfence_block();
  __syncthreads();
  unsigned long long t0 = now();
  long long c0 = clock64();
  load_tile(s, a, potrf);
  if (!potrf) load_tile(l, lg, true);
  __syncthreads();
  long long c1 = clock64();
  switch (op) {
    case POTRF_COL: potrf_col(s, inv); break;
    case POTRF_R32: potrf_rec<32>(s, inv); break;
    case POTRF_R16: potrf_rec<16>(s, inv); break;
    case TRSM_COL: trsm_col(s, l, inv); break;
    case TRSM_R32: trsm_rec<32>(s, l, inv); break;
    case TRSM_R16: trsm_rec<16>(s, l, inv); break;
    // Pieces of rec32 alone (their results are not checked).
    case W32: if (threadIdx.x < 32) chol_warp<32>(s, 0, inv); break;
    case T32: trsm_rows<32>(s, s, LD, inv, 0, 32, N, 0); break;
    case U32: update(s, s, LD, 32, N, 32, N, 0, 32, true); break;
    case W16: if (threadIdx.x < 32) chol_warp<16>(s, 0, inv); break;
    case POTRF_R32S: potrf_rec<32, true>(s, inv); break;
    case W32S: if (threadIdx.x < 32) chol_warp_smem<32>(s, 0, inv, inv + N); break;
  }
  __syncthreads();
  long long c2 = clock64();
  store_tile(a, s, potrf);
  __syncthreads();
  if (threadIdx.x == 0) {
    ns[rep] = now() - t0;
    cyc[3 * rep] = clock64() - c0;
    cyc[3 * rep + 1] = c1 - c0;
    cyc[3 * rep + 2] = c2 - c1;
  }
  __syncthreads();
  }
}

int main() {
  std::vector<double> spd(N * N), lt(N * N, 0.0), b(N * N);
  srand(7);
  auto rnd = [] { return (double)rand() / RAND_MAX - 0.5; };
  std::vector<double> m(N * N);
  for (auto& v : m) v = rnd();
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = i == j ? N : 0.0;
      for (int k = 0; k < N; ++k) acc += m[i * N + k] * m[j * N + k];
      spd[i * N + j] = acc;
    }
  // Reference Cholesky on the host (also the L for TRSM).
  std::vector<double> ref = spd;
  for (int c = 0; c < N; ++c) {
    ref[c * N + c] = std::sqrt(ref[c * N + c]);
    for (int r = c + 1; r < N; ++r) ref[r * N + c] /= ref[c * N + c];
    for (int q = c + 1; q < N; ++q)
      for (int r = q; r < N; ++r) ref[r * N + q] -= ref[r * N + c] * ref[q * N + c];
  }
  for (int r = 0; r < N; ++r)
    for (int c = 0; c <= r; ++c) lt[r * N + c] = ref[r * N + c];
  for (auto& v : b) v = rnd();
  // TRSM reference: X·Lᵀ = B, row by row forward.
  std::vector<double> xref = b;
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < N; ++c) {
      double acc = xref[r * N + c];
      for (int k = 0; k < c; ++k) acc -= xref[r * N + k] * lt[c * N + k];
      xref[r * N + c] = acc / lt[c * N + c];
    }

  constexpr int REPS = 60;
  double *din, *da, *dl;
  unsigned long long* dns;
  long long* dcyc;
  CK(cudaMalloc(&din, N * N * 8));
  CK(cudaMalloc(&da, N * N * 8));
  CK(cudaMalloc(&dl, N * N * 8));
  CK(cudaMalloc(&dns, REPS * 8));
  CK(cudaMalloc(&dcyc, 3 * REPS * 8));
  CK(cudaMemcpy(dl, lt.data(), N * N * 8, cudaMemcpyHostToDevice));
  int smem = (2 * N * LD + N + 64) * 8;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, kern));
  printf("kernel: %d registers, %d bytes local, %d bytes dynamic shared\n", fa.numRegs,
         (int)fa.localSizeBytes, smem);
  printf("%-12s %10s %10s %8s %8s %8s %12s\n", "op", "body us", "cycles", "load", "op", "GHz",
         "max err");
  for (int op = 0; op < 12; ++op) {
    bool potrf = op <= POTRF_R16 || op >= W32;
    bool checked = op < W32 || op == POTRF_R32S;
    const std::vector<double>& in = potrf ? spd : b;
    const std::vector<double>& want = potrf ? ref : xref;
    CK(cudaMemcpy(din, in.data(), N * N * 8, cudaMemcpyHostToDevice));
    spin<<<264, 32>>>(300000000ull);
    kern<<<1, 128, smem>>>(op, din, da, dl, dns, dcyc, REPS);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> ns(REPS);
    std::vector<long long> cyc(3 * REPS);
    CK(cudaMemcpy(ns.data(), dns, REPS * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(cyc.data(), dcyc, 3 * REPS * 8, cudaMemcpyDeviceToHost));
    std::vector<double> out(N * N);
    CK(cudaMemcpy(out.data(), da, N * N * 8, cudaMemcpyDeviceToHost));
    double err = 0;
    for (int r = 0; r < N; ++r)
      for (int c = 0; c < N; ++c)
        if (!potrf || c <= r) err = std::max(err, std::fabs(out[r * N + c] - want[r * N + c]));
    std::vector<double> body(ns.begin() + 10, ns.end());
    std::vector<double> cy, cl, cb;
    for (int r = 10; r < REPS; ++r) {
      cy.push_back(cyc[3 * r]);
      cl.push_back(cyc[3 * r + 1]);
      cb.push_back(cyc[3 * r + 2]);
    }
    std::sort(body.begin(), body.end());
    std::sort(cy.begin(), cy.end());
    std::sort(cl.begin(), cl.end());
    std::sort(cb.begin(), cb.end());
    double b_us = body[body.size() / 2] / 1000.0, c_med = cy[cy.size() / 2];
    printf("%-12s %10.2f %10.0f %8.0f %8.0f %8.2f %12.2e %s\n", names[op], b_us, c_med,
           cl[cl.size() / 2], cb[cb.size() / 2], c_med / b_us / 1000.0, err,
           !checked ? "-" : err < 1e-10 ? "PASS" : "FAIL");
  }
  return 0;
}
