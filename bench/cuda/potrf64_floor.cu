// The floor for the tile library's 64-tile f64 Cholesky (POTRF) on one block: plain CUDA C
// versions of the same operation, timed the way the tile probe times `potrf64` (cycles of one
// call inside the kernel, clock64 around the operation, the tile already in shared memory), and
// checked against a host factorization.
//
//   nvcc -O3 -arch=sm_90 potrf64_floor.cu -o potrf64_floor && ./potrf64_floor
//
// Variants (lower triangle, column-major 64 x 64 in shared memory, right-looking):
//   two_barriers  32-256 threads: scale column k, barrier, rank-1 update of the trailing
//                 triangle, barrier (128 barriers per call)
//   one_warp      32 threads, __syncwarp() only: each lane owns two rows
//   lookahead     64-256 threads, one barrier per step: warp 0 scales column k + 1 as soon as its own
//                 rows of that column are updated, while the other warps finish step k
#include <cmath>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                        \
    do {                                                                             \
        cudaError_t e = (x);                                                         \
        if (e) {                                                                     \
            printf("ERR %s:%d %s\n", #x, __LINE__, cudaGetErrorString(e));           \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

constexpr int N = 64;
constexpr int REPS = 64;

__device__ __forceinline__ double& at(double* a, int i, int j) { return a[j * N + i]; }

__device__ void two_barriers(double* a) {
    int t = threadIdx.x, n = blockDim.x;
    for (int k = 0; k < N; k++) {
        // Every thread takes the diagonal; it is written back after the barrier, where nobody
        // reads it.
        double d = sqrt(at(a, k, k));
        for (int i = k + 1 + t; i < N; i += n) at(a, i, k) /= d;
        __syncthreads();
        if (t == 0) at(a, k, k) = d;
        // Trailing lower triangle: columns j in (k, N), rows i in [j, N).
        int m = N - k - 1;
        for (int e = t; e < m * m; e += n) {
            int i = k + 1 + e % m, j = k + 1 + e / m;
            if (i >= j) at(a, i, j) -= at(a, i, k) * at(a, j, k);
        }
        __syncthreads();
    }
}

__device__ void one_warp(double* a) {
    int lane = threadIdx.x;
    if (lane >= 32) return;
    for (int k = 0; k < N; k++) {
        double d = sqrt(at(a, k, k));
        __syncwarp();
        for (int i = k + lane; i < N; i += 32) at(a, i, k) = i == k ? d : at(a, i, k) / d;
        __syncwarp();
        for (int r = lane; r < N; r += 32) {
            if (r <= k) continue;
            double lrk = at(a, r, k);
            for (int j = k + 1; j <= r; j++) at(a, r, j) -= lrk * at(a, j, k);
        }
        __syncwarp();
    }
}

// One barrier per step: column k + 1 is scaled by warp 0 right after it updates that column
// (its rows of it: warp 0 owns column k + 1's update), into a second copy `col` that step k + 1
// reads, so the other warps' trailing updates of step k overlap it.
__device__ void lookahead(double* a, double* col) {
    int t = threadIdx.x, n = blockDim.x;
    // Step 0's column.
    if (t < 32) {
        double d = sqrt(at(a, 0, 0));
        for (int i = t; i < N; i += 32) col[i] = i == 0 ? d : at(a, i, 0) / d;
    }
    __syncthreads();
    for (int k = 0; k < N; k++) {
        double* c = col + (k & 1) * N;
        double* next = col + ((k + 1) & 1) * N;
        if (t < 32) {
            if (k + t < N) at(a, k + t, k) = c[k + t];
            if (k + 32 + t < N) at(a, k + 32 + t, k) = c[k + 32 + t];
            // Column k + 1's update by this step, then its scaling for the next step.
            if (k + 1 < N) {
                int j = k + 1;
                for (int i = j + t; i < N; i += 32) at(a, i, j) -= c[i] * c[j];
                __syncwarp();
                double d = sqrt(at(a, j, j));
                for (int i = j + t; i < N; i += 32) next[i] = i == j ? d : at(a, i, j) / d;
            }
        } else {
            // The rest of the trailing triangle: columns j in (k + 1, N).
            int m = N - k - 2, w = n - 32, u = t - 32;
            for (int e = u; m > 0 && e < m * (m + 1); e += w) {
                int j = k + 2 + e / (m + 1), i = k + 2 + e % (m + 1) - 1;
                if (i >= j && i < N) at(a, i, j) -= c[i] * c[j];
            }
        }
        __syncthreads();
    }
}

template <int V>
__global__ void probe(const double* in, double* out, long long* cycles, int threads) {
    __shared__ double a[N * N];
    __shared__ double col[2 * N];
    for (int e = threadIdx.x; e < N * N; e += blockDim.x) a[e] = in[e];
    __syncthreads();
    long long best = 1LL << 60;
    for (int r = 0; r < REPS; r++) {
        for (int e = threadIdx.x; e < N * N; e += blockDim.x) a[e] = in[e];
        __syncthreads();
        long long start = clock64();
        if (V == 0) two_barriers(a);
        if (V == 1) one_warp(a);
        if (V == 2) lookahead(a, col);
        __syncthreads();
        long long spent = clock64() - start;
        if (spent < best) best = spent;
    }
    if (threadIdx.x == 0) *cycles = best;
    for (int e = threadIdx.x; e < N * N; e += blockDim.x) out[e] = a[e];
}

int main() {
    static double h[N * N], ref[N * N], got[N * N];
    srand(7);
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++) {
            double v = (double)rand() / RAND_MAX - 0.5;
            h[j * N + i] = v;
        }
    for (int j = 0; j < N; j++)
        for (int i = 0; i < j; i++) h[j * N + i] = h[i * N + j];
    for (int i = 0; i < N; i++) h[i * N + i] += N;
    for (int e = 0; e < N * N; e++) ref[e] = h[e];
    for (int k = 0; k < N; k++) {
        ref[k * N + k] = sqrt(ref[k * N + k]);
        for (int i = k + 1; i < N; i++) ref[k * N + i] /= ref[k * N + k];
        for (int j = k + 1; j < N; j++)
            for (int i = j; i < N; i++) ref[j * N + i] -= ref[k * N + i] * ref[k * N + j];
    }
    double *din, *dout;
    long long* dcyc;
    CK(cudaMalloc(&din, sizeof h));
    CK(cudaMalloc(&dout, sizeof h));
    CK(cudaMalloc(&dcyc, sizeof(long long)));
    CK(cudaMemcpy(din, h, sizeof h, cudaMemcpyHostToDevice));
    int rate;
    CK(cudaDeviceGetAttribute(&rate, cudaDevAttrClockRate, 0));
    const char* names[] = {"two_barriers", "one_warp", "lookahead"};
    printf("variant threads cycles us_at_%dMHz max_error\n", rate / 1000);
    for (int v = 0; v < 3; v++) {
        for (int threads : {32, 64, 128, 256}) {
            if (v == 1 && threads != 32) continue;
            if (v == 2 && threads < 64) continue;
            if (v == 0) probe<0><<<1, threads>>>(din, dout, dcyc, threads);
            if (v == 1) probe<1><<<1, threads>>>(din, dout, dcyc, threads);
            if (v == 2) probe<2><<<1, threads>>>(din, dout, dcyc, threads);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            long long cyc;
            CK(cudaMemcpy(&cyc, dcyc, sizeof cyc, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(got, dout, sizeof got, cudaMemcpyDeviceToHost));
            double err = 0;
            for (int j = 0; j < N; j++)
                for (int i = j; i < N; i++) err = fmax(err, fabs(got[j * N + i] - ref[j * N + i]));
            printf("%s %d %lld %.2f %.2e %s\n", names[v], threads, cyc, cyc / (rate / 1e3),
                   err, err < 1e-12 ? "PASS" : "FAIL");
        }
    }
    return 0;
}
