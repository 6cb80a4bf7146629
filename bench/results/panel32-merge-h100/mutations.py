#!/usr/bin/env python3
"""Breaks device/src/tile/panel32.rs one way at a time and runs the device crate's tile tests,
which must fail each time (no GPU needed). Run from the repository root on a clean tree; the file
is restored after each mutation, and at the end."""
import subprocess

PATH = "device/src/tile/panel32.rs"
MUTATIONS = {
    "copy-store-ignores-part": (
        "if i < cells && kept(at) {\n                // SAFETY: inside `dst`",
        "if i < cells {\n                // SAFETY: inside `dst`",
    ),
    "update-skips-diagonal": ("if lower && q > r {", "if lower && q >= r {"),
    "update-wrong-row-of-b": ("fma(b.get(q, k as u32), acc)", "fma(b.get(r, k as u32), acc)"),
    "staged-rhs-not-copied-back": ("copy(team, xs, x, x.trans, Part::All);", ""),
    "solve-prefetch-stale-column": ("next = column(s + 1);", "next = column(s);"),
    "middle-update-stale-column": ("next = column(k + 1);", "next = column(k);"),
    "one-warp-lu-skips-column-panel": (
        "team.warp() == 1.min(team.warps() - 1)",
        "team.warp() == 1",
    ),
    "f32-triangles-take-the-32-block-solve": ("size_of::<T>() == 8\n}", "true\n}"),
    "no-barrier-before-the-update": (
        "                lines::<T, true>(team, d, inv, col.t(), false, T::ONE);\n"
        "                block.sync();",
        "                lines::<T, true>(team, d, inv, col.t(), false, T::ONE);",
    ),
}
TEST = "cargo test -q -p taskweave-device --lib tile:: 2>&1 | grep -E '^test result|panicked' | head -3"


def run():
    out = subprocess.run(TEST, shell=True, capture_output=True, text=True).stdout.strip()
    return out.replace("\n", " | ")


original = open(PATH).read()
try:
    for name, (before, after) in MUTATIONS.items():
        assert original.count(before) == 1, name
        open(PATH, "w").write(original.replace(before, after))
        out = run()
        caught = "FAILED" in out or "panicked" in out
        print(f"{name}: {'CAUGHT' if caught else 'MISSED'}: {out[:300]}", flush=True)
finally:
    open(PATH, "w").write(original)
print("unmutated:", run())
