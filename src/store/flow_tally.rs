//! The drop-off's roll-ups (issue 47, migration 0028): how many conversations of each flow
//! version reached each step of the chat funnels, and how long they spent at each step before the
//! next, per cohort day, funnel, campaign and keyword.
//!
//! Each process adds what its funnel actors counted (`flows::tally`) to rows of its own: every
//! key ends with the process's writer id, so no two processes write one row and an addition never
//! conflicts. A row holds `n`, the counts of the [`COUNTED_STEPS`], and `w`, the waits as a
//! histogram of [`WAIT_BUCKETS`] buckets for each of the [`WAIT_STEPS`], both added to with
//! `vector::add`. Three families keep every filter of the report to one range of ids:
//! `flow_tally:[day, funnel, flow, version, writer]` (every conversation),
//! `flow_tally_campaign:[campaign, day, ...]` (a campaign's) and
//! `flow_tally_keyword:[keyword, day, campaign, ...]` (a keyword's, in any campaign).
//!
//! The money steps are records of their own, one per conversation and step, written in the money
//! path's transactions (`fn::flow_trial_paid` in fulfilment, `fn::flow_month_paid` in
//! `journeys::record_payment`): `flow_paid:[day, conversation, step]`, read raw ([`paid`]).

use std::collections::BTreeMap;

use serde_json::{Value as Json, json};
use surrealdb::types::SurrealValue;

use super::Db;
use crate::domain::journey::DayRange;

/// The steps the funnel actors count, in their order: joined, first message, first reply,
/// second message, second reply, third message, final message, checkout by the button,
/// automatic checkout. `n[i]` counts the i-th.
pub const COUNTED_STEPS: usize = 9;

/// The counted steps that have a next one (joined ... final message): the waits are kept for
/// these, the time a conversation spent at the step before it reached the next.
pub const WAIT_STEPS: usize = 7;

/// The upper end (included) of each bucket of the waits, in ms: 0.5 s steps to 3 s, then
/// roughly a quarter more each, up to 30 days; the last bucket holds every longer wait. Part of
/// the stored layout: a bucket's number means its range in every row ever written.
pub const WAIT_EDGES_MS: [u64; 40] = [
    500,
    1_000,
    1_500,
    2_000,
    2_500,
    3_000,
    4_000,
    5_000,
    6_000,
    8_000,
    10_000,
    12_000,
    15_000,
    20_000,
    25_000,
    30_000,
    40_000,
    50_000,
    60_000,
    90_000,
    2 * MINUTE,
    3 * MINUTE,
    4 * MINUTE,
    5 * MINUTE,
    7 * MINUTE + MINUTE / 2,
    10 * MINUTE,
    15 * MINUTE,
    20 * MINUTE,
    30 * MINUTE,
    HOUR,
    2 * HOUR,
    6 * HOUR,
    12 * HOUR,
    DAY,
    2 * DAY,
    4 * DAY,
    7 * DAY,
    10 * DAY,
    14 * DAY,
    30 * DAY,
];

const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

/// Buckets per step: one per edge, and one for the waits longer than the last.
pub const WAIT_BUCKETS: usize = WAIT_EDGES_MS.len() + 1;

/// The length of a row's `w`: the buckets of every step with a next one, step after step.
pub const WAIT_CELLS: usize = WAIT_STEPS * WAIT_BUCKETS;

/// The bucket a wait of `ms` falls in: the first whose upper end is at least `ms`.
pub fn wait_bucket(ms: u64) -> usize {
    WAIT_EDGES_MS.partition_point(|edge| *edge < ms)
}

/// The range of a bucket in ms: its lower end (excluded, but 0 for the first) and its upper end
/// (none for the last).
pub fn bucket_range(bucket: usize) -> (u64, Option<u64>) {
    let lower = bucket
        .checked_sub(1)
        .and_then(|before| WAIT_EDGES_MS.get(before))
        .copied()
        .unwrap_or(0);
    (lower, WAIT_EDGES_MS.get(bucket).copied())
}

/// Who a row's counts are of: the conversations that began on `day` (`YYYY-MM-DD`, UTC) in
/// `funnel` (`chat` or `refundable`), followed the flow's version, and came from `campaign` with
/// `keyword` (as the dashboard matches it: trimmed, lower case; '' for none).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cohort {
    pub day: String,
    pub funnel: String,
    pub flow: String,
    pub version: u32,
    pub campaign: String,
    pub keyword: String,
}

/// Counts to add: `n` per counted step, `w` per wait step and bucket (`step * WAIT_BUCKETS +
/// bucket`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    pub n: [u64; COUNTED_STEPS],
    pub w: Vec<u64>,
}

impl Default for Counts {
    fn default() -> Self {
        Self {
            n: [0; COUNTED_STEPS],
            w: vec![0; WAIT_CELLS],
        }
    }
}

impl Counts {
    pub fn add(&mut self, other: &Counts) {
        for (sum, n) in self.n.iter_mut().zip(other.n) {
            *sum += n;
        }
        for (sum, w) in self.w.iter_mut().zip(&other.w) {
            *sum += w;
        }
    }
}

/// One row's addition as the statement takes it.
#[derive(Debug, Clone, SurrealValue)]
struct Addition {
    key: Vec<Json>,
    funnel: String,
    flow: String,
    version: i64,
    campaign: String,
    keyword: String,
    n: Vec<i64>,
    w: Vec<i64>,
}

fn to_i64(values: &[u64]) -> Vec<i64> {
    values
        .iter()
        .map(|value| i64::try_from(*value).unwrap_or(i64::MAX))
        .collect()
}

/// Adds `counts` to this writer's rows of the three families, in one transaction: a cohort
/// counts in the every-conversation row of its day, funnel and flow version, in its campaign's
/// (when it has one) and in its keyword's (when it has one). Each row is written once.
pub async fn add(
    db: &Db,
    writer: &str,
    counts: &BTreeMap<Cohort, Counts>,
) -> Result<(), surrealdb::Error> {
    if counts.is_empty() {
        return Ok(());
    }
    // Per family: (the key's parts before the funnel, funnel, flow, version) -> (the cohort the
    // row's fields come from, the sum).
    type Rows<'a> = BTreeMap<(Vec<&'a str>, &'a str, &'a str, u32), (&'a Cohort, Counts)>;
    let mut rows: [Rows<'_>; 3] = Default::default();
    for (cohort, add) in counts {
        let day = cohort.day.as_str();
        let mut prefixes = vec![(0, vec![day])];
        if !cohort.campaign.is_empty() {
            prefixes.push((1, vec![cohort.campaign.as_str(), day]));
        }
        if !cohort.keyword.is_empty() {
            prefixes.push((
                2,
                vec![cohort.keyword.as_str(), day, cohort.campaign.as_str()],
            ));
        }
        for (family, prefix) in prefixes {
            rows[family]
                .entry((prefix, &cohort.funnel, &cohort.flow, cohort.version))
                .or_insert_with(|| (cohort, Counts::default()))
                .1
                .add(add);
        }
    }
    let [all, campaigns, keywords] = rows.map(|family| {
        family
            .into_iter()
            .map(
                |((prefix, funnel, flow, version), (cohort, sum))| Addition {
                    key: prefix
                        .into_iter()
                        .map(|part| json!(part))
                        .chain([json!(funnel), json!(flow), json!(version), json!(writer)])
                        .collect(),
                    funnel: cohort.funnel.clone(),
                    flow: cohort.flow.clone(),
                    version: i64::from(cohort.version),
                    campaign: cohort.campaign.clone(),
                    keyword: cohort.keyword.clone(),
                    n: to_i64(&sum.n),
                    w: to_i64(&sum.w),
                },
            )
            .collect::<Vec<_>>()
    });
    super::in_turn_bounded(async {
        db.query(
            "BEGIN TRANSACTION;
             FOR $r IN $all {
                 UPSERT type::record('flow_tally', $r.key)
                     SET funnel = $r.funnel, flow = $r.flow, version = $r.version,
                         n = vector::add(n ?? $zn, $r.n), w = vector::add(w ?? $zw, $r.w)
                     RETURN NONE;
             };
             FOR $r IN $campaigns {
                 UPSERT type::record('flow_tally_campaign', $r.key)
                     SET funnel = $r.funnel, flow = $r.flow, version = $r.version, campaign = $r.campaign,
                         n = vector::add(n ?? $zn, $r.n), w = vector::add(w ?? $zw, $r.w)
                     RETURN NONE;
             };
             FOR $r IN $keywords {
                 UPSERT type::record('flow_tally_keyword', $r.key)
                     SET funnel = $r.funnel, flow = $r.flow, version = $r.version, campaign = $r.campaign,
                         keyword = $r.keyword,
                         n = vector::add(n ?? $zn, $r.n), w = vector::add(w ?? $zw, $r.w)
                     RETURN NONE;
             };
             COMMIT TRANSACTION;",
        )
        .bind(("all", all))
        .bind(("campaigns", campaigns))
        .bind(("keywords", keywords))
        .bind(("zn", vec![0i64; COUNTED_STEPS]))
        .bind(("zw", vec![0i64; WAIT_CELLS]))
        .await
        .and_then(super::check_transaction)
    })
    .await?;
    Ok(())
}

/// Which rows a report reads: one range of ids each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// Every conversation.
    All,
    /// A campaign's.
    Campaign(&'a str),
    /// A keyword's (as the dashboard matches it), in any campaign: the rows carry theirs.
    Keyword(&'a str),
}

/// One row as it is read: its flow version, what it counted, and (the campaign and keyword
/// families) its campaign and keyword.
#[derive(Debug, Clone, PartialEq, Eq, SurrealValue)]
pub struct TallyRow {
    pub funnel: String,
    pub flow: String,
    pub version: i64,
    pub campaign: Option<String>,
    pub keyword: Option<String>,
    pub n: Vec<i64>,
    pub w: Vec<i64>,
}

const READ_ALL: &str =
    "SELECT funnel, flow, version, campaign, keyword, n, w FROM flow_tally:[$from]..[$to, {}]";
const READ_CAMPAIGN: &str = "SELECT funnel, flow, version, campaign, keyword, n, w \
     FROM flow_tally_campaign:[$scope, $from]..[$scope, $to, {}]";
const READ_KEYWORD: &str = "SELECT funnel, flow, version, campaign, keyword, n, w \
     FROM flow_tally_keyword:[$scope, $from]..[$scope, $to, {}]";

/// Every row of `scope` whose cohort day is in `range` (every writer's).
pub async fn tallies(
    db: &Db,
    range: &DayRange,
    scope: Scope<'_>,
) -> Result<Vec<TallyRow>, surrealdb::Error> {
    let (sql, scope) = match scope {
        Scope::All => (READ_ALL, ""),
        Scope::Campaign(campaign) => (READ_CAMPAIGN, campaign),
        Scope::Keyword(keyword) => (READ_KEYWORD, keyword),
    };
    let mut response = db
        .query(sql)
        .bind(("from", range.from_key()))
        .bind(("to", range.to_key()))
        .bind(("scope", scope.to_owned()))
        .await?
        .check()?;
    response.take(0)
}

/// A money step of one conversation: `trial_paid` (its checkout was paid) or `month_paid` (the
/// first month of the subscription that checkout began), and the wait before it in ms.
#[derive(Debug, Clone, PartialEq, Eq, SurrealValue)]
pub struct PaidRow {
    pub funnel: String,
    pub flow: String,
    pub version: i64,
    pub campaign: String,
    pub keyword: String,
    pub step: String,
    pub wait_ms: Option<i64>,
}

const READ_PAID: &str = "SELECT funnel, flow, version, campaign, keyword, step, wait_ms \
     FROM flow_paid:[$from]..[$to, {}]";

/// The money steps of the conversations that began in `range`.
pub async fn paid(db: &Db, range: &DayRange) -> Result<Vec<PaidRow>, surrealdb::Error> {
    let mut response = db
        .query(READ_PAID)
        .bind(("from", range.from_key()))
        .bind(("to", range.to_key()))
        .await?
        .check()?;
    response.take(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_falls_in_the_first_bucket_whose_upper_end_holds_it() {
        assert_eq!(wait_bucket(0), 0);
        assert_eq!(wait_bucket(500), 0);
        assert_eq!(wait_bucket(501), 1);
        assert_eq!(wait_bucket(15_000), 12);
        assert_eq!(wait_bucket(30 * DAY), WAIT_BUCKETS - 2);
        assert_eq!(wait_bucket(30 * DAY + 1), WAIT_BUCKETS - 1);
        assert_eq!(wait_bucket(u64::MAX), WAIT_BUCKETS - 1);
        assert_eq!(bucket_range(0), (0, Some(500)));
        assert_eq!(bucket_range(12), (12_000, Some(15_000)));
        assert_eq!(bucket_range(WAIT_BUCKETS - 1), (30 * DAY, None));
        assert!(
            WAIT_EDGES_MS.windows(2).all(|pair| pair[0] < pair[1]),
            "the edges rise"
        );
    }
}

#[cfg(test)]
mod database_tests {
    use super::*;
    use crate::store::migrate::{migrated_memory_db, plan_of};

    fn range(from: &str, to: &str) -> DayRange {
        DayRange::parse(from, to).expect("a range")
    }

    fn cohort(day: &str, flow: &str, version: u32, campaign: &str, keyword: &str) -> Cohort {
        Cohort {
            day: day.to_owned(),
            funnel: "chat".to_owned(),
            flow: flow.to_owned(),
            version,
            campaign: campaign.to_owned(),
            keyword: keyword.to_owned(),
        }
    }

    fn counts(n: [u64; COUNTED_STEPS], waits: &[(usize, u64)]) -> Counts {
        let mut counts = Counts {
            n,
            ..Counts::default()
        };
        for (step, ms) in waits {
            counts.w[step * WAIT_BUCKETS + wait_bucket(*ms)] += 1;
        }
        counts
    }

    fn total(rows: &[TallyRow]) -> (Vec<i64>, Vec<i64>) {
        let mut n = vec![0; COUNTED_STEPS];
        let mut w = vec![0; WAIT_CELLS];
        for row in rows {
            for (sum, value) in n.iter_mut().zip(&row.n) {
                *sum += value;
            }
            for (sum, value) in w.iter_mut().zip(&row.w) {
                *sum += value;
            }
        }
        (n, w)
    }

    #[tokio::test]
    async fn additions_sum_element_wise_into_each_family_and_writers_keep_rows_apart() {
        let db = migrated_memory_db().await;
        let mine = BTreeMap::from([
            (
                cohort("2026-11-02", "email", 1, "c1", "printer"),
                counts([2, 1, 0, 0, 0, 0, 0, 0, 0], &[(0, 1_200)]),
            ),
            (
                cohort("2026-11-02", "email", 1, "c1", "wifi"),
                counts([1, 0, 0, 0, 0, 0, 0, 0, 0], &[]),
            ),
            (
                cohort("2026-11-02", "email", 2, "", ""),
                counts([1, 1, 1, 0, 0, 0, 0, 0, 0], &[(0, 40 * DAY), (1, 100)]),
            ),
        ]);
        add(&db, "writer-a", &mine).await.expect("added");
        // The same process adds again to its rows; another process to rows of its own.
        add(&db, "writer-a", &mine).await.expect("added again");
        let theirs = BTreeMap::from([(
            cohort("2026-11-03", "email", 1, "c2", "printer"),
            counts([1, 1, 1, 1, 1, 1, 1, 0, 1], &[(6, 16_000)]),
        )]);
        add(&db, "writer-b", &theirs).await.expect("another writer");

        let november = range("2026-11-01", "2026-11-30");
        let all = tallies(&db, &november, Scope::All).await.expect("read");
        assert_eq!(
            all.len(),
            3,
            "one row per day, flow version and writer: {all:?}"
        );
        let (n, w) = total(&all);
        assert_eq!(n, [9, 5, 3, 1, 1, 1, 1, 0, 1]);
        assert_eq!(w[wait_bucket(1_200)], 2);
        assert_eq!(w[WAIT_BUCKETS - 1], 2, "a wait past 30 days");
        assert_eq!(w[WAIT_BUCKETS + wait_bucket(100)], 2);
        assert_eq!(w[6 * WAIT_BUCKETS + wait_bucket(16_000)], 1);
        assert!(all.iter().all(|row| row.w.len() == WAIT_CELLS));

        let c1 = tallies(&db, &november, Scope::Campaign("c1"))
            .await
            .expect("read");
        assert_eq!(c1.len(), 1, "{c1:?}");
        assert_eq!(total(&c1).0, [6, 2, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(c1[0].campaign.as_deref(), Some("c1"));

        let printer = tallies(&db, &november, Scope::Keyword("printer"))
            .await
            .expect("read");
        let mut campaigns: Vec<_> = printer
            .iter()
            .map(|row| (row.campaign.clone(), row.n[0]))
            .collect();
        campaigns.sort();
        assert_eq!(
            campaigns,
            [(Some("c1".to_owned()), 4), (Some("c2".to_owned()), 1)]
        );

        // A range of days is a range of cohorts.
        let second = tallies(&db, &range("2026-11-02", "2026-11-02"), Scope::All)
            .await
            .expect("read");
        assert_eq!(total(&second).0[0], 8);
        let none = tallies(
            &db,
            &range("2026-11-04", "2026-11-30"),
            Scope::Keyword("printer"),
        )
        .await
        .expect("read");
        assert!(none.is_empty());
    }

    #[tokio::test]
    async fn a_conversation_counts_its_trial_and_first_month_once_and_a_preview_never() {
        let db = migrated_memory_db().await;
        let checkout = |id: &str, conversation: &str, subscription: &str| {
            format!(
                "CREATE checkout_session:{id} CONTENT {{ provider: 'demo', provider_session_id: '{id}',
                     tracking_id: '{id}', source: 'chat_funnel', success_url: '/', cancel_url: '/',
                     subscription_id: '{subscription}', created_at: time::now() - 3m,
                     funnel_conversation: funnel_conversation:{conversation} }};"
            )
        };
        db.query(format!(
            "CREATE funnel_conversation:ann CONTENT {{ visitor: visitor:ann, funnel: 'chat',
                 flow: 'email', flow_version: 2, campaignid: 'c1', keyword: ' Printer Help',
                 created_at: d'2026-11-02T23:59:00Z', checkout_started_at: time::now() - 2m }};
             CREATE funnel_conversation:old CONTENT {{ visitor: visitor:old, funnel: 'refundable',
                 flow: 'default', created_at: d'2026-11-03T00:00:00Z' }};
             CREATE funnel_conversation:try CONTENT {{ visitor: visitor:try, funnel: 'chat',
                 flow: 'email', flow_version: 0, flow_preview: 'p1', created_at: d'2026-11-02T10:00:00Z' }};
             CREATE funnel_conversation:help CONTENT {{ visitor: visitor:help, funnel: 'help',
                 flow: 'help', created_at: d'2026-11-02T10:00:00Z' }};
             {} {} {} {} {}",
            checkout("a1", "ann", "sub_a1"),
            checkout("a2", "ann", "sub_a2"),
            checkout("o1", "old", "sub_o1"),
            checkout("t1", "try", "sub_t1"),
            checkout("h1", "help", "sub_h1"),
        ))
        .await
        .and_then(|response| response.check())
        .expect("conversations and checkouts");
        // Each checkout fulfilled in a transaction of its own; Ann's two checkouts both paid.
        for checkout in ["a1", "a2", "o1", "t1", "h1"] {
            db.query(format!(
                "BEGIN TRANSACTION; LET $cs = checkout_session:{checkout}.*;
                 fn::flow_trial_paid($cs); COMMIT TRANSACTION;"
            ))
            .await
            .and_then(crate::store::check_transaction)
            .expect("fulfilled");
        }
        for subscription in [
            "sub_a1", "sub_a2", "sub_a1", "sub_o1", "sub_t1", "sub_h1", "sub_none",
        ] {
            db.query(format!("fn::flow_month_paid('{subscription}');"))
                .await
                .and_then(|response| response.check())
                .expect("paid");
        }
        let mut rows = paid(&db, &range("2026-11-01", "2026-11-30"))
            .await
            .expect("read");
        rows.sort_by(|a, b| (&a.flow, &a.step).cmp(&(&b.flow, &b.step)));
        let seen: Vec<(&str, &str, i64, &str, &str, &str)> = rows
            .iter()
            .map(|row| {
                (
                    row.funnel.as_str(),
                    row.flow.as_str(),
                    row.version,
                    row.campaign.as_str(),
                    row.keyword.as_str(),
                    row.step.as_str(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("refundable", "default", 1, "", "", "month_paid"),
                ("refundable", "default", 1, "", "", "trial_paid"),
                ("chat", "email", 2, "c1", "printer help", "month_paid"),
                ("chat", "email", 2, "c1", "printer help", "trial_paid"),
            ],
            "once per conversation, no preview, no help form"
        );
        let ann_trial = &rows[3];
        assert!(
            ann_trial
                .wait_ms
                .is_some_and(|ms| (110_000..=200_000).contains(&ms)),
            "from the checkout's opening: {ann_trial:?}"
        );
        // The cohort is the conversation's day.
        let second = paid(&db, &range("2026-11-02", "2026-11-02"))
            .await
            .expect("read");
        assert_eq!(second.len(), 2);
    }

    #[tokio::test]
    async fn every_read_is_one_range_of_ids() {
        let db = migrated_memory_db().await;
        for sql in [READ_ALL, READ_CAMPAIGN, READ_KEYWORD, READ_PAID] {
            let plan = plan_of(&db, sql).await;
            assert!(
                plan.contains("RecordIdScan") && !plan.contains("TableScan"),
                "{sql}: {plan}"
            );
        }
    }
}
