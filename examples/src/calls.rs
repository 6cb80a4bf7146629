//! What repeated calls of a region cost, from their reports: the wall time per call (the first
//! call, then the steady state) beside the execution time. The examples that call a region more
//! than once print it after their reports.
//!
//! ```
//! # use taskweave_examples::calls::Calls;
//! let mut calls = Calls::default();
//! // for each call: calls.push(&region(..).run(&runtime)?);
//! assert!(calls.is_empty());
//! ```

use std::fmt;
use std::time::Duration;

use taskweave::Report;

/// The wall and execution times of a series of calls of one region, in call order.
#[derive(Clone, Debug, Default)]
pub struct Calls {
    times: Vec<(Duration, Duration)>,
}

/// `d` in milliseconds.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The median of `values`, the lower middle one for an even count.
fn median(values: &[Duration]) -> Option<Duration> {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted.get(sorted.len().saturating_sub(1) / 2).copied()
}

impl Calls {
    /// Adds a call.
    pub fn push(&mut self, report: &Report) {
        self.times.push((report.wall_time, report.execute_time));
    }

    /// The number of calls.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// `true` before the first call.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The first call's wall and execution time.
    pub fn first(&self) -> Option<(Duration, Duration)> {
        self.times.first().copied()
    }

    /// The steady state: the medians of the wall and execution times of the calls after the first
    /// (`None` with fewer than two calls).
    pub fn steady(&self) -> Option<(Duration, Duration)> {
        let later = self.times.get(1..).filter(|l| !l.is_empty())?;
        let wall: Vec<Duration> = later.iter().map(|t| t.0).collect();
        let execute: Vec<Duration> = later.iter().map(|t| t.1).collect();
        Some((median(&wall)?, median(&execute)?))
    }
}

impl fmt::Display for Calls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some((wall, execute)) = self.first() else {
            return f.write_str("no calls");
        };
        let ratio = |wall: Duration, execute: Duration| {
            wall.as_secs_f64() / execute.as_secs_f64().max(f64::MIN_POSITIVE)
        };
        match self.steady() {
            None => write!(
                f,
                "wall per call {:.3} ms (one call, no steady state); execute {:.3} ms; \
                 wall / execute {:.2}x",
                ms(wall),
                ms(execute),
                ratio(wall, execute)
            ),
            Some((steady_wall, steady_execute)) => write!(
                f,
                "wall per call: first {:.3} ms, steady {:.3} ms (median of the {} later calls); \
                 execute: first {:.3} ms, steady {:.3} ms; steady wall / execute {:.2}x",
                ms(wall),
                ms(steady_wall),
                self.len() - 1,
                ms(execute),
                ms(steady_execute),
                ratio(steady_wall, steady_execute)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(times: &[(u64, u64)]) -> Calls {
        Calls {
            times: times
                .iter()
                .map(|&(w, e)| (Duration::from_millis(w), Duration::from_millis(e)))
                .collect(),
        }
    }

    #[test]
    fn the_first_call_stands_apart_from_the_steady_state() {
        let c = calls(&[(50, 10), (12, 4), (14, 5), (11, 4)]);
        let ms = Duration::from_millis;
        assert_eq!(c.first(), Some((ms(50), ms(10))));
        assert_eq!(c.steady(), Some((ms(12), ms(4))));
        assert_eq!(
            c.to_string(),
            "wall per call: first 50.000 ms, steady 12.000 ms (median of the 3 later calls); \
             execute: first 10.000 ms, steady 4.000 ms; steady wall / execute 3.00x"
        );
    }

    #[test]
    fn one_call_has_no_steady_state() {
        let c = calls(&[(8, 2)]);
        assert_eq!(c.steady(), None);
        assert_eq!(
            c.to_string(),
            "wall per call 8.000 ms (one call, no steady state); execute 2.000 ms; wall / execute 4.00x"
        );
        assert_eq!(Calls::default().to_string(), "no calls");
    }
}
