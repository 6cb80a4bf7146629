// The Needleman-Wunsch tile of taskweave's `nw_tile` task (examples/kernels/src/dp.rs), written
// directly in CUDA C, to measure what taskweave's task body costs against hand-written code.
//
// Like `tile_bench` on the Rust side, it runs the tiles (i, j) with i and j odd of an nb x nb-tile
// matrix: they read only tiles with an even coordinate, so they are independent; one block per
// tile. The matrix and edge columns start as the sequential reference, so the output is checked.
// The algorithm is the Rust one step for step: boundary and sequences into shared memory, one
// anti-diagonal per barrier with an even row stride (conflict-free diagonals), then the tile back
// row by row and its last column into the edge array.
//
//   nvcc -O3 -arch=sm_90 -o nw_tile bench/cuda/nw_tile.cu
//   ./nw_tile [nb=128] [tile=32] [launches=200] [threads=128]
//
// It prints the median time of one launch (each between its own pair of events, as taskweave's
// barrier backend times a level) and the time per launch of back-to-back launches, each divided
// by the number of tiles.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                     \
    do {                                                                                \
        cudaError_t err_ = (call);                                                      \
        if (err_ != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

constexpr int MAX_TILE = 64;
constexpr int MATCH = 1, MISMATCH = -1, GAP = 1;

__host__ __device__ inline int diagonal_stride(int min) { return min + min % 2; }

// Tile (ti, tj) of an nb x nb-tile matrix of bs x bs tiles, tile-major; cols holds every tile's
// last column. Every thread of the block calls it.
__device__ void nw_tile(const unsigned char* x, const unsigned char* y, int* m, int* cols, int ti,
                        int tj, int nb, int bs) {
    extern __shared__ int smem[];
    const int w = diagonal_stride(bs + 1);
    int* h = smem;
    unsigned char* xs = reinterpret_cast<unsigned char*>(smem + (MAX_TILE + 1) * diagonal_stride(MAX_TILE + 1));
    unsigned char* ys = xs + MAX_TILE;
    const int r0 = ti * bs, c0 = tj * bs;
    const size_t tile = (size_t)bs * bs;
    const int* up = m + ((size_t)(ti - 1) * nb + tj) * tile + (size_t)(bs - 1) * bs;
    const int* left = cols + ((size_t)ti * nb + tj - 1) * bs;
    for (int k = threadIdx.x; k < 2 * bs + 1; k += blockDim.x) {
        if (k < bs) {
            h[k + 1] = ti == 0 ? -(c0 + k + 1) * GAP : up[k];
            xs[k] = x[r0 + k];
            ys[k] = y[c0 + k];
        } else if (k < 2 * bs) {
            const int r = k - bs;
            h[(r + 1) * w] = tj == 0 ? -(r0 + r + 1) * GAP : left[r];
        } else {
            h[0] = ti == 0 ? -c0 * GAP
                 : tj == 0 ? -r0 * GAP
                           : cols[((size_t)(ti - 1) * nb + tj - 1) * bs + bs - 1];
        }
    }
    __syncthreads();
    for (int d = 0; d < 2 * bs - 1; ++d) {
        const int lo = max(0, d - (bs - 1)), hi = min(d, bs - 1);
        for (int r = lo + threadIdx.x; r <= hi; r += blockDim.x) {
            const int c = d - r, at = (r + 1) * w + c + 1;
            const int s = xs[r] == ys[c] ? MATCH : MISMATCH;
            h[at] = max(max(h[at - w - 1] + s, h[at - w] - GAP), h[at - 1] - GAP);
        }
        __syncthreads();
    }
    int* out = m + ((size_t)ti * nb + tj) * tile;
    int* edge = cols + ((size_t)ti * nb + tj) * bs;
    for (int k = threadIdx.x; k < bs * bs + bs; k += blockDim.x) {
        if (k < bs * bs) {
            out[k] = h[(k / bs + 1) * w + k % bs + 1];
        } else {
            const int r = k - bs * bs;
            edge[r] = h[(r + 1) * w + bs];
        }
    }
}

// Block b runs odd tile (2 (b / half) + 1, 2 (b % half) + 1).
__global__ void nw_odd_tiles(const unsigned char* x, const unsigned char* y, int* m, int* cols,
                             int nb, int bs) {
    const int half = nb / 2;
    nw_tile(x, y, m, cols, 2 * (blockIdx.x / half) + 1, 2 * (blockIdx.x % half) + 1, nb, bs);
}

static unsigned lcg(unsigned long long& s) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(s >> 32);
}

int main(int argc, char** argv) {
    const int nb = argc > 1 ? atoi(argv[1]) : 128;
    const int bs = argc > 2 ? atoi(argv[2]) : 32;
    const int launches = argc > 3 ? atoi(argv[3]) : 200;
    const int threads = argc > 4 ? atoi(argv[4]) : 128;
    if (nb < 2 || nb % 2 || bs < 1 || bs > MAX_TILE || launches < 1 || threads < 1) {
        fprintf(stderr, "usage: %s [nb (even)] [tile (1..64)] [launches] [threads]\n", argv[0]);
        return 2;
    }
    const int n = nb * bs, tiles = (nb / 2) * (nb / 2);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s (%d SMs)\n", prop.name, prop.multiProcessorCount);
    printf("%d independent %dx%d NW tiles of a %dx%d matrix, %d threads per block\n", tiles, bs,
           bs, n, n, threads);

    // Sequences, a row-major reference and its tile-major copy with the edge columns.
    unsigned long long seed = 1;
    std::vector<unsigned char> x(n), y(n);
    for (int i = 0; i < n; ++i) x[i] = "ACGT"[lcg(seed) % 4];
    for (int i = 0; i < n; ++i) y[i] = lcg(seed) % 8 == 0 ? "ACGT"[lcg(seed) % 4] : x[i];
    std::vector<int> prev(n + 1), row(n + 1), ref((size_t)n * n);
    for (int j = 0; j <= n; ++j) prev[j] = -j * GAP;
    for (int i = 1; i <= n; ++i) {
        row[0] = -i * GAP;
        for (int j = 1; j <= n; ++j) {
            const int s = x[i - 1] == y[j - 1] ? MATCH : MISMATCH;
            row[j] = std::max(std::max(prev[j - 1] + s, prev[j] - GAP), row[j - 1] - GAP);
            ref[(size_t)(i - 1) * n + j - 1] = row[j];
        }
        std::swap(prev, row);
    }
    const size_t tile = (size_t)bs * bs;
    std::vector<int> m((size_t)n * n), cols((size_t)nb * nb * bs);
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c)
            m[((size_t)(r / bs) * nb + c / bs) * tile + (r % bs) * bs + c % bs] = ref[(size_t)r * n + c];
    for (size_t t = 0; t < (size_t)nb * nb; ++t)
        for (int r = 0; r < bs; ++r) cols[t * bs + r] = m[t * tile + r * bs + bs - 1];
    std::vector<int> expected = m;
    for (size_t t = 0; t < (size_t)nb * nb; ++t)
        if ((t / nb) % 2 == 1 && (t % nb) % 2 == 1)
            std::fill(m.begin() + t * tile, m.begin() + (t + 1) * tile, -1 << 30);

    unsigned char *dx, *dy;
    int *dm, *dcols;
    CHECK(cudaMalloc(&dx, n));
    CHECK(cudaMalloc(&dy, n));
    CHECK(cudaMalloc(&dm, m.size() * sizeof(int)));
    CHECK(cudaMalloc(&dcols, cols.size() * sizeof(int)));
    CHECK(cudaMemcpy(dx, x.data(), n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, y.data(), n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dm, m.data(), m.size() * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dcols, cols.data(), cols.size() * sizeof(int), cudaMemcpyHostToDevice));
    const size_t shared = (MAX_TILE + 1) * diagonal_stride(MAX_TILE + 1) * sizeof(int) + 2 * MAX_TILE;

    nw_odd_tiles<<<tiles, threads, shared>>>(dx, dy, dm, dcols, nb, bs);  // warm-up
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(m.data(), dm, m.size() * sizeof(int), cudaMemcpyDeviceToHost));
    const bool ok = m == expected;

    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<float> single(launches);
    for (int l = 0; l < launches; ++l) {
        CHECK(cudaEventRecord(start));
        nw_odd_tiles<<<tiles, threads, shared>>>(dx, dy, dm, dcols, nb, bs);
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&single[l], start, stop));
    }
    CHECK(cudaEventRecord(start));
    for (int l = 0; l < launches; ++l)
        nw_odd_tiles<<<tiles, threads, shared>>>(dx, dy, dm, dcols, nb, bs);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaGetLastError());
    float total = 0;
    CHECK(cudaEventElapsedTime(&total, start, stop));
    std::sort(single.begin(), single.end());
    const double median = 0.5 * (single[(launches - 1) / 2] + single[launches / 2]);

    printf("check: %s\n", ok ? "PASS (exact)" : "FAIL");
    printf("time per tile: %.1f ns (median of %d single launches: %.3f ms)\n",
           median * 1e6 / tiles, launches, median);
    printf("back-to-back: %.1f ns per tile (%.3f ms per launch)\n",
           total * 1e6 / launches / tiles, total / launches);
    return ok ? 0 : 1;
}
