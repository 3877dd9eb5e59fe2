//! What a load run measured: counters, latency samples, errors by kind, and the report (a human
//! summary and one JSON object).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

/// Shared by every virtual client of a run.
#[derive(Default)]
pub struct Stats {
    pub connections_opened: AtomicU64,
    pub connections_failed: AtomicU64,
    pub messages_sent: AtomicU64,
    pub messages_acked: AtomicU64,
    pub replies: AtomicU64,
    samples: Mutex<BTreeMap<&'static str, Vec<f64>>>,
    errors: Mutex<BTreeMap<String, u64>>,
}

impl Stats {
    pub fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A latency sample of `series` (kept in milliseconds).
    pub fn sample(&self, series: &'static str, value: Duration) {
        self.samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(series)
            .or_default()
            .push(value.as_secs_f64() * 1000.0);
    }

    pub fn error(&self, kind: impl Into<String>) {
        *self
            .errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(kind.into())
            .or_default() += 1;
    }

    pub fn error_count(&self) -> u64 {
        self.errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .sum()
    }

    fn percentiles(&self, series: &str) -> Option<Percentiles> {
        let samples = self
            .samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Percentiles::of(samples.get(series)?)
    }

    fn series(&self) -> Vec<&'static str> {
        self.samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .copied()
            .collect()
    }

    fn errors(&self) -> BTreeMap<String, u64> {
        self.errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// p50/p95/p99/p999 and the largest, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    pub count: usize,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(samples: &[f64]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        // Nearest rank: the smallest sample at or above the fraction of all samples.
        let at = |fraction: f64| {
            let rank = (fraction * sorted.len() as f64).ceil() as usize;
            sorted[rank.clamp(1, sorted.len()) - 1]
        };
        Some(Self {
            count: sorted.len(),
            p50: at(0.50),
            p95: at(0.95),
            p99: at(0.99),
            p999: at(0.999),
            max: sorted[sorted.len() - 1],
        })
    }

    fn to_json(self) -> Value {
        let round = |ms: f64| (ms * 1000.0).round() / 1000.0;
        json!({
            "count": self.count, "p50": round(self.p50), "p95": round(self.p95),
            "p99": round(self.p99), "p999": round(self.p999), "max": round(self.max),
        })
    }
}

/// The server's resource use, from its `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerUse {
    pub rss_bytes: Option<f64>,
    pub cpu_seconds: Option<f64>,
    pub realtime_connections: Option<f64>,
}

impl ServerUse {
    /// Reads the process collector's and the real-time gauge's values from Prometheus text.
    pub fn parse(metrics: &str) -> Self {
        let value = |suffix: &str| {
            metrics
                .lines()
                .filter(|line| !line.starts_with('#'))
                .find_map(|line| {
                    let (name, value) = line.split_once(' ')?;
                    name.ends_with(suffix).then(|| value.trim().parse().ok())?
                })
        };
        Self {
            rss_bytes: value("process_resident_memory_bytes"),
            cpu_seconds: value("process_cpu_seconds_total"),
            realtime_connections: value("realtime_connections"),
        }
    }
}

/// The whole run, as printed.
pub struct Report {
    pub scenario: String,
    pub connections: u64,
    pub elapsed: Duration,
    pub before: ServerUse,
    pub peak: ServerUse,
    pub after: ServerUse,
}

impl Report {
    pub fn to_json(&self, stats: &Stats) -> Value {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let mut latencies = serde_json::Map::new();
        for series in stats.series() {
            if let Some(p) = stats.percentiles(series) {
                latencies.insert(series.to_owned(), p.to_json());
            }
        }
        let cpu = match (self.before.cpu_seconds, self.after.cpu_seconds) {
            (Some(before), Some(after)) => Some(after - before),
            _ => None,
        };
        let mut report = json!({
            "scenario": self.scenario,
            "connections": self.connections,
            "elapsed_s": (self.elapsed.as_secs_f64() * 10.0).round() / 10.0,
            "connections_opened": load(&stats.connections_opened),
            "connections_failed": load(&stats.connections_failed),
            "messages_sent": load(&stats.messages_sent),
            "messages_acked": load(&stats.messages_acked),
            "replies": load(&stats.replies),
            "errors": stats.error_count(),
            "errors_by_kind": stats.errors(),
            "server_rss_bytes": self.peak.rss_bytes,
            "server_rss_before_bytes": self.before.rss_bytes,
            "server_cpu_seconds": cpu,
            "server_realtime_connections_peak": self.peak.realtime_connections,
        });
        if let Value::Object(map) = &mut report {
            for (series, value) in latencies {
                map.insert(series, value);
            }
        }
        report
    }

    /// The human summary (the JSON holds the same figures).
    pub fn summary(&self, stats: &Stats) -> String {
        let json = self.to_json(stats);
        let mut out = format!(
            "scenario {} with {} connections, {:.1} s\n",
            self.scenario,
            self.connections,
            self.elapsed.as_secs_f64()
        );
        for key in [
            "connections_opened",
            "connections_failed",
            "messages_sent",
            "messages_acked",
            "replies",
            "errors",
        ] {
            out.push_str(&format!("  {key:<22} {}\n", json[key]));
        }
        for (kind, count) in stats.errors() {
            out.push_str(&format!("    error {kind}: {count}\n"));
        }
        for series in stats.series() {
            if let Some(p) = stats.percentiles(series) {
                out.push_str(&format!(
                    "  {series:<22} p50 {:.2} ms  p95 {:.2} ms  p99 {:.2} ms  p999 {:.2} ms  max {:.2} ms  (n={})\n",
                    p.p50, p.p95, p.p99, p.p999, p.max, p.count
                ));
            }
        }
        if let (Some(before), Some(peak)) = (self.before.rss_bytes, self.peak.rss_bytes) {
            let held = self.peak.realtime_connections.unwrap_or(0.0).max(1.0);
            out.push_str(&format!(
                "  server memory          {:.1} MiB before, {:.1} MiB at peak ({:.0} bytes per connection held)\n",
                before / 1048576.0,
                peak / 1048576.0,
                (peak - before) / held
            ));
        }
        if let Some(cpu) = json["server_cpu_seconds"].as_f64() {
            out.push_str(&format!("  server cpu             {cpu:.2} s\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<f64> = (1..=1000).map(f64::from).collect();
        let p = Percentiles::of(&samples).expect("some");
        assert_eq!(
            (p.p50, p.p95, p.p99, p.p999, p.max),
            (500.0, 950.0, 990.0, 999.0, 1000.0)
        );
        assert_eq!(Percentiles::of(&[]), None);
        let one = Percentiles::of(&[3.0]).expect("some");
        assert_eq!((one.p50, one.p999), (3.0, 3.0));
    }

    #[test]
    fn the_server_use_comes_from_prometheus_text() {
        let text = "# HELP helpnow_process_resident_memory_bytes Resident memory size in bytes.\n\
                    helpnow_process_resident_memory_bytes 5.24288e+07\n\
                    helpnow_process_cpu_seconds_total 12.5\n\
                    helpnow_realtime_connections 300\n";
        let used = ServerUse::parse(text);
        assert_eq!(used.rss_bytes, Some(52_428_800.0));
        assert_eq!(used.cpu_seconds, Some(12.5));
        assert_eq!(used.realtime_connections, Some(300.0));
        assert_eq!(ServerUse::parse(""), ServerUse::default());
    }
}
