# Mutations of device/src/tile/panel32.rs, for scripts/mutate.py: each must fail the device
# crate's tile tests (no GPU needed). It needs panel32-v2.patch applied first (`git apply
# bench/results/panel32-v2-h200/panel32-v2.patch`). The mutations aim at what this version changed:
# the rolled block product, the chunked right-hand side and the forward-only rule.
# mutations.txt is the record of the run, made with the runner this file carried then.
P = "device/src/tile/panel32.rs"
MUTATIONS = {
    "block-product-misses-its-last-column": (P, "while k < b0 {", "while k + 1 < b0 {"),
    "block-product-reads-the-next-entry": (
        P,
        "unsafe { x.get_ordered(k, l) }",
        "unsafe { x.get_ordered(k + 1, l) }",
    ),
    "block-product-wrong-triangle-entry": (
        P,
        "t.get_ordered(b0 + q as u32, k) }",
        "t.get_ordered(b0 + q as u32, k + 1) }",
    ),
    "substitute-prefetch-stale-column": (P, "next = column(c + 1);", "next = column(c);"),
    "later-chunks-not-copied-in": (P, "if c0 > 0 {\n", "if c0 > 2 * B32 {\n"),
    "chunk-written-back-at-the-first": (
        P,
        "let (xc, xsc) = chunk(c0);",
        "let (xc, xsc) = chunk(c0); let xc = if c0 > 0 { chunk(0).0 } else { xc };",
    ),
    "backward-solves-taken": (P, "if !forward || !takes(n)", "if !takes(n)"),
    "no-barrier-between-chunks": (
        P,
        "            if c0 < w {\n"
        "                // Every thread's copy out done before the next chunk's copy in overwrites it.\n"
        "                block.sync();\n"
        "            }\n",
        "",
    ),
    "one-warp-lu-skips-column-panel": (
        P,
        "team.warp() == 1.min(team.warps() - 1)",
        "team.warp() == 1",
    ),
    "no-barrier-before-the-update": (
        P,
        "                lines(team, d, inv, col.t(), false, T::ONE);\n"
        "                block.sync();",
        "                lines(team, d, inv, col.t(), false, T::ONE);",
    ),
}
