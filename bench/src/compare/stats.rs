//! Latency samples: percentiles and how to print them.

use std::time::Duration;

/// Latency samples in nanoseconds, sorted on demand.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    ns: Vec<u64>,
    sorted: bool,
}

impl Samples {
    /// Adds one sample.
    pub fn push(&mut self, d: Duration) {
        self.ns.push(d.as_nanos().min(u128::from(u64::MAX)) as u64);
        self.sorted = false;
    }

    /// Adds every sample of `other`.
    pub fn extend(&mut self, other: Samples) {
        self.ns.extend(other.ns);
        self.sorted = false;
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.ns.len()
    }

    /// The `p`-th percentile (0 to 100), nearest rank; `None` without samples.
    pub fn percentile(&mut self, p: f64) -> Option<Duration> {
        if self.ns.is_empty() {
            return None;
        }
        if !self.sorted {
            self.ns.sort_unstable();
            self.sorted = true;
        }
        let rank = ((p / 100.0) * self.ns.len() as f64).ceil() as usize;
        let i = rank.clamp(1, self.ns.len()) - 1;
        Some(Duration::from_nanos(self.ns[i]))
    }

    /// The median.
    pub fn p50(&mut self) -> Option<Duration> {
        self.percentile(50.0)
    }

    /// The 99th percentile.
    pub fn p99(&mut self) -> Option<Duration> {
        self.percentile(99.0)
    }
}

/// A duration for a table: µs below 1 ms, else ms.
pub fn show(d: Option<Duration>) -> String {
    match d {
        None => "–".into(),
        Some(d) if d < Duration::from_millis(1) => format!("{:.0} µs", d.as_secs_f64() * 1e6),
        Some(d) if d < Duration::from_millis(100) => format!("{:.2} ms", d.as_secs_f64() * 1e3),
        Some(d) => format!("{:.0} ms", d.as_secs_f64() * 1e3),
    }
}

/// A rate for a table, e.g. `12,345`.
pub fn show_rate(per_sec: f64) -> String {
    let n = per_sec.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_formats() {
        let mut s = Samples::default();
        for i in 1..=100 {
            s.push(Duration::from_micros(i));
        }
        assert_eq!(s.p50(), Some(Duration::from_micros(50)));
        assert_eq!(s.p99(), Some(Duration::from_micros(99)));
        assert_eq!(show(Some(Duration::from_micros(42))), "42 µs");
        assert_eq!(show(Some(Duration::from_micros(4200))), "4.20 ms");
        assert_eq!(show_rate(1234567.4), "1,234,567");
        assert_eq!(show_rate(999.0), "999");
    }
}
