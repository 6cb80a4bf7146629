// Host CPU cost of the driver calls a planned call could make, and end-to-end wall of each way
// to issue and wait, for a 1056-block kernel whose last block writes a flag into mapped pinned
// memory (as a self-finishing persistent kernel would).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

using clk = std::chrono::steady_clock;
static double us(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }

struct Box { volatile unsigned done; unsigned pad; unsigned long long start, end; unsigned stats[8 * 1056]; };

__device__ unsigned arrive, leave_count;

__global__ void k(Box* box, unsigned* scratch, int reset_words) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  __shared__ unsigned last;
  if (threadIdx.x == 0) {
    unsigned old = atomicAdd(&arrive, 1);
    if (old == 0) box->start = t;
    // each block writes its stats (8 words) to host memory
    for (int i = 0; i < 8; i++) box->stats[blockIdx.x * 8 + i] = blockIdx.x + i;
    __threadfence_system();
    last = atomicAdd(&leave_count, 1) == gridDim.x - 1;
  }
  __syncthreads();
  // distributed reset of scratch (as a self-reset of tables would be)
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < reset_words; i += gridDim.x * blockDim.x) scratch[i] = 0;
  if (threadIdx.x == 0 && last) {
    arrive = 0; leave_count = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    box->end = t;
    __threadfence_system();
    box->done = 1;
  }
}

static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main() {
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s\n", prop.name);
  CK(cudaSetDeviceFlags(cudaDeviceMapHost));
  Box* box; CK(cudaHostAlloc(&box, sizeof(Box), cudaHostAllocMapped));
  Box* dbox; CK(cudaHostGetDevicePointer(&dbox, box, 0));
  memset(box, 0, sizeof(Box));
  unsigned* scratch; CK(cudaMalloc(&scratch, 1 << 20));
  unsigned* pristine; CK(cudaMalloc(&pristine, 1 << 20));
  void* pinned; CK(cudaHostAlloc(&pinned, 64 << 10, 0));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  const int blocks = 1056, threads = 128, reps = 300, words = 2048;
  for (int i = 0; i < 50; i++) { k<<<blocks, threads, 0, s>>>(dbox, scratch, words); }
  CK(cudaStreamSynchronize(s));

  // graphs
  auto make = [&](int kind) {
    cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (kind == 5) CK(cudaMemcpyAsync(scratch, pristine, words * 4, cudaMemcpyDeviceToDevice, s));
    if (kind >= 3) CK(cudaEventRecord(e0, s));
    k<<<blocks, threads, 0, s>>>(dbox, scratch, words);
    if (kind >= 3) CK(cudaEventRecord(e1, s));
    if (kind == 5) CK(cudaMemcpyAsync(pinned, scratch, 34000, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t x; CK(cudaGraphInstantiate(&x, g, 0));
    return x;
  };
  cudaGraphExec_t g1 = make(1), g3 = make(3), g5 = make(5);

  std::vector<double> issue, wall, after;
  auto report = [&](const char* name) {
    printf("%-48s issue %6.2f us   wait-seen %7.2f us   after %6.2f us\n", name, median(issue), median(wall), after.empty() ? 0.0 : median(after));
    issue.clear(); wall.clear(); after.clear();
  };
  auto spin_flag = [&]() { while (!box->done) {} };
  for (int round = 0; round < 2; round++) {
    printf("round %d\n", round);
    // 1. plain launch, spin on mapped flag
    for (int i = 0; i < reps; i++) {
      box->done = 0;
      auto a = clk::now(); k<<<blocks, threads, 0, s>>>(dbox, scratch, words); auto b = clk::now();
      spin_flag(); auto c = clk::now();
      issue.push_back(us(a, b)); wall.push_back(us(a, c));
      CK(cudaStreamSynchronize(s));
    }
    report("launch; spin on mapped flag");
    // 1b. plain launch, flag, then stream sync (to know the kernel ended)
    for (int i = 0; i < reps; i++) {
      box->done = 0;
      auto a = clk::now(); k<<<blocks, threads, 0, s>>>(dbox, scratch, words); auto b = clk::now();
      spin_flag(); auto c = clk::now(); CK(cudaStreamSynchronize(s)); auto d = clk::now();
      issue.push_back(us(a, b)); wall.push_back(us(a, c)); after.push_back(us(c, d));
    }
    report("launch; spin flag; then stream sync (after)");
    // 2. plain launch, stream sync
    for (int i = 0; i < reps; i++) {
      auto a = clk::now(); k<<<blocks, threads, 0, s>>>(dbox, scratch, words); auto b = clk::now();
      CK(cudaStreamSynchronize(s)); auto c = clk::now();
      issue.push_back(us(a, b)); wall.push_back(us(a, c));
    }
    report("launch; stream sync");
    // 3. event, launch, event; poll end event; elapsed (after)
    for (int i = 0; i < reps; i++) {
      box->done = 0;
      auto a = clk::now(); CK(cudaEventRecord(e0, s)); k<<<blocks, threads, 0, s>>>(dbox, scratch, words); CK(cudaEventRecord(e1, s)); auto b = clk::now();
      while (cudaEventQuery(e1) == cudaErrorNotReady) {} auto c = clk::now();
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); auto d = clk::now();
      issue.push_back(us(a, b)); wall.push_back(us(a, c)); after.push_back(us(c, d));
    }
    report("event,launch,event; poll event; elapsed (after)");
    // 3b. same; spin flag then poll event
    for (int i = 0; i < reps; i++) {
      box->done = 0;
      auto a = clk::now(); CK(cudaEventRecord(e0, s)); k<<<blocks, threads, 0, s>>>(dbox, scratch, words); CK(cudaEventRecord(e1, s)); auto b = clk::now();
      spin_flag(); auto c = clk::now();
      while (cudaEventQuery(e1) == cudaErrorNotReady) {} auto d = clk::now();
      issue.push_back(us(a, b)); wall.push_back(us(a, c)); after.push_back(us(c, d));
    }
    report("event,launch,event; spin flag; then event done (after)");
    // 4. launch + end event only
    for (int i = 0; i < reps; i++) {
      box->done = 0;
      auto a = clk::now(); k<<<blocks, threads, 0, s>>>(dbox, scratch, words); CK(cudaEventRecord(e1, s)); auto b = clk::now();
      spin_flag(); auto c = clk::now();
      while (cudaEventQuery(e1) == cudaErrorNotReady) {} auto d = clk::now();
      issue.push_back(us(a, b)); wall.push_back(us(a, c)); after.push_back(us(c, d));
    }
    report("launch,event; spin flag; then event done (after)");
    // graphs
    cudaGraphExec_t gs[3] = {g1, g3, g5};
    const char* names[3] = {"graph [kernel]; spin flag; then sync (after)", "graph [ev,kernel,ev]; spin flag; then sync", "graph [copy,ev,kernel,ev,copy]; sync"};
    for (int gi = 0; gi < 3; gi++) {
      for (int i = 0; i < reps; i++) {
        box->done = 0;
        auto a = clk::now(); CK(cudaGraphLaunch(gs[gi], s)); auto b = clk::now();
        if (gi < 2) spin_flag(); auto c = clk::now(); CK(cudaStreamSynchronize(s)); auto d = clk::now();
        issue.push_back(us(a, b)); wall.push_back(gi < 2 ? us(a, c) : us(a, d)); after.push_back(us(c, d));
      }
      report(names[gi]);
    }
    // kernel time by globaltimer vs events
    std::vector<double> gt, ev;
    for (int i = 0; i < reps; i++) {
      box->done = 0;
      CK(cudaEventRecord(e0, s)); k<<<blocks, threads, 0, s>>>(dbox, scratch, words); CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ev.push_back(ms * 1e3); gt.push_back((box->end - box->start) / 1e3);
    }
    printf("kernel time: events %.2f us, globaltimer first-block..last %.2f us\n", median(ev), median(gt));
    // copying stats out of pinned memory
    std::vector<double> cp;
    std::vector<unsigned> keep(8 * 1056);
    for (int i = 0; i < reps; i++) {
      auto a = clk::now(); std::vector<unsigned> v(box->stats, box->stats + 8 * 1056); auto b = clk::now();
      cp.push_back(us(a, b)); keep[i % 100] += v[i % 100];
    }
    printf("copy 33 KB of stats from mapped pinned memory to a fresh Vec: %.2f us\n", median(cp));
  }
  printf("ok\n");
}
