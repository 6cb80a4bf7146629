#!/usr/bin/env python3
"""Breaks device/src/tile/panel32.rs one way at a time and runs the device crate's tile tests,
which must fail each time (no GPU needed). Run from the repository root on a clean tree; the file
is restored after each mutation, and at the end. It needs panel32-v2.patch applied first (`git apply
bench/results/panel32-v2-h200/panel32-v2.patch`). The mutations aim at what this version changed:
the rolled block product, the chunked right-hand side and the forward-only rule."""
import subprocess

PATH = "device/src/tile/panel32.rs"
MUTATIONS = {
    "block-product-misses-its-last-column": ("while k < b0 {", "while k + 1 < b0 {"),
    "block-product-reads-the-next-entry": (
        "unsafe { x.get_ordered(k, l) }",
        "unsafe { x.get_ordered(k + 1, l) }",
    ),
    "block-product-wrong-triangle-entry": (
        "t.get_ordered(b0 + q as u32, k) }",
        "t.get_ordered(b0 + q as u32, k + 1) }",
    ),
    "substitute-prefetch-stale-column": ("next = column(c + 1);", "next = column(c);"),
    "later-chunks-not-copied-in": ("if c0 > 0 {\n", "if c0 > 2 * B32 {\n"),
    "chunk-written-back-at-the-first": (
        "let (xc, xsc) = chunk(c0);",
        "let (xc, xsc) = chunk(c0); let xc = if c0 > 0 { chunk(0).0 } else { xc };",
    ),
    "backward-solves-taken": ("if !forward || !takes(n)", "if !takes(n)"),
    "no-barrier-between-chunks": (
        "            if c0 < w {\n"
        "                // Every thread's copy out done before the next chunk's copy in overwrites it.\n"
        "                block.sync();\n"
        "            }\n",
        "",
    ),
    "one-warp-lu-skips-column-panel": (
        "team.warp() == 1.min(team.warps() - 1)",
        "team.warp() == 1",
    ),
    "no-barrier-before-the-update": (
        "                lines(team, d, inv, col.t(), false, T::ONE);\n"
        "                block.sync();",
        "                lines(team, d, inv, col.t(), false, T::ONE);",
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
