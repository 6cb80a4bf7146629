//! The elements of one array that a region's tasks have declared written so far, as disjoint
//! ranges: what inspection checks an `#[output]` array's reads against, and where it finds the
//! elements of the array's written span that no task writes (those are copied up; the rest is
//! not, see [`Region::bind_output`](crate::Region::bind_output)).

use std::collections::BTreeMap;
use std::ops::Range;

/// Disjoint, non-adjacent ranges of element indices, by start.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cover {
    /// Start → end of each range.
    ranges: BTreeMap<usize, usize>,
}

impl Cover {
    /// Adds `range`, merging it with the ranges it overlaps or touches.
    ///
    /// Called for every write a task declares on an output, so it allocates nothing: collecting
    /// the ranges to merge into a vector first took a third of SA-TABLE's inspection.
    pub fn insert(&mut self, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        let (mut start, mut end) = (range.start, range.end);
        // The range that starts at or before `start` and reaches it.
        if let Some((&s, &e)) = self.ranges.range(..=start).next_back()
            && e >= start
        {
            if e >= end {
                return;
            }
            start = s;
        }
        // Every other range that starts inside the merged one (`start` itself, when a range
        // starts there, is the one merged above, and the insert below replaces it).
        while let Some((&s, &e)) = self.ranges.range(start + 1..=end).next() {
            self.ranges.remove(&s);
            end = end.max(e);
        }
        self.ranges.insert(start, end);
    }

    /// The first element of `range` not covered, if any.
    pub fn first_missing(&self, range: &Range<usize>) -> Option<usize> {
        if range.is_empty() {
            return None;
        }
        match self.ranges.range(..=range.start).next_back() {
            // Ranges do not touch: the one holding `range.start` covers all it can.
            Some((_, &e)) if e > range.start => (e < range.end).then_some(e),
            _ => Some(range.start),
        }
    }

    /// The parts of `within` not covered, in order.
    pub fn gaps(&self, within: Range<usize>) -> Vec<Range<usize>> {
        let mut gaps = Vec::new();
        let mut at = within.start;
        let first = self
            .ranges
            .range(..=within.start)
            .next_back()
            .map_or(within.start, |(&s, _)| s);
        for (&s, &e) in self.ranges.range(first..within.end) {
            if s > at {
                gaps.push(at..s.min(within.end));
            }
            at = at.max(e);
            if at >= within.end {
                break;
            }
        }
        if at < within.end {
            gaps.push(at..within.end);
        }
        gaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn touching_ranges_merge_and_gaps_are_what_is_left() {
        let mut c = Cover::default();
        c.insert(10..20);
        c.insert(30..40);
        assert_eq!(c.gaps(0..50), vec![0..10, 20..30, 40..50]);
        c.insert(20..30);
        assert_eq!(c.ranges.len(), 1);
        assert_eq!(c.gaps(0..50), vec![0..10, 40..50]);
        assert_eq!(c.first_missing(&(12..40)), None);
        assert_eq!(c.first_missing(&(12..41)), Some(40));
        assert_eq!(c.first_missing(&(5..15)), Some(5));
        assert_eq!(c.first_missing(&(7..7)), None);
    }

    proptest! {
        /// Against a bitmap: after random inserts, `first_missing` and `gaps` agree with it on
        /// random ranges.
        #[test]
        fn agrees_with_a_bitmap(
            inserts in prop::collection::vec((0usize..200, 0usize..40), 0..30),
            queries in prop::collection::vec((0usize..220, 0usize..60), 1..20),
        ) {
            let mut cover = Cover::default();
            let mut bits = [false; 300];
            for (start, len) in inserts {
                cover.insert(start..start + len);
                bits[start..start + len].fill(true);
            }
            for (start, len) in queries {
                let range = start..start + len;
                let missing = range.clone().find(|&i| !bits[i]);
                prop_assert_eq!(cover.first_missing(&range), missing);
                let mut gaps: Vec<Range<usize>> = Vec::new();
                for i in range.clone().filter(|&i| !bits[i]) {
                    match gaps.last_mut() {
                        Some(g) if g.end == i => g.end += 1,
                        _ => gaps.push(i..i + 1),
                    }
                }
                prop_assert_eq!(cover.gaps(range), gaps);
            }
        }
    }
}
