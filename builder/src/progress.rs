//! What the device build says while it works.
//!
//! Cargo shows a build script's output only when the script fails, so a device build that takes
//! minutes would otherwise show one `Compiling` line. The builder writes each step as a line in
//! cargo's style to the terminal when there is one (`/dev/tty`; clearing cargo's progress bar
//! first), and every line, with its time since the build began, to a log beside the nested build,
//! `<target>/taskweave-device/build.log`, which `scripts/run.sh` prints after a build.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

/// Where the build's progress goes.
pub(crate) struct Progress {
    start: Instant,
    tty: Mutex<Option<File>>,
    log: Mutex<Option<File>>,
    krate: String,
}

impl Progress {
    /// Progress of the device build of `krate`, logged to `log` (truncated).
    pub(crate) fn new(krate: &str, log: &Path) -> Self {
        let tty = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/tty")
            .ok();
        let log = log
            .parent()
            .and_then(|dir| std::fs::create_dir_all(dir).ok())
            .and_then(|()| File::create(log).ok());
        Self {
            start: Instant::now(),
            tty: Mutex::new(tty),
            log: Mutex::new(log),
            krate: krate.to_owned(),
        }
    }

    /// One step: `verb` (`Assembling`, `Compiling`…) and what it is about.
    pub(crate) fn step(&self, verb: &str, what: &str) {
        let elapsed = self.start.elapsed().as_secs_f64();
        if let Some(tty) = self.tty.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            // Bold green verb, right-aligned in twelve columns, as cargo prints its own.
            let _ = writeln!(
                tty,
                "\r\x1b[K\x1b[1;32m{verb:>12}\x1b[0m {} (device) {what}",
                self.krate
            );
        }
        self.log_line(&format!("{elapsed:8.1}s {verb} {what}"));
    }

    /// A line for the log alone.
    pub(crate) fn log_line(&self, line: &str) {
        if let Some(log) = self.log.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            let _ = writeln!(log, "{line}");
        }
    }

    /// Seconds since the build began.
    pub(crate) fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

/// `seconds` as `1m05s` or `12.3s`.
pub(crate) fn duration(seconds: f64) -> String {
    if seconds >= 60.0 {
        format!("{}m{:02}s", (seconds / 60.0) as u64, seconds as u64 % 60)
    } else {
        format!("{seconds:.1}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_logged_with_their_time() {
        let dir = std::env::temp_dir().join(format!("taskweave-progress-{}", std::process::id()));
        let log = dir.join("build.log");
        let progress = Progress::new("k", &log);
        progress.step("Assembling", "lu_f64 (6 kernels) [1/2]");
        progress.log_line("detail");
        drop(progress);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.contains("s Assembling lu_f64 (6 kernels) [1/2]\ndetail\n"),
            "{text}"
        );
        assert_eq!(duration(65.4), "1m05s");
        assert_eq!(duration(12.34), "12.3s");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
