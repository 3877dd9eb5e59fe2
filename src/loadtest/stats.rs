//! What a load run measured: counters, latency histograms, errors by kind, and the report (a human
//! summary and one JSON object).
//!
//! Latencies go into HdrHistograms (microseconds, three significant figures), one set per shard:
//! each worker thread records into its own shard, so thousands of clients never queue on one lock,
//! and the report (or the progress line) merges the shards. Memory stays fixed however long the run.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{Value, json};

/// Latency shards: more than the generator's worker threads.
const SHARDS: usize = 16;

/// This thread's shard (threads take them in turn as they first record).
fn shard_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|shard| *shard)
}

/// A histogram of microseconds, three significant figures, growing as larger values come.
fn new_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("three significant figures are within HdrHistogram's range")
}

type Series = BTreeMap<&'static str, Histogram<u64>>;

/// Shared by every virtual client of a run.
#[derive(Default)]
pub struct Stats {
    pub connections_opened: AtomicU64,
    pub connections_failed: AtomicU64,
    pub messages_sent: AtomicU64,
    pub messages_acked: AtomicU64,
    pub replies: AtomicU64,
    /// The experiment scenario's visitors.
    pub visits: Visits,
    shards: [Mutex<Series>; SHARDS],
    errors: Mutex<BTreeMap<String, u64>>,
}

/// What became of the experiment scenario's visitors (`super::experiment`).
#[derive(Default)]
pub struct Visits {
    /// Visitors started, each with a new visitor id.
    pub started: AtomicU64,
    /// Sent by the ad's page to the refundable-fee funnel (`/Chat-Help-2`).
    pub refundable: AtomicU64,
    /// Sent by the ad's page to the help form (`/get-help`), which the generator does not fill in.
    pub help_form: AtomicU64,
    /// Whose conversation named no experiment.
    pub outside: AtomicU64,
    arms: Mutex<BTreeMap<String, ArmCounts>>,
}

/// One experiment arm's visitors, as the generator saw them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArmCounts {
    /// Visitors whose conversation named the arm: each a new visitor, so each one exposure.
    pub visitors: u64,
    /// Of them, those who reached the final message (and drew whether to pay).
    pub finished: u64,
    /// Of them, those who paid the checkout.
    pub paid: u64,
}

impl Visits {
    /// Starts a visitor unless `limit` visitors have been started already.
    pub fn take(&self, limit: Option<u64>) -> bool {
        self.started
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |started| {
                (limit.is_none_or(|limit| started < limit)).then_some(started + 1)
            })
            .is_ok()
    }

    /// Counts something of arm `key`'s visitors.
    pub fn arm(&self, key: &str, count: impl FnOnce(&mut ArmCounts)) {
        let mut arms = self
            .arms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        count(arms.entry(key.to_owned()).or_default());
    }

    /// Each arm's counts so far.
    pub fn arms(&self) -> BTreeMap<String, ArmCounts> {
        self.arms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The report's `experiment` section: the visitors, and per arm (every arm seen or given a
    /// rate) its counts, its target rate from `convert` and its paid share of visitors.
    fn to_json(&self, convert: &BTreeMap<String, f64>) -> Value {
        let mut counted = self.arms();
        for arm in convert.keys() {
            counted.entry(arm.clone()).or_default();
        }
        let arms: serde_json::Map<String, Value> = counted
            .into_iter()
            .map(|(key, counts)| {
                let share = (counts.visitors > 0)
                    .then(|| (counts.paid as f64 / counts.visitors as f64 * 1e4).round() / 1e4);
                let arm = json!({
                    "visitors": counts.visitors,
                    "finished": counts.finished,
                    "paid": counts.paid,
                    "target_rate": convert.get(&key).copied().unwrap_or(0.0),
                    "paid_share": share,
                });
                (key, arm)
            })
            .collect();
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        json!({
            "visitors": load(&self.started),
            "refundable": load(&self.refundable),
            "help_form": load(&self.help_form),
            "outside": load(&self.outside),
            "arms": arms,
        })
    }
}

impl Stats {
    pub fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A latency sample of `series`.
    pub fn sample(&self, series: &'static str, value: Duration) {
        let micros = u64::try_from(value.as_micros()).unwrap_or(u64::MAX);
        self.shards[shard_index()]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(series)
            .or_insert_with(new_histogram)
            // An auto-resizing histogram takes any value (saturating_record would clamp to its
            // current size instead).
            .record(micros.max(1))
            .unwrap_or_else(|error| tracing::warn!(%error, series, "a latency was not recorded"));
    }

    /// Every shard's histograms of each series, merged.
    fn merged(&self) -> Series {
        let mut merged = Series::new();
        for shard in &self.shards {
            let shard = shard
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (series, histogram) in shard.iter() {
                let into = merged.entry(series).or_insert_with(new_histogram);
                if let Err(error) = into.add(histogram) {
                    tracing::warn!(%error, series, "a latency histogram could not be merged");
                }
            }
        }
        merged
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

    /// Each series' percentiles so far.
    pub fn latencies(&self) -> BTreeMap<&'static str, Percentiles> {
        self.merged()
            .iter()
            .filter_map(|(series, histogram)| {
                Some((*series, Percentiles::of_histogram(histogram)?))
            })
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
    /// From a histogram of microseconds (HdrHistogram's quantiles: the value at or above the
    /// fraction of all samples, to three significant figures).
    pub fn of_histogram(histogram: &Histogram<u64>) -> Option<Self> {
        if histogram.is_empty() {
            return None;
        }
        let ms = |micros: u64| micros as f64 / 1000.0;
        Some(Self {
            count: usize::try_from(histogram.len()).unwrap_or(usize::MAX),
            p50: ms(histogram.value_at_quantile(0.50)),
            p95: ms(histogram.value_at_quantile(0.95)),
            p99: ms(histogram.value_at_quantile(0.99)),
            p999: ms(histogram.value_at_quantile(0.999)),
            max: ms(histogram.max()),
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
    /// Funnel and member actors alive, all kinds together.
    pub actors_live: Option<f64>,
    /// Chat messages the actors stored since the server started.
    pub messages_stored: Option<f64>,
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
        // A labelled metric: the sum over its labels.
        let sum = |name: &str| {
            let prefix = format!("{name}{{");
            let values: Vec<f64> = samples(metrics)
                .filter(|(series, _)| series.starts_with(&prefix))
                .map(|(_, value)| value)
                .collect();
            (!values.is_empty()).then(|| values.iter().sum())
        };
        Self {
            rss_bytes: value("process_resident_memory_bytes"),
            cpu_seconds: value("process_cpu_seconds_total"),
            realtime_connections: value("realtime_connections"),
            actors_live: sum("helpnow_actors_live"),
            messages_stored: sum("helpnow_chat_messages_stored_total"),
        }
    }
}

/// Each sample line of Prometheus text: its series (name and labels) and value.
fn samples(metrics: &str) -> impl Iterator<Item = (&str, f64)> {
    metrics
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            Some((series, value.trim().parse().ok()?))
        })
}

/// A histogram's observations over the run (the `_bucket` counts after minus before), read as
/// "p% of observations were at most this bucket's bound".
#[derive(Debug, Clone, PartialEq)]
pub struct BucketQuantiles {
    pub count: f64,
    /// Upper bounds in milliseconds (infinite when past the last bucket).
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
}

impl BucketQuantiles {
    /// `series` is the bucket series up to its `le` label, such as
    /// `helpnow_timer_lateness_seconds_bucket{timer="typing",`; its bounds are seconds.
    pub fn between(before: &str, after: &str, series: &str) -> Option<Self> {
        Self::scaled(before, after, series, 1000.0)
    }

    /// Like [`BucketQuantiles::between`], for bounds in `unit` (1000 for seconds, 1 for a count).
    fn scaled(before: &str, after: &str, series: &str, unit: f64) -> Option<Self> {
        let buckets = |text: &str| -> Vec<(f64, f64)> {
            let mut found: Vec<(f64, f64)> = samples(text)
                .filter_map(|(name, value)| {
                    let le = name.strip_prefix(series)?.strip_prefix("le=\"")?;
                    let le = le.split('"').next()?;
                    let bound = if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse().ok()?
                    };
                    Some((bound, value))
                })
                .collect();
            found.sort_by(|a, b| a.0.total_cmp(&b.0));
            found
        };
        let after = buckets(after);
        let before = buckets(before);
        let counts: Vec<(f64, f64)> = after
            .iter()
            .map(|(bound, count)| {
                let earlier = before
                    .iter()
                    .find(|(b, _)| b == bound)
                    .map_or(0.0, |(_, c)| *c);
                (*bound, count - earlier)
            })
            .collect();
        let total = counts.last()?.1;
        if total <= 0.0 {
            return None;
        }
        let at = |q: f64| {
            counts
                .iter()
                .find(|(_, count)| *count >= q * total)
                .map_or(f64::INFINITY, |(bound, _)| bound * unit)
        };
        Some(Self {
            count: total,
            p50: at(0.5),
            p99: at(0.99),
            p999: at(0.999),
        })
    }

    fn to_json(&self) -> Value {
        let bound = |ms: f64| {
            if ms.is_finite() {
                json!(ms)
            } else {
                json!("+Inf")
            }
        };
        json!({
            "count": self.count,
            "p50_at_most": bound(self.p50),
            "p99_at_most": bound(self.p99),
            "p999_at_most": bound(self.p999),
        })
    }
}

/// What the server's own histograms saw during the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerTimers {
    pub typing_late: Option<BucketQuantiles>,
    pub checkout_late: Option<BucketQuantiles>,
    pub piece_forwarding: Option<BucketQuantiles>,
    /// How many calls each of the store's group commits held (a count, not milliseconds).
    pub batch_calls: Option<BucketQuantiles>,
    pub batch_duration: Option<BucketQuantiles>,
}

impl ServerTimers {
    pub fn between(before: &str, after: &str) -> Self {
        Self {
            typing_late: BucketQuantiles::between(
                before,
                after,
                "helpnow_timer_lateness_seconds_bucket{timer=\"typing\",",
            ),
            checkout_late: BucketQuantiles::between(
                before,
                after,
                "helpnow_timer_lateness_seconds_bucket{timer=\"auto_checkout\",",
            ),
            piece_forwarding: BucketQuantiles::between(
                before,
                after,
                "helpnow_ai_piece_forwarding_seconds_bucket{",
            ),
            batch_calls: BucketQuantiles::scaled(
                before,
                after,
                "helpnow_store_batch_calls_bucket{",
                1.0,
            ),
            batch_duration: BucketQuantiles::between(
                before,
                after,
                "helpnow_store_batch_duration_seconds_bucket{",
            ),
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
    /// Just before the clients leave (a tenth of the run, at most a second, before its end).
    pub held: ServerUse,
    pub server_timers: ServerTimers,
    /// The experiment scenario's target rate per arm (`--convert`); `None` for the others.
    pub convert: Option<BTreeMap<String, f64>>,
}

impl Report {
    pub fn to_json(&self, stats: &Stats) -> Value {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let mut latencies = serde_json::Map::new();
        for (series, p) in stats.latencies() {
            latencies.insert(series.to_owned(), p.to_json());
        }
        let cpu = match (self.before.cpu_seconds, self.after.cpu_seconds) {
            (Some(before), Some(after)) => Some(after - before),
            _ => None,
        };
        let opened = load(&stats.connections_opened);
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
            "server_rss_held_bytes": self.held.rss_bytes,
            "server_rss_held_per_connection_bytes": match (self.before.rss_bytes, self.held.rss_bytes) {
                (Some(before), Some(held)) => Some(((held - before) / opened.max(1) as f64).round()),
                _ => None,
            },
            "server_cpu_seconds": cpu,
            "server_realtime_connections_peak": self.peak.realtime_connections,
            "server_actors_live_peak": self.peak.actors_live,
            "server_messages_stored": match (self.before.messages_stored, self.after.messages_stored) {
                (Some(before), Some(after)) => Some(after - before),
                (None, after) => after,
                _ => None,
            },
        });
        if let Value::Object(map) = &mut report {
            for (series, value) in latencies {
                map.insert(series, value);
            }
            if let Some(convert) = &self.convert {
                map.insert("experiment".to_owned(), stats.visits.to_json(convert));
            }
            for (key, histogram) in [
                (
                    "server_typing_timer_late_ms",
                    &self.server_timers.typing_late,
                ),
                (
                    "server_checkout_timer_late_ms",
                    &self.server_timers.checkout_late,
                ),
                (
                    "server_piece_forwarding_ms",
                    &self.server_timers.piece_forwarding,
                ),
                ("server_store_batch_calls", &self.server_timers.batch_calls),
                ("server_store_batch_ms", &self.server_timers.batch_duration),
            ] {
                if let Some(histogram) = histogram {
                    map.insert(key.to_owned(), histogram.to_json());
                }
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
        let experiment = &json["experiment"];
        if !experiment.is_null() {
            out.push_str(&format!(
                "  {:<22} {} (sent to the refundable-fee funnel {}, to the help form {}, in no experiment {})\n",
                "visitors",
                experiment["visitors"],
                experiment["refundable"],
                experiment["help_form"],
                experiment["outside"],
            ));
            for (key, arm) in experiment["arms"].as_object().into_iter().flatten() {
                let percent = |value: &Value| {
                    value
                        .as_f64()
                        .map_or("-".to_owned(), |share| format!("{:.1} %", share * 100.0))
                };
                out.push_str(&format!(
                    "  {:<22} {} visitors (exposed), {} to the final message, {} paid: {} (target {})\n",
                    format!("arm {key}"),
                    arm["visitors"],
                    arm["finished"],
                    arm["paid"],
                    percent(&arm["paid_share"]),
                    percent(&arm["target_rate"]),
                ));
            }
        }
        for (series, p) in stats.latencies() {
            out.push_str(&format!(
                    "  {series:<22} p50 {:.2} ms  p95 {:.2} ms  p99 {:.2} ms  p999 {:.2} ms  max {:.2} ms  (n={})\n",
                    p.p50, p.p95, p.p99, p.p999, p.max, p.count
                ));
        }
        if let (Some(before), Some(peak)) = (self.before.rss_bytes, self.peak.rss_bytes) {
            out.push_str(&format!(
                "  server memory          {:.1} MiB before, {:.1} MiB at peak",
                before / 1048576.0,
                peak / 1048576.0,
            ));
            if let (Some(held), Some(each)) = (
                self.held.rss_bytes,
                json["server_rss_held_per_connection_bytes"].as_f64(),
            ) {
                out.push_str(&format!(
                    ", {:.1} MiB held before the end ({:.0} bytes per connection opened)",
                    held / 1048576.0,
                    each
                ));
            }
            out.push('\n');
        }
        if let Some(cpu) = json["server_cpu_seconds"].as_f64() {
            out.push_str(&format!("  server cpu             {cpu:.2} s\n"));
        }
        for key in ["server_actors_live_peak", "server_messages_stored"] {
            if !json[key].is_null() {
                out.push_str(&format!("  {key:<22} {}\n", json[key]));
            }
        }
        for key in [
            "server_typing_timer_late_ms",
            "server_checkout_timer_late_ms",
            "server_piece_forwarding_ms",
            "server_store_batch_calls",
            "server_store_batch_ms",
        ] {
            let h = &json[key];
            let unit = if key.ends_with("_ms") { " ms" } else { "" };
            if !h.is_null() {
                out.push_str(&format!(
                    "  {key:<22} p50 <= {}{unit}  p99 <= {}{unit}  p999 <= {}{unit}  (n={}, the server's histogram)\n",
                    h["p50_at_most"], h["p99_at_most"], h["p999_at_most"], h["count"]
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_are_merged_from_every_threads_histograms() {
        let stats = std::sync::Arc::new(Stats::default());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let stats = stats.clone();
                std::thread::spawn(move || {
                    for ms in 1..=250u64 {
                        stats.sample("ack_ms", Duration::from_millis(t * 250 + ms));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("recorded");
        }
        let p = stats.latencies()["ack_ms"];
        assert_eq!(p.count, 1000);
        // Three significant figures.
        assert!((p.p50 - 500.0).abs() <= 0.5, "{p:?}");
        assert!((p.p99 - 990.0).abs() <= 1.0, "{p:?}");
        assert!((p.max - 1000.0).abs() <= 1.0, "{p:?}");
    }

    #[test]
    fn the_experiment_section_counts_each_arm_against_its_target() {
        let stats = Stats::default();
        assert!(stats.visits.take(Some(3)) && stats.visits.take(Some(3)));
        assert!(stats.visits.take(Some(3)) && !stats.visits.take(Some(3)));
        assert!(stats.visits.take(None));
        for paid in [true, false, false, false] {
            stats.visits.arm("b", |counts| {
                counts.visitors += 1;
                counts.finished += 1;
                counts.paid += u64::from(paid);
            });
        }
        Stats::count(&stats.visits.outside);
        let convert = BTreeMap::from([("a".to_owned(), 0.1), ("b".to_owned(), 0.2)]);
        let section = stats.visits.to_json(&convert);
        assert_eq!(section["visitors"], 4);
        assert_eq!(
            (&section["outside"], &section["help_form"]),
            (&json!(1), &json!(0))
        );
        assert_eq!(
            section["arms"],
            json!({
                "a": { "visitors": 0, "finished": 0, "paid": 0, "target_rate": 0.1, "paid_share": null },
                "b": { "visitors": 4, "finished": 4, "paid": 1, "target_rate": 0.2, "paid_share": 0.25 },
            })
        );
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
        let labelled = "helpnow_actors_live{kind=\"funnel\"} 40\n\
                        helpnow_actors_live{kind=\"member\"} 2\n";
        assert_eq!(ServerUse::parse(labelled).actors_live, Some(42.0));
    }

    #[test]
    fn histogram_quantiles_are_read_from_the_buckets_the_run_added() {
        let series = "helpnow_timer_lateness_seconds_bucket{timer=\"typing\",";
        let text = |counts: [u32; 4]| {
            format!(
                "{series}le=\"0.001\"}} {}\n{series}le=\"0.005\"}} {}\n{series}le=\"0.01\"}} {}\n{series}le=\"+Inf\"}} {}\n\
                 helpnow_timer_lateness_seconds_bucket{{timer=\"auto_checkout\",le=\"0.001\"}} 7\n",
                counts[0], counts[1], counts[2], counts[3]
            )
        };
        // Before: 10 fast ones. The run adds 900 under 1 ms, 95 under 5 ms, 4 under 10 ms, 1 past.
        let before = text([10, 10, 10, 10]);
        let after = text([910, 1005, 1009, 1010]);
        let q = BucketQuantiles::between(&before, &after, series).expect("observations");
        assert_eq!(q.count, 1000.0);
        assert_eq!((q.p50, q.p99, q.p999), (1.0, 5.0, 10.0));
        assert!(BucketQuantiles::between(&after, &after, series).is_none());
        assert!(BucketQuantiles::between("", "", series).is_none());
    }
}
