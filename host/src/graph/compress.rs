//! [`Endpoints`]: the distinct range ends of one array, numbered by rank.
//!
//! Tracking works on the ranks of the range ends instead of element indices: between two
//! consecutive distinct ends, every element is accessed by the same tasks, so one state per rank
//! holds exactly what one state per element would. The ends are numbered in first-seen order by
//! an open-addressing hash table (tiled regions repeat the same few ends many times), and only
//! the distinct ones are sorted.
//!
//! A table that fits in the caches scatters the ends over its slots (Fibonacci hashing). One that
//! grows past [`ORDERED_FROM`] slots would miss the caches on every lookup that way, so from then
//! on its slots follow the ends' order: an end's slot is its offset from the smallest end, scaled
//! from the range of the ends seen so far (a power of two, doubled when a later end lies past it)
//! down to the table's size. Regions spawn tasks roughly in memory order, so the lookups of a
//! million-end table stay within a few cache lines of each other. Ends crowded into a small part
//! of that range would make long probe runs; the first run past [`PROBE_LIMIT`] scatters the
//! table again, for good.

/// A table slot that holds no end (a slot holds one more than an end's number).
const EMPTY: u32 = 0;

/// The longest probe run an ordered table tolerates before it scatters.
const PROBE_LIMIT: usize = 32;

/// The slots (4 bytes each) from which a table keeps its ends in order: 1 MiB.
const ORDERED_FROM: usize = 1 << 18;

/// How ends map to slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slots {
    /// In order: every end so far is below `base + 2^bits`, and its slot is `(end - base) >>
    /// shift`, the top bits of that range.
    Ordered { bits: u32, shift: u32 },
    /// Fibonacci hashing: the top bits of the product spread any ends evenly.
    Scattered,
}

/// The vectors of an [`Endpoints`] no longer needed, kept for a later one (see
/// [`Spare`](super::Spare)).
#[derive(Debug, Default)]
pub(super) struct Buffers {
    table: Vec<u32>,
    values: Vec<usize>,
}

impl Buffers {
    pub(super) fn bytes(&self) -> usize {
        super::buffer::bytes(&self.table) + super::buffer::bytes(&self.values)
    }
}

/// The distinct ends seen so far, each with its first-seen number.
#[derive(Clone, Debug)]
pub(super) struct Endpoints {
    /// One more than an end's number (`values` gives the end), open addressing with linear
    /// probing; the length is a power of two. Four bytes a slot keep the table in the caches,
    /// and the ends compared on a lookup are mostly the recent ones, at the end of `values`.
    table: Vec<u32>,
    /// Each end by number.
    values: Vec<usize>,
    /// The last end looked up and its number: consecutive ranges often share an end.
    last: (usize, u32),
    /// The smallest end there may be.
    base: usize,
    slots: Slots,
    /// Ordered slots made a probe run past [`PROBE_LIMIT`]: the table stays scattered.
    crowded: bool,
}

impl Endpoints {
    /// A table for ends of at least `base`, sized for about `expected` distinct ones.
    pub(super) fn new(base: usize, expected: usize) -> Self {
        Self::new_in(base, expected, Buffers::default())
    }

    /// A table of no slots, allocating nothing, for an array that has no range yet: it must be
    /// replaced ([`Endpoints::new_in`]) before an end is numbered in it.
    pub(super) fn without_table() -> Self {
        Endpoints {
            table: Vec::new(),
            values: Vec::new(),
            last: (usize::MAX, 0),
            base: 0,
            slots: Slots::Scattered,
            crowded: false,
        }
    }

    /// [`Endpoints::new`], writing into `spare`'s vectors (cleared first) rather than fresh
    /// memory.
    pub(super) fn new_in(base: usize, expected: usize, spare: Buffers) -> Self {
        let size = (expected * 2).next_power_of_two().max(16);
        let Buffers {
            mut table,
            mut values,
        } = spare;
        table.clear();
        table.resize(size, EMPTY);
        values.clear();
        values.reserve(expected);
        Endpoints {
            table,
            values,
            last: (usize::MAX, 0),
            base,
            slots: Slots::Scattered,
            crowded: false,
        }
    }

    /// Sizes an empty table for about `expected` distinct ends, so that numbering them rehashes
    /// nothing; a table that holds ends already keeps its size.
    #[cold]
    pub(super) fn reserve(&mut self, expected: usize) {
        if self.values.is_empty() && expected * 2 > self.table.len() {
            let spare = Buffers {
                table: std::mem::take(&mut self.table),
                values: std::mem::take(&mut self.values),
            };
            *self = Endpoints::new_in(self.base, expected, spare);
        }
    }

    /// Its vectors, to be kept for a later table.
    pub(super) fn into_buffers(self) -> Buffers {
        Buffers {
            table: self.table,
            values: self.values,
        }
    }

    /// Ordered slots over `bits` bits of range for a table of `size`.
    fn ordered(bits: u32, size: usize) -> Slots {
        Slots::Ordered {
            bits,
            shift: bits.saturating_sub(size.trailing_zeros()),
        }
    }

    /// The first slot to probe for `value` in a table of `mask + 1` slots.
    #[inline]
    fn slot(&self, value: usize, mask: usize) -> usize {
        match self.slots {
            Slots::Ordered { shift, .. } => (value.wrapping_sub(self.base) >> shift) & mask,
            Slots::Scattered => {
                let h = (value as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                (h >> 32) as usize & mask
            }
        }
    }

    /// The table's slots (a test sees whether it was rebuilt).
    #[cfg(test)]
    pub(super) fn slots(&self) -> usize {
        self.table.len()
    }

    /// Each end by number.
    pub(super) fn values(&self) -> &[usize] {
        &self.values
    }

    /// The number of `value`, numbering it if it is new.
    #[inline]
    pub(super) fn number(&mut self, value: usize) -> u32 {
        if self.last.0 == value {
            return self.last.1;
        }
        let mask = self.table.len() - 1;
        let mut i = self.slot(value, mask);
        let mut probes = 0;
        loop {
            let slot = self.table[i];
            if slot == EMPTY {
                break;
            }
            let n = slot - 1;
            if self.values[n as usize] == value {
                self.last = (value, n);
                if probes > PROBE_LIMIT {
                    self.crowd();
                }
                return n;
            }
            i = (i + 1) & mask;
            probes += 1;
        }
        // Cannot truncate: a job holds fewer than `u32::MAX / 2` ranges (see `MAX_RANGES`).
        let n = self.values.len() as u32;
        self.table[i] = n + 1;
        self.values.push(value);
        self.last = (value, n);
        if probes > PROBE_LIMIT {
            self.crowd();
        } else {
            self.grow(value);
        }
        n
    }

    /// Scatters a table whose ordered slots made a long probe run, for good.
    #[cold]
    fn crowd(&mut self) {
        if matches!(self.slots, Slots::Ordered { .. }) {
            self.crowded = true;
            self.rebuild(self.table.len(), Slots::Scattered);
        }
    }

    /// After `value` was numbered: doubles a table past half full, orders a big one, and doubles
    /// an ordered table's range when `value` lies past it.
    #[inline]
    fn grow(&mut self, value: usize) {
        let size = self.table.len();
        let grown = if self.values.len() * 2 > size {
            size * 2
        } else {
            size
        };
        match self.slots {
            Slots::Ordered { bits, .. } if (value - self.base) >> bits != 0 => {
                let bits = usize::BITS - (value - self.base).leading_zeros();
                self.rebuild(grown, Self::ordered(bits, grown));
            }
            Slots::Ordered { bits, .. } if grown > size => {
                self.rebuild(grown, Self::ordered(bits, grown));
            }
            Slots::Scattered if grown >= ORDERED_FROM && !self.crowded => {
                // The range of the ends so far.
                let top = self.values.iter().max().map_or(0, |&v| v - self.base);
                let bits = usize::BITS - top.leading_zeros();
                self.rebuild(grown, Self::ordered(bits, grown));
            }
            Slots::Scattered if grown > size => self.rebuild(grown, Slots::Scattered),
            _ => {}
        }
    }

    /// Rebuilds the table with `size` slots, mapped as `slots` says; scattered for good instead
    /// when ordered slots crowd.
    #[cold]
    fn rebuild(&mut self, size: usize, slots: Slots) {
        self.slots = slots;
        let mask = size - 1;
        let mut table = vec![EMPTY; size];
        for (n, &value) in self.values.iter().enumerate() {
            let mut i = self.slot(value, mask);
            let mut probes = 0;
            while table[i] != EMPTY {
                i = (i + 1) & mask;
                probes += 1;
            }
            if probes > PROBE_LIMIT && slots != Slots::Scattered {
                self.crowded = true;
                return self.rebuild(size, Slots::Scattered);
            }
            // Cannot truncate: fewer than `u32::MAX` ends.
            table[i] = n as u32 + 1;
        }
        self.table = table;
    }

    /// The rank of every number among the distinct ends (the smallest end has rank 0), and the
    /// number of distinct ends.
    pub(super) fn ranks(&self) -> (Vec<u32>, usize) {
        let count = self.values.len();
        let mut rank = vec![0u32; count];
        let max = self.values.iter().copied().max().unwrap_or(0);
        if max >> 32 == 0 {
            // Each end and its number in one word, the end on top: sorting the words sorts the
            // ends, and the number comes along.
            let mut keys: Vec<u64> = (self.values.iter().enumerate())
                .map(|(n, &v)| (v as u64) << 32 | n as u64)
                .collect();
            radix_sort(&mut keys, 32, u64::BITS - (max as u64).leading_zeros());
            for (r, &key) in keys.iter().enumerate() {
                rank[key as u32 as usize] = r as u32;
            }
        } else {
            let mut order: Vec<(usize, u32)> = (self.values.iter().enumerate())
                .map(|(n, &v)| (v, n as u32))
                .collect();
            order.sort_unstable();
            for (r, &(_, n)) in order.iter().enumerate() {
                rank[n as usize] = r as u32;
            }
        }
        (rank, count)
    }
}

/// Bits per radix digit: 2048 counters stay in the L1 cache.
const DIGIT: u32 = 11;

/// Sorts `keys` by their bits `low..low + bits` (the others are equal or do not matter), least
/// significant digit first; small inputs by comparison.
fn radix_sort(keys: &mut Vec<u64>, low: u32, bits: u32) {
    if keys.len() < 256 {
        keys.sort_unstable();
        return;
    }
    let mut other = vec![0u64; keys.len()];
    let mut shift = low;
    while shift < low + bits {
        let mut count = [0usize; 1 << DIGIT];
        let digit = |k: u64| ((k >> shift) & ((1 << DIGIT) - 1)) as usize;
        for &k in keys.iter() {
            count[digit(k)] += 1;
        }
        let mut sum = 0;
        for c in &mut count {
            let n = *c;
            *c = sum;
            sum += n;
        }
        for &k in keys.iter() {
            let slot = &mut count[digit(k)];
            other[*slot] = k;
            *slot += 1;
        }
        std::mem::swap(keys, &mut other);
        shift += DIGIT;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_first_seen_and_ranks_sorted() {
        let mut ends = Endpoints::new(0, 1);
        let input = [50, 10, 50, 30, 10, 0, 1 << 40, 30];
        let numbers: Vec<u32> = input.iter().map(|&v| ends.number(v)).collect();
        assert_eq!(numbers, [0, 1, 0, 2, 1, 3, 4, 2]);
        let (rank, count) = ends.ranks();
        assert_eq!(count, 5);
        // 50 -> 3, 10 -> 1, 30 -> 2, 0 -> 0, 2^40 -> 4.
        assert_eq!(rank, [3, 1, 2, 0, 4]);
    }

    #[test]
    fn growing_keeps_every_number() {
        let mut ends = Endpoints::new(0, 0);
        for v in 0..10_000usize {
            assert_eq!(ends.number(v * 4096), v as u32);
        }
        for v in (0..10_000usize).rev() {
            assert_eq!(ends.number(v * 4096), v as u32);
        }
        let (rank, count) = ends.ranks();
        assert_eq!(count, 10_000);
        assert!(rank.iter().enumerate().all(|(n, &r)| r as usize == n));
    }

    #[test]
    fn a_big_table_keeps_its_ends_in_order_until_they_crowd() {
        let mut ends = Endpoints::new(0, 16);
        let big = ORDERED_FROM / 2;
        for v in 0..big {
            assert_eq!(ends.number(v * 64), v as u32);
        }
        assert_eq!(ends.table.len(), ORDERED_FROM);
        // The range so far, `64 * (big - 1)`, in order over the table's slots.
        let range = usize::BITS - (64 * (big - 1)).leading_zeros();
        assert_eq!(ends.slots, Endpoints::ordered(range, ORDERED_FROM));
        // Later ends, in order, double the range and the table: still in order.
        for v in big..2 * big {
            assert_eq!(ends.number(v * 64), v as u32);
        }
        let range = usize::BITS - (64 * (2 * big - 1)).leading_zeros();
        assert_eq!(ends.slots, Endpoints::ordered(range, 2 * ORDERED_FROM));
        let big = 2 * big;
        // An end far past the range would crowd every end so far into the first slots: the table
        // scatters for good instead.
        assert_eq!(ends.number(1 << 40), big as u32);
        assert_eq!(ends.slots, Slots::Scattered);
        assert!(ends.crowded);
        for v in 0..PROBE_LIMIT * 2 {
            ends.number(v * 64 + 1);
        }
        // Every number stayed.
        for v in (0..big).step_by(997) {
            assert_eq!(ends.number(v * 64), v as u32);
        }
        assert_eq!(ends.number(1 << 40), big as u32);
        let (rank, count) = ends.ranks();
        assert_eq!(count, big + 1 + PROBE_LIMIT * 2);
        assert_eq!(rank[big] as usize, count - 1);
    }

    #[test]
    fn ranks_of_many_ends_in_any_order() {
        // Past the comparison sort's cut-off, with ends on every digit of the radix sort, and
        // past 32 bits.
        for scale in [1usize, 4097, 1 << 33] {
            let mut ends = Endpoints::new(0, 16);
            let values: Vec<usize> = (0..5000).map(|i| (i * 7919 % 5000) * scale).collect();
            for &v in &values {
                ends.number(v);
            }
            let (rank, count) = ends.ranks();
            assert_eq!(count, 5000);
            for (n, &v) in values.iter().enumerate() {
                assert_eq!(rank[n] as usize, v / scale, "scale {scale}");
            }
        }
    }
}
