//! Times one NW tile through taskweave, to compare with the same tile in CUDA C
//! (`bench/cuda/nw_tile.cu`).
//!
//! Both run the tiles `(i, j)` with `i` and `j` odd of an `nb × nb`-tile Needleman-Wunsch matrix:
//! those read only tiles with an even coordinate, so they are `(nb / 2)²` independent tasks, one
//! level of the DAG. The matrix and edge columns start out as the sequential reference, so every
//! tile recomputes known values and the output is checked. The figure is the region's execution
//! time (the kernel, without inspection and copies) per tile, the median over `--reps` runs after
//! one warm-up. `--backend barrier` launches the level as one grid, as the CUDA program does;
//! `--backend persistent` goes through the in-GPU scheduler.
//!
//! By default every run takes the host arrays, so it copies them up and back around the kernel.
//! `--resident` keeps them on the GPU between runs, as the CUDA program does, and checks what it
//! downloads after the last. The difference is not only the copies: on the H100 the first launch
//! after a copy took the host 20–25 µs, against 3–5 µs for a launch after a launch, and the GPU
//! waits that long inside the timed span
//! (git show b958dab:bench/results/nw-registers-h100/README.md).

use clap::Parser;
use taskweave_examples::RunArgs;
use taskweave_examples::bench::median;
use taskweave_examples::calls::Calls;
use taskweave_kernels::dp;
use taskweave_kernels::grid::host::to_tile_major;
use taskweave_kernels::nw;

#[derive(Parser, Debug)]
#[command(about = "Times independent NW tiles through taskweave (compare bench/cuda/nw_tile.cu)")]
struct Cli {
    /// Tiles per side of the matrix (even); the region runs (nb / 2)² tiles.
    #[arg(long, default_value_t = 128)]
    nb: usize,
    /// Tile side in cells (at most 64).
    #[arg(long, default_value_t = 32)]
    tile: usize,
    /// Timed repetitions, after one warm-up.
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Keep the arrays on the GPU between runs (nothing copied), as the CUDA C program does.
    #[arg(long)]
    resident: bool,
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let (nb, bs) = (cli.nb, cli.tile);
    if nb < 2 || nb % 2 == 1 || bs == 0 || bs > dp::MAX_TILE {
        return Err("--nb must be even and at least 2, --tile in 1..=64".into());
    }
    let runtime = cli.run.runtime()?;
    println!("{}", runtime.describe());
    let n = nb * bs;
    let x = dp::host::dna(n, 1);
    let y = dp::host::mutate(&x, 8, 2);
    let reference = to_tile_major(&nw::reference::nw(&x, &y), nb, bs, 1);
    let mut m = reference.clone();
    let mut cols = dp::host::edges(&reference, nb, bs);
    let tiles = (nb / 2) * (nb / 2);
    println!("{tiles} independent {bs}x{bs} NW tiles of a {n}x{n} matrix");
    let mut ns_per_tile = Vec::with_capacity(cli.reps);
    let mut calls = Calls::default();
    // The odd tiles start unknown, and every run computes them from the even ones: on host
    // arrays they are cleared before each run, so the check covers the last; resident, only before
    // the first (clearing them would be a copy), and each later run writes the same values again.
    let clear = |m: &mut [i32], cols: &mut [i32]| {
        m.iter_mut()
            .enumerate()
            .filter(|(e, _)| odd_tile(*e, nb, bs))
            .for_each(|(_, v)| *v = i32::MIN);
        // Edge column `t` has `bs` entries where tile `t` has `bs²`.
        cols.iter_mut()
            .enumerate()
            .filter(|(e, _)| odd_tile(e * bs, nb, bs))
            .for_each(|(_, v)| *v = i32::MIN);
    };
    let mut time = |rep: usize, report: taskweave::Report| {
        assert_eq!(report.tasks, tiles);
        calls.push(&report);
        if rep == 0 {
            println!("warm-up: {report}");
        } else {
            ns_per_tile.push(report.execute_time.as_nanos() as f64 / tiles as f64);
        }
    };
    if cli.resident {
        clear(&mut m, &mut cols);
        let (dx, dy) = (runtime.upload(&x)?, runtime.upload(&y)?);
        let (mut dm, mut dcols) = (runtime.upload(&m)?, runtime.upload(&cols)?);
        for rep in 0..=cli.reps {
            let region = nw::nw_odd_tiles(&dx, &dy, &mut dm, &mut dcols, nb, bs)
                .shared_bytes(dp::SHARED_BYTES);
            time(rep, cli.run.apply(region).run(&runtime)?);
        }
        m = dm.download()?;
        cols = dcols.download()?;
    } else {
        for rep in 0..=cli.reps {
            clear(&mut m, &mut cols);
            let region =
                nw::nw_odd_tiles(&x, &y, &mut m, &mut cols, nb, bs).shared_bytes(dp::SHARED_BYTES);
            time(rep, cli.run.apply(region).run(&runtime)?);
        }
    }
    if m != reference || cols != dp::host::edges(&reference, nb, bs) {
        return Err("the tiles differ from the sequential reference".into());
    }
    println!("check: PASS (exact)");
    let (lo, hi) = ns_per_tile
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), &t| {
            (lo.min(t), hi.max(t))
        });
    println!(
        "time per tile: {:.1} ns (median of {} runs; min {lo:.1}, max {hi:.1})",
        median(&ns_per_tile),
        ns_per_tile.len()
    );
    println!("{calls}");
    Ok(())
}

/// `true` when tile-major element `e` lies in a tile with both coordinates odd.
fn odd_tile(e: usize, nb: usize, bs: usize) -> bool {
    let t = e / (bs * bs);
    (t / nb) % 2 == 1 && (t % nb) % 2 == 1
}
