// gemm_floor: how fast can hand-written CUDA C run the factorizations' tile update, one tile per
// block as the tile library does it, and how far is that from cuBLAS on the same tiles?
//
// The operation is the trailing update of a tiled Cholesky or LU, f64, every tile row-major and
// contiguous (ld = S): C -= A * B^T (alpha = -1, beta = 1), for a batch of independent S x S
// tiles (2^28 bytes per operand set, as `tile_ops --op gemm` uses), and for one tile alone.
//
//   nvcc -O3 -arch=sm_90 -lcublas -o gemm_floor bench/cuda/gemm_floor.cu && ./gemm_floor
//
// Each kernel variant is a block of THREADS threads that walks its tile's BM x BN block tiles;
// its warps form a grid of WM x WN warp tiles of `mma.sync.m16n8k{8,16}.f64` atoms, with the
// accumulators in registers; K streams through KC-deep chunks of A and B copied by `cp.async` into
// STAGES slots of shared memory, rows padded so that the fragment loads are conflict-free. C is
// read into the accumulators before the K loop. Output per line: the variant, TFLOP/s of the
// batch (median of 9 launches) at beta = 1, registers, blocks per SM, and one tile's latency
// (best of 20 one-block launches, clock64 around the whole tile, operands in L2; `cold`: L2 flushed
// before each launch; `launch`: the median event time of the warm one-block launches, launch
// included, to compare with a one-task region's execute time). cuBLAS's strided batched DGEMM runs the same batches at beta = 1 and 0.
// Every variant's and cuBLAS's result is checked against a host reference on two tiles; a line
// reads FAIL and the program exits 1 when one is off by more than 1e-12 relative.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#define CHECK_BLAS(call)                                                   \
    do {                                                                   \
        cublasStatus_t st_ = (call);                                       \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                \
            fprintf(stderr, "%s:%d: cublas %d\n", __FILE__, __LINE__, st_); \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

template <int KI>
__device__ __forceinline__ void mma(double* d, const double* a, const double* b);
template <>
__device__ __forceinline__ void mma<8>(double* d, const double* a, const double* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
}
template <>
__device__ __forceinline__ void mma<16>(double* d, const double* a, const double* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "
        "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
          "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
}

__device__ __forceinline__ void cp16(void* dst, const void* src) {
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void wait_group() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

template <int S_, int THREADS_, int BM_, int BN_, int WM_, int WN_, int KC_, int STAGES_, int KI_>
struct Cfg {
    static constexpr int S = S_, THREADS = THREADS_, BM = BM_, BN = BN_, WM = WM_, WN = WN_,
                         KC = KC_, STAGES = STAGES_, KI = KI_;
    static constexpr int WARPS_N = BN / WN, MI = WM / 16, NI = WN / 8;
    // Rows padded to 4 mod 16 doubles: the 16 lanes of each half-warp's 8-byte fragment load
    // (rows g, columns t) then fall in 16 different bank pairs.
    static constexpr int LDS = KC + ((4 - KC % 16) + 16) % 16;
    static constexpr int SMEM = (BM + BN) * LDS * STAGES * 8;
    static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "warp grid");
    static_assert(S % BM == 0 && S % BN == 0 && S % KC == 0 && KC % KI == 0, "shape");
};

template <class C>
__global__ void __launch_bounds__(C::THREADS) tile_gemm(const double* __restrict__ A,
                                                        const double* __restrict__ B,
                                                        double* __restrict__ Cm, long long* span) {
    constexpr int S = C::S, BM = C::BM, BN = C::BN, KC = C::KC, LDS = C::LDS, ST = C::STAGES;
    constexpr int MI = C::MI, NI = C::NI, KI = C::KI, NK = S / KC;
    extern __shared__ __align__(16) double smem[];
    long long t0 = clock64();
    const size_t tile = static_cast<size_t>(blockIdx.x) * S * S;
    const double* a = A + tile;
    const double* b = B + tile;
    double* c = Cm + tile;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tq = lane & 3;
    const int wr = warp / C::WARPS_N, wc = warp % C::WARPS_N;

    for (int bm = 0; bm < S; bm += BM) {
        for (int bn = 0; bn < S; bn += BN) {
            double acc[MI][NI][4];
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++) {
                    const int r = bm + wr * C::WM + mi * 16 + g, col = bn + wc * C::WN + ni * 8 + 2 * tq;
                    const double2 v0 = *reinterpret_cast<const double2*>(c + r * S + col);
                    const double2 v1 = *reinterpret_cast<const double2*>(c + (r + 8) * S + col);
                    acc[mi][ni][0] = -v0.x;
                    acc[mi][ni][1] = -v0.y;
                    acc[mi][ni][2] = -v1.x;
                    acc[mi][ni][3] = -v1.y;
                }
            auto load = [&](int k0, int slot) {
                double* base = smem + slot * (BM + BN) * LDS;
#pragma unroll
                for (int p = tid; p < (BM + BN) * KC / 2; p += C::THREADS) {
                    const int r = p / (KC / 2), q = (p % (KC / 2)) * 2;
                    const double* src = r < BM ? a + (bm + r) * S + k0 + q : b + (bn + r - BM) * S + k0 + q;
                    cp16(base + r * LDS + q, src);
                }
            };
#pragma unroll
            for (int s = 0; s < ST - 1; s++) {
                if (s < NK) load(s * KC, s);
                commit();
            }
            for (int k = 0; k < NK; k++) {
                if (ST == 1) {
                    load(k * KC, 0);
                    commit();
                    wait_group<0>();
                } else {
                    wait_group<(ST > 1 ? ST - 2 : 0)>();
                }
                __syncthreads();
                if (ST > 1) {
                    const int nk = k + ST - 1;
                    if (nk < NK) load(nk * KC, nk % ST);
                    commit();
                }
                const double* sa = smem + (k % ST) * (BM + BN) * LDS;
                const double* sb = sa + BM * LDS;
#pragma unroll
                for (int kk = 0; kk < KC; kk += KI) {
                    double af[MI][KI / 2], bf[NI][KI / 4];
#pragma unroll
                    for (int mi = 0; mi < MI; mi++)
#pragma unroll
                        for (int i = 0; i < KI / 2; i++)
                            af[mi][i] = sa[(wr * C::WM + mi * 16 + g + 8 * (i % 2)) * LDS + kk + tq + 4 * (i / 2)];
#pragma unroll
                    for (int ni = 0; ni < NI; ni++)
#pragma unroll
                        for (int i = 0; i < KI / 4; i++)
                            bf[ni][i] = sb[(wc * C::WN + ni * 8 + g) * LDS + kk + tq + 4 * i];
#pragma unroll
                    for (int mi = 0; mi < MI; mi++)
#pragma unroll
                        for (int ni = 0; ni < NI; ni++) mma<KI>(acc[mi][ni], af[mi], bf[ni]);
                }
                if (ST == 1) __syncthreads();
            }
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++) {
                    const int r = bm + wr * C::WM + mi * 16 + g, col = bn + wc * C::WN + ni * 8 + 2 * tq;
                    *reinterpret_cast<double2*>(c + r * S + col) = make_double2(-acc[mi][ni][0], -acc[mi][ni][1]);
                    *reinterpret_cast<double2*>(c + (r + 8) * S + col) =
                        make_double2(-acc[mi][ni][2], -acc[mi][ni][3]);
                }
            wait_group<0>();
            __syncthreads();  // the slots are refilled by the next block tile
        }
    }
    if (span != nullptr && tid == 0) span[blockIdx.x] = clock64() - t0;
}

// The SM clock while busy: clock64 against the global timer over about a millisecond.
__global__ void clock_rate(double* mhz) {
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    const long long c0 = clock64();
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    } while (t1 - t0 < 1000000);
    *mhz = static_cast<double>(clock64() - c0) / static_cast<double>(t1 - t0) * 1e3;
}

struct Data {
    int s = 0, tiles = 0;
    size_t n = 0;
    double *a = nullptr, *b = nullptr, *c = nullptr;
    std::vector<double> ha, hb, hc;
    double* flush = nullptr;
};

static double rnd(unsigned long long& x) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static void reset_c(Data& d) { CHECK(cudaMemcpy(d.c, d.hc.data(), d.n * 8, cudaMemcpyHostToDevice)); }

// Checks tiles 0 and tiles - 1 of C against the host reference C0 - A B^T.
static bool check(const Data& d, double* worst) {
    std::vector<double> out(static_cast<size_t>(d.s) * d.s);
    const int s = d.s;
    *worst = 0.0;
    for (int t : {0, d.tiles - 1}) {
        const size_t off = static_cast<size_t>(t) * s * s;
        CHECK(cudaMemcpy(out.data(), d.c + off, out.size() * 8, cudaMemcpyDeviceToHost));
        for (int i = 0; i < s; i++)
            for (int j = 0; j < s; j++) {
                double ref = d.hc[off + i * s + j];
                for (int k = 0; k < s; k++) ref -= d.ha[off + i * s + k] * d.hb[off + j * s + k];
                *worst = std::max(*worst, std::fabs(out[i * s + j] - ref) / (s + std::fabs(ref)));
            }
    }
    return *worst <= 1e-12;
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static bool failed = false;
static double clock_mhz = 0.0;

template <class C>
static void run(const char* name, Data& d) {
    auto k = tile_gemm<C>;
    CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, k));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, C::THREADS, C::SMEM));
    reset_c(d);
    k<<<d.tiles, C::THREADS, C::SMEM>>>(d.a, d.b, d.c, nullptr);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double worst;
    const bool ok = check(d, &worst);
    failed |= !ok;
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int rep = 0; rep < 9; rep++) {
        CHECK(cudaEventRecord(e0));
        k<<<d.tiles, C::THREADS, C::SMEM>>>(d.a, d.b, d.c, nullptr);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float t;
        CHECK(cudaEventElapsedTime(&t, e0, e1));
        ms.push_back(t);
    }
    const double flops = 2.0 * d.s * d.s * d.s * d.tiles;
    long long* span;
    CHECK(cudaMalloc(&span, sizeof(long long)));
    long long warm = 1LL << 62, cold = 1LL << 62;
    std::vector<float> launch;
    for (int rep = 0; rep < 20; rep++) {
        long long v;
        CHECK(cudaEventRecord(e0));
        k<<<1, C::THREADS, C::SMEM>>>(d.a, d.b, d.c, span);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float t;
        CHECK(cudaEventElapsedTime(&t, e0, e1));
        launch.push_back(t);
        CHECK(cudaMemcpy(&v, span, sizeof v, cudaMemcpyDeviceToHost));
        warm = std::min(warm, v);
        CHECK(cudaMemset(d.flush, rep, 256 << 20));
        k<<<1, C::THREADS, C::SMEM>>>(d.a, d.b, d.c, span);
        CHECK(cudaMemcpy(&v, span, sizeof v, cudaMemcpyDeviceToHost));
        cold = std::min(cold, v);
    }
    CHECK(cudaFree(span));
    const double mhz = clock_mhz;
    printf("%-24s S=%3d %3d thr %5.2f TFLOP/s  %3d regs %d/SM %6d B smem  one tile %7lld cyc %6.2f us  cold %7lld cyc %6.2f us  launch %6.2f us  err %.1e %s\n",
           name, d.s, C::THREADS, flops / (median(ms) * 1e-3) / 1e12, attr.numRegs, per_sm, C::SMEM, warm,
           warm / mhz, cold, cold / mhz, median(launch) * 1e3, worst, ok ? "ok" : "FAIL");
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
}

static void cublas(cublasHandle_t h, Data& d) {
    const int s = d.s;
    const long long st = static_cast<long long>(s) * s;
    for (double beta : {1.0, 0.0}) {
        const double alpha = -1.0;
        auto call = [&] {
            // Row-major C = C - A B^T is column-major C^T = C^T - B A^T.
            CHECK_BLAS(cublasDgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, s, s, s, &alpha, d.b, s, st,
                                                 d.a, s, st, &beta, d.c, s, st, d.tiles));
        };
        reset_c(d);
        call();
        CHECK(cudaDeviceSynchronize());
        double worst = 0.0;
        bool ok = true;
        if (beta == 1.0) {
            ok = check(d, &worst);
            failed |= !ok;
        }
        cudaEvent_t e0, e1;
        CHECK(cudaEventCreate(&e0));
        CHECK(cudaEventCreate(&e1));
        std::vector<float> ms;
        for (int rep = 0; rep < 9; rep++) {
            CHECK(cudaEventRecord(e0));
            call();
            CHECK(cudaEventRecord(e1));
            CHECK(cudaEventSynchronize(e1));
            float t;
            CHECK(cudaEventElapsedTime(&t, e0, e1));
            ms.push_back(t);
        }
        printf("%-24s S=%3d          %5.2f TFLOP/s  (beta = %.0f)%s\n", "cublasDgemmStridedBatched", s,
               2.0 * s * s * s * d.tiles / (median(ms) * 1e-3) / 1e12, beta,
               beta == 1.0 ? (ok ? "  ok" : "  FAIL") : "");
        CHECK(cudaEventDestroy(e0));
        CHECK(cudaEventDestroy(e1));
    }
}

static Data make(int s, double* flush) {
    Data d;
    d.s = s;
    d.n = (size_t(1) << 28) / 8;
    d.tiles = static_cast<int>(d.n / (static_cast<size_t>(s) * s));
    d.flush = flush;
    unsigned long long x = 12345 + s;
    d.ha.resize(d.n);
    d.hb.resize(d.n);
    d.hc.resize(d.n);
    for (size_t i = 0; i < d.n; i++) {
        d.ha[i] = rnd(x);
        d.hb[i] = rnd(x);
        d.hc[i] = rnd(x);
    }
    CHECK(cudaMalloc(&d.a, d.n * 8));
    CHECK(cudaMalloc(&d.b, d.n * 8));
    CHECK(cudaMalloc(&d.c, d.n * 8));
    CHECK(cudaMemcpy(d.a, d.ha.data(), d.n * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d.b, d.hb.data(), d.n * 8, cudaMemcpyHostToDevice));
    return d;
}

static void drop(Data& d) {
    CHECK(cudaFree(d.a));
    CHECK(cudaFree(d.b));
    CHECK(cudaFree(d.c));
}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    double* mhz;
    CHECK(cudaMalloc(&mhz, sizeof(double)));
    clock_rate<<<1, 1>>>(mhz);
    CHECK(cudaMemcpy(&clock_mhz, mhz, sizeof(double), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(mhz));
    printf("# %s, %d SMs, SM clock %.0f MHz (measured); f64 C -= A B^T, row-major contiguous tiles, 2^28 bytes per operand\n",
           prop.name, prop.multiProcessorCount, clock_mhz);
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    double* flush;
    CHECK(cudaMalloc(&flush, 256 << 20));
    {
        Data d = make(64, flush);
        //  Cfg<S, THREADS, BM, BN, WM, WN, KC, STAGES, KI>
        run<Cfg<64, 128, 64, 64, 32, 32, 64, 1, 8>>("whole k8", d);
        run<Cfg<64, 128, 64, 64, 32, 32, 64, 1, 16>>("whole k16", d);
        run<Cfg<64, 128, 64, 64, 32, 32, 16, 3, 8>>("kc16 s3 k8", d);
        run<Cfg<64, 128, 64, 64, 32, 32, 16, 3, 16>>("kc16 s3 k16", d);
        run<Cfg<64, 128, 64, 64, 32, 32, 32, 2, 16>>("kc32 s2 k16", d);
        run<Cfg<64, 64, 64, 64, 32, 64, 16, 3, 16>>("2 warps kc16 s3 k16", d);
        cublas(h, d);
        drop(d);
    }
    {
        Data d = make(128, flush);
        run<Cfg<128, 128, 64, 64, 32, 32, 16, 3, 16>>("b64x64 kc16 s3", d);
        run<Cfg<128, 128, 64, 64, 32, 32, 32, 3, 16>>("b64x64 kc32 s3", d);
        run<Cfg<128, 128, 128, 64, 64, 32, 16, 3, 16>>("b128x64 kc16 s3", d);
        run<Cfg<128, 128, 128, 64, 64, 32, 32, 2, 16>>("b128x64 kc32 s2", d);
        run<Cfg<128, 256, 128, 128, 64, 32, 16, 3, 16>>("b128x128 kc16 s3", d);
        run<Cfg<128, 256, 128, 128, 64, 32, 32, 2, 16>>("b128x128 kc32 s2", d);
        cublas(h, d);
        drop(d);
    }
    {
        Data d = make(256, flush);
        run<Cfg<256, 128, 64, 64, 32, 32, 16, 3, 16>>("b64x64 kc16 s3", d);
        run<Cfg<256, 128, 128, 64, 64, 32, 16, 3, 16>>("b128x64 kc16 s3", d);
        run<Cfg<256, 128, 128, 64, 64, 32, 32, 2, 16>>("b128x64 kc32 s2", d);
        run<Cfg<256, 256, 128, 128, 64, 32, 16, 3, 16>>("b128x128 kc16 s3", d);
        run<Cfg<256, 256, 128, 128, 64, 32, 32, 2, 16>>("b128x128 kc32 s2", d);
        run<Cfg<256, 256, 128, 128, 64, 32, 16, 4, 16>>("b128x128 kc16 s4", d);
        cublas(h, d);
        drop(d);
    }
    CHECK(cudaFree(flush));
    CHECK_BLAS(cublasDestroy(h));
    return failed ? 1 : 0;
}
