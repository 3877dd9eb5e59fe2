//! Prometheus metrics, served as text at `/metrics`: HTTP requests and latency by route pattern,
//! open connections, live actors, stored chat messages, timer lateness, AI latency, and the
//! process's own memory and CPU (docs/operations.md lists them).

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use helpnow_actors::ports::{Ai, AiError, AiRequest, Telemetry};
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// Buckets for short waits: half a millisecond to five seconds.
const SHORT_BUCKETS: [f64; 13] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// Every metric of the server, registered in one registry.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    /// The process's own figures under their standard names (`process_*`, no prefix), as
    /// Prometheus's client libraries export them.
    process: Registry,
    pub http_requests: IntCounterVec,
    pub http_latency: HistogramVec,
    /// TCP connections the HTTP server holds open right now (WebSockets included).
    pub open_connections: IntGauge,
    /// Engine.IO connections of the real-time channel, over any transport.
    pub realtime_connections: IntGauge,
    /// Funnel conversation and member chat actors alive now, by kind.
    pub actors_live: IntGaugeVec,
    /// Chat messages stored by the actors (visitors', members' and the assistant's), by kind.
    pub messages_stored: IntCounterVec,
    /// Actors that found their record taken over by another holder (the store refused their
    /// write at an old epoch) and handed it over, by kind.
    pub actors_fenced: IntCounterVec,
    /// How long after they were due the actors' timers ran, by timer.
    pub timer_lateness: HistogramVec,
    /// How long a streamed AI piece waited between the provider and the member's sockets.
    pub piece_forwarding: Histogram,
    /// An AI call's time to its answer (or, streamed, to its first piece), by purpose and outcome.
    pub ai_latency: HistogramVec,
    /// How many calls each group commit of the live conversations' store calls held.
    pub store_batch_calls: Histogram,
    /// How long each group commit took, from its start to its commit.
    pub store_batch_duration: Histogram,
    /// The dashboard's journey steps, by what became of them (recorded, dropped, failed).
    pub journey_steps: IntCounterVec,
    /// Journey steps waiting in the recorder's queue.
    pub journey_steps_queued: IntGauge,
    /// Page views and browser events not recorded, by source (`page_view`, `event`) and reason
    /// (`over_limit`: past the per-address limit; `queue_full`: too many waiting to be written).
    pub analytics_dropped: IntCounterVec,
    /// Page views waiting to be written.
    pub analytics_queued: IntGauge,
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new_custom(Some("helpnow".to_owned()), None)?;
        let http_requests = IntCounterVec::new(
            Opts::new(
                "http_requests_total",
                "HTTP requests answered, by method, route pattern and status",
            ),
            &["method", "route", "status"],
        )?;
        let http_latency = HistogramVec::new(
            HistogramOpts::new(
                "http_request_duration_seconds",
                "Time to answer an HTTP request",
            )
            .buckets(SHORT_BUCKETS.to_vec()),
            &["method", "route"],
        )?;
        let actors_live = IntGaugeVec::new(
            Opts::new("actors_live", "Actors alive now, by kind (funnel, member)"),
            &["kind"],
        )?;
        let messages_stored = IntCounterVec::new(
            Opts::new(
                "chat_messages_stored_total",
                "Chat messages stored by the actors, by kind (funnel, member)",
            ),
            &["kind"],
        )?;
        let actors_fenced = IntCounterVec::new(
            Opts::new(
                "actors_fenced_total",
                "Actors that found their record taken over by another holder and handed it over, by kind (funnel)",
            ),
            &["kind"],
        )?;
        let timer_lateness = HistogramVec::new(
            HistogramOpts::new(
                "timer_lateness_seconds",
                "How long after it was due an actor's timer ran, by timer (typing, auto_checkout)",
            )
            .buckets(vec![
                0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
            ]),
            &["timer"],
        )?;
        let piece_forwarding = Histogram::with_opts(
            HistogramOpts::new(
                "ai_piece_forwarding_seconds",
                "How long a streamed AI piece waited from the provider's stream until queued on the member's sockets",
            )
            .buckets(vec![
                0.00005, 0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.25,
            ]),
        )?;
        let ai_latency = HistogramVec::new(
            HistogramOpts::new(
                "ai_latency_seconds",
                "An AI call's time to its answer, or to its first piece when streamed",
            )
            .buckets(vec![0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0]),
            &["purpose", "outcome"],
        )?;
        let store_batch_calls = Histogram::with_opts(
            HistogramOpts::new(
                "store_batch_calls",
                "How many store calls of the live conversations each group commit held",
            )
            .buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]),
        )?;
        let store_batch_duration = Histogram::with_opts(
            HistogramOpts::new(
                "store_batch_duration_seconds",
                "How long a group commit of the live conversations' store calls took",
            )
            .buckets(SHORT_BUCKETS.to_vec()),
        )?;
        let journey_steps = IntCounterVec::new(
            Opts::new(
                "journey_steps_total",
                "The dashboard's journey steps of the busy paths, by outcome (recorded, dropped: the queue was full, failed: not written)",
            ),
            &["outcome"],
        )?;
        let journey_steps_queued = IntGauge::new(
            "journey_steps_queued",
            "Journey steps waiting in the recorder's queue",
        )?;
        let analytics_dropped = IntCounterVec::new(
            Opts::new(
                "analytics_dropped_total",
                "Page views and browser events not recorded, by source and reason (over_limit: past the per-address limit; queue_full: too many waiting to be written)",
            ),
            &["source", "reason"],
        )?;
        let analytics_queued =
            IntGauge::new("analytics_queued", "Page views waiting to be written")?;
        let open_connections = IntGauge::new(
            "open_connections",
            "TCP connections open to the HTTP server",
        )?;
        let realtime_connections = IntGauge::new(
            "realtime_connections",
            "Real-time (Socket.IO) connections open, WebSocket and long-polling",
        )?;
        registry.register(Box::new(realtime_connections.clone()))?;
        registry.register(Box::new(http_requests.clone()))?;
        registry.register(Box::new(http_latency.clone()))?;
        registry.register(Box::new(open_connections.clone()))?;
        registry.register(Box::new(actors_live.clone()))?;
        registry.register(Box::new(messages_stored.clone()))?;
        registry.register(Box::new(actors_fenced.clone()))?;
        registry.register(Box::new(timer_lateness.clone()))?;
        registry.register(Box::new(piece_forwarding.clone()))?;
        registry.register(Box::new(ai_latency.clone()))?;
        registry.register(Box::new(store_batch_calls.clone()))?;
        registry.register(Box::new(store_batch_duration.clone()))?;
        registry.register(Box::new(journey_steps.clone()))?;
        registry.register(Box::new(journey_steps_queued.clone()))?;
        registry.register(Box::new(analytics_dropped.clone()))?;
        registry.register(Box::new(analytics_queued.clone()))?;
        registry.register(Box::new(CountedBelow::new(
            "cluster_events_dropped_total",
            "Events not sent to the other processes: dropped while their queue to Redis was full, or given up after Redis failed them for 3 s",
            crate::cluster::events_dropped,
        )?))?;
        let process = Registry::new();
        #[cfg(target_os = "linux")]
        process.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))?;
        Ok(Self {
            registry,
            process,
            http_requests,
            http_latency,
            open_connections,
            realtime_connections,
            actors_live,
            messages_stored,
            actors_fenced,
            timer_lateness,
            piece_forwarding,
            ai_latency,
            store_batch_calls,
            store_batch_duration,
            journey_steps,
            journey_steps_queued,
            analytics_dropped,
            analytics_queued,
        })
    }

    /// What the journey recorder reports after each chunk
    /// ([`crate::store::journeys::JourneyRecorder`]).
    pub fn journey_observer(&self) -> crate::store::journeys::RecorderObserver {
        let (steps, queued) = (
            self.journey_steps.clone(),
            self.journey_steps_queued.clone(),
        );
        Arc::new(move |report| {
            for (outcome, count) in [
                ("recorded", report.recorded),
                ("dropped", report.dropped),
                ("failed", report.failed),
            ] {
                steps.with_label_values(&[outcome]).inc_by(count);
            }
            queued.set(i64::try_from(report.queued).unwrap_or(i64::MAX));
        })
    }

    /// What the store's group commit reports of each batch ([`crate::store::batch::Batcher`]).
    pub fn batch_observer(&self) -> crate::store::batch::BatchObserver {
        let (calls, duration) = (
            self.store_batch_calls.clone(),
            self.store_batch_duration.clone(),
        );
        Arc::new(move |held, took| {
            calls.observe(held as f64);
            duration.observe(took.as_secs_f64());
        })
    }

    /// The figures the operator's dashboard shows live, read from the same metrics as
    /// `/metrics` (this process's own).
    pub fn live(&self) -> LiveFigures {
        use prometheus::core::Collector;
        let families = |collector: &dyn Collector| collector.collect();
        let mut figures = LiveFigures {
            funnel_conversations: self.actors_live.with_label_values(&["funnel"]).get(),
            member_chats: self.actors_live.with_label_values(&["member"]).get(),
            realtime_connections: self.realtime_connections.get(),
            ..LiveFigures::default()
        };
        for family in families(&self.messages_stored) {
            for metric in family.get_metric() {
                figures.messages_stored += metric.get_counter().get_value() as u64;
            }
        }
        for family in families(&self.ai_latency) {
            for metric in family.get_metric() {
                let count = metric.get_histogram().get_sample_count();
                let outcome = metric
                    .get_label()
                    .iter()
                    .find(|label| label.name() == "outcome")
                    .map(|label| label.value());
                match outcome {
                    Some(OUTCOME_OK) => figures.ai_calls += count,
                    Some(OUTCOME_ERROR) => {
                        figures.ai_calls += count;
                        figures.ai_failures += count;
                    }
                    Some(OUTCOME_OFFLINE) => figures.ai_scripted += count,
                    _ => {}
                }
            }
        }
        figures
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> Result<String, prometheus::Error> {
        let mut buffer = Vec::new();
        let mut families = self.registry.gather();
        families.extend(self.process.gather());
        TextEncoder::new().encode(&families, &mut buffer)?;
        String::from_utf8(buffer).map_err(|err| prometheus::Error::Msg(err.to_string()))
    }
}

/// A counter that a module below this one keeps as a plain number (`crate::cluster` counts its
/// dropped events so), read each time the metrics are gathered.
struct CountedBelow {
    desc: prometheus::core::Desc,
    read: fn() -> u64,
}

impl CountedBelow {
    fn new(name: &str, help: &str, read: fn() -> u64) -> Result<Self, prometheus::Error> {
        let desc = prometheus::core::Desc::new(
            name.to_owned(),
            help.to_owned(),
            Vec::new(),
            std::collections::HashMap::new(),
        )?;
        Ok(Self { desc, read })
    }
}

impl prometheus::core::Collector for CountedBelow {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        vec![&self.desc]
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        let mut counter = prometheus::proto::Counter::default();
        counter.set_value((self.read)() as f64);
        let mut metric = prometheus::proto::Metric::default();
        metric.set_counter(counter);
        let mut family = prometheus::proto::MetricFamily::default();
        family.set_name(self.desc.fq_name.clone());
        family.set_help(self.desc.help.clone());
        family.set_field_type(prometheus::proto::MetricType::COUNTER);
        family.set_metric(vec![metric]);
        vec![family]
    }
}

/// What the dashboard's live panel reads ([`Metrics::live`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveFigures {
    /// Funnel conversations open now (their actors).
    pub funnel_conversations: i64,
    /// Members' chats open now (their actors).
    pub member_chats: i64,
    pub realtime_connections: i64,
    /// Chat messages stored since the process started.
    pub messages_stored: u64,
    /// AI calls since the process started that the provider (or the offline helper) answered
    /// or failed (outcomes `ok` and `error`): what 'AI calls failed since start: X of Y' counts
    /// Y in. Neither the offline helper's designed refusals ([`Self::ai_scripted`]) nor calls
    /// their caller gave up first (`cancelled`) count here.
    pub ai_calls: u64,
    /// Of [`Self::ai_calls`], those that failed: a provider error or a time-out (outcome
    /// `error`).
    pub ai_failures: u64,
    /// Calls the offline helper declined by design (outcome `offline`, [`AiError::Offline`]:
    /// the funnels' replies and intro, which their scripts write instead). No failure.
    pub ai_scripted: u64,
}

impl Telemetry for Metrics {
    fn actor_started(&self, kind: &'static str) {
        self.actors_live.with_label_values(&[kind]).inc();
    }

    fn actor_stopped(&self, kind: &'static str) {
        self.actors_live.with_label_values(&[kind]).dec();
    }

    fn message_stored(&self, kind: &'static str) {
        self.messages_stored.with_label_values(&[kind]).inc();
    }

    fn fenced(&self, kind: &'static str) {
        self.actors_fenced.with_label_values(&[kind]).inc();
    }

    fn timer_fired(&self, timer: &'static str, late: Duration) {
        self.timer_lateness
            .with_label_values(&[timer])
            .observe(late.as_secs_f64());
    }

    fn piece_forwarded(&self, waited: Duration) {
        self.piece_forwarding.observe(waited.as_secs_f64());
    }
}

/// The AI provider, timed: each call's time to its answer (or first piece) goes to
/// `ai_latency_seconds`, labelled by purpose and outcome (`ok`; `error`: a provider error or a
/// time-out; `offline`: the offline helper declined by design, so the caller used its script;
/// `cancelled`: the caller gave up first). It wraps the provider itself, inside the offline
/// fallback (see `ai::provider`).
pub struct TimedAi {
    inner: Arc<dyn Ai>,
    latency: HistogramVec,
}

impl TimedAi {
    pub fn new(inner: Arc<dyn Ai>, metrics: &Metrics) -> Self {
        Self {
            inner,
            latency: metrics.ai_latency.clone(),
        }
    }
}

fn purpose_label(request: &AiRequest) -> String {
    serde_json::to_value(request.purpose)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// One call's timing: recorded once, with its outcome. A call dropped before any answer once
/// its time-out had passed was cut off by its caller's time-out (the callers give up after the
/// request's own `timeout`, as the provider does): a time-out, so `error`. Dropped sooner
/// (stopped), or a stream ended before any answer, it is `cancelled`.
struct Timing {
    latency: HistogramVec,
    purpose: String,
    started: Instant,
    timeout: Duration,
    recorded: bool,
}

impl Timing {
    fn new(latency: &HistogramVec, request: &AiRequest) -> Self {
        Self {
            latency: latency.clone(),
            purpose: purpose_label(request),
            started: Instant::now(),
            timeout: request.timeout,
            recorded: false,
        }
    }

    fn record(&mut self, outcome: &str) {
        if !std::mem::replace(&mut self.recorded, true) {
            self.latency
                .with_label_values(&[&self.purpose, outcome])
                .observe(self.started.elapsed().as_secs_f64());
        }
    }
}

impl Drop for Timing {
    fn drop(&mut self) {
        if self.started.elapsed() >= self.timeout {
            self.record(OUTCOME_ERROR);
        } else {
            self.record("cancelled");
        }
    }
}

/// An answer (or a streamed answer's first piece).
const OUTCOME_OK: &str = "ok";
/// A provider error or a time-out: a failed AI call.
const OUTCOME_ERROR: &str = "error";
/// The offline helper declined by design ([`AiError::Offline`]): the caller's script answers.
const OUTCOME_OFFLINE: &str = "offline";

fn outcome<T>(result: &Result<T, AiError>) -> &'static str {
    match result {
        Ok(_) => OUTCOME_OK,
        Err(AiError::Offline) => OUTCOME_OFFLINE,
        Err(_) => OUTCOME_ERROR,
    }
}

impl Ai for TimedAi {
    fn complete(&self, request: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
        let mut timing = Timing::new(&self.latency, &request);
        self.inner
            .complete(request)
            .inspect(move |result| timing.record(outcome(result)))
            .boxed()
    }

    fn stream(&self, request: AiRequest) -> BoxStream<'static, Result<String, AiError>> {
        let mut timing = Timing::new(&self.latency, &request);
        self.inner
            .stream(request)
            .inspect(move |piece| timing.record(outcome(piece)))
            .boxed()
    }
}

/// Counts a connection while it is open: the server keeps one in each connection's extensions,
/// and dropping it with the connection takes the count down again.
pub struct ConnectionGuard(IntGauge);

impl ConnectionGuard {
    pub fn open(gauge: &IntGauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Standard methods by name; anything else is `OTHER`, so clients cannot mint label values.
fn method_label(method: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// Middleware: one count and one latency observation per request, labelled by the matched route
/// pattern (never the raw path, which would let clients create unbounded label values).
pub async fn track_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let metrics = req.app_data::<web::Data<Arc<Metrics>>>().cloned();
    let method = method_label(req.method());
    let started = Instant::now();
    let response = next.call(req).await?;
    if let Some(metrics) = metrics {
        let route = response
            .request()
            .match_pattern()
            .unwrap_or_else(|| "unmatched".to_owned());
        let status = response.status().as_u16().to_string();
        metrics
            .http_requests
            .with_label_values(&[method, &route, &status])
            .inc();
        metrics
            .http_latency
            .with_label_values(&[method, &route])
            .observe(started.elapsed().as_secs_f64());
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use helpnow_actors::ports::{AiMessage, AiPurpose};

    use super::*;

    /// A provider that answers each purpose as it is told: an answer, an error, or never.
    struct Scripted;

    impl Ai for Scripted {
        fn complete(&self, request: AiRequest) -> BoxFuture<'static, Result<String, AiError>> {
            match request.purpose {
                AiPurpose::MemberChat => {
                    futures_util::future::ready(Ok("a guide".to_owned())).boxed()
                }
                AiPurpose::FunnelFollowUp | AiPurpose::FunnelIntro => {
                    futures_util::future::ready(Err(AiError::Offline)).boxed()
                }
                AiPurpose::IssueSummary => futures_util::future::ready(Err(AiError::Failed(
                    "the service answered 500".to_owned(),
                )))
                .boxed(),
                AiPurpose::TaskHelp | AiPurpose::FunnelSolution => {
                    futures_util::future::pending().boxed()
                }
            }
        }
    }

    fn request(purpose: AiPurpose, timeout: Duration) -> AiRequest {
        AiRequest {
            purpose,
            messages: vec![AiMessage::user("my printer is offline")],
            timeout,
        }
    }

    #[tokio::test]
    async fn the_offline_helpers_designed_refusals_are_scripted_not_failed_and_time_outs_fail() {
        let metrics = Metrics::new().expect("metrics");
        let ai = TimedAi::new(Arc::new(Scripted), &metrics);
        let second = Duration::from_secs(1);
        // A funnel conversation on the offline helper: its intro and follow-ups are declined so
        // the script writes them; the member's chat is answered.
        for purpose in [
            AiPurpose::FunnelIntro,
            AiPurpose::FunnelFollowUp,
            AiPurpose::FunnelFollowUp,
        ] {
            assert_eq!(
                ai.complete(request(purpose, second)).await,
                Err(AiError::Offline)
            );
        }
        let pieces: Vec<_> = ai
            .stream(request(AiPurpose::FunnelFollowUp, second))
            .collect()
            .await;
        assert_eq!(pieces, [Err(AiError::Offline)]);
        assert!(
            ai.complete(request(AiPurpose::MemberChat, second))
                .await
                .is_ok()
        );
        assert_eq!(
            metrics.live(),
            LiveFigures {
                ai_calls: 1,
                ai_failures: 0,
                ai_scripted: 4,
                ..LiveFigures::default()
            }
        );

        // A provider error fails; so does a call its caller cut off at its time-out; one
        // stopped sooner is neither an answer nor a failure.
        assert!(
            ai.complete(request(AiPurpose::IssueSummary, second))
                .await
                .is_err()
        );
        let short = Duration::from_millis(20);
        let cut_off =
            tokio::time::timeout(short, ai.complete(request(AiPurpose::TaskHelp, short))).await;
        assert!(cut_off.is_err(), "never answers");
        let stopped = tokio::time::timeout(
            short,
            ai.complete(request(AiPurpose::FunnelSolution, second)),
        )
        .await;
        assert!(stopped.is_err(), "never answers");
        assert_eq!(
            metrics.live(),
            LiveFigures {
                ai_calls: 3,
                ai_failures: 2,
                ai_scripted: 4,
                ..LiveFigures::default()
            }
        );
        let text = metrics.render().expect("renders");
        for line in [
            "helpnow_ai_latency_seconds_count{outcome=\"offline\",purpose=\"funnel_follow_up\"} 3",
            "helpnow_ai_latency_seconds_count{outcome=\"error\",purpose=\"task_help\"} 1",
            "helpnow_ai_latency_seconds_count{outcome=\"cancelled\",purpose=\"funnel_solution\"} 1",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
