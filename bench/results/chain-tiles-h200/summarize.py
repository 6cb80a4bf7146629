#!/usr/bin/env python3
"""Per-phase warp-state samples of one tile operation in the probe (r-KERNEL-sass.csv.xz): the
source page of `ncu --section SourceCounters`, whose row i is the kernel's instruction at offset
16·i. Functions come from the probe cubin's symbol table (`cuobjdump -elf r.cubin`, FUNC symbols of
the kernel's section, given as ELF); inside the operation's own function, the offsets are cut at
the first and last block barrier of its step loop (`--loop START END`, hex), so that the loads
before the loop and the stores after it stand apart from the steps.

    summarize.py r-trsm64-sass.csv.xz ELF trsm64 --loop 0xc000 0xe000
"""
import argparse, csv, lzma, re

ap = argparse.ArgumentParser()
ap.add_argument("csv"); ap.add_argument("elf"); ap.add_argument("kernel")
ap.add_argument("--loop", nargs=2, type=lambda s: int(s, 16))
a = ap.parse_args()
rows = list(csv.reader(lzma.open(a.csv, "rt")))
h = rows[1]; ix = {c: i for i, c in enumerate(h)}
data = [r for r in rows[2:] if len(r) == len(h)]
funcs = []
for line in open(a.elf):
    p = line.split()
    if len(p) == 7 and p[3] == "0x2" and p[6].startswith(f"${a.kernel}$"):
        name = re.sub(r"Cs\w{10,14}_|\d+taskweave_device|\d+tile_probe", "", p[6].split("$")[2])
        funcs.append((int(p[1], 16), int(p[2], 16), name))
def owner(off):
    for v, s, n in funcs:
        if v <= off < v + s:
            short = n[:60]
            if a.loop and ("6factor8cholesky" in n or "4trsm5solve" in n):
                return short + (" [loop]" if a.loop[0] <= off < a.loop[1] else " [outside the loop]")
            return short
    return "(kernel)"
reasons = [c for c in h if c.startswith("stall_") and "Not Issued" not in c]
acc = {}
for i, r in enumerate(data):
    x = acc.setdefault(owner(16 * i), [0.0] * (1 + len(reasons)))
    x[0] += float(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
    for j, c in enumerate(reasons):
        x[1 + j] += float(r[ix[c]] or 0)
total = sum(v[0] for v in acc.values())
print(f"{a.csv}: kernel {a.kernel}, {total:.0f} samples")
for n, v in sorted(acc.items(), key=lambda kv: -kv[1][0]):
    if v[0] < 0.01 * total: continue
    top = sorted(((v[1 + j], c[6:]) for j, c in enumerate(reasons)), reverse=True)[:4]
    print(f"{100 * v[0] / total:5.1f}%  {n:75s} " + ", ".join(f"{c} {100 * s / v[0]:.0f}%" for s, c in top if s))
