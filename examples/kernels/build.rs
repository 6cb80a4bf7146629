//! Compiles this crate for the GPU as well (see `taskweave_build`).

fn main() -> Result<(), taskweave_build::Error> {
    let mut builder = taskweave_build::Builder::new(".");
    // The f32 factorizations are throughput-bound at large sizes: their persistent kernels ran up
    // to 1.37x faster at 128 registers (four worker blocks per SM) than at the fitted 255 (two),
    // where the f64 ones ran up to 1.5x slower (bench/results/registers-h100/).
    for region in ["cholesky_f32", "lu_f32"] {
        builder = builder.region_registers(region, 128);
    }
    // The NW tile of `tile_bench`, one block per task, unchecked: 40 registers let twelve blocks
    // of 128 threads share an SM, as many as its shared memory allows, where ptxas alone takes 48
    // (ten); the kernel ran 1.08–1.09x faster
    // (git show b958dab:bench/results/nw-registers-h100/README.md).
    builder = builder.unchecked_registers("nw_odd_tiles", taskweave_build::Entry::Listed, 40);
    // The tile GEMM batch on m16n8k8 with 8-deep chunks (the f64 default before 16-deep chunks,
    // which spill at this cap: bench/results/kc16-h200/): ptxas takes 197 registers for it, two workers of
    // 128 threads per SM, and the fit keeps 255 since at 168 the engine spills 8 bytes. At 168
    // three workers fit and the 64-tile batch ran 1.09–1.14x faster; at 128 four fit, but the
    // engine spills 544 bytes and the batch ran 0.58–0.61x (bench/results/gemm-regions-h200/).
    builder = builder.region_registers("batch_gemm_f64", 168);
    builder.build()
}
