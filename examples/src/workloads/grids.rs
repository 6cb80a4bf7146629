//! The image wavefronts: SA-TABLE and INT-HIST, verified exactly (wrapping `u32` sums and counts).

use taskweave::Region;
use taskweave_kernels::grid::host::{to_row_major, to_tile_major};
use taskweave_kernels::{inthist, sat};

use super::{Verdict, Workload, exact, first_difference, tiles};

/// The size of SA-TABLE.
#[derive(clap::Args, Clone, Debug)]
pub struct SatParams {
    /// Image side in pixels, a multiple of --tile.
    #[arg(long, default_value_t = 2880)]
    pub n: usize,
    /// Tile side in pixels (at most 64); one task per tile (2880 / 32 = 90: 8100 tasks).
    #[arg(long, default_value_t = 32)]
    pub tile: usize,
}

impl Default for SatParams {
    fn default() -> Self {
        super::defaults()
    }
}

/// The summed-area table of an `n × n` image.
pub struct Sat {
    n: usize,
    bs: usize,
    nb: usize,
    data: Option<(Vec<u32>, Vec<u32>, Vec<u32>)>,
    /// The reference table of the image, computed on the first verification.
    reference: std::cell::OnceCell<Vec<u32>>,
}

impl Sat {
    /// The workload at size `p`, or why that size is invalid.
    pub fn new(p: &SatParams) -> Result<Self, String> {
        Ok(Self {
            n: p.n,
            bs: p.tile,
            nb: tiles(p.n, p.tile, sat::MAX_TILE)?,
            data: None,
            reference: std::cell::OnceCell::new(),
        })
    }
}

impl Workload for Sat {
    fn name(&self) -> &'static str {
        "SA-TABLE"
    }

    fn size(&self) -> String {
        format!("{0}x{0} image, tiles of {1}", self.n, self.bs)
    }

    fn tasks(&self) -> usize {
        self.nb * self.nb
    }

    fn fresh(&mut self) -> Region<'_> {
        let (n, nb, bs) = (self.n, self.nb, self.bs);
        let (x, s, cols) = self.data.get_or_insert_with(|| {
            let x = to_tile_major(&sat::reference::image(n, 11), nb, bs, 1);
            (x, vec![0; n * n], vec![0; nb * n])
        });
        s.fill(u32::MAX);
        cols.fill(u32::MAX);
        sat::sat(x, s, cols, nb, bs).shared_bytes(sat::SHARED_BYTES)
    }

    fn verify(&self) -> Verdict {
        let Some((x, s, _)) = &self.data else {
            return Verdict::Mismatch("nothing has run".into());
        };
        let got = to_row_major(s, self.nb, self.bs, 1);
        let want = self
            .reference
            .get_or_init(|| sat::reference::sat(&to_row_major(x, self.nb, self.bs, 1), self.n));
        exact(first_difference(&got, want, self.n, 1), "sum")
    }
}

/// The size of INT-HIST.
#[derive(clap::Args, Clone, Debug)]
pub struct IntHistParams {
    /// Image side in pixels, a multiple of --tile.
    #[arg(long, default_value_t = 1440)]
    pub n: usize,
    /// Tile side in pixels (at most 64); one task per tile (1440 / 16 = 90: 8100 tasks).
    #[arg(long, default_value_t = 16)]
    pub tile: usize,
    /// Histogram bins (1 to 256).
    #[arg(long, default_value_t = 16)]
    pub bins: usize,
}

impl Default for IntHistParams {
    fn default() -> Self {
        super::defaults()
    }
}

/// The integral histogram of an `n × n` byte image.
pub struct IntHist {
    n: usize,
    bs: usize,
    nb: usize,
    bins: usize,
    data: Option<(Vec<u8>, Vec<u32>, Vec<u32>)>,
    /// The reference histograms of the image, computed on the first verification.
    reference: std::cell::OnceCell<Vec<u32>>,
}

impl IntHist {
    /// The workload at size `p`, or why that size is invalid.
    pub fn new(p: &IntHistParams) -> Result<Self, String> {
        if !(1..=inthist::MAX_BINS).contains(&p.bins) {
            return Err(format!("--bins must be in 1..=256, not {}", p.bins));
        }
        Ok(Self {
            n: p.n,
            bs: p.tile,
            nb: tiles(p.n, p.tile, inthist::MAX_TILE)?,
            bins: p.bins,
            data: None,
            reference: std::cell::OnceCell::new(),
        })
    }
}

impl Workload for IntHist {
    fn name(&self) -> &'static str {
        "INT-HIST"
    }

    fn size(&self) -> String {
        format!(
            "{0}x{0} image, {1} bins, tiles of {2}",
            self.n, self.bins, self.bs
        )
    }

    fn tasks(&self) -> usize {
        self.nb * self.nb
    }

    fn fresh(&mut self) -> Region<'_> {
        let (n, nb, bs, bins) = (self.n, self.nb, self.bs, self.bins);
        let (img, h, cols) = self.data.get_or_insert_with(|| {
            let img = to_tile_major(&inthist::reference::image(n, 12), nb, bs, 1);
            (img, vec![0; n * n * bins], vec![0; nb * n * bins])
        });
        h.fill(u32::MAX);
        cols.fill(u32::MAX);
        inthist::int_hist(img, h, cols, nb, bs, bins).shared_bytes(inthist::SHARED_BYTES)
    }

    fn verify(&self) -> Verdict {
        let Some((img, h, _)) = &self.data else {
            return Verdict::Mismatch("nothing has run".into());
        };
        let got = to_row_major(h, self.nb, self.bs, self.bins);
        let want = self.reference.get_or_init(|| {
            let image = to_row_major(img, self.nb, self.bs, 1);
            inthist::reference::int_hist(&image, self.n, self.bins)
        });
        exact(first_difference(&got, want, self.n, self.bins), "pixel")
    }
}
