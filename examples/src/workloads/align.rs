//! The two-sequence dynamic programs: DT-WARP, SM-W and NW, verified cell by cell.

use std::marker::PhantomData;

use taskweave::Region;
use taskweave_kernels::grid::host::to_row_major;
use taskweave_kernels::{dp, dtw, nw, smw};

use super::{Verdict, Workload, first_difference, tiles};

/// What distinguishes one alignment workload from another.
pub trait Alignment {
    /// The name in the tables.
    const NAME: &'static str;
    /// The two sequences of length `n`.
    fn inputs(n: usize) -> (Vec<u8>, Vec<u8>);
    /// The region over the sequences, the tile-major matrix and the edge columns.
    fn region<'a>(
        x: &'a [u8],
        y: &'a [u8],
        m: &'a mut [i32],
        cols: &'a mut [i32],
        nb: usize,
        bs: usize,
    ) -> Region<'a>;
    /// The row-major matrix the sequential reference computes.
    fn reference(x: &[u8], y: &[u8]) -> Vec<i32>;
    /// What fresh outputs hold: the value the recurrence prefers to any score (the largest for a
    /// maximum, the smallest for a minimum), half-way to overflow. A tile that reads a
    /// neighbour before the neighbour wrote it takes the value up, and it spreads to every later
    /// cell: no input can hide a wrong order (a tile far from the diagonal, whose scores all
    /// come from one side, would hide a neglected other side behind any lesser value), and the
    /// recurrence computes from it without overflowing.
    const UNWRITTEN: i32;
}

/// The inputs and outputs of one alignment.
struct Data {
    x: Vec<u8>,
    y: Vec<u8>,
    m: Vec<i32>,
    cols: Vec<i32>,
}

/// A two-sequence DP over `n × n` cells in tiles of `bs`.
pub struct Align<A: Alignment> {
    n: usize,
    bs: usize,
    nb: usize,
    data: Option<Data>,
    /// The reference matrix of the inputs, computed on the first verification.
    reference: std::cell::OnceCell<Vec<i32>>,
    kind: PhantomData<A>,
}

impl<A: Alignment> Align<A> {
    fn with(n: usize, tile: usize) -> Result<Self, String> {
        Ok(Self {
            n,
            bs: tile,
            nb: tiles(n, tile, dp::MAX_TILE)?,
            data: None,
            reference: std::cell::OnceCell::new(),
            kind: PhantomData,
        })
    }
}

impl<A: Alignment> Workload for Align<A> {
    fn name(&self) -> &'static str {
        A::NAME
    }

    fn size(&self) -> String {
        format!("{0}x{0} cells, tiles of {1}", self.n, self.bs)
    }

    fn tasks(&self) -> usize {
        self.nb * self.nb
    }

    /// The region on fresh outputs, every cell [`Alignment::UNWRITTEN`].
    fn fresh(&mut self) -> Region<'_> {
        let (n, edges) = (self.n, self.nb * self.n);
        let data = self.data.get_or_insert_with(|| {
            let (x, y) = A::inputs(n);
            Data {
                x,
                y,
                m: vec![0; n * n],
                cols: vec![0; edges],
            }
        });
        data.m.fill(A::UNWRITTEN);
        data.cols.fill(A::UNWRITTEN);
        A::region(
            &data.x,
            &data.y,
            &mut data.m,
            &mut data.cols,
            self.nb,
            self.bs,
        )
        .shared_bytes(dp::SHARED_BYTES)
    }

    fn verify(&self) -> Verdict {
        let Some(d) = &self.data else {
            return Verdict::Mismatch("nothing has run".into());
        };
        let got = to_row_major(&d.m, self.nb, self.bs, 1);
        let want = self.reference.get_or_init(|| A::reference(&d.x, &d.y));
        super::exact(first_difference(&got, want, self.n, 1), "cell")
    }
}

/// The Needleman-Wunsch kind.
pub struct NwKind;

impl Alignment for NwKind {
    const NAME: &'static str = "NW";
    const UNWRITTEN: i32 = i32::MAX / 2;
    fn inputs(n: usize) -> (Vec<u8>, Vec<u8>) {
        let x = dp::host::dna(n, 1);
        let y = dp::host::mutate(&x, 8, 2);
        (x, y)
    }
    fn region<'a>(
        x: &'a [u8],
        y: &'a [u8],
        m: &'a mut [i32],
        cols: &'a mut [i32],
        nb: usize,
        bs: usize,
    ) -> Region<'a> {
        nw::nw(x, y, m, cols, nb, bs)
    }
    fn reference(x: &[u8], y: &[u8]) -> Vec<i32> {
        nw::reference::nw(x, y)
    }
}

/// The Smith-Waterman kind.
pub struct SmwKind;

impl Alignment for SmwKind {
    const NAME: &'static str = "SM-W";
    const UNWRITTEN: i32 = i32::MAX / 2;
    fn inputs(n: usize) -> (Vec<u8>, Vec<u8>) {
        // Unrelated sequences with a shared stretch in the middle: a local alignment to find.
        let x = dp::host::dna(n, 3);
        let mut y = dp::host::dna(n, 4);
        let (from, len) = (n / 3, n / 3);
        y[from..from + len].copy_from_slice(&dp::host::mutate(&x[n / 4..n / 4 + len], 10, 5));
        (x, y)
    }
    fn region<'a>(
        x: &'a [u8],
        y: &'a [u8],
        m: &'a mut [i32],
        cols: &'a mut [i32],
        nb: usize,
        bs: usize,
    ) -> Region<'a> {
        smw::smw(x, y, m, cols, nb, bs)
    }
    fn reference(x: &[u8], y: &[u8]) -> Vec<i32> {
        smw::reference::smw(x, y)
    }
}

/// The dynamic-time-warping kind.
pub struct DtwKind;

impl Alignment for DtwKind {
    const NAME: &'static str = "DT-WARP";
    const UNWRITTEN: i32 = i32::MIN / 2;
    fn inputs(n: usize) -> (Vec<u8>, Vec<u8>) {
        let x = dtw::reference::series(n, 6);
        let y = dtw::reference::warped(&x, 7);
        (x, y)
    }
    fn region<'a>(
        x: &'a [u8],
        y: &'a [u8],
        m: &'a mut [i32],
        cols: &'a mut [i32],
        nb: usize,
        bs: usize,
    ) -> Region<'a> {
        dtw::dtw(x, y, m, cols, nb, bs)
    }
    fn reference(x: &[u8], y: &[u8]) -> Vec<i32> {
        dtw::reference::dtw(x, y)
    }
}

/// Needleman-Wunsch.
pub type Nw = Align<NwKind>;
/// Smith-Waterman.
pub type SmithWaterman = Align<SmwKind>;
/// Dynamic time warping.
pub type Dtw = Align<DtwKind>;

macro_rules! params {
    ($params:ident, $kind:ty, $what:literal, $n:literal, $tile:literal) => {
        #[doc = concat!("The size of ", $what, ".")]
        #[derive(clap::Args, Clone, Debug)]
        pub struct $params {
            /// Sequence length: cells per side of the matrix, a multiple of --tile.
            #[arg(long, default_value_t = $n)]
            pub n: usize,
            /// Tile side in cells (at most 64); one task per tile.
            #[arg(long, default_value_t = $tile)]
            pub tile: usize,
        }

        impl Default for $params {
            fn default() -> Self {
                super::defaults()
            }
        }

        impl Align<$kind> {
            /// The workload at size `p`, or why that size is invalid.
            pub fn new(p: &$params) -> Result<Self, String> {
                Self::with(p.n, p.tile)
            }
        }
    };
}

params!(NwParams, NwKind, "NW: 48² = 2304 tiles", 1536, 32);
params!(SmwParams, SmwKind, "SM-W: 72² = 5184 tiles", 4608, 64);
params!(DtwParams, DtwKind, "DT-WARP: 72² = 5184 tiles", 4608, 64);
