use taskweave::tile::{self, Alpha, Beta, Diag, Op, Rect, Side, Uplo};
use taskweave::{Block, Runtime, task, task_region};

/// The elements of tile (i, j): the matrix is stored tile by tile, `nb × nb` tiles of `bs × bs`.
pub const fn tile(i: usize, j: usize, nb: usize, bs: usize) -> core::ops::Range<usize> {
    let start = (i * nb + j) * bs * bs;
    start..start + bs * bs
}

/// The same tile as an operand of a tile operation.
pub const fn rect(i: usize, j: usize, nb: usize, bs: usize) -> Rect {
    Rect::square(tile(i, j, nb, bs).start, bs)
}

/// A[k][k] = L·Lᵀ, L in its lower triangle.
#[task(reads = a[tile(k, k, nb, bs)], writes = a[tile(k, k, nb, bs)])]
pub fn potrf(blk: &Block, a: &mut [f64], k: usize, nb: usize, bs: usize) {
    if let Err(column) = tile::potrf(blk, a.mat_mut(rect(k, k, nb, bs)), Uplo::Lower) {
        panic!("not positive definite at column {column} of tile {k}");
    }
}

/// A[i][k] = A[i][k]·L[k][k]⁻ᵀ.
#[task(reads = [a[tile(k, k, nb, bs)], a[tile(i, k, nb, bs)]], writes = a[tile(i, k, nb, bs)])]
pub fn trsm(blk: &Block, a: &mut [f64], k: usize, i: usize, nb: usize, bs: usize) {
    let a = a.operands(); // several operands of one array
    // Outputs first, then inputs, each followed by its flags, then the scalars.
    tile::trsm(blk, a.mat_mut(rect(i, k, nb, bs)), a.mat(rect(k, k, nb, bs)),
               Side::Right, Uplo::Lower, Op::T, Diag::NonUnit, Alpha(1.0));
}

/// A[i][i] −= A[i][k]·A[i][k]ᵀ, on the lower triangle.
#[task(reads = [a[tile(i, k, nb, bs)], a[tile(i, i, nb, bs)]], writes = a[tile(i, i, nb, bs)])]
pub fn syrk(blk: &Block, a: &mut [f64], k: usize, i: usize, nb: usize, bs: usize) {
    let a = a.operands();
    tile::syrk(blk, a.mat_mut(rect(i, i, nb, bs)), Uplo::Lower,
               a.mat(rect(i, k, nb, bs)), Op::N, Alpha(-1.0), Beta(1.0));
}

/// A[i][j] −= A[i][k]·A[j][k]ᵀ.
#[task(reads = [a[tile(i, k, nb, bs)], a[tile(j, k, nb, bs)], a[tile(i, j, nb, bs)]],
       writes = a[tile(i, j, nb, bs)])]
pub fn gemm(blk: &Block, a: &mut [f64], k: usize, i: usize, j: usize, nb: usize, bs: usize) {
    let a = a.operands();
    tile::gemm(blk, a.mat_mut(rect(i, j, nb, bs)), a.mat(rect(i, k, nb, bs)), Op::N,
               a.mat(rect(j, k, nb, bs)), Op::T, Alpha(-1.0), Beta(1.0));
}

task_region! {
    /// The Cholesky factor of a tile-major matrix, in place in its lower triangle.
    pub fn cholesky(a: &mut [f64], nb: usize, bs: usize) {
        for k in 0..nb {
            spawn!(potrf(a, k, nb, bs));
            for i in k + 1..nb { spawn!(trsm(a, k, i, nb, bs)); }
            for i in k + 1..nb {
                spawn!(syrk(a, k, i, nb, bs));
                for j in k + 1..i { spawn!(gemm(a, k, i, j, nb, bs)); }
            }
        }
    }
}

fn main() -> Result<(), taskweave::Error> {
    let (nb, bs) = (4, 16);
    let n = nb * bs;
    // Element (r, c) of a symmetric, diagonally dominant matrix, and where it is stored.
    let entry = |r: usize, c: usize| if r == c { n as f64 } else { 1.0 / (1 + r + c) as f64 };
    let at = |r: usize, c: usize| tile(r / bs, c / bs, nb, bs).start + r % bs * bs + c % bs;
    let mut a = vec![0.0; n * n];
    for (r, c) in (0..n).flat_map(|r| (0..n).map(move |c| (r, c))) {
        a[at(r, c)] = entry(r, c);
    }
    println!("{}", cholesky(&mut a, nb, bs).run(&Runtime::new())?);

    // L·Lᵀ is A, element by element, on the lower triangle.
    for (r, c) in (0..n).flat_map(|r| (0..=r).map(move |c| (r, c))) {
        let product: f64 = (0..=c).map(|q| a[at(r, q)] * a[at(c, q)]).sum();
        assert!((product - entry(r, c)).abs() < 1e-12 * n as f64, "L·Lᵀ differs at ({r}, {c})");
    }
    Ok(())
}
