#!/usr/bin/env python3
"""Nsight Compute's warp-state samples of one kernel, summed per device function and stall reason.

    ncu --section SourceCounters -k regex:NAME --launch-count 1 -o rep PROGRAM ...
    ncu --import rep.ncu-rep --page source --csv --print-source sass > rep.csv
    cuobjdump -elf taskweave-kernels.cubin > elf.txt          # the cubin the program embeds
    scripts/stall-summary.py rep.csv elf.txt [--top 12]     # rep.csv.xz as well

A region kernel carries its own copy of every function it calls, laid out in its `.text`
section; the source page lists that section's instructions in order from the kernel's start, so
row `i` is offset `16·i`, and the ELF symbols of the section (value, size) say which function
each offset belongs to. Names are demangled with `c++filt`, which reads Rust v0 symbols.

For each function with samples: its share of all samples, its size in instructions, and the
reasons its warps were stalled (`stall_*` columns of the not-issued samples, in % of its own),
with `no_inst` the share waiting for instructions to be fetched. With `--function NAME`, the
most sampled instructions of one function instead: samples, offset in the function, times a warp
executed it, its most common stall, and the SASS.
"""
import argparse
import csv
import lzma
import re
import subprocess
import sys


def readable(symbols):
    """Short names of the section's symbols (`$KERNEL$_R...`): demangled by `c++filt`, which reads
    Rust v0 symbols, without crate hashes and with generic arguments shortened to `<..>` unless
    they are one plain type (`<f64>`)."""
    mangled = [s.rsplit("$", 1)[1] if s.count("$") >= 2 else s for s in symbols]
    try:
        out = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True,
                             text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        out = mangled
    names = {}
    for symbol, name in zip(symbols, out):
        name = re.sub(r"\[[0-9a-f]+\]", "", name)
        name = re.sub(r"\b(taskweave_device|taskweave_kernels|core)::", "", name)
        depth, short, kept = 0, [], ""
        for ch in name:
            if ch == "<":
                depth += 1
                if depth == 1:
                    kept = ""
                    continue
            elif ch == ">":
                depth -= 1
                if depth == 0:
                    short.append("<" + (kept if re.fullmatch(r"\w+", kept) else "..") + ">")
                    continue
            if depth == 0:
                short.append(ch)
            else:
                kept += ch
        names[symbol] = "".join(short)
    return names


def functions(elf_text, kernel):
    """(offset, size, name) of every function in `kernel`'s .text section, from `cuobjdump -elf`."""
    section = None
    rows = []
    for line in elf_text.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] == "FUNC" and parts[-1] == kernel:
            section = parts[-2]
    if section is None:
        sys.exit(f"stall-summary: no function {kernel} in the ELF listing")
    for line in elf_text.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] == "FUNC" and parts[-2] == section and parts[-1] != kernel:
            rows.append((int(parts[1], 16), int(parts[2], 16), parts[-1]))
    return sorted(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("elf")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--function", help="list the instructions of the first function whose short "
                    "name starts with this, most sampled first (--top of them)")
    args = ap.parse_args()
    opener = lzma.open if args.csv.endswith(".xz") else open
    with opener(args.csv, "rt") as f:
        rows = list(csv.reader(f))
    kernel = rows[0][1]
    header = rows[1]
    data = rows[2:]
    col = {name: i for i, name in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and h.endswith("(Not Issued)")]
    with open(args.elf) as f:
        funcs = functions(f.read(), kernel)
    by_func = {}
    def owner(offset):
        for start, size, name in funcs:
            if start <= offset < start + size:
                return name
        return "(kernel)"
    total = 0
    for i, row in enumerate(data):
        samples = float(row[col["Warp Stall Sampling (All Samples)"]] or 0)
        if samples == 0:
            continue
        name = owner(16 * i)
        entry = by_func.setdefault(name, {"samples": 0.0, **{r: 0.0 for r in reasons}})
        entry["samples"] += samples
        for r in reasons:
            entry[r] += float(row[col[r]] or 0)
        total += samples
    sizes = {name: size // 16 for _, size, name in funcs}
    sizes["(kernel)"] = len(data) - sum(sizes.values())
    names = readable([name for _, _, name in funcs])
    names["(kernel)"] = "(the kernel: the scheduler loop)"
    if args.function:
        found = [(start, size, n) for start, size, n in funcs if names[n].startswith(args.function)]
        if not found:
            sys.exit(f"stall-summary: no function starts with {args.function}")
        start, size, name = found[0]
        print(f"{args.csv}: {names[name]}, {size // 16} instructions from offset {start:#x}")
        print("samples  offset  executed  most  SASS")
        rows_here = []
        for i in range(start // 16, (start + size) // 16):
            row = data[i]
            samples = float(row[col["Warp Stall Sampling (All Samples)"]] or 0)
            why = max(reasons, key=lambda r: float(row[col[r]] or 0))[6:-13]
            rows_here.append((samples, 16 * i - start, row[col["Instructions Executed"]], why, row[1].strip()))
        for samples, offset, executed, why, sass in sorted(rows_here, reverse=True)[: args.top]:
            print(f"{samples:7.0f} {offset:#7x} {executed:>9} {why:9s} {sass}")
        return
    print(f"{args.csv}: kernel {kernel}, {len(data)} instructions, {total:.0f} samples")
    for name, entry in sorted(by_func.items(), key=lambda kv: -kv[1]["samples"])[: args.top]:
        not_issued = sum(entry[r] for r in reasons) or 1.0
        top = sorted(reasons, key=lambda r: -entry[r])[:5]
        why = ", ".join(f"{r[6:-13]} {100 * entry[r] / not_issued:.0f}%" for r in top)
        print(f"  {100 * entry['samples'] / total:5.1f}%  {sizes.get(name, 0):6d} inst  "
              f"{names.get(name, name)[:64]:64s}  {why}")


if __name__ == "__main__":
    main()
