// What stops a kernel that never ends, and what a process can do afterwards.
//
// A task body that spins forever ignores the scheduler's abort flag, which is polled between
// tasks only. This probe launches such a kernel on the driver API and, in the mode given on the
// command line, tries one way out; it prints how long each step took, and whether the device
// still runs a kernel afterwards:
//
//   reset    cuDevicePrimaryCtxReset on the primary context the kernel runs in
//   trap     a one-thread kernel that executes `trap`, on another stream of the same context,
//            then cuDevicePrimaryCtxReset once the context has failed
//   trapfull the same, with the spinning kernel holding every block slot of every SM
//   destroy  cuCtxDestroy of a context made with cuCtxCreate (the kernel runs in it)
//   exit     return from main with the kernel still running (the process's teardown)
//   _exit    _exit(0) with the kernel still running
//
// Build: nvcc -O2 -arch=sm_90 -o stall_probe stall_probe.cu -lcuda
// Run each mode in its own process, under `timeout`: a mode that cannot stop the kernel hangs.
#include <cuda.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

static const char *kPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry spin(.param .u64 flag)
{
    .reg .b64 %a;
    .reg .b32 %v;
    .reg .pred %p;
    ld.param.u64 %a, [flag];
$L:
    ld.volatile.global.u32 %v, [%a];
    setp.eq.u32 %p, %v, 0;
    @%p bra $L;
    ret;
}
.visible .entry stop()
{
    trap;
    ret;
}
.visible .entry bump(.param .u64 out)
{
    .reg .b64 %a;
    .reg .b32 %v;
    ld.param.u64 %a, [out];
    ld.global.u32 %v, [%a];
    add.u32 %v, %v, 1;
    st.global.u32 [%a], %v;
    ret;
}
)";

static double now() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

#define CHECK(call)                                                                       \
    do {                                                                                  \
        CUresult r_ = (call);                                                             \
        if (r_ != CUDA_SUCCESS) {                                                         \
            const char *s_ = nullptr;                                                     \
            cuGetErrorName(r_, &s_);                                                      \
            printf("%s -> %s (%d)\n", #call, s_ ? s_ : "?", (int)r_);                     \
        }                                                                                 \
    } while (0)

// Loads the module, launches `spin` on 132 blocks of 128 threads, and returns the stream.
static CUstream launch_spin(CUmodule *mod, CUdeviceptr *flag, unsigned blocks) {
    CHECK(cuModuleLoadData(mod, kPtx));
    CUfunction spin;
    CHECK(cuModuleGetFunction(&spin, *mod, "spin"));
    CHECK(cuMemAlloc(flag, 4));
    CHECK(cuMemsetD32(*flag, 0, 1));
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    void *args[] = {flag};
    CHECK(cuLaunchKernel(spin, blocks, 1, 1, 128, 1, 1, 0, stream, args, nullptr));
    usleep(500 * 1000);
    printf("after 0.5 s the kernel is %s\n",
           cuStreamQuery(stream) == CUDA_ERROR_NOT_READY ? "still running" : "done (?)");
    return stream;
}

// Runs `bump` once in the current context and says whether it gave 1.
static void still_runs(const char *when) {
    CUmodule mod;
    CUfunction bump;
    CUdeviceptr out;
    double t = now();
    CHECK(cuModuleLoadData(&mod, kPtx));
    CHECK(cuModuleGetFunction(&bump, mod, "bump"));
    CHECK(cuMemAlloc(&out, 4));
    CHECK(cuMemsetD32(out, 0, 1));
    void *args[] = {&out};
    CHECK(cuLaunchKernel(bump, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
    CHECK(cuCtxSynchronize());
    unsigned v = 0;
    CHECK(cuMemcpyDtoH(&v, out, 4));
    printf("%s: a new kernel %s (%.3f s)\n", when, v == 1 ? "ran" : "did NOT run", now() - t);
}

int main(int argc, char **argv) {
    setvbuf(stdout, nullptr, _IONBF, 0);
    const char *mode = argc > 1 ? argv[1] : "reset";
    double t0 = now();
    CHECK(cuInit(0));
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    char name[128];
    CHECK(cuDeviceGetName(name, sizeof name, dev));
    printf("mode %s on %s\n", mode, name);
    CUcontext ctx;
    if (strcmp(mode, "destroy") == 0) {
        CUctxCreateParams params = {};
        CHECK(cuCtxCreate(&ctx, &params, 0, dev));
    } else {
        CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
        CHECK(cuCtxSetCurrent(ctx));
    }
    CUmodule mod;
    CUdeviceptr flag;
    // 132 SMs: one block of 128 threads each, or all 16 block slots of each.
    unsigned blocks = strcmp(mode, "trapfull") == 0 ? 132 * 16 : 132;
    CUstream stream = launch_spin(&mod, &flag, blocks);
    double t = now();
    if (strncmp(mode, "trap", 4) == 0) {
        CUfunction stop;
        CUstream other;
        CHECK(cuModuleGetFunction(&stop, mod, "stop"));
        CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
        CHECK(cuLaunchKernel(stop, 1, 1, 1, 1, 1, 1, 0, other, nullptr, nullptr));
        CUresult r = cuStreamSynchronize(other);
        printf("the trap kernel's stream: %d after %.3f s\n", (int)r, now() - t);
        r = cuStreamSynchronize(stream);
        printf("the spinning kernel's stream: %d after %.3f s\n", (int)r, now() - t);
        t = now();
        CHECK(cuDevicePrimaryCtxReset(dev));
        printf("cuDevicePrimaryCtxReset returned after %.3f s\n", now() - t);
        CUcontext again;
        CHECK(cuDevicePrimaryCtxRetain(&again, dev));
        CHECK(cuCtxSetCurrent(again));
        still_runs("after the trap and the reset");
        CHECK(cuDevicePrimaryCtxRelease(dev));
    } else if (strcmp(mode, "reset") == 0) {
        CHECK(cuDevicePrimaryCtxReset(dev));
        printf("cuDevicePrimaryCtxReset returned after %.3f s\n", now() - t);
        CUcontext again;
        CHECK(cuDevicePrimaryCtxRetain(&again, dev));
        CHECK(cuCtxSetCurrent(again));
        printf("the old stream now answers %d\n", (int)cuStreamQuery(stream));
        still_runs("after the reset");
        CHECK(cuDevicePrimaryCtxRelease(dev));
    } else if (strcmp(mode, "destroy") == 0) {
        CHECK(cuCtxDestroy(ctx));
        printf("cuCtxDestroy returned after %.3f s\n", now() - t);
        CUcontext again;
        CUctxCreateParams params = {};
        CHECK(cuCtxCreate(&again, &params, 0, dev));
        still_runs("in a new context");
        CHECK(cuCtxDestroy(again));
    } else if (strcmp(mode, "_exit") == 0) {
        printf("calling _exit after %.3f s\n", now() - t0);
        fflush(stdout);
        _exit(0);
    } else {
        printf("returning from main after %.3f s\n", now() - t0);
    }
    printf("done after %.3f s\n", now() - t0);
    fflush(stdout);
    return 0;
}
