//! The operator's dashboard's figures (migration 0012): each visitor's journey through a funnel,
//! and the daily roll-ups (`analytics_daily`) that `fn::journey` (one step, in the money path's
//! own transactions) and [`record`] (a chunk, counted in bulk: [`chunk`]) keep up to date as steps
//! arrive.
//! The dashboard sums roll-up rows, never events (packed per breakdown once a day is two days
//! old: `store::rollups`), so its answer does not grow with the traffic.

use surrealdb::types::{Datetime, SurrealValue};

use super::Db;
use crate::domain::billing::CheckoutSource;
use crate::domain::journey::Step;

mod chunk;

/// One step of one visitor's journey, as `fn::journey` takes it.
#[derive(Debug, Clone, SurrealValue)]
pub struct JourneyStep {
    visitor: String,
    funnel: String,
    step: String,
    once: bool,
    at: Option<Datetime>,
    cents: i64,
    attribution: Option<serde_json::Value>,
    key: Option<String>,
    /// The experiment's arm the journey is in (`{experiment, arm}`), kept on the journey when
    /// this step begins it (issue 48).
    arm: Option<serde_json::Value>,
}

impl JourneyStep {
    pub fn new(visitor: &str, funnel: CheckoutSource, step: Step) -> Self {
        Self {
            visitor: visitor.to_owned(),
            funnel: funnel.as_str().to_owned(),
            step: step.as_str().to_owned(),
            once: step.once(),
            at: None,
            cents: 0,
            attribution: None,
            key: None,
            arm: None,
        }
    }

    /// The experiment's arm of the visitor in this funnel, if any.
    pub fn arm(mut self, arm: Option<&helpnow_actors::rules::experiments::ArmRef>) -> Self {
        self.arm = arm.and_then(|arm| serde_json::to_value(arm).ok());
        self
    }

    /// The cents a money step brings.
    pub fn cents(mut self, cents: i64) -> Self {
        self.cents = cents;
        self
    }

    /// The campaign the journey came from, if it begins here (else the visitor's first touch as
    /// the server saw it).
    pub fn attribution(mut self, attribution: Option<serde_json::Value>) -> Self {
        self.attribution =
            attribution.filter(|value| value.as_object().is_some_and(|o| !o.is_empty()));
        self
    }

    /// When it happened (now, if not said): for the load generator's history.
    pub fn at(mut self, at: chrono::DateTime<chrono::Utc>) -> Self {
        self.at = Some(Datetime::from(at));
        self
    }

    /// Counts a step that counts once, once per `key` (a payment once per payment event).
    pub fn key(mut self, key: &str) -> Self {
        self.key = Some(key.to_owned());
        self.once = true;
        self
    }
}

/// How many steps [`JourneyRecorder`] holds before it drops new ones (a warning says so).
const RECORDER_QUEUE: usize = 100_000;
/// How many steps it records in one transaction at most: all that wait, up to this many (a
/// chunk costs a few statements whatever its size, so a backlog goes in large ones).
const RECORDER_CHUNK: usize = 1_000;

/// The journey steps of the busy paths (a funnel's joins and messages, page loads, view
/// events), recorded behind them: each call only queues its step, and one task records the
/// queue in chunks ([`record`]), resting as long as each chunk took, so the dashboard's counting
/// takes at most half of one task's time and never delays a conversation's own writes. Measured
/// without it (the burst of 2,000 conversations on SurrealKV), counting each step in the
/// conversations' own group commits nearly tripled the server's CPU and took the
/// acknowledgements' p99 from 19-38 ms to 475-633 ms (when a step cost 0.9 ms of CPU; in bulk it
/// costs 0.1-0.2 ms). Under a long overload the figures lag behind and catch up after; steps still
/// queued when the process stops are not counted (the events themselves are stored). A step that
/// finds the queue full is dropped, and the task says how many were, once per chunk, and in the
/// metrics (`helpnow_journey_steps_total`). At 19,000 funnel conversations for four minutes on a
/// saturated machine it recorded 139,025 steps and dropped 183,551 (resting three times a chunk's
/// time, in chunks of 200 counted one step at a time: 57,008 and 277,081): docs/benchmarks.md,
/// "The journey recorder's cost".
#[derive(Clone)]
pub struct JourneyRecorder {
    queue: tokio::sync::mpsc::Sender<JourneyStep>,
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// What the recorder did with the steps since its last report (after each chunk).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecorderReport {
    /// Steps counted.
    pub recorded: u64,
    /// Steps that found the queue full, never counted.
    pub dropped: u64,
    /// Steps whose chunk could not be written (logged).
    pub failed: u64,
    /// Steps waiting in the queue now.
    pub queued: usize,
}

/// Who hears the recorder's reports (the server's metrics).
pub type RecorderObserver = std::sync::Arc<dyn Fn(RecorderReport) + Send + Sync>;

impl JourneyRecorder {
    /// Starts the recording task on the current runtime, telling `observer` after each chunk.
    pub fn start(db: Db, observer: RecorderObserver) -> Self {
        let (queue, steps) = tokio::sync::mpsc::channel(RECORDER_QUEUE);
        let dropped = std::sync::Arc::default();
        tokio::spawn(drain(db, steps, std::sync::Arc::clone(&dropped), observer));
        Self { queue, dropped }
    }

    /// Queues a step; never waits.
    pub fn record(&self, step: JourneyStep) {
        if let Err(tokio::sync::mpsc::error::TrySendError::Full(_)) = self.queue.try_send(step) {
            self.dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

async fn drain(
    db: Db,
    mut steps: tokio::sync::mpsc::Receiver<JourneyStep>,
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
    observer: RecorderObserver,
) {
    let mut chunk = Vec::with_capacity(RECORDER_CHUNK);
    while let Some(step) = steps.recv().await {
        chunk.push(step);
        while chunk.len() < RECORDER_CHUNK {
            match steps.try_recv() {
                Ok(step) => chunk.push(step),
                Err(_) => break,
            }
        }
        let started = tokio::time::Instant::now();
        let mut report = RecorderReport::default();
        let count = chunk.len() as u64;
        match record(&db, std::mem::take(&mut chunk)).await {
            Ok(()) => report.recorded = count,
            Err(error) => {
                report.failed = count;
                tracing::warn!(%error, steps = count, "journey steps could not be recorded");
            }
        }
        report.dropped = dropped.swap(0, std::sync::atomic::Ordering::Relaxed);
        if report.dropped > 0 {
            tracing::warn!(
                steps = report.dropped,
                "the dashboard's journey queue was full: steps were not counted"
            );
        }
        report.queued = steps.len();
        observer(report);
        tokio::time::sleep(started.elapsed()).await;
    }
}

/// Records journey steps, in one transaction of their own: each step on its journey, in order,
/// then each roll-up row they count on once, with their sum ([`chunk`]: a chunk of one day's
/// visitors adds to a few rows). A chunk that lost a race for a journey, a step or a row to
/// another writer (a payment, another process's recorder) wrote nothing, and runs again.
pub async fn record(db: &Db, steps: Vec<JourneyStep>) -> Result<(), surrealdb::Error> {
    if steps.is_empty() {
        return Ok(());
    }
    super::retry_while(8, lost_race, || {
        super::in_turn_bounded(chunk::record_once(db, &steps))
    })
    .await
}

/// Whether a chunk failed because another writer got there first: a conflict at commit, or a
/// journey or step created after the chunk read them.
fn lost_race(error: &surrealdb::Error) -> bool {
    super::billing::is_conflict(error) || error.to_string().contains("already exists")
}

/// Records journey steps; the dashboard's figures never fail the action they count, so an error
/// is logged.
pub async fn record_logged(db: &Db, steps: Vec<JourneyStep>) {
    if let Err(error) = record(db, steps).await {
        tracing::warn!(%error, "journey steps could not be recorded");
    }
}

/// What the dashboard breaks its figures down by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breakdown {
    Funnel,
    Campaign,
    Keyword,
    UtmSource,
    UtmMedium,
    UtmCampaign,
    Day,
}

impl Breakdown {
    pub const ALL: [Breakdown; 7] = [
        Breakdown::Funnel,
        Breakdown::Campaign,
        Breakdown::Keyword,
        Breakdown::UtmSource,
        Breakdown::UtmMedium,
        Breakdown::UtmCampaign,
        Breakdown::Day,
    ];

    /// The roll-up's field this breakdown groups by (a fixed name: never from the request).
    pub(super) fn field(self) -> &'static str {
        match self {
            Breakdown::Funnel => "funnel",
            Breakdown::Campaign => "campaignid",
            Breakdown::Keyword => "keyword",
            Breakdown::UtmSource => "utm_source",
            Breakdown::UtmMedium => "utm_medium",
            Breakdown::UtmCampaign => "utm_campaign",
            Breakdown::Day => "day",
        }
    }
}

/// How many journeys one [`decide_retention`] decides at most.
pub const RETENTION_BATCH: u64 = 500;

/// The journeys whose trial began 30 days ago or more and whose retention is not yet decided:
/// each counts as retained if its account is still subscribed, and is decided either way.
/// Answers how many it decided (the hourly upkeep pass runs it).
pub async fn decide_retention(db: &Db) -> Result<u64, surrealdb::Error> {
    let mut response = db
        .query(
            "BEGIN TRANSACTION;
             -- journey_due:[retain_at, visitor, funnel], due first (migration 0022).
             LET $due = (SELECT VALUE id FROM journey_due:[NONE]..=[time::now(), {}] LIMIT $limit);
             FOR $d IN $due {
                 LET $k = record::id($d);
                 LET $j = (SELECT id, user, retain_at FROM ONLY type::record('journey', [$k[1], $k[2]]));
                 -- (A journey begun anew since, with a clock of its own or none, is not this one.)
                 IF $j.retain_at = $k[0] {
                     IF $j.user != NONE AND ($j.user.is_subscribed ?? false) {
                         fn::journey({ visitor: $k[1], funnel: $k[2], step: 'retained', once: true });
                     };
                     UPDATE $j.id SET retain_at = NONE RETURN NONE;
                 };
                 DELETE $d;
             };
             count($due);
             COMMIT TRANSACTION;",
        )
        .bind(("limit", RETENTION_BATCH))
        .await?
        .check()?;
    // The count is the statement before the COMMIT (whose own answer is NONE: taking that
    // one answered 0 whatever was decided, so the upkeep never ran a second batch).
    let decided: Option<u64> = response.take(response.num_statements() - 2)?;
    Ok(decided.unwrap_or(0))
}

#[derive(Debug, Clone, SurrealValue)]
struct PaymentVars {
    user: String,
    event: String,
    subscription: Option<String>,
    cents: i64,
    first_invoice: bool,
    fee_cents: i64,
}

/// A subscription payment of the account's (an invoice paid): its first paid month and the
/// cents, on the journey that bought the subscription. A subscription's first invoice also
/// carries the setup fee when its checkout took one, which fulfilment has counted already: that
/// part is left out. Counted once per payment event (`event_id`), however often it is handled.
pub async fn record_payment(
    db: &Db,
    event_id: &str,
    user_id: &str,
    subscription_id: Option<&str>,
    amount_paid_cents: i64,
    first_invoice: bool,
) -> Result<(), surrealdb::Error> {
    super::in_turn_bounded(async {
        db.query(
            "BEGIN TRANSACTION;
             LET $jid = (SELECT VALUE journey FROM ONLY type::record('user', $p.user));
             LET $j = IF $jid != NONE { (SELECT * FROM ONLY $jid) } ELSE { NONE };
             LET $fee = IF $p.first_invoice AND $p.subscription != NONE
                 AND (SELECT VALUE refundable_fee FROM checkout_session
                      WHERE subscription_id = $p.subscription LIMIT 1)[0] = true
                 { $p.fee_cents } ELSE { 0 };
             LET $cents = math::max([$p.cents - $fee, 0]);
             IF $j != NONE AND $cents > 0 {
                 fn::journey({ visitor: $j.visitor, funnel: $j.funnel, step: 'paid', once: true });
                 fn::journey({ visitor: $j.visitor, funnel: $j.funnel, step: 'subscription', once: true, key: $p.event, cents: $cents });
             };
             -- The drop-off by flow version (migration 0028): the first month paid of the funnel
             -- conversation whose trial the subscription's checkout counted, once per conversation.
             IF $cents > 0 AND $p.subscription != NONE { fn::flow_month_paid($p.subscription); };
             -- The experiment's arm its checkout was opened in (migration 0029).
             IF $cents > 0 AND $p.subscription != NONE {
                 fn::experiment_money((SELECT experiment, visitor FROM checkout_session
                     WHERE subscription_id = $p.subscription AND experiment != NONE LIMIT 1)[0],
                     'subscription', $cents, $p.event);
             };
             COMMIT TRANSACTION;",
        )
        .bind((
            "p",
            PaymentVars {
                user: user_id.to_owned(),
                event: event_id.to_owned(),
                subscription: subscription_id.map(str::to_owned),
                cents: amount_paid_cents,
                first_invoice,
                fee_cents: crate::domain::billing::REFUNDABLE_FEE_CENTS,
            },
        ))
        .await?
        .check()
    })
    .await?;
    Ok(())
}

#[derive(Debug, Clone, SurrealValue)]
struct RefundVars {
    session: String,
    fee_cents: i64,
}

/// A setup fee given back: counted on the journey its checkout counted the fee on.
pub async fn record_fee_refund(db: &Db, provider_session_id: &str) -> Result<(), surrealdb::Error> {
    super::in_turn_bounded(async {
        db.query(
            "BEGIN TRANSACTION;
             LET $cs = (SELECT * FROM checkout_session WHERE provider_session_id = $r.session LIMIT 1)[0];
             IF $cs != NONE {
                 LET $jv = fn::checkout_journey_visitor($cs);
                 fn::journey({ visitor: $jv, funnel: $cs.source, step: 'fee_refund', once: false, cents: $r.fee_cents });
                 fn::experiment_money($cs, 'fee_refund', $r.fee_cents, <string> $cs.id);
             };
             COMMIT TRANSACTION;",
        )
        .bind((
            "r",
            RefundVars {
                session: provider_session_id.to_owned(),
                fee_cents: crate::domain::billing::REFUNDABLE_FEE_CENTS,
            },
        ))
        .await?
        .check()
    })
    .await?;
    Ok(())
}

/// How many records one pass of [`forget_before`] deletes of each kind at most.
pub const FORGET_BATCH: u64 = 5_000;

/// Deletes analytics events made before `cutoff`, and the journeys (with their steps) that began
/// before it, at most [`FORGET_BATCH`] of each: the daily roll-ups, which hold no visitor, stay.
/// Answers how many records went.
pub async fn forget_before(
    db: &Db,
    cutoff: chrono::DateTime<chrono::Utc>,
) -> Result<u64, surrealdb::Error> {
    let mut response = db
        .query(
            "LET $events = (SELECT VALUE id FROM analytics_event WHERE created_at < $cutoff LIMIT $batch);
             DELETE $events;
             -- journey_start:[started_at, visitor, funnel], oldest first (migration 0022).
             LET $journeys = (SELECT VALUE id FROM journey_start:[NONE]..[$cutoff] LIMIT $batch);
             FOR $s IN $journeys {
                 LET $k = record::id($s);
                 LET $j = (SELECT * FROM ONLY type::record('journey', [$k[1], $k[2]]));
                 -- (A journey begun anew since the start was read is not this one.)
                 IF $j.started_at = $k[0] { fn::journey_forget($j); };
                 DELETE $s;
             };
             count($events) + count($journeys);",
        )
        .bind(("cutoff", Datetime::from(cutoff)))
        .bind(("batch", FORGET_BATCH))
        .await?
        .check()?;
    let last = response.num_statements() - 1;
    let gone: Option<u64> = response.take(last)?;
    Ok(gone.unwrap_or(0))
}
