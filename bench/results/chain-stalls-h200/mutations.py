# Mutations of the batched tile copies (Team::copy_cells and its two callers), for
# scripts/mutate.py: each must fail the device crate's tile tests. (Staging the triangle without
# its diagonal is no mutation: the solve reads the reciprocals it computes from `t` itself.)
L = "device/src/tile/lanes.rs"
R = "device/src/tile/regs.rs"
S = "device/src/tile/staged.rs"
MUTATIONS = {
    "step-loses-its-carry": (L, "if c >= cols { (r + 1, c - cols) } else { (r, c) }", "(r, c)"),
    "stores-the-placeholder": (L, "store(r, c, v);", "store(r, c, none);"),
    "batch-starts-one-cell-late": (L, "let i = first + lane;\n", "let i = first + lane + 1;\n"),
    "other-triangle-staged": (R, "if (forward && k >= q) || (!forward && k <= q) {\n                // SAFETY: inside `t`", "if (forward && k <= q) || (!forward && k >= q) {\n                // SAFETY: inside `t`"),
    "triangle-stored-transposed": (R, "let (k, q) = place(o, i);\n            let (h, kk)", "let (q, k) = place(o, i);\n            let (h, kk)"),
    "staged-copy-drops-alpha": (S, "if alpha == T::ONE { v } else { alpha * v } };", "v };"),
    "staged-copy-ignores-the-part": (S, "            if kept((r, c)) {\n                // SAFETY: inside `dst`", "            if true {\n                // SAFETY: inside `dst`"),
}
