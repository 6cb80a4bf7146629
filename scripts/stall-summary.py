#!/usr/bin/env python3
"""Nsight Compute's warp-state samples of one kernel, summed per device function and stall reason.

    ncu --section SourceCounters -k regex:NAME --launch-count 1 -o rep PROGRAM ...
    ncu --import rep.ncu-rep --page source --csv --print-source sass > rep.csv
    cuobjdump -elf taskweave-kernels.cubin > elf.txt          # the cubin the program embeds
    scripts/stall-summary.py rep.csv elf.txt [--top 12]     # rep.csv.xz as well
    scripts/stall-summary.py rep.csv elf.txt --loop tile::trsm::solve 0xbb00 0xe000

A region kernel carries its own copy of every function it calls, laid out in its `.text`
section; the source page lists that section's instructions in order from the kernel's start, so
row `i` is offset `16·i`, and the ELF symbols of the section (value, size) say which function
each offset belongs to. Names are demangled with `c++filt`, which reads Rust v0 symbols.

For each function with samples: its share of all samples, its size in instructions, and the
reasons its warps were stalled (`stall_*` columns of the not-issued samples, in % of its own),
with `no_inst` the share waiting for instructions to be fetched. With `--function NAME`, the
most sampled instructions of one function instead: samples, offset in the function, times a warp
executed it, its most common stall, and the SASS. With `--loop NAME START END`, a function's
samples in two parts: inside a range of kernel offsets (its step loop, say) and outside it.
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


def symbols(elf_text):
    """(value, size, section, name) of every function symbol in a `cuobjdump -elf` listing. The
    symbol table comes in two forms: with `FUNC` in the info column, or (newer cuobjdump) with
    numbers throughout, `info` then holding the binding and the type (`0x2`: a function)."""
    for line in elf_text.splitlines():
        parts = line.split()
        if len(parts) < 7:
            continue
        info = parts[3]
        if info == "FUNC" or (info.startswith("0x") and int(info, 16) & 0xF == 2):
            try:
                yield int(parts[1], 16), int(parts[2], 16), parts[-2], parts[-1]
            except ValueError:
                continue


def functions(elf_text, kernel):
    """(offset, size, name) of every function in `kernel`'s .text section, from `cuobjdump -elf`."""
    table = list(symbols(elf_text))
    section = next((sec for _, _, sec, name in table if name == kernel), None)
    if section is None:
        sys.exit(f"stall-summary: no function {kernel} in the ELF listing")
    return sorted((value, size, name) for value, size, sec, name in table
                  if sec == section and name != kernel)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("elf")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--function", help="list the instructions of the first function whose short "
                    "name starts with this, most sampled first (--top of them)")
    ap.add_argument("--loop", nargs=3, metavar=("NAME", "START", "END"),
                    help="split the samples of the function NAME (its short name, generic arguments "
                    "aside) into those at kernel offsets START to END (hex; e.g. a step loop's first and "
                    "last barrier) and those outside")
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
    names = readable([name for _, _, name in funcs])
    names["(kernel)"] = "(the kernel: the scheduler loop)"
    if args.loop:
        prefix, start, end = args.loop[0], int(args.loop[1], 16), int(args.loop[2], 16)
        split = {n for n in names if names[n] == prefix or names[n].startswith(prefix + "::<")}
        if not split:
            sys.exit(f"stall-summary: no function {prefix}")
        for n in split:
            names[n + " [loop]"] = names[n] + " [loop]"
            names[n + " [outside]"] = names[n] + " [outside the loop]"
    total = 0
    for i, row in enumerate(data):
        samples = float(row[col["Warp Stall Sampling (All Samples)"]] or 0)
        if samples == 0:
            continue
        name = owner(16 * i)
        if args.loop and name in split:
            name += " [loop]" if start <= 16 * i < end else " [outside]"
        entry = by_func.setdefault(name, {"samples": 0.0, **{r: 0.0 for r in reasons}})
        entry["samples"] += samples
        for r in reasons:
            entry[r] += float(row[col[r]] or 0)
        total += samples
    sizes = {name: size // 16 for _, size, name in funcs}
    sizes["(kernel)"] = len(data) - sum(sizes.values())
    if args.loop:
        for value, size, name in funcs:
            if name in split:
                inside = max(0, min(value + size, end) - max(value, start)) // 16
                sizes[name + " [loop]"] = inside
                sizes[name + " [outside]"] = size // 16 - inside
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
