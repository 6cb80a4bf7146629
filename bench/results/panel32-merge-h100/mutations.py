# Mutations of device/src/tile/panel32.rs, for scripts/mutate.py: each must fail the device
# crate's tile tests (no GPU needed).
# mutations.txt is the record of the run, made with the runner this file carried then.
P = "device/src/tile/panel32.rs"
MUTATIONS = {
    "copy-store-ignores-part": (
        P,
        "if i < cells && kept(at) {\n                // SAFETY: inside `dst`",
        "if i < cells {\n                // SAFETY: inside `dst`",
    ),
    "update-skips-diagonal": (P, "if lower && q > r {", "if lower && q >= r {"),
    "update-wrong-row-of-b": (P, "fma(b.get(q, k as u32), acc)", "fma(b.get(r, k as u32), acc)"),
    "staged-rhs-not-copied-back": (P, "copy(team, xs, x, x.trans, Part::All);", ""),
    "solve-prefetch-stale-column": (P, "next = column(s + 1);", "next = column(s);"),
    "middle-update-stale-column": (P, "next = column(k + 1);", "next = column(k);"),
    "one-warp-lu-skips-column-panel": (
        P,
        "team.warp() == 1.min(team.warps() - 1)",
        "team.warp() == 1",
    ),
    "f32-triangles-take-the-32-block-solve": (P, "size_of::<T>() == 8\n}", "true\n}"),
    "no-barrier-before-the-update": (
        P,
        "                lines::<T, true>(team, d, inv, col.t(), false, T::ONE);\n"
        "                block.sync();",
        "                lines::<T, true>(team, d, inv, col.t(), false, T::ONE);",
    ),
}
