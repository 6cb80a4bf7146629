use taskweave::{Block, Policy, Runtime, task, task_region};

/// The elements of tile (i, j): the matrix is stored tile by tile, `nb × nb` tiles of `bs × bs`.
pub const fn tile(i: usize, j: usize, nb: usize, bs: usize) -> core::ops::Range<usize> {
    let start = (i * nb + j) * bs * bs;
    start..start + bs * bs
}

/// Factors diagonal tile k in place: unit-lower L below the diagonal, U on and above it.
#[task(reads = a[tile(k, k, nb, bs)], writes = a[tile(k, k, nb, bs)])]
pub fn lu0(b: &Block, a: &mut [f32], k: usize, nb: usize, bs: usize) {
    let d = tile(k, k, nb, bs).start;
    for p in 0..bs {
        let pivot = a[d + p * bs + p];
        b.par_for(p + 1..bs, |r| a[d + r * bs + p] /= pivot);
        let w = bs - p - 1;
        b.par_for(0..w * w, |e| {
            let (r, c) = (p + 1 + e / w, p + 1 + e % w);
            a[d + r * bs + c] -= a[d + r * bs + p] * a[d + p * bs + c];
        });
    }
}

/// A[k][j] = L[k][k]⁻¹ · A[k][j], one column per thread.
#[task(reads = [a[tile(k, k, nb, bs)], a[tile(k, j, nb, bs)]], writes = a[tile(k, j, nb, bs)])]
pub fn fwd(b: &Block, a: &mut [f32], k: usize, j: usize, nb: usize, bs: usize) {
    let (d, t) = (tile(k, k, nb, bs).start, tile(k, j, nb, bs).start);
    b.par_for(0..bs, |c| {
        for r in 1..bs {
            for q in 0..r {
                a[t + r * bs + c] -= a[d + r * bs + q] * a[t + q * bs + c];
            }
        }
    });
}

/// A[i][k] = A[i][k] · U[k][k]⁻¹, one row per thread.
#[task(reads = [a[tile(k, k, nb, bs)], a[tile(i, k, nb, bs)]], writes = a[tile(i, k, nb, bs)])]
pub fn bdiv(b: &Block, a: &mut [f32], k: usize, i: usize, nb: usize, bs: usize) {
    let (d, t) = (tile(k, k, nb, bs).start, tile(i, k, nb, bs).start);
    b.par_for(0..bs, |r| {
        for c in 0..bs {
            for q in 0..c {
                a[t + r * bs + c] -= a[t + r * bs + q] * a[d + q * bs + c];
            }
            a[t + r * bs + c] /= a[d + c * bs + c];
        }
    });
}

/// A[i][j] -= A[i][k] · A[k][j], one element per thread.
#[task(
    reads = [a[tile(i, k, nb, bs)], a[tile(k, j, nb, bs)], a[tile(i, j, nb, bs)]],
    writes = a[tile(i, j, nb, bs)]
)]
pub fn bmod(b: &Block, a: &mut [f32], k: usize, i: usize, j: usize, nb: usize, bs: usize) {
    let (l, u, t) = (
        tile(i, k, nb, bs).start,
        tile(k, j, nb, bs).start,
        tile(i, j, nb, bs).start,
    );
    b.par_for(0..bs * bs, |e| {
        let (r, c) = (e / bs, e % bs);
        let mut sum = 0.0f32;
        for q in 0..bs {
            sum += a[l + r * bs + q] * a[u + q * bs + c];
        }
        a[t + e] -= sum;
    });
}

task_region! {
    /// Tiled LU of a tile-major matrix, in place.
    pub fn lu(a: &mut [f32], nb: usize, bs: usize) {
        for k in 0..nb {
            spawn!(lu0(a, k, nb, bs));
            for j in k + 1..nb { spawn!(fwd(a, k, j, nb, bs)); }
            for i in k + 1..nb { spawn!(bdiv(a, k, i, nb, bs)); }
            for i in k + 1..nb {
                for j in k + 1..nb { spawn!(bmod(a, k, i, j, nb, bs)); }
            }
        }
    }
}

fn main() -> Result<(), taskweave::Error> {
    let (nb, bs) = (4, 8);
    // Heavy on the diagonal, so that LU needs no pivoting.
    let mut a = vec![0.5f32; nb * nb * bs * bs];
    for i in 0..nb {
        for r in 0..bs {
            a[tile(i, i, nb, bs).start + r * bs + r] = (nb * bs) as f32;
        }
    }
    let report = lu(&mut a, nb, bs)
        .policy(Policy::Grr)
        .run(&Runtime::new())?;
    println!("{report}");
    Ok(())
}
