//! A chunk of journey steps counted in bulk, as [`super::record`] does for the journey recorder.
//!
//! `fn::journey_step` (migrations 0014 and 0017) counts one step with about ten statements of its
//! own, and SurrealDB spends 50-150 us of CPU on each statement however little it does: a chunk
//! of 200 steps took about 0.9 ms a step (docs/benchmarks.md, "The journey recorder's cost").
//! Here a chunk costs a few statements whatever its size: one read of its journeys and counted
//! steps, one read of the acquisitions of the visitors whose journey begins here, then one
//! transaction that inserts the new journeys and steps, each in one statement, and adds each
//! roll-up row's sum once (`fn::journey_add`, migration 0020). What counts is decided here, step
//! by step in the chunk's order, exactly as `fn::journey_step` decides it (a test compares the
//! two); the single steps of payments and refunds still go through `fn::journey`.
//!
//! The reads are outside the transaction. A journey or step another writer (a payment, another
//! process's recorder) creates after them makes the insert fail, as a commit that races one does,
//! and so does a journey they found that went since (forgotten, or its account deleted): the
//! whole chunk is read and written again (`super::record`), so nothing is counted twice and no
//! step is left without its journey.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use serde_json::Value as Json;
use surrealdb::types::{Array, Datetime, RecordId, SurrealValue};

use super::JourneyStep;
use crate::store::Db;

/// The fields of the journey's cohort, after its day and funnel, as `fn::journey_step` takes
/// them from the attribution.
const CAMPAIGN: [&str; 5] = [
    "campaignid",
    "keyword",
    "utm_source",
    "utm_medium",
    "utm_campaign",
];

/// A journey as the chunk needs it: its cohort, `[day, funnel, campaignid, keyword, utm_source,
/// utm_medium, utm_campaign]`, and whether its retention clock runs.
#[derive(Debug, Clone, SurrealValue)]
struct Found {
    visitor: String,
    funnel: String,
    cohort: Vec<Json>,
    retained: bool,
}

#[derive(Debug, Clone, SurrealValue)]
struct Acquisition {
    visitor: String,
    acquisition: Option<Json>,
}

#[derive(Debug, Clone, SurrealValue)]
struct NewJourney {
    id: RecordId,
    visitor: String,
    funnel: String,
    started_at: Datetime,
    day: String,
    campaignid: Json,
    keyword: Json,
    utm_source: Json,
    utm_medium: Json,
    utm_campaign: Json,
    /// The experiment's arm, when the step that began it knew one.
    arm: Option<Json>,
}

#[derive(Debug, Clone, SurrealValue)]
struct NewStep {
    id: RecordId,
    at: Datetime,
}

/// A journey's retention clock, started by a trial or a first payment.
#[derive(Debug, Clone, SurrealValue)]
struct Retain {
    id: RecordId,
    at: Datetime,
}

/// One roll-up row's addition: its key (`analytics_daily`'s id) and sums.
#[derive(Debug, Clone, SurrealValue)]
struct Tally {
    key: Vec<Json>,
    n: i64,
    cents: i64,
}

/// What a chunk writes.
#[derive(Debug, Default)]
struct Plan {
    /// The journeys the read found, which the plan counts on.
    known: Vec<RecordId>,
    journeys: Vec<NewJourney>,
    steps: Vec<NewStep>,
    retain: Vec<Retain>,
    dirty: Vec<String>,
    tally: Vec<Tally>,
}

type JourneyKey = (String, String);

fn journey_id(visitor: &str, funnel: &str) -> RecordId {
    RecordId::new(
        "journey",
        Array::from(vec![visitor.to_owned(), funnel.to_owned()]),
    )
}

fn step_key(step: &JourneyStep) -> [String; 4] {
    [
        step.visitor.clone(),
        step.funnel.clone(),
        step.step.clone(),
        step.key.clone().unwrap_or_default(),
    ]
}

fn step_id(key: &[String; 4]) -> RecordId {
    RecordId::new("journey_step", Array::from(key.to_vec()))
}

/// Adds a step to its roll-up row's sum.
fn add(tally: &mut Vec<Tally>, key: Vec<Json>, cents: i64) {
    match tally.iter_mut().find(|row| row.key == key) {
        Some(row) => {
            row.n += 1;
            row.cents += cents;
        }
        None => tally.push(Tally { key, n: 1, cents }),
    }
}

fn day_of(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d").to_string()
}

/// Counts a chunk once: reads, decides, writes. Fails (and writes nothing) when another writer
/// created one of its journeys or steps meanwhile; the caller runs it again.
pub(super) async fn record_once(db: &Db, steps: &[JourneyStep]) -> Result<(), surrealdb::Error> {
    let now = Utc::now();
    let mut journey_ids: Vec<RecordId> = Vec::new();
    let mut seen: HashSet<JourneyKey> = HashSet::new();
    for step in steps {
        if seen.insert((step.visitor.clone(), step.funnel.clone())) {
            journey_ids.push(journey_id(&step.visitor, &step.funnel));
        }
    }
    let step_ids: Vec<RecordId> = steps
        .iter()
        .filter(|step| step.once && step.step != "visitors")
        .map(|step| step_id(&step_key(step)))
        .collect();
    let mut response = db
        .query(
            "SELECT visitor, funnel,
                 [day, funnel, campaignid, keyword, utm_source, utm_medium, utm_campaign] AS cohort,
                 retain_from != NONE AS retained
             FROM $journeys;
             SELECT VALUE record::id(id) FROM $steps;",
        )
        .bind(("journeys", journey_ids))
        .bind(("steps", step_ids))
        .await?
        .check()?;
    let found: Vec<Found> = response.take(0)?;
    let counted: Vec<Vec<String>> = response.take(1)?;

    // The visitors whose journey begins in this chunk with no attribution of its own: their
    // first touch, as the server saw it, is the journey's campaign.
    let known: HashSet<JourneyKey> = found
        .iter()
        .map(|j| (j.visitor.clone(), j.funnel.clone()))
        .collect();
    let mut begun: HashSet<JourneyKey> = HashSet::new();
    let mut visitors: Vec<RecordId> = Vec::new();
    for step in steps {
        let key = (step.visitor.clone(), step.funnel.clone());
        if !known.contains(&key) && begun.insert(key) && step.attribution.is_none() {
            visitors.push(RecordId::new("visitor", step.visitor.as_str()));
        }
    }
    let acquisitions: HashMap<String, Json> = if visitors.is_empty() {
        HashMap::new()
    } else {
        let mut response = db
            .query("SELECT record::id(id) AS visitor, acquisition FROM $visitors")
            .bind(("visitors", visitors))
            .await?
            .check()?;
        let rows: Vec<Acquisition> = response.take(0)?;
        rows.into_iter()
            .filter_map(|row| Some((row.visitor, row.acquisition?)))
            .collect()
    };

    let plan = plan(steps, found, counted, &acquisitions, now);
    write(db, plan).await
}

/// Decides, step by step in order, what the chunk counts, as `fn::journey_step` would one call
/// at a time: a journey begins (and counts a visitor) with its first step, a step that counts
/// once counts only if it has not yet, a trial or first payment starts the retention clock, and
/// a step of a journey begun before yesterday marks its day for repacking.
fn plan(
    steps: &[JourneyStep],
    found: Vec<Found>,
    counted: Vec<Vec<String>>,
    acquisitions: &HashMap<String, Json>,
    now: DateTime<Utc>,
) -> Plan {
    struct State {
        cohort: Vec<Json>,
        retained: bool,
    }
    let mut plan = Plan {
        known: found
            .iter()
            .map(|j| journey_id(&j.visitor, &j.funnel))
            .collect(),
        ..Plan::default()
    };
    let mut journeys: HashMap<JourneyKey, State> = found
        .into_iter()
        .map(|j| {
            (
                (j.visitor, j.funnel),
                State {
                    cohort: j.cohort,
                    retained: j.retained,
                },
            )
        })
        .collect();
    let mut done: HashSet<Vec<String>> = counted.into_iter().collect();
    let yesterday = day_of(now - Duration::days(1));
    for step in steps {
        let at = step
            .at
            .as_ref()
            .map_or(now, |at| DateTime::<Utc>::from(*at));
        let key = (step.visitor.clone(), step.funnel.clone());
        let journey = journeys.entry(key).or_insert_with(|| {
            let empty = Json::Object(Default::default());
            let attribution = step
                .attribution
                .as_ref()
                .or_else(|| acquisitions.get(&step.visitor))
                .unwrap_or(&empty);
            let field = |name: &str| match attribution.get(name) {
                None | Some(Json::Null) => Json::String(String::new()),
                Some(value) => value.clone(),
            };
            let day = day_of(at);
            let new = NewJourney {
                id: journey_id(&step.visitor, &step.funnel),
                visitor: step.visitor.clone(),
                funnel: step.funnel.clone(),
                started_at: Datetime::from(at),
                day: day.clone(),
                campaignid: field(CAMPAIGN[0]),
                keyword: field(CAMPAIGN[1]),
                utm_source: field(CAMPAIGN[2]),
                utm_medium: field(CAMPAIGN[3]),
                utm_campaign: field(CAMPAIGN[4]),
                arm: step.arm.clone(),
            };
            let cohort = [Json::String(day), Json::String(step.funnel.clone())]
                .into_iter()
                .chain(CAMPAIGN.iter().map(|name| field(name)))
                .collect::<Vec<_>>();
            plan.journeys.push(new);
            add(
                &mut plan.tally,
                cohort
                    .iter()
                    .cloned()
                    .chain([Json::String("visitors".into())])
                    .collect(),
                0,
            );
            State {
                cohort,
                retained: false,
            }
        });
        if step.step == "visitors" {
            continue;
        }
        let sid = step_key(step);
        if step.once && !done.insert(sid.to_vec()) {
            continue;
        }
        if step.once {
            plan.steps.push(NewStep {
                id: step_id(&sid),
                at: Datetime::from(at),
            });
        }
        if matches!(step.step.as_str(), "trial" | "paid") && !journey.retained {
            journey.retained = true;
            plan.retain.push(Retain {
                id: journey_id(&step.visitor, &step.funnel),
                at: Datetime::from(at),
            });
        }
        let day = journey.cohort.first().and_then(Json::as_str).unwrap_or("");
        if step.at.is_none() && day < yesterday.as_str() && !plan.dirty.iter().any(|d| d == day) {
            plan.dirty.push(day.to_owned());
        }
        let row = journey
            .cohort
            .iter()
            .cloned()
            .chain([Json::String(step.step.clone())])
            .collect();
        add(&mut plan.tally, row, step.cents);
    }
    plan
}

/// Writes a chunk's plan in one transaction.
async fn write(db: &Db, plan: Plan) -> Result<(), surrealdb::Error> {
    let mut script = String::from("BEGIN TRANSACTION;\n");
    // A journey the read found and that went since (forgotten, or its account deleted) would
    // leave this chunk's steps without it: the chunk runs again, and begins it anew as
    // `fn::journey` does.
    if !plan.known.is_empty() {
        script.push_str(
            "IF count(SELECT VALUE id FROM $known) != array::len($known) {
                 THROW 'a journey went since the chunk read it: retry';
             };\n",
        );
    }
    if !plan.journeys.is_empty() {
        // Each with its start, which forgetting reads (migration 0022).
        script.push_str(
            "INSERT INTO journey $journeys RETURN NONE;
             INSERT IGNORE INTO journey_start $journeys.map(|$j| {
                 id: type::record('journey_start', [$j.started_at, $j.visitor, $j.funnel])
             }) RETURN NONE;\n",
        );
    }
    if !plan.steps.is_empty() {
        script.push_str("INSERT INTO journey_step $steps RETURN NONE;\n");
    }
    if !plan.retain.is_empty() {
        script.push_str(
            "FOR $r IN $retain {
                 IF (UPDATE $r.id SET retain_from = $r.at, retain_at = $r.at + 30d
                         WHERE retain_from = NONE RETURN VALUE id) {
                     UPSERT type::record('journey_due', [$r.at + 30d].concat(record::id($r.id)))
                         RETURN NONE;
                 };
             };\n",
        );
    }
    if !plan.dirty.is_empty() {
        script.push_str(
            "FOR $d IN $dirty {
                 CREATE type::record('analytics_dirty', [$d, rand::ulid()]) CONTENT { day: $d } RETURN NONE;
             };\n",
        );
    }
    script.push_str("fn::journey_add($tally);\nCOMMIT TRANSACTION;");
    db.query(script)
        .bind(("known", plan.known))
        .bind(("journeys", plan.journeys))
        .bind(("steps", plan.steps))
        .bind(("retain", plan.retain))
        .bind(("dirty", plan.dirty))
        .bind(("tally", plan.tally))
        .await
        .and_then(crate::store::check_transaction)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use serde_json::{Value, json};

    use super::super::{JourneyStep, record};
    use crate::domain::billing::CheckoutSource::{ChatFunnel, HelpFunnel};
    use crate::domain::journey::Step;
    use crate::store::Db;
    use crate::store::migrate::migrated_memory_db;

    /// Steps of every kind: journeys begun by their visit or by a later step, with an attribution
    /// of their own or the visitor's first touch, steps that count once (also per key) and money
    /// that counts each time, retention started twice, and a late step on a journey begun three
    /// days ago (its day marked for repacking).
    fn steps() -> Vec<Vec<JourneyStep>> {
        let t = |minute: u32| {
            Utc.with_ymd_and_hms(2026, 11, 20, 10, minute, 0)
                .single()
                .expect("a time")
        };
        let campaign = json!({ "campaignid": "42", "keyword": "wifi", "utm_source": "google" });
        // Noon three days ago: the same in both calls of the test.
        let old = (Utc::now().date_naive() - chrono::Duration::days(3))
            .and_hms_opt(12, 0, 0)
            .expect("noon")
            .and_utc();
        let first = vec![
            JourneyStep::new("v1", ChatFunnel, Step::Visitors)
                .attribution(Some(campaign))
                .at(t(0)),
            JourneyStep::new("v1", ChatFunnel, Step::FirstMessage).at(t(1)),
            JourneyStep::new("v1", ChatFunnel, Step::FirstMessage).at(t(2)),
            JourneyStep::new("v2", ChatFunnel, Step::FirstMessage).at(t(3)),
            JourneyStep::new("v2", ChatFunnel, Step::Trial).at(t(3)),
            JourneyStep::new("v1", HelpFunnel, Step::Visitors).at(t(4)),
            JourneyStep::new("v4", ChatFunnel, Step::Visitors)
                .attribution(Some(json!({ "campaignid": "9", "keyword": null })))
                .at(t(5)),
            JourneyStep::new("v3", ChatFunnel, Step::Visitors).at(old),
            JourneyStep::new("v3", ChatFunnel, Step::FirstMessage).at(old),
        ];
        let second = vec![
            JourneyStep::new("v1", ChatFunnel, Step::FirstMessage).at(t(6)),
            JourneyStep::new("v1", ChatFunnel, Step::FinalMessage).at(t(7)),
            JourneyStep::new("v1", ChatFunnel, Step::Checkout).at(t(8)),
            JourneyStep::new("v1", ChatFunnel, Step::Trial).at(t(9)),
            JourneyStep::new("v1", ChatFunnel, Step::Fee)
                .cents(100)
                .at(t(9)),
            JourneyStep::new("v1", ChatFunnel, Step::Fee)
                .cents(100)
                .at(t(10)),
            JourneyStep::new("v1", ChatFunnel, Step::Paid).at(t(11)),
            JourneyStep::new("v1", ChatFunnel, Step::Subscription)
                .cents(2000)
                .key("evt_1")
                .at(t(11)),
            JourneyStep::new("v1", ChatFunnel, Step::Subscription)
                .cents(2000)
                .key("evt_1")
                .at(t(12)),
            JourneyStep::new("v1", ChatFunnel, Step::Subscription)
                .cents(2000)
                .key("evt_2")
                .at(t(13)),
            JourneyStep::new("v2", ChatFunnel, Step::Paid).at(t(14)),
            JourneyStep::new("v2", ChatFunnel, Step::Visitors).at(t(15)),
            JourneyStep::new("v5", HelpFunnel, Step::Checkout).at(t(16)),
            JourneyStep::new("v3", ChatFunnel, Step::FinalMessage),
        ];
        vec![first, second]
    }

    async fn with_visitors() -> Db {
        let db = migrated_memory_db().await;
        db.query(
            "CREATE visitor:v2 CONTENT { acquisition: { campaignid: '7', utm_source: 'bing' } };
             CREATE visitor:v5 CONTENT { acquisition: { keyword: 'printer' } };",
        )
        .await
        .and_then(|response| response.check())
        .expect("visitors");
        db
    }

    async fn rows(db: &Db, query: &str) -> Vec<Value> {
        let mut response = db.query(query).await.expect("query");
        response.take(0).expect("rows")
    }

    async fn tables(db: &Db) -> Vec<Vec<Value>> {
        vec![
            rows(db, "SELECT * FROM journey ORDER BY id").await,
            // The ids the upkeep reads journeys by (migration 0022).
            rows(
                db,
                "SELECT VALUE record::id(id) FROM journey_start, journey_due, journey_user",
            )
            .await,
            rows(
                db,
                "SELECT id, IF at > time::now() - 1h { 'now' } ELSE { at } AS at
                 FROM journey_step ORDER BY id",
            )
            .await,
            // Summed per row of the day: fn::journey's rows each have a key of their own
            // (migration 0021), the recorder's are shared.
            rows(
                db,
                "SELECT day, funnel, campaignid, keyword, utm_source, utm_medium, utm_campaign,
                        step, math::sum(n) AS n, math::sum(cents) AS cents
                 FROM analytics_daily
                 GROUP BY day, funnel, campaignid, keyword, utm_source, utm_medium,
                          utm_campaign, step",
            )
            .await,
            rows(db, "SELECT VALUE day FROM analytics_dirty GROUP BY day").await,
        ]
    }

    #[tokio::test]
    async fn a_chunk_counts_what_one_step_at_a_time_counts() {
        let one_by_one = with_visitors().await;
        for step in steps().into_iter().flatten() {
            one_by_one
                .query("fn::journey($s)")
                .bind(("s", step))
                .await
                .and_then(|response| response.check())
                .expect("one step");
        }
        let in_chunks = with_visitors().await;
        for chunk in steps() {
            record(&in_chunks, chunk).await.expect("a chunk");
        }
        let expected = tables(&one_by_one).await;
        assert_eq!(tables(&in_chunks).await, expected);
        // The recorder adds to the shared rows: [day, funnel, the campaign's five fields, step].
        let keys = rows(
            &in_chunks,
            "SELECT VALUE array::len(record::id(id)) FROM analytics_daily",
        )
        .await;
        assert!(keys.iter().all(|length| length == &json!(8)), "{keys:?}");
        // What the comparison covers.
        assert_eq!(expected[0].len(), 6, "{:#?}", expected[0]);
        // Six starts and the two retention clocks.
        assert_eq!(expected[1].len(), 8, "{:#?}", expected[1]);
        assert!(!expected[4].is_empty(), "the late step marks its day");
    }

    /// A journey is one entry in the store: with an index on its table, SurrealDB 3.3 keeps an
    /// entry per index and three more for the table's shared doc-IDs (migration 0022).
    #[tokio::test]
    async fn journeys_keep_no_index() {
        let db = with_visitors().await;
        let info = rows(&db, "INFO FOR TABLE journey").await;
        assert_eq!(info[0]["indexes"], json!({}), "{info:?}");
    }

    /// A journey that a step of another account names is found by that account only, and a
    /// retention clock already running is not started again.
    #[tokio::test]
    async fn a_journey_is_found_by_the_last_account_a_step_named() {
        let db = with_visitors().await;
        for (user, step) in [("a", "trial"), ("b", "paid"), ("b", "retained")] {
            db.query("fn::journey({ visitor: 'v1', funnel: 'chat_funnel', step: $step, once: true, user: type::record('user', $u) })")
                .bind(("step", step))
                .bind(("u", user))
                .await
                .and_then(|response| response.check())
                .expect("a step");
        }
        let retain = vec![JourneyStep::new("v1", ChatFunnel, Step::Paid)];
        let mut plan = super::plan(
            &retain,
            Vec::new(),
            Vec::new(),
            &Default::default(),
            Utc::now(),
        );
        // As if the chunk's read had not seen the journey: only its clock is written.
        plan.journeys.clear();
        plan.steps.clear();
        super::write(&db, plan).await.expect("written");
        let users = rows(&db, "SELECT VALUE record::id(id) FROM journey_user").await;
        assert_eq!(users, vec![json!(["user:b", "v1", "chat_funnel"])]);
        let due = rows(&db, "SELECT VALUE record::id(id)[1] FROM journey_due").await;
        assert_eq!(due, vec![json!("v1")]);
    }

    /// Two buyers of one campaign's day pay at once while the recorder counts a visit of the same
    /// cohort: the money path's transactions (`fn::journey`) add to roll-up rows of their own
    /// (migration 0021), so neither conflicts with the other or with the recorder's shared row,
    /// and the day's sums hold all three.
    #[tokio::test]
    async fn money_steps_at_once_do_not_conflict_on_their_roll_up_rows() {
        let db = with_visitors().await;
        let visits = ["a", "b"].map(|v| JourneyStep::new(v, ChatFunnel, Step::Visitors));
        record(&db, visits.to_vec()).await.expect("visits");
        let (one, two) = (
            (*db).clone().begin().await.expect("a transaction"),
            (*db).clone().begin().await.expect("a transaction"),
        );
        for (tx, visitor) in [(&one, "a"), (&two, "b")] {
            tx.query("fn::journey($s)")
                .bind(("s", JourneyStep::new(visitor, ChatFunnel, Step::Trial)))
                .await
                .and_then(|response| response.check())
                .expect("a trial counted");
        }
        record(&db, vec![JourneyStep::new("c", ChatFunnel, Step::Visitors)])
            .await
            .expect("a visit meanwhile");
        one.commit().await.expect("the first buyer's");
        two.commit()
            .await
            .expect("the second buyer's, without a conflict");
        let sums = rows(
            &db,
            "SELECT step, math::sum(n) AS n FROM analytics_daily GROUP BY step ORDER BY step",
        )
        .await;
        assert_eq!(
            sums,
            vec![
                json!({ "step": "trial", "n": 2 }),
                json!({ "step": "visitors", "n": 3 })
            ]
        );
    }

    #[tokio::test]
    async fn a_chunk_that_finds_its_journey_created_meanwhile_runs_again_and_counts_once() {
        let db = with_visitors().await;
        let first = vec![JourneyStep::new("v1", ChatFunnel, Step::Visitors)];
        // The chunk's read found no journey; another writer creates it before the write.
        let found = Vec::new();
        let plan = super::plan(&first, found, Vec::new(), &Default::default(), Utc::now());
        record(&db, first.clone()).await.expect("the other writer");
        let error = super::write(&db, plan).await.expect_err("a lost race");
        assert!(super::super::lost_race(&error), "{error}");
        record(&db, first).await.expect("runs again");
        let sums = rows(&db, "SELECT VALUE n FROM analytics_daily").await;
        assert_eq!(sums, vec![json!(1)]);
    }

    #[tokio::test]
    async fn a_chunk_whose_journey_went_since_its_read_runs_again_and_begins_it_anew() {
        let db = with_visitors().await;
        record(
            &db,
            vec![JourneyStep::new("v1", ChatFunnel, Step::Visitors)],
        )
        .await
        .expect("a visit");
        let next = vec![JourneyStep::new("v1", ChatFunnel, Step::FirstMessage)];
        let found = vec![super::Found {
            visitor: "v1".into(),
            funnel: "chat_funnel".into(),
            cohort: rows(
                &db,
                "SELECT VALUE [day, funnel, campaignid, keyword, utm_source, utm_medium, utm_campaign]
                 FROM journey",
            )
            .await
            .remove(0)
            .as_array()
            .cloned()
            .expect("a cohort"),
            retained: false,
        }];
        let plan = super::plan(&next, found, Vec::new(), &Default::default(), Utc::now());
        // The account's deletion takes the journey after the chunk read it.
        rows(&db, "DELETE journey").await;
        let error = super::write(&db, plan).await.expect_err("a journey gone");
        assert!(super::super::lost_race(&error), "{error}");
        record(&db, next).await.expect("runs again");
        let counted = rows(&db, "SELECT VALUE step FROM analytics_daily ORDER BY step").await;
        assert_eq!(counted, vec![json!("first_message"), json!("visitors")]);
        assert_eq!(rows(&db, "SELECT VALUE id FROM journey").await.len(), 1);
    }
}
