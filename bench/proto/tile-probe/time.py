# Times one 64-tile's POTRF, GETRF and TRSM (f64) of two builds of the tile library inside a kernel
# (%globaltimer and %clock64 around the call, thread 0), one block, median of 50 launches after 10.
# Usage, from the repository root on the GPU machine: python3 bench/proto/tile-probe/time.py NAME...
# with each build's cubin at .gpu/probe/NAME.cubin (README.md). A build whose name starts with
# "trace" was built with --cfg p32_trace, and its 32-block path's phase cycles are printed too.
import sys, numpy as np, cupy as cp
n = 64
rng = np.random.default_rng(1)
B = rng.standard_normal((n, n)); A = B @ B.T / n + np.eye(n)
M = rng.standard_normal((n, n)) + np.eye(n) * (n / 4 + 1)
L = np.linalg.cholesky(A)
X0 = rng.standard_normal((n, n))
def potrf_prep(): return cp.asarray(np.vstack([A, A, A, A]))
def potrf_check(d):
    l = np.tril(cp.asnumpy(d)[:n]); return np.abs(l @ l.T - A).max() / np.abs(A).max()
def getrf_prep(): return cp.asarray(np.vstack([M, M, M, M]))
def getrf_check(d):
    f = cp.asnumpy(d)[:n]; l = np.tril(f, -1) + np.eye(n); u = np.triu(f)
    return np.abs(l @ u - M).max() / np.abs(M).max()
def trsm_prep(): return cp.asarray(np.vstack([L, X0, L, X0]))
def trsm_check(d):
    x = cp.asnumpy(d)[n:2*n]; return np.abs(x @ L.T + X0).max() / np.abs(X0).max()
ops = {"potrf64": (potrf_prep, potrf_check), "getrf64": (getrf_prep, getrf_check), "trsm64": (trsm_prep, trsm_check)}
builds = sys.argv[1:]
mods = {b: cp.RawModule(path=f".gpu/probe/{b}.cubin") for b in builds}
# Keep the clocks up.
x = cp.random.random((4096, 4096))
for _ in range(50): x = x @ x; x /= cp.abs(x).max()
cp.cuda.Device().synchronize()
print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
for threads in (128, 256):
    for op, (prep, check) in ops.items():
        for rnd in (1, 2):
            for b in builds:
                k = mods[b].get_function(op)
                k.max_dynamic_shared_size_bytes = 73728
                out = cp.zeros(4, dtype=cp.uint64)
                ts, cs, ts2, cs2 = [], [], [], []
                for r in range(60):
                    d = prep()
                    k((1,), (threads,), (d, np.uint64(d.size), np.uint64(n), out), shared_mem=73728)
                    cp.cuda.Device().synchronize()
                    o = out.get(); ts.append(int(o[0])); cs.append(int(o[1])); ts2.append(int(o[2])); cs2.append(int(o[3]))
                err = check(d)
                extra = ""
                if b.startswith("trace"):
                    tr = cp.ndarray((16,), dtype=cp.uint64, memptr=mods[b].get_global("P32_TRACE")).get().astype(np.int64)
                    if op == "trsm64":
                        extra = " phases: copy %d recip %d lines %d" % (tr[1]-tr[0], tr[2]-tr[1], tr[3]-tr[2])
                    else:
                        extra = " phases: copy-in %d chol0 %d lines %d update %d chol1 %d copy-out %d" % (tuple(tr[i+1]-tr[i] for i in range(8, 13)) + (tr[15]-tr[13],))
                print(f"{op} threads {threads} round {rnd} {b:5}: {np.median(ts[10:])/1e3:7.2f} us {np.median(cs[10:]):8.0f} cycles  rel. error {err:.1e}; again in the launch {np.median(ts2[10:])/1e3:7.2f} us {np.median(cs2[10:]):8.0f} cycles{extra}", flush=True)
