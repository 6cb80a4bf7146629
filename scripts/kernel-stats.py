#!/usr/bin/env python3
"""Registers, stack and spills of chosen kernels, and the SASS of an inner loop, without a GPU.

    scripts/kernel-stats.py KERNEL...                  the PTX the host binaries embed
    scripts/kernel-stats.py --ptx FILE KERNEL...       another PTX (e.g. one staged for an A/B)
    scripts/kernel-stats.py --loop VIADDMNMX KERNEL... also the innermost loop whose SASS matches
                                                       the regular expression (VIADDMNMX: the NW
                                                       cell), with its local-memory accesses
    scripts/kernel-stats.py --maxnreg 40 KERNEL...     as if the kernels were capped at 40

Only the named entries are assembled (ptxas -arch=sm_90 -v), which takes a second where the
whole module takes ten. ptxas comes from .venv (scripts/setup.sh) or PATH; the loop needs
cuobjdump too (on PATH with CUDA, or `pip install nvidia-cuda-cuobjdump` into .venv).
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tool(name):
    found = glob.glob(os.path.join(ROOT, ".venv/lib/python3*/site-packages/nvidia/cu13/bin", name))
    return found[0] if found else shutil.which(name)


def embedded_ptx():
    found = glob.glob(os.path.join(ROOT, "target/*/build/taskweave-kernels-*/out/taskweave-kernels.ptx"))
    found += glob.glob(os.path.join(ROOT, "target/*/build/taskweave-kernels/*/out/taskweave-kernels.ptx"))
    if not found:
        sys.exit("kernel-stats: no PTX found; build first (cargo build --release)")
    return max(found, key=os.path.getmtime)


def keep_entries(ptx, names, maxnreg):
    """The module with only the named entries (the functions they call stay)."""
    out, skipping, depth, seen = [], False, 0, False
    for line in ptx.split("\n"):
        t = line.lstrip()
        if not skipping and (t.startswith(".visible .entry ") or t.startswith(".entry ")):
            name = t.split(".entry ", 1)[1].split("(")[0].strip()
            skipping, depth, seen = name not in names, 0, False
        if skipping:
            code = line.split("//")[0]
            depth += code.count("{") - code.count("}")
            seen |= "{" in code
            if seen and depth == 0:
                skipping = False
            continue
        if maxnreg and t.startswith(".maxnreg"):
            line = f".maxnreg {maxnreg}"
        out.append(line)
    return "\n".join(out)


def ptxas_stats(text):
    rows, cur, prop = {}, None, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = m.group(1)
            rows[cur] = {}
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            prop = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur and prop == cur:
            rows[cur].update(stack=m.group(1), spill_st=m.group(2), spill_ld=m.group(3))
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            rows[cur]["regs"] = m.group(1)
    return rows


def sass_lines(cuobjdump, cubin, kernel):
    out = subprocess.run([cuobjdump, "-sass", "-fun", kernel, cubin], capture_output=True, text=True, check=True).stdout
    return [(int(m.group(1), 16), m.group(2).strip())
            for m in (re.match(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?);", l) for l in out.splitlines()) if m]


def innermost_loop(lines, pattern):
    """The smallest backward-branch range whose instructions match `pattern`."""
    best = None
    for at, ins in lines:
        m = re.search(r"BRA (?:`\(\.L_x_\d+\) )?0x([0-9a-f]+)", ins)
        if m and int(m.group(1), 16) < at:
            body = [(a, i) for a, i in lines if int(m.group(1), 16) <= a <= at]
            if any(re.search(pattern, i) for _, i in body) and (best is None or len(body) < len(best)):
                best = body
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="+")
    ap.add_argument("--ptx")
    ap.add_argument("--loop", help="regular expression an instruction of the loop matches")
    ap.add_argument("--maxnreg", type=int)
    ap.add_argument("--list", action="store_true", help="print the loop's instructions")
    args = ap.parse_args()
    ptxas = tool("ptxas")
    if not ptxas:
        sys.exit("kernel-stats: ptxas not found (scripts/setup.sh installs it into .venv)")
    path = args.ptx or embedded_ptx()
    with open(path) as f:
        ptx = keep_entries(f.read(), set(args.kernels), args.maxnreg)
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        run = subprocess.run([ptxas, "-arch=sm_90", "-v", src, "-o", cubin], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(run.stderr)
        stats = ptxas_stats(run.stderr + run.stdout)
        cuobjdump = tool("cuobjdump") if args.loop else None
        if args.loop and not cuobjdump:
            print("kernel-stats: cuobjdump not found, no loop counts", file=sys.stderr)
        print(f"# {os.path.relpath(path, ROOT)}" + (f", capped at {args.maxnreg}" if args.maxnreg else ""))
        for name in args.kernels:
            s = stats.get(name)
            if s is None:
                print(f"{name}: not in the PTX")
                continue
            line = f"{name:50s} {s.get('regs', '?'):>4} registers  stack {s.get('stack', '?'):>4} B  spills {s.get('spill_st', '?')}/{s.get('spill_ld', '?')} B"
            if cuobjdump:
                loop = innermost_loop(sass_lines(cuobjdump, cubin, name), args.loop)
                if loop:
                    local = sum(1 for _, i in loop if re.match(r"(@!?U?P\d+ )?(LDL|STL)", i))
                    line += f"  loop: {len(loop)} instructions, {local} local-memory"
                else:
                    line += "  loop: none matches"
                print(line)
                if loop and args.list:
                    for at, ins in loop:
                        print(f"    {at:05x}  {ins}")
            else:
                print(line)


if __name__ == "__main__":
    main()
