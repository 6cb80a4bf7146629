# Times one 64-tile's POTRF, GETRF, the factorizations' three TRSMs and their GEMM update (f64 and f32) of two builds of the
# tile library inside a kernel (%globaltimer and %clock64 around the call, thread 0), one block, median of 50 launches after 10.
# Usage, from the repository root on the GPU machine: python3 bench/proto/tile-probe/time.py [--flush] [--load] NAME...
# with each build's cubin at .gpu/probe/NAME.cubin (README.md). A build whose name starts with
# "trace" was built with --cfg p32_trace from the source in
# `git show b958dab:bench/results/panel32-shared-h100/panel32-shared.patch`, and its 32-block
# path's phase cycles are printed too. A build with a `SOLVE_TRACE` global (eight u64 clock
# stamps of the register solve, written by thread 0) prints that solve's phases, in cycles. Both calls' results are checked against NumPy; the script
# exits 1 when any error is above BOUND, so that a wrong build cannot pass for a fast one.
import sys, numpy as np, cupy as cp
n = 64
# About 64·eps·‖A‖ scaled by a margin: the builds measured here give 1e-16 to 1e-15 in f64 and
# 1e-7 to 1e-6 in f32.
BOUND = {np.float64: 1e-12, np.float32: 1e-4}
# The kernels' second call works on the tile 128 rows down (src/lib.rs).
TILES = (0, 128)
rng = np.random.default_rng(1)
B = rng.standard_normal((n, n)); A = B @ B.T / n + np.eye(n)
M = rng.standard_normal((n, n)) + np.eye(n) * (n / 4 + 1)
L = np.linalg.cholesky(A)
# LU's triangles: a unit lower one with small entries (a random one's inverse grows exponentially)
# and the upper one of M.
Lu = np.tril(rng.standard_normal((n, n)) / n, -1) + np.eye(n)
U = np.triu(M)
X0 = rng.standard_normal((n, n))
def rel(x, ref): return np.abs(x - ref).max() / np.abs(ref).max()
def tiles(d, rows=n):
    h = cp.asnumpy(d).astype(np.float64); return [h[t:t+rows] for t in TILES]
def potrf_check(d, a):
    def one(f):
        # The upper triangle is not the factor's: it must be left as it was.
        if not np.array_equal(np.triu(f, 1), np.triu(a, 1)): return np.inf
        l = np.tril(f); return rel(l @ l.T, a)
    return max(one(f) for f in tiles(d))
def getrf_check(d, a):
    def one(f): return rel((np.tril(f, -1) + np.eye(n)) @ np.triu(f), a)
    return max(one(f) for f in tiles(d))
def solve_check(d, t, x0, residual):
    return max(rel(residual(f[n:], t), x0) for f in tiles(d, 2 * n))
def gemm_check(d, b):
    f = cp.asnumpy(d).astype(np.float64)
    return max(rel(f[0:n], b[0] - b[1] @ b[2].T), rel(f[2*n:3*n], b[2] - b[3] @ b[4].T))
# name: (dtype, the input's 64-row blocks, the check of the result)
ops = {}
for dt, bits in ((np.float64, 64), (np.float32, 32)):
    a, m = A.astype(dt).astype(np.float64), M.astype(dt).astype(np.float64)
    l, lu, u, x0 = (v.astype(dt).astype(np.float64) for v in (L, Lu, U, X0))
    ops[f"potrf{bits}"] = (dt, [a, a, a, a], lambda d, a=a: potrf_check(d, a))
    ops[f"getrf{bits}"] = (dt, [m, m, m, m], lambda d, m=m: getrf_check(d, m))
    # X := -X·L^-T, so X·L^T = -X0.
    ops[f"trsm{bits}"] = (dt, [l, x0, l, x0],
        lambda d, l=l, x0=x0: solve_check(d, l, -x0, lambda x, t: x @ t.T))
    # X := Lu^-1·X (Lu's diagonal is not read: store M's there), so Lu·X = X0.
    ops[f"trsm_row{bits}"] = (dt, [np.tril(lu, -1) + np.triu(m), x0] * 2,
        lambda d, lu=lu, x0=x0: solve_check(d, lu, x0, lambda x, t: t @ x))
    # X := X·U^-1, so X·U = X0 (U's lower part holds Lu's, not read).
    ops[f"trsm_col{bits}"] = (dt, [u + np.tril(lu, -1), x0] * 2,
        lambda d, u=u, x0=x0: solve_check(d, u, x0, lambda x, t: x @ t))
    # C := C - A·B^T with C at the call's tile, A and B the two below it: the second call's C is
    # the first call's B, read before it is written.
    ops[f"gemm{bits}"] = (dt, [x0, m, a, l, u],
        lambda d, x0=x0, m=m, a=a, l=l, u=u: gemm_check(d, [x0, m, a, l, u]))
# --flush: before each launch, write a buffer eight times the L2 cache's size, so that the tile
# code's instructions come from memory as they may inside a factorization that streams its matrix
# through L2 (without it, the first call of a launch finds its code in L2 from the launch before).
flush = "--flush" in sys.argv
# --load: before each launch, start a copy of 512 MiB on a low-priority stream and launch the tile on
# a high-priority one, so that it runs beside the copy's blocks with the memory system busy, as a
# chain task inside a factorization does (the copy moves 1 GiB, about 250 us; the tile takes 15-50).
load = "--load" in sys.argv
builds = [b for b in sys.argv[1:] if b not in ("--flush", "--load")]
scrub = cp.empty(8 * cp.cuda.runtime.getDeviceProperties(0)["l2CacheSize"] // 8, dtype=cp.float64) if flush else None
if load:
    # CUDA's range is [-5, 0] on these GPUs (lower is higher); a value outside it is clamped.
    least, greatest = 0, -5
    copy_stream = cp.cuda.Stream(non_blocking=True, priority=least)
    tile_stream = cp.cuda.Stream(non_blocking=True, priority=greatest)
    la, lb = cp.ones(1 << 26), cp.empty(1 << 26)
mods = {b: cp.RawModule(path=f".gpu/probe/{b}.cubin") for b in builds}
# Keep the clocks up.
x = cp.random.random((4096, 4096))
for _ in range(50): x = x @ x; x /= cp.abs(x).max()
cp.cuda.Device().synchronize()
print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
failed = []
for threads in (128, 256):
    for op, (dt, blocks, check) in ops.items():
        for rnd in (1, 2):
            for b in builds:
                try:
                    k = mods[b].get_function(op)
                except Exception:
                    continue  # a build from before this kernel was added
                k.max_dynamic_shared_size_bytes = 73728
                out = cp.zeros(4, dtype=cp.uint64)
                ts, cs, ts2, cs2 = [], [], [], []
                host = np.vstack(blocks).astype(dt)
                for r in range(60):
                    d = cp.asarray(host)
                    if flush: scrub.fill(r)
                    if load:
                        cp.cuda.Device().synchronize()
                        with copy_stream: cp.copyto(lb, la)
                        k((1,), (threads,), (d, np.uint64(d.size), np.uint64(n), out), shared_mem=73728, stream=tile_stream)
                    else:
                        k((1,), (threads,), (d, np.uint64(d.size), np.uint64(n), out), shared_mem=73728)
                    cp.cuda.Device().synchronize()
                    o = out.get(); ts.append(int(o[0])); cs.append(int(o[1])); ts2.append(int(o[2])); cs2.append(int(o[3]))
                err = check(d)
                if not err <= BOUND[dt]:
                    failed.append(f"{op} threads {threads} {b}: rel. error {err:.1e}")
                extra = ""
                if b.startswith("trace"):
                    tr = cp.ndarray((16,), dtype=cp.uint64, memptr=mods[b].get_global("P32_TRACE")).get().astype(np.int64)
                    if op == "trsm64":
                        extra = " phases: copy %d recip %d lines %d" % (tr[1]-tr[0], tr[2]-tr[1], tr[3]-tr[2])
                    else:
                        extra = " phases: copy-in %d chol0 %d lines %d update %d chol1 %d copy-out %d" % (tuple(tr[i+1]-tr[i] for i in range(8, 13)) + (tr[15]-tr[13],))
                try:
                    st = cp.ndarray((8,), dtype=cp.uint64, memptr=mods[b].get_global("SOLVE_TRACE")).get().astype(np.int64)
                    if st[4] > st[0]:
                        extra += " solve phases: stage %d first-group %d other-groups %d store %d" % tuple(st[i+1]-st[i] for i in range(4))
                    mods[b].get_global("SOLVE_TRACE").memset(0, 64)
                except Exception:
                    pass
                print(f"{op} threads {threads} round {rnd} {b:5}: {np.median(ts[10:])/1e3:7.2f} us {np.median(cs[10:]):8.0f} cycles  rel. error {err:.1e}; again in the launch {np.median(ts2[10:])/1e3:7.2f} us {np.median(cs2[10:]):8.0f} cycles{extra}", flush=True)
if failed:
    print("FAILED (error above the bound):", *failed, sep="\n  ")
    sys.exit(1)
print("all results within the bound of NumPy's")
