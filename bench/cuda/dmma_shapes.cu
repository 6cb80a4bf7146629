// Throughput and latency of the f64 `mma.sync` shapes on this GPU, to choose the instruction the
// tile library's f64 GEMM is built on (device/src/tile). Operands stay in registers, so this is
// the tensor cores' rate with nothing else in the way: an upper bound for any tile GEMM.
//
//   nvcc -O3 -arch=sm_90 -o dmma_shapes bench/cuda/dmma_shapes.cu
//   ./dmma_shapes [blocks_per_sm=4] [warps_per_block=4] [iterations=4096]
//
// For each shape: the FP64 TFLOP/s of every warp issuing CHAINS independent MMAs in turn (the
// throughput case), and the latency of one dependent chain in one warp (cycles per MMA).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                     \
    do {                                                                                \
        cudaError_t err_ = (call);                                                      \
        if (err_ != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

constexpr int CHAINS = 8;

struct M8n8k4 {
    static constexpr int A = 1, B = 1, C = 2, M = 8, N = 8, K = 4;
    static __device__ void mma(double* d, const double* a, const double* b) {
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                     : "+d"(d[0]), "+d"(d[1])
                     : "d"(a[0]), "d"(b[0]));
    }
};
struct M16n8k4 {
    static constexpr int A = 2, B = 1, C = 4, M = 16, N = 8, K = 4;
    static __device__ void mma(double* d, const double* a, const double* b) {
        asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                     : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                     : "d"(a[0]), "d"(a[1]), "d"(b[0]));
    }
};
struct M16n8k8 {
    static constexpr int A = 4, B = 2, C = 4, M = 16, N = 8, K = 8;
    static __device__ void mma(double* d, const double* a, const double* b) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                     : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
    }
};
struct M16n8k16 {
    static constexpr int A = 8, B = 4, C = 4, M = 16, N = 8, K = 16;
    static __device__ void mma(double* d, const double* a, const double* b) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};"
                     : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                     : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                       "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
    }
};

// Every warp runs `iterations` rounds of `chains` independent MMAs; out keeps the results live.
template <class S, int chains>
__global__ void throughput(double* out, int iterations) {
    double a[S::A], b[S::B], c[chains][S::C];
    for (int i = 0; i < S::A; i++) a[i] = 1.0 + 1e-9 * (threadIdx.x + i);
    for (int i = 0; i < S::B; i++) b[i] = 1.0 - 1e-9 * (threadIdx.x + i);
    for (int k = 0; k < chains; k++)
        for (int i = 0; i < S::C; i++) c[k][i] = 0.0;
    for (int it = 0; it < iterations; it++) {
#pragma unroll
        for (int k = 0; k < chains; k++) S::mma(c[k], a, b);
    }
    double sum = 0.0;
    for (int k = 0; k < chains; k++)
        for (int i = 0; i < S::C; i++) sum += c[k][i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// One warp, one dependent chain: clock cycles per MMA.
template <class S>
__global__ void latency(double* out, long long* cycles, int iterations) {
    double a[S::A], b[S::B], c[S::C];
    for (int i = 0; i < S::A; i++) a[i] = 1.0;
    for (int i = 0; i < S::B; i++) b[i] = 1.0;
    for (int i = 0; i < S::C; i++) c[i] = 0.0;
    long long start = clock64();
    for (int it = 0; it < iterations; it++) S::mma(c, a, b);
    long long end = clock64();
    double sum = 0.0;
    for (int i = 0; i < S::C; i++) sum += c[i];
    out[threadIdx.x] = sum;
    if (threadIdx.x == 0) *cycles = end - start;
}

template <class S>
void run(const char* name, int sms, int per_sm, int warps, int iterations, double* out,
         long long* cycles) {
    const int blocks = sms * per_sm, threads = warps * 32;
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    throughput<S, CHAINS><<<blocks, threads>>>(out, iterations);  // warm-up
    CHECK(cudaGetLastError());
    float best = 1e30f;
    for (int rep = 0; rep < 5; rep++) {
        CHECK(cudaEventRecord(e0));
        throughput<S, CHAINS><<<blocks, threads>>>(out, iterations);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        best = ms < best ? ms : best;
    }
    const double flops = 2.0 * S::M * S::N * S::K * CHAINS * (double)iterations * blocks * warps;
    latency<S><<<1, 32>>>(out, cycles, iterations);
    CHECK(cudaGetLastError());
    long long c;
    CHECK(cudaMemcpy(&c, cycles, sizeof c, cudaMemcpyDeviceToHost));
    printf("%-10s %8.2f TFLOP/s (%d blocks x %d warps, %d chains)   latency %6.1f cycles/MMA\n",
           name, flops / (best * 1e-3) / 1e12, blocks, warps, CHAINS, (double)c / iterations);
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
}

int main(int argc, char** argv) {
    const int per_sm = argc > 1 ? atoi(argv[1]) : 4;
    const int warps = argc > 2 ? atoi(argv[2]) : 4;
    const int iterations = argc > 3 ? atoi(argv[3]) : 4096;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("# %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    double* out;
    long long* cycles;
    CHECK(cudaMalloc(&out, sizeof(double) * prop.multiProcessorCount * per_sm * warps * 32));
    CHECK(cudaMalloc(&cycles, sizeof(long long)));
    run<M8n8k4>("m8n8k4", prop.multiProcessorCount, per_sm, warps, iterations, out, cycles);
    run<M16n8k4>("m16n8k4", prop.multiProcessorCount, per_sm, warps, iterations, out, cycles);
    run<M16n8k8>("m16n8k8", prop.multiProcessorCount, per_sm, warps, iterations, out, cycles);
    run<M16n8k16>("m16n8k16", prop.multiProcessorCount, per_sm, warps, iterations, out, cycles);
    CHECK(cudaFree(out));
    CHECK(cudaFree(cycles));
    return 0;
}
