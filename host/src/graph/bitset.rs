//! [`BitSet`]: a fixed-size bit set with a summary level, for the run starts of an interval map.

/// A set of positions in `0..len`, as one bit per position plus one summary bit per word (set when
/// the word is not zero). Finding the previous member skips 4096 empty positions per summary
/// word, so a search across a long run costs `O(run / 4096)`, not `O(run / 64)`.
#[derive(Debug)]
pub(super) struct BitSet {
    words: Vec<u64>,
    summary: Vec<u64>,
}

/// The bits of `word` at positions `0..=bit`.
#[inline]
fn up_to(bit: usize) -> u64 {
    u64::MAX >> (63 - bit)
}

impl BitSet {
    /// An empty set over `0..len`.
    pub(super) fn new(len: usize) -> Self {
        let words = len.div_ceil(64);
        BitSet {
            words: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
        }
    }

    /// Every position of `0..len`.
    pub(super) fn full(len: usize) -> Self {
        let mut set = BitSet::new(len);
        set.words.fill(u64::MAX);
        if len % 64 != 0 {
            *set.words.last_mut().expect("len > 0") = u64::MAX >> (64 - len % 64);
        }
        let words = set.words.len();
        set.summary.fill(u64::MAX);
        if words % 64 != 0 {
            *set.summary.last_mut().expect("words > 0") = u64::MAX >> (64 - words % 64);
        }
        set
    }

    /// Whether `i` is a member.
    #[inline]
    pub(super) fn contains(&self, i: usize) -> bool {
        self.words[i >> 6] & (1 << (i & 63)) != 0
    }

    /// Adds `i`.
    #[inline]
    pub(super) fn insert(&mut self, i: usize) {
        let w = i >> 6;
        self.words[w] |= 1 << (i & 63);
        self.summary[w >> 6] |= 1 << (w & 63);
    }

    /// Removes `i`.
    #[inline]
    pub(super) fn remove(&mut self, i: usize) {
        let w = i >> 6;
        self.words[w] &= !(1 << (i & 63));
        if self.words[w] == 0 {
            self.summary[w >> 6] &= !(1 << (w & 63));
        }
    }

    /// Removes every member of `lo..hi`.
    pub(super) fn remove_range(&mut self, lo: usize, hi: usize) {
        if lo >= hi {
            return;
        }
        let (first, last) = (lo >> 6, (hi - 1) >> 6);
        for w in first..=last {
            let mut keep = 0;
            if w == first {
                keep |= !(u64::MAX << (lo & 63));
            }
            if w == last && hi & 63 != 0 {
                keep |= u64::MAX << (hi & 63);
            }
            self.words[w] &= keep;
            if self.words[w] == 0 {
                self.summary[w >> 6] &= !(1 << (w & 63));
            }
        }
    }

    /// The largest member smaller than `i`.
    #[inline]
    pub(super) fn prev_before(&self, i: usize) -> Option<usize> {
        let j = i.checked_sub(1)?;
        let w = j >> 6;
        let bits = self.words[w] & up_to(j & 63);
        if bits != 0 {
            return Some((w << 6) | (63 - bits.leading_zeros() as usize));
        }
        let w = self.prev_word_before(w)?;
        Some((w << 6) | (63 - self.words[w].leading_zeros() as usize))
    }

    /// The last non-zero word before `w`.
    fn prev_word_before(&self, w: usize) -> Option<usize> {
        let v = w.checked_sub(1)?;
        let mut s = v >> 6;
        let mut bits = self.summary[s] & up_to(v & 63);
        loop {
            if bits != 0 {
                return Some((s << 6) | (63 - bits.leading_zeros() as usize));
            }
            s = s.checked_sub(1)?;
            bits = self.summary[s];
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(usize),
        Remove(usize),
        RemoveRange(usize, usize),
    }

    proptest! {
        /// Against a `BTreeSet`, over sizes that span several summary words.
        #[test]
        fn matches_a_btree_set(
            len in 1usize..20_000,
            ops in prop::collection::vec((0u8..3, any::<usize>(), any::<usize>()), 0..200),
            probes in prop::collection::vec(any::<usize>(), 1..50),
        ) {
            let mut set = BitSet::new(len);
            let mut reference = BTreeSet::new();
            for (kind, a, b) in ops {
                let (a, b) = (a % len, b % (len + 1));
                let op = match kind {
                    0 => Op::Insert(a),
                    1 => Op::Remove(a),
                    _ => Op::RemoveRange(a.min(b), a.max(b)),
                };
                match op {
                    Op::Insert(i) => {
                        set.insert(i);
                        reference.insert(i);
                    }
                    Op::Remove(i) => {
                        set.remove(i);
                        reference.remove(&i);
                    }
                    Op::RemoveRange(lo, hi) => {
                        set.remove_range(lo, hi);
                        reference.retain(|&x| x < lo || x >= hi);
                    }
                }
            }
            for p in probes {
                let p = p % len;
                prop_assert_eq!(set.contains(p), reference.contains(&p));
                prop_assert_eq!(set.prev_before(p), reference.range(..p).next_back().copied());
            }
        }
    }

    #[test]
    fn a_full_set_holds_every_position_and_no_more() {
        for len in [1, 63, 64, 65, 4096, 4097, 64 * 64 * 3 + 5] {
            let mut set = BitSet::full(len);
            assert!((0..len).all(|i| set.contains(i)), "{len}");
            assert_eq!(set.prev_before(len), Some(len - 1));
            set.remove_range(1, len);
            assert_eq!(set.prev_before(len), Some(0), "{len}");
        }
    }

    #[test]
    fn searches_cross_empty_summary_words() {
        let len = 64 * 64 * 5;
        let mut set = BitSet::new(len);
        set.insert(3);
        set.insert(len - 1);
        assert_eq!(set.prev_before(len - 1), Some(3));
        assert_eq!(set.prev_before(3), None);
        set.remove_range(0, len);
        assert_eq!(set.prev_before(len - 1), None);
        assert!(!set.contains(len - 1));
    }
}
