// The floor for one 64 x 64 f64 POTRF and one 64 x 64 f64 TRSM on one thread block: careful
// hand-written CUDA C that keeps the tile in registers, against the tile library's potrf64
// (32,394 cycles) and trsm64 (29,390 cycles) at 128 threads. Timed as potrf64_floor.cu times:
// the tiles already in shared memory (column-major, a[j * 64 + i]), clock64() around one call
// inside the kernel, best of 64 repetitions, one block; every result checked against the host.
//
//   nvcc -O3 -arch=sm_90 tile64_floor.cu -o tile64_floor && ./tile64_floor
//
// POTRF: A = L L^T in place, lower triangle only (the upper one is never written).
// TRSM:  B := X with X L^T = B, L the factored diagonal tile (its upper triangle is garbage).
// The variants are described in tile64_floor.md and above each function.
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                 \
    do {                                                                                      \
        cudaError_t e = (x);                                                                  \
        if (e) printf("ERR %s:%d %s\n", #x, __LINE__, cudaGetErrorString(e)), exit(1);        \
    } while (0)

constexpr int N = 64;
constexpr int REPS = 64;
constexpr unsigned FULL = 0xffffffffu;
constexpr double MHZ = 1980.0;

// ---- POTRF 1: register tile, right-looking, one barrier per step --------------------------
// Thread t owns rows tr + RT*r and columns tc + CT*c (tr = t % RT, tc = t / RT), cyclic so that
// every thread keeps work as the trailing triangle shrinks. Step k: the owners of column k publish
// its current, unscaled entries to col[k & 1] (double-buffered: one barrier per step); after the
// barrier every thread takes d = a_kk, s = rsqrt(d), scales the entries of its rows and columns
// (entries at rows <= k read as 0, so finished cells are left alone) and does its rank-1 update in
// registers. Groups of cells that are finished or above the diagonal are skipped (uniform tests).
template <int RT, int CT>
__device__ void potrf_reg(double* a, double* buf) {
    constexpr int R = N / RT, C = N / CT;
    const int t = threadIdx.x, tr = t % RT, tc = t / RT;
    double v[R][C];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < C; c++) {
            const int i = tr + RT * r, j = tc + CT * c;
            v[r][c] = i >= j ? a[j * N + i] : 0.0;
        }
    for (int k = 0; k < N; k++) {
        double* col = buf + (k & 1) * N;
        const bool owner = tc == k % CT;
#pragma unroll
        for (int c = 0; c < C; c++)
#pragma unroll
            for (int r = 0; r < R; r++)
                if (owner && c == k / CT && tr + RT * r >= k) col[tr + RT * r] = v[r][c];
        __syncthreads();
        const double d = col[k], s = rsqrt(d);
        double xr[R], xc[C];  // l_ik of my rows, l_jk of my columns; 0 where the index is <= k
#pragma unroll
        for (int r = 0; r < R; r++)
            xr[r] = RT * r + RT - 1 > k && tr + RT * r > k ? col[tr + RT * r] * s : 0.0;
#pragma unroll
        for (int c = 0; c < C; c++)
            xc[c] = CT * c + CT - 1 > k && tc + CT * c > k ? col[tc + CT * c] * s : 0.0;
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int c = 0; c < C; c++)
                if (RT * r + RT - 1 >= CT * c && RT * r + RT - 1 > k && CT * c + CT - 1 > k)
                    v[r][c] = fma(-xr[r], xc[c], v[r][c]);
        // Column k is final: l_ik below the diagonal, l_kk = d * rsqrt(d) on it.
#pragma unroll
        for (int c = 0; c < C; c++)
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int i = tr + RT * r;
                if (owner && c == k / CT && i > k) v[r][c] = xr[r];
                else if (owner && c == k / CT && i == k) v[r][c] = d * s;
            }
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < C; c++) {
            const int i = tr + RT * r, j = tc + CT * c;
            if (i >= j) a[j * N + i] = v[r][c];
        }
}

// ---- POTRF 2: one warp, shuffles only, no barriers ------------------------------------------
// Lane l owns rows 32 + l and 31 - l (65 cells in all) in one register array: row 32 + l,
// column j at q[j]; row 31 - l, column j at q[64 - j]. Step k is a template parameter, so every
// register index is a constant (no reliance on unrolling a 64 x 63 loop nest). Step k: d comes
// from row k's lane by a shuffle, each lane scales its two column-k cells, and each l_jk (j > k)
// is broadcast from row j's lane for the rank-1 update.
template <int K>
__device__ __forceinline__ void warp_step(double (&q)[65], int l) {
    const double d = __shfl_sync(FULL, K >= 32 ? q[K] : q[64 - K], K >= 32 ? K - 32 : 31 - K);
    const double s = rsqrt(d);
    const double ya = q[K] * s, yb = q[64 - K] * s;  // l_iK of rows 32 + l, 31 - l (if owned)
#pragma unroll
    for (int j = K + 1; j < N; j++) {
        const double c = __shfl_sync(FULL, j >= 32 ? ya : yb, j >= 32 ? j - 32 : 31 - j);
        if (j <= 32 || j <= 32 + l) q[j] = fma(-ya, c, q[j]);            // row 32 + l
        if (j < 32 && j <= 31 - l) q[64 - j] = fma(-yb, c, q[64 - j]);  // row 31 - l
    }
    if (32 + l > K) q[K] = ya;
    else if (32 + l == K) q[K] = d * s;
    if (31 - l > K) q[64 - K] = yb;
    else if (31 - l == K) q[64 - K] = d * s;
    if constexpr (K + 1 < N) warp_step<K + 1>(q, l);
}

__device__ void potrf_warp(double* a) {
    const int l = threadIdx.x & 31;
    double q[65];
#pragma unroll
    for (int p = 0; p <= 64; p++) q[p] = a[p <= 32 + l ? p * N + 32 + l : (64 - p) * N + 31 - l];
    warp_step<0>(q, l);
#pragma unroll
    for (int p = 0; p <= 64; p++) a[p <= 32 + l ? p * N + 32 + l : (64 - p) * N + 31 - l] = q[p];
}

// ---- Shared by the blocked variants ---------------------------------------------------------
// v[r][c] -= sum over p in [p0, p0 + 16) of xs[p * N + i] * ys[p * N + j] for this thread's cells
// (i, j) = (tr + RT*r, tc + CT*c) whose column lies in [jlo, jhi): a rank-16 update in registers,
// no barrier inside. CT divides 16, so a column group is wholly in or out of the range (uniform
// tests). LOWER skips groups that lie wholly above the diagonal.
template <int RT, int CT, bool LOWER>
__device__ __forceinline__ void block_update(double (&v)[N / RT][N / CT], const double* xs,
                                             const double* ys, int p0, int jlo, int jhi) {
    constexpr int R = N / RT, C = N / CT;
    const int tr = threadIdx.x % RT, tc = threadIdx.x / RT;
#pragma unroll 2
    for (int p = p0; p < p0 + 16; p++) {
        double xr[R], yc[C];
#pragma unroll
        for (int r = 0; r < R; r++)
            xr[r] = !LOWER || RT * r + RT - 1 >= jlo ? xs[p * N + tr + RT * r] : 0.0;
#pragma unroll
        for (int c = 0; c < C; c++) yc[c] = CT * c >= jlo && CT * c < jhi ? ys[p * N + tc + CT * c] : 0.0;
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int c = 0; c < C; c++)
                if ((!LOWER || RT * r + RT - 1 >= CT * c) && CT * c >= jlo && CT * c < jhi)
                    v[r][c] = fma(-xr[r], yc[c], v[r][c]);
    }
}

// Writes this thread's cells in columns [jlo, jhi) (LOWER: only those on or below the diagonal).
template <int RT, int CT, bool LOWER>
__device__ __forceinline__ void store_cols(const double (&v)[N / RT][N / CT], double* dst, int jlo, int jhi) {
    const int tr = threadIdx.x % RT, tc = threadIdx.x / RT;
#pragma unroll
    for (int r = 0; r < N / RT; r++)
#pragma unroll
        for (int c = 0; c < N / CT; c++) {
            const int i = tr + RT * r, j = tc + CT * c;
            if (j >= jlo && j < jhi && (!LOWER || i >= j)) dst[j * N + i] = v[r][c];
        }
}

// One warp factors the panel of columns c0 .. c0 + 15 (rows c0 .. 63) in registers: lane l holds
// rows l and l + 32; d and each l_jm come from their row's lane by a shuffle.
__device__ void panel16(double* a, int c0, int l) {
    double x0[16], x1[16];
#pragma unroll
    for (int m = 0; m < 16; m++) x0[m] = a[(c0 + m) * N + l], x1[m] = a[(c0 + m) * N + l + 32];
#pragma unroll
    for (int m = 0; m < 16; m++) {
        const int k = c0 + m;
        const double d = __shfl_sync(FULL, k < 32 ? x0[m] : x1[m], k & 31);
        const double s = rsqrt(d), y0 = x0[m] * s, y1 = x1[m] * s;
#pragma unroll
        for (int jj = 1; jj < 16; jj++) {
            if (jj <= m) continue;
            const double c = __shfl_sync(FULL, c0 + jj < 32 ? y0 : y1, (c0 + jj) & 31);
            x0[jj] = fma(-y0, c, x0[jj]);
            x1[jj] = fma(-y1, c, x1[jj]);
        }
        x0[m] = l == k ? d * s : y0;
        x1[m] = l + 32 == k ? d * s : y1;
    }
#pragma unroll
    for (int m = 0; m < 16; m++) {
        if (l >= c0 + m) a[(c0 + m) * N + l] = x0[m];
        if (l + 32 >= c0 + m) a[(c0 + m) * N + l + 32] = x1[m];
    }
}

// ---- POTRF 3: blocked right-looking, 16-column panels, with lookahead -------------------------
// The trailing matrix stays in registers (layout of POTRF 1). Per panel kb: every thread first
// applies panel kb to its cells of panel kb + 1 and stores them; after a barrier warp 0 factors
// panel kb + 1 (panel16) while all threads (warp 0 after its panel) apply panel kb to the rest.
// 7 barriers per call instead of 64; the serial chain is warp 0's shuffles.
template <int RT, int CT>
__device__ void potrf_blocked(double* a) {
    const int t = threadIdx.x, tr = t % RT, tc = t / RT;
    double v[N / RT][N / CT];
#pragma unroll
    for (int r = 0; r < N / RT; r++)
#pragma unroll
        for (int c = 0; c < N / CT; c++) {
            const int i = tr + RT * r, j = tc + CT * c;
            v[r][c] = i >= j ? a[j * N + i] : 0.0;
        }
    if (t < 32) panel16(a, 0, t);
    __syncthreads();
    for (int kb = 0; kb < 3; kb++) {
        const int p0 = 16 * kb, n0 = p0 + 16, n1 = p0 + 32;
        block_update<RT, CT, true>(v, a, a, p0, n0, n1);
        store_cols<RT, CT, true>(v, a, n0, n1);
        __syncthreads();
        if (t < 32) panel16(a, n0, t);
        if (n1 < N) block_update<RT, CT, true>(v, a, a, p0, n1, N);
        __syncthreads();
    }
}

// ---- TRSM 1: rows of X in registers ---------------------------------------------------------
// G consecutive lanes share rows RR*g .. RR*g + RR - 1 of B (g = t / G); lane h = t % G holds the
// columns 2*(h + G*q) + e (column pairs dealt round-robin: balanced, and L is read as double2).
// Step k (a template parameter, so register indices are constants): x_k = b_k / L_kk
// (reciprocals precomputed once) on its owner, broadcast to the group by a width-G shuffle (none
// when G = 1), then b_j -= x_k L_jk for the owned j > k, L_jk read from shared memory (a
// broadcast: G distinct addresses per warp).
template <int G, int RR, int K>
__device__ __forceinline__ void rows_step(double (&x)[RR][32 / G][2], const double* l, const double* rinv, int h) {
    constexpr int hk = (K / 2) % G, qk = (K / 2) / G, ek = K & 1;  // owner of column K
    const double rk = rinv[K];
    double xk[RR];
#pragma unroll
    for (int rr = 0; rr < RR; rr++) {
        const double own = x[rr][qk][ek] * rk;
        xk[rr] = G == 1 ? own : __shfl_sync(FULL, own, hk, G);
        if (h == hk) x[rr][qk][ek] = xk[rr];
    }
#pragma unroll
    for (int q = 0; q < 32 / G; q++) {
        const int lo = 2 * G * q;  // the group's smallest column in chunk q
        if (lo + 2 * G - 1 <= K) continue;
        const double2 w = *reinterpret_cast<const double2*>(l + K * N + 2 * (h + G * q));
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const bool on = lo + e > K || 2 * (h + G * q) + e > K;
#pragma unroll
            for (int rr = 0; rr < RR; rr++)
                if (on) x[rr][q][e] = fma(-xk[rr], e ? w.y : w.x, x[rr][q][e]);
        }
    }
    if constexpr (K + 1 < N) rows_step<G, RR, K + 1>(x, l, rinv, h);
}

template <int G, int RR>
__device__ void trsm_rows(const double* l, double* b, double* rinv) {
    constexpr int Q = 32 / G;
    const int t = threadIdx.x, h = t % G, i0 = RR * (t / G);
    for (int k = t; k < N; k += blockDim.x) rinv[k] = __drcp_rn(l[k * N + k]);
    double x[RR][Q][2];
#pragma unroll
    for (int q = 0; q < Q; q++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int j = 2 * (h + G * q) + e;
            if constexpr (RR == 2) {
                const double2 w = *reinterpret_cast<const double2*>(b + j * N + i0);
                x[0][q][e] = w.x, x[RR - 1][q][e] = w.y;
            } else {
                x[0][q][e] = b[j * N + i0];
            }
        }
    __syncthreads();  // rinv
    rows_step<G, RR, 0>(x, l, rinv, h);
#pragma unroll
    for (int q = 0; q < Q; q++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int j = 2 * (h + G * q) + e;
            if constexpr (RR == 2) {
                *reinterpret_cast<double2*>(b + j * N + i0) = make_double2(x[0][q][e], x[RR - 1][q][e]);
            } else {
                b[j * N + i0] = x[0][q][e];
            }
        }
}

// Thread i solves row i of B's columns c0 .. c0 + 15 against the diagonal block L[c0.., c0..].
__device__ void solve16(const double* l, double* b, const double* rinv, int c0, int i) {
    double y[16];
#pragma unroll
    for (int m = 0; m < 16; m++) y[m] = b[(c0 + m) * N + i];
#pragma unroll
    for (int m = 0; m < 16; m++) {
        y[m] *= rinv[c0 + m];
        const double* lc = l + (c0 + m) * N + c0;  // column c0 + m of L, rows c0 ..
#pragma unroll
        for (int p = 0; p < 8; p++) {  // rows c0 + 2p, c0 + 2p + 1
            if (2 * p + 1 <= m) continue;
            const double2 w = *reinterpret_cast<const double2*>(lc + 2 * p);
            if (2 * p > m) y[2 * p] = fma(-y[m], w.x, y[2 * p]);
            y[2 * p + 1] = fma(-y[m], w.y, y[2 * p + 1]);
        }
    }
#pragma unroll
    for (int m = 0; m < 16; m++) b[(c0 + m) * N + i] = y[m];
}

// ---- TRSM 2: blocked, 16-column block solves + rank-16 updates in registers, lookahead ------
// B stays in registers in the 2D layout of POTRF 1. Per block kb: every thread applies X's
// block kb to its cells of block kb + 1 and stores them; after a barrier threads 0..63 solve
// block kb + 1 (one row each, solve16) while all threads apply block kb to the rest.
template <int RT, int CT>
__device__ void trsm_blocked(const double* l, double* b, double* rinv) {
    const int t = threadIdx.x, tr = t % RT, tc = t / RT;
    for (int k = t; k < N; k += blockDim.x) rinv[k] = __drcp_rn(l[k * N + k]);
    double v[N / RT][N / CT];
#pragma unroll
    for (int r = 0; r < N / RT; r++)
#pragma unroll
        for (int c = 0; c < N / CT; c++) v[r][c] = b[(tc + CT * c) * N + tr + RT * r];
    __syncthreads();
    if (t < N) solve16(l, b, rinv, 0, t);
    __syncthreads();
    for (int kb = 0; kb < 3; kb++) {
        const int p0 = 16 * kb, n0 = p0 + 16, n1 = p0 + 32;
        block_update<RT, CT, false>(v, b, l, p0, n0, n1);
        store_cols<RT, CT, false>(v, b, n0, n1);
        __syncthreads();
        if (t < N) solve16(l, b, rinv, n0, t);
        if (n1 < N) block_update<RT, CT, false>(v, b, l, p0, n1, N);
        __syncthreads();
    }
}

// ---- Probe ----------------------------------------------------------------------------------
// Shared memory (dynamic, 66,560 bytes): a = tile 0 (POTRF's A, TRSM's L), b = tile 1 (TRSM's B),
// w = 128 doubles of workspace.
#define VARIANT(NAME, THREADS, TRSM, ...)                                              \
    struct NAME {                                                                      \
        static constexpr const char* name = #NAME;                                     \
        static constexpr int threads = THREADS;                                        \
        static constexpr bool trsm = TRSM;                                             \
        static __device__ void run(double* a, double* b, double* w) { __VA_ARGS__; } \
    };
VARIANT(potrf_reg_64, 64, false, potrf_reg<8, 8>(a, w))
VARIANT(potrf_reg_128, 128, false, potrf_reg<16, 8>(a, w))
VARIANT(potrf_reg_256, 256, false, potrf_reg<16, 16>(a, w))
VARIANT(potrf_warp_32, 32, false, potrf_warp(a))
VARIANT(potrf_blocked_64, 64, false, potrf_blocked<8, 8>(a))
VARIANT(potrf_blocked_128, 128, false, potrf_blocked<16, 8>(a))
VARIANT(potrf_blocked_256, 256, false, potrf_blocked<16, 16>(a))
VARIANT(trsm_rows_g1r1, 64, true, trsm_rows<1, 1>(a, b, w))
VARIANT(trsm_rows_g2r2, 64, true, trsm_rows<2, 2>(a, b, w))
VARIANT(trsm_rows_g2r1, 128, true, trsm_rows<2, 1>(a, b, w))
VARIANT(trsm_rows_g4r2, 128, true, trsm_rows<4, 2>(a, b, w))
VARIANT(trsm_rows_g4r1, 256, true, trsm_rows<4, 1>(a, b, w))
VARIANT(trsm_rows_g8r2, 256, true, trsm_rows<8, 2>(a, b, w))
VARIANT(trsm_blocked_64, 64, true, trsm_blocked<8, 8>(a, b, w))
VARIANT(trsm_blocked_128, 128, true, trsm_blocked<16, 8>(a, b, w))
VARIANT(trsm_blocked_256, 256, true, trsm_blocked<16, 16>(a, b, w))

constexpr int SMEM = (2 * N * N + 2 * N) * sizeof(double);

template <class V>
__global__ void __launch_bounds__(V::threads) probe(const double* in, double* out, long long* cycles) {
    extern __shared__ __align__(16) double sm[];
    double *a = sm, *b = sm + N * N, *w = sm + 2 * N * N;
    constexpr int words = V::trsm ? 2 * N * N : N * N;
    long long best = LLONG_MAX;
    for (int rep = 0; rep < REPS; rep++) {
        for (int e = threadIdx.x; e < words; e += blockDim.x) sm[e] = in[e];
        __syncthreads();
        const long long start = clock64();
        V::run(a, b, w);
        __syncthreads();
        const long long spent = clock64() - start;
        if (spent < best) best = spent;
    }
    if (threadIdx.x == 0) *cycles = best;
    for (int e = threadIdx.x; e < words; e += blockDim.x) out[e] = sm[e];
}

// The same call with its operands in global memory, as the tile library's operations take them:
// the timed span also copies the tiles into shared memory and the result back out.
template <class V>
__global__ void __launch_bounds__(V::threads) probe_global(const double* in, double* out, long long* cycles) {
    extern __shared__ __align__(16) double sm[];
    double *a = sm, *b = sm + N * N, *w = sm + 2 * N * N;
    constexpr int words = V::trsm ? 2 * N * N : N * N;
    constexpr int first = V::trsm ? N * N : 0;  // the tile the call writes
    long long best = LLONG_MAX;
    for (int rep = 0; rep < REPS; rep++) {
        __syncthreads();
        const long long start = clock64();
        for (int e = threadIdx.x; e < words; e += blockDim.x) sm[e] = in[e];
        __syncthreads();
        V::run(a, b, w);
        __syncthreads();
        for (int e = first + threadIdx.x; e < words; e += blockDim.x) out[e] = sm[e];
        __syncthreads();
        const long long spent = clock64() - start;
        if (spent < best) best = spent;
    }
    if (threadIdx.x == 0) *cycles = best;
}

// ---- Host -----------------------------------------------------------------------------------
static uint64_t state = 0x9e3779b97f4a7c15ull;
static double uniform() {  // [-1, 1), fixed sequence
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return ldexp((double)(state >> 11), -52) - 1.0;
}

// Inputs, references and scales per operation ([0] POTRF, [1] TRSM); dout holds both tiles.
struct Ctx {
    const double *in[2], *ref[2];
    double scale[2], *dout;
    long long* dcyc;
};
static bool failed = false;

// POTRF: L's lower triangle compared; TRSM: all of X, read from tile 1.
template <class V, bool GLOBAL = false>
static void measure(const Ctx& c) {
    auto kernel = GLOBAL ? probe_global<V> : probe<V>;
    CK(cudaMemset(c.dout, 0xff, 2 * N * N * sizeof(double)));  // NaNs: a variant must write its result
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    kernel<<<1, V::threads, SMEM>>>(c.in[V::trsm], c.dout, c.dcyc);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    static double got[2 * N * N];
    long long cyc;
    CK(cudaMemcpy(&cyc, c.dcyc, sizeof cyc, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(got, c.dout, sizeof got, cudaMemcpyDeviceToHost));
    const double *g = got + (V::trsm ? N * N : 0), *ref = c.ref[V::trsm];
    double err = 0;
    for (int j = 0; j < N; j++)
        for (int i = V::trsm ? 0 : j; i < N; i++) err = fmax(err, fabs(g[j * N + i] - ref[j * N + i]));
    const bool ok = err <= 1e-10 * c.scale[V::trsm];  // NaN fails too
    failed |= !ok;
    printf("%-18s%s %7d %7lld %8.2f %10.2e %s\n", V::name, GLOBAL ? "+gmem" : "", V::threads, cyc, cyc / MHZ, err, ok ? "ok" : "FAIL");
}

int main() {
    static double m[N * N], a[N * N], lb[2 * N * N], x[N * N];
    // SPD A = M M^T / 64 + 64 I.
    for (int e = 0; e < N * N; e++) m[e] = uniform();
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++) {
            double s = 0;
            for (int p = 0; p < N; p++) s += m[p * N + i] * m[p * N + j];
            a[j * N + i] = s / N + (i == j ? N : 0);
        }
    // Host Cholesky into tile 0 of lb; its upper triangle keeps A's values, as a factored tile does.
    double* l = lb;
    for (int e = 0; e < N * N; e++) l[e] = a[e];
    for (int k = 0; k < N; k++) {
        l[k * N + k] = sqrt(l[k * N + k]);
        for (int i = k + 1; i < N; i++) l[k * N + i] /= l[k * N + k];
        for (int j = k + 1; j < N; j++)
            for (int i = j; i < N; i++) l[j * N + i] -= l[k * N + i] * l[k * N + j];
    }
    // Random B in tile 1; X = B L^{-T} row by row.
    double* bt = lb + N * N;
    for (int e = 0; e < N * N; e++) bt[e] = uniform();
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = bt[j * N + i];
            for (int k = 0; k < j; k++) s -= x[k * N + i] * l[k * N + j];
            x[j * N + i] = s / l[j * N + j];
        }
    double sa = 0, sb = 0;
    for (int e = 0; e < N * N; e++) sa = fmax(sa, fabs(a[e])), sb = fmax(sb, fabs(bt[e]));

    double *da, *dlb, *dout;
    long long* dcyc;
    CK(cudaMalloc(&da, sizeof a));
    CK(cudaMalloc(&dlb, sizeof lb));
    CK(cudaMalloc(&dout, sizeof lb));
    CK(cudaMalloc(&dcyc, sizeof(long long)));
    CK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dlb, lb, sizeof lb, cudaMemcpyHostToDevice));
    const Ctx c = {{da, dlb}, {l, x}, {sa, sb}, dout, dcyc};

    printf("variant            threads  cycles  us@%.0f  max_error\n", MHZ);
    measure<potrf_reg_64>(c), measure<potrf_reg_128>(c), measure<potrf_reg_256>(c);
    measure<potrf_warp_32>(c);
    measure<potrf_blocked_64>(c), measure<potrf_blocked_128>(c), measure<potrf_blocked_256>(c);
    measure<trsm_rows_g1r1>(c), measure<trsm_rows_g2r2>(c);
    measure<trsm_rows_g2r1>(c), measure<trsm_rows_g4r2>(c);
    measure<trsm_rows_g4r1>(c), measure<trsm_rows_g8r2>(c);
    measure<trsm_blocked_64>(c), measure<trsm_blocked_128>(c), measure<trsm_blocked_256>(c);
    // Operands from and to global memory, as the library's operations take them.
    measure<potrf_blocked_128, true>(c), measure<potrf_blocked_256, true>(c);
    measure<trsm_rows_g1r1, true>(c), measure<trsm_rows_g4r2, true>(c);
    if (failed) printf("FAIL: a variant's error exceeds 1e-10 of its input's scale\n");
    return failed ? 1 : 0;
}
