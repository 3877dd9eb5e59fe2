//! The dashboard's roll-ups, packed (migration 0014). `fn::journey` counts each step in
//! `analytics_daily`, a row per day × campaign × keyword × UTM × step: nearly a row per journey,
//! and SurrealDB reads about 100,000 rows a second, so 30 days at 1,000,000 events took 1.5-3.7 s
//! to sum. Once a day is two days old its rows change rarely (a trial paid, a fee refunded, a
//! member still subscribed), so the packer sums them per breakdown into spans of 1, 2, 4 ... 256
//! days (`analytics_span`: one record per breakdown holds all its values, each with every
//! funnel's steps), and notes the day as packed. A step counted later on such a day marks it
//! (`analytics_dirty`, in the step's own transaction), and the day is read from
//! `analytics_daily` until the packer packs it again. The dashboard reads the fewest spans that
//! cover the packed, unmarked days and `analytics_daily` for the others (today, yesterday, marked
//! days), so its figures are always the exact counts.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, NaiveDate, Utc};
use surrealdb::types::{RecordId, SurrealValue};

use super::Db;
use super::journeys::Breakdown;
use crate::domain::journey::DayRange;

/// Days are packed once this many days old: today and yesterday stay in `analytics_daily`.
pub const PACK_AFTER_DAYS: i64 = 2;
/// And only this long after that day ended, so a step that began the day before has committed.
const PACK_GRACE: chrono::Duration = chrono::Duration::minutes(10);
/// Raw ranges read in one request at most; past this one range spans them and the days between
/// are skipped when summing.
const MAX_RAW_RANGES: usize = 16;

/// Packed spans are 1, 2, 4, ... 256 days long, each begun on a multiple of its length in days
/// since 1970-01-01, so a range is read as a few spans per breakdown value instead of a row a day.
pub const LEVELS: u32 = 8;

/// The breakdowns a day is packed by, each with the `analytics_daily` field it groups (the
/// funnels' own totals and the day-by-day table read `funnel`, whose value is always '').
type ByField = (&'static str, fn(&DailyRow) -> &str);

const PACKED_BY: [ByField; 6] = [
    ("funnel", |_| ""),
    ("campaignid", |row| &row.campaignid),
    ("keyword", |row| &row.keyword),
    ("utm_source", |row| &row.utm_source),
    ("utm_medium", |row| &row.utm_medium),
    ("utm_campaign", |row| &row.utm_campaign),
];

/// One `analytics_daily` row.
#[derive(Debug, Clone, SurrealValue)]
struct DailyRow {
    funnel: String,
    campaignid: String,
    keyword: String,
    utm_source: String,
    utm_medium: String,
    utm_campaign: String,
    step: String,
    n: i64,
    cents: i64,
}

/// One funnel's step for one value.
#[derive(Debug, Clone, PartialEq, Eq, SurrealValue)]
struct Cell {
    f: String,
    s: String,
    n: i64,
    c: i64,
}

/// One value of a breakdown in a span, with its cells.
#[derive(Debug, Clone, PartialEq, Eq, SurrealValue)]
struct ValueCells {
    v: String,
    c: Vec<Cell>,
}

/// One `analytics_span` record as it is written: a breakdown within a scope over one span of
/// days. Its id is `[level, start, by, scope]` (the level as a digit, so that a span's records
/// are one range of ids).
#[derive(Debug, Clone, SurrealValue)]
struct SpanRecord {
    id: Vec<String>,
    start: String,
    by: String,
    scope: String,
    values: Vec<ValueCells>,
}

/// One `analytics_span` record as it is read (`OMIT id`).
#[derive(Debug, Clone, SurrealValue)]
struct Span {
    start: String,
    by: String,
    scope: String,
    values: Vec<ValueCells>,
}

/// Sums being gathered: (by, scope) → value → (funnel, step) → (n, cents).
type Sums = BTreeMap<(String, String), BTreeMap<String, BTreeMap<(String, String), (i64, i64)>>>;

/// The scope of a campaign's own records ('' is every journey's).
fn campaign_scope(campaign: &str) -> String {
    format!("c:{campaign}")
}

fn day_key(day: NaiveDate) -> String {
    day.format("%Y-%m-%d").to_string()
}

fn parse_day(day: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()
}

fn day_number(day: NaiveDate) -> i64 {
    (day - NaiveDate::default()).num_days()
}

/// The first day of the span of `level` that holds `day`.
fn span_start(day: NaiveDate, level: u32) -> NaiveDate {
    let number = day_number(day);
    day - chrono::Days::new(number.rem_euclid(1 << level) as u64)
}

/// A day's `analytics_daily` rows summed per breakdown value: once over every journey, and
/// once more within each campaign (a journey without a campaign only in the first).
fn sum_day(rows: &[DailyRow]) -> Sums {
    let mut sums = Sums::new();
    for row in rows {
        let mut scopes = vec![String::new()];
        if !row.campaignid.is_empty() {
            scopes.push(campaign_scope(&row.campaignid));
        }
        for scope in scopes {
            for (by, value) in PACKED_BY {
                let cell = sums
                    .entry((by.to_owned(), scope.clone()))
                    .or_default()
                    .entry(value(row).to_owned())
                    .or_default()
                    .entry((row.funnel.clone(), row.step.clone()))
                    .or_default();
                cell.0 += row.n;
                cell.1 += row.cents;
            }
        }
    }
    sums
}

/// Adds a span's records to the sums.
fn add_spans(sums: &mut Sums, spans: Vec<Span>) {
    for span in spans {
        let values = sums.entry((span.by, span.scope)).or_default();
        for value in span.values {
            let cells = values.entry(value.v).or_default();
            for cell in value.c {
                let sum = cells.entry((cell.f, cell.s)).or_default();
                sum.0 += cell.n;
                sum.1 += cell.c;
            }
        }
    }
}

/// The sums as the records of the span of `level` that begins on `start`.
fn spans(level: u32, start: NaiveDate, sums: &Sums) -> Vec<SpanRecord> {
    let start = day_key(start);
    sums.iter()
        .map(|((by, scope), values)| SpanRecord {
            id: vec![level.to_string(), start.clone(), by.clone(), scope.clone()],
            start: start.clone(),
            by: by.clone(),
            scope: scope.clone(),
            values: values
                .iter()
                .map(|(v, cells)| ValueCells {
                    v: v.clone(),
                    c: cells
                        .iter()
                        .map(|((f, s), (n, c))| Cell {
                            f: f.clone(),
                            s: s.clone(),
                            n: *n,
                            c: *c,
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect()
}

/// Packs one day, in one transaction: its `analytics_daily` rows as they are now into its own
/// span, then each longer span that holds it and whose days are all packed (from its two
/// halves), and the day's marks are cleared. A step that commits meanwhile keeps its mark, so the
/// day is read raw until the next pass; two processes packing one day conflict, and one fails.
pub async fn pack_day(db: &Db, day: NaiveDate) -> Result<(), surrealdb::Error> {
    super::in_turn(async {
        let tx = (**db).clone().begin().await?;
        let packed = async {
            let mut response = tx
                .query(
                    "SELECT funnel, campaignid, keyword, utm_source, utm_medium, utm_campaign, step, n, cents
                         FROM analytics_daily:[$d]..[$d, {}];
                     SELECT VALUE id FROM analytics_dirty:[$d]..[$d, {}];
                     SELECT VALUE record::id(id)[0] FROM analytics_packed_day;",
                )
                .bind(("d", day_key(day)))
                .await?
                .check()?;
            let rows: Vec<DailyRow> = response.take(0)?;
            let marks: Vec<RecordId> = response.take(1)?;
            let mut packed: BTreeSet<NaiveDate> = response
                .take::<Vec<String>>(2)?
                .iter()
                .filter_map(|d| parse_day(d))
                .collect();
            packed.insert(day);

            let mut sums = sum_day(&rows);
            let mut writes = vec![spans(0, day, &sums)];
            for level in 1..=LEVELS {
                let start = span_start(day, level);
                let length = 1u64 << level;
                let whole = start
                    .iter_days()
                    .take(length as usize)
                    .all(|d| packed.contains(&d));
                if !whole {
                    break;
                }
                // The half that does not hold the day, as it was packed.
                let half = if span_start(day, level - 1) == start {
                    start + chrono::Days::new(length / 2)
                } else {
                    start
                };
                let mut response = tx
                    .query("SELECT * OMIT id FROM analytics_span:[$l, $s]..[$l, $s, {}]")
                    .bind(("l", (level - 1).to_string()))
                    .bind(("s", day_key(half)))
                    .await?
                    .check()?;
                add_spans(&mut sums, response.take(0)?);
                writes.push(spans(level, start, &sums));
            }
            for records in writes.into_iter().filter(|w| !w.is_empty()) {
                tx.query("INSERT INTO analytics_span $records ON DUPLICATE KEY UPDATE values = $input.values RETURN NONE")
                    .bind(("records", records))
                    .await?
                    .check()?;
            }
            tx.query(
                "DELETE $marks;
                 UPSERT type::record('analytics_packed_day', [$d]) SET at = time::now() RETURN NONE;",
            )
            .bind(("marks", marks))
            .bind(("d", day_key(day)))
            .await?
            .check()?;
            Ok::<(), surrealdb::Error>(())
        }
        .await;
        match packed {
            Ok(()) => {
                tx.commit().await?;
                Ok(())
            }
            Err(error) => {
                if let Err(cancel) = tx.cancel().await {
                    tracing::warn!(%cancel, "a packing transaction could not be cancelled");
                }
                Err(error)
            }
        }
    })
    .await
}

/// The last day that may be packed at `now`.
fn last_packable(now: DateTime<Utc>) -> NaiveDate {
    (now - PACK_GRACE).date_naive() - chrono::Days::new(PACK_AFTER_DAYS as u64)
}

/// The days to pack at `now`: every day from the oldest roll-up to two days ago that is not
/// packed yet, and every packed day marked since.
pub async fn due_days(db: &Db, now: DateTime<Utc>) -> Result<Vec<NaiveDate>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT VALUE day FROM analytics_daily LIMIT 1;
             SELECT VALUE record::id(id)[0] FROM analytics_packed_day;
             SELECT VALUE day FROM analytics_dirty;",
        )
        .await?
        .check()?;
    let oldest: Vec<String> = response.take(0)?;
    let packed: Vec<String> = response.take(1)?;
    let marked: Vec<String> = response.take(2)?;
    let last = last_packable(now);
    let Some(oldest) = oldest.first().and_then(|day| parse_day(day)) else {
        return Ok(Vec::new());
    };
    let packed: BTreeSet<NaiveDate> = packed.iter().filter_map(|d| parse_day(d)).collect();
    let marked: BTreeSet<NaiveDate> = marked.iter().filter_map(|d| parse_day(d)).collect();
    Ok(oldest
        .iter_days()
        .take_while(|day| *day <= last)
        .filter(|day| !packed.contains(day) || marked.contains(day))
        .collect())
}

/// Packs every due day; answers how many days it packed. A day that fails (another process
/// packing it, say) is left for the next pass.
pub async fn pack_due(db: &Db, now: DateTime<Utc>) -> Result<usize, surrealdb::Error> {
    let mut done = 0;
    for day in due_days(db, now).await? {
        match pack_day(db, day).await {
            Ok(()) => done += 1,
            Err(error) => {
                tracing::warn!(%error, %day, "a day of the dashboard could not be packed")
            }
        }
    }
    Ok(done)
}

/// Runs [`pack_due`] every `every`.
pub fn spawn_packer(db: Db, every: std::time::Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match pack_due(&db, Utc::now()).await {
                Ok(0) => {}
                Ok(days) => tracing::info!(days, "days of the dashboard packed"),
                Err(error) => tracing::warn!(%error, "the dashboard's packing pass failed"),
            }
        }
    })
}

/// What [`sums`] reads: the values of one breakdown, over every journey or one campaign's, and
/// what each sum is kept apart by besides.
#[derive(Debug, Clone, Copy)]
pub struct Reading<'a> {
    /// The breakdown whose values the sums are of (`Funnel`: no value, every sum's is ''; `Day`
    /// is `Funnel` with `per_day`).
    pub by: Breakdown,
    /// Only this campaign's journeys (every sum names it).
    pub campaign: Option<&'a str>,
    /// Each campaign's journeys apart: every sum names its campaign ('' for the journeys of none).
    /// Packed, each campaign's own records (`c:{campaign}`, one id range a span) and the
    /// whole's, the journeys of no campaign being the whole less every campaign's.
    pub per_campaign: bool,
    /// Each keyword apart: every sum names its keyword. Packed records hold a keyword beside no
    /// other breakdown's value, so unless `by` is the keyword every day is read raw.
    pub per_keyword: bool,
    /// Each day apart: every sum names its day (single days' spans).
    pub per_day: bool,
}

impl<'a> Reading<'a> {
    /// A breakdown's values over every journey, all days together.
    pub fn of(by: Breakdown) -> Self {
        Reading {
            by,
            campaign: None,
            per_campaign: false,
            per_keyword: false,
            per_day: matches!(by, Breakdown::Day),
        }
    }

    /// Only `campaign`'s journeys (every journey's when none).
    pub fn within(mut self, campaign: Option<&'a str>) -> Self {
        self.campaign = campaign;
        self
    }

    pub fn per_campaign(mut self) -> Self {
        self.per_campaign = true;
        self
    }

    pub fn per_keyword(mut self) -> Self {
        self.per_keyword = true;
        self
    }

    pub fn per_day(mut self) -> Self {
        self.per_day = true;
        self
    }

    /// The packed records' `by` (the funnels' totals for `Funnel` and `Day`).
    fn packed_by(self) -> &'static str {
        match self.by {
            Breakdown::Funnel | Breakdown::Day => "funnel",
            other => other.field(),
        }
    }

    /// The raw rows' field that holds the value (none for the funnels' totals, whose value is '').
    fn raw_value(self) -> &'static str {
        match self.by {
            Breakdown::Funnel | Breakdown::Day => "''",
            other => other.field(),
        }
    }

    /// Whether the packed records can answer it: a keyword beside another breakdown's value is
    /// only in the raw rows.
    fn packable(self) -> bool {
        !self.per_keyword || self.by == Breakdown::Keyword
    }
}

/// One sum of the roll-ups: a funnel's step for one value of the breakdown, and for the campaign,
/// keyword and day when the [`Reading`] keeps them apart ('' when it does not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sum {
    pub funnel: String,
    pub campaign: String,
    pub keyword: String,
    pub day: String,
    pub value: String,
    pub step: String,
    pub n: i64,
    pub cents: i64,
}

/// A raw row's sum as the dashboard reads it.
#[derive(Debug, Clone, SurrealValue)]
struct RawSum {
    day: String,
    funnel: String,
    campaignid: String,
    keyword: String,
    value: String,
    step: String,
    n: i64,
    cents: i64,
}

/// Sums being read: (funnel, campaign, keyword, day, value, step) → (n, cents).
type ReadSums = BTreeMap<(String, String, String, String, String, String), (i64, i64)>;

/// The roll-ups of the journeys that began in `range`, summed per funnel, step and value of the
/// breakdown, and per what `reading` keeps apart. Packed records for the packed, unmarked days;
/// `analytics_daily` for the rest (today, yesterday, marked days, and every day when the packed
/// records cannot answer). A sum of nothing (no count, no cents) is left out, so both ways answer
/// the same sums.
pub async fn sums(
    db: &Db,
    range: &DayRange,
    reading: Reading<'_>,
) -> Result<Vec<Sum>, surrealdb::Error> {
    let per_day = reading.per_day || reading.by == Breakdown::Day;
    let clean: BTreeSet<NaiveDate> = if reading.packable() {
        let mut response = db
            .query(
                "SELECT VALUE record::id(id)[0] FROM analytics_packed_day:[$from]..=[$to];
                 SELECT VALUE day FROM analytics_dirty:[$from]..[$to, {}];",
            )
            .bind(("from", range.from_key()))
            .bind(("to", range.to_key()))
            .await?
            .check()?;
        let packed: Vec<String> = response.take(0)?;
        let marked: BTreeSet<String> = response.take::<Vec<String>>(1)?.into_iter().collect();
        packed
            .iter()
            .filter(|day| !marked.contains(*day))
            .filter_map(|day| parse_day(day))
            .collect()
    } else {
        BTreeSet::new()
    };

    // The range as runs of consecutive days: clean ones read as spans, the others raw.
    let mut runs: Vec<(bool, NaiveDate, NaiveDate)> = Vec::new();
    for day in range.from.iter_days().take_while(|day| *day <= range.to) {
        let is_clean = clean.contains(&day);
        match runs.last_mut() {
            Some((run_clean, _, end)) if *run_clean == is_clean => *end = day,
            _ => runs.push((is_clean, day, day)),
        }
    }
    let mut raw: Vec<(NaiveDate, NaiveDate)> = runs
        .iter()
        .filter(|(is_clean, _, _)| !is_clean)
        .map(|(_, first, last)| (*first, *last))
        .collect();
    if raw.len() > MAX_RAW_RANGES {
        raw = vec![(raw[0].0, raw[raw.len() - 1].1)];
    }

    // From each clean run's first day, the longest span that begins there and ends within the
    // run (single days when each day is kept apart): each read as one record (every journey's
    // or one campaign's), or as the whole's and every campaign's (one id range).
    let by = reading.packed_by();
    let mut keys: Vec<Vec<String>> = Vec::new();
    let mut campaign_ranges: Vec<Vec<String>> = Vec::new();
    for (_, first, last) in runs.iter().filter(|(is_clean, _, _)| *is_clean) {
        let mut day = *first;
        while day <= *last {
            let level = if per_day {
                0
            } else {
                (0..=LEVELS)
                    .rev()
                    .find(|level| {
                        span_start(day, *level) == day
                            && day + chrono::Days::new((1u64 << level) - 1) <= *last
                    })
                    .unwrap_or(0)
            };
            let span = vec![level.to_string(), day_key(day), by.to_owned()];
            let scope = reading.campaign.map(campaign_scope).unwrap_or_default();
            if reading.per_campaign && reading.campaign.is_none() {
                campaign_ranges.push(span.clone());
            }
            keys.push([span, vec![scope]].concat());
            day = day + chrono::Days::new(1u64 << level);
        }
    }

    let filter = if reading.campaign.is_some() {
        " WHERE campaignid = $campaign"
    } else {
        ""
    };
    // (Every campaign's records of a span: `c:` up to `c;`, ':' and ';' being neighbours.)
    let mut sql = String::from(
        "SELECT * OMIT id FROM array::map($keys, |$k| type::record('analytics_span', $k));
         array::flatten(array::map($ranges, |$k| (SELECT * OMIT id FROM analytics_span:[$k[0], $k[1], $k[2], 'c:']..[$k[0], $k[1], $k[2], 'c;'])));",
    );
    for index in 0..raw.len() {
        sql.push_str(&format!(
            "SELECT day, funnel, campaignid, keyword, {value} AS value, step, n, cents FROM analytics_daily:[$a{index}]..[$b{index}, {{}}]{filter};",
            value = reading.raw_value()
        ));
    }
    let mut query = db
        .query(sql)
        .bind(("keys", keys))
        .bind(("ranges", campaign_ranges))
        .bind(("campaign", reading.campaign.map(str::to_owned)));
    for (index, (first, last)) in raw.iter().enumerate() {
        query = query
            .bind((format!("a{index}"), day_key(*first)))
            .bind((format!("b{index}"), day_key(*last)));
    }
    let mut response = query.await?.check()?;

    let mut sums = ReadSums::new();
    let whole: Vec<Span> = response.take(0)?;
    let campaigns: Vec<Span> = response.take(1)?;
    for (span, sign) in whole
        .into_iter()
        .map(|span| (span, 1))
        .chain(campaigns.into_iter().map(|span| (span, -1)))
    {
        // A campaign's own record: its journeys, and the whole's less them (the journeys of no
        // campaign, once every campaign's are taken away).
        let campaign = span
            .scope
            .strip_prefix("c:")
            .map(str::to_owned)
            .unwrap_or_default();
        let mut apart = vec![(campaign, 1)];
        if sign < 0 {
            apart.push((String::new(), -1));
        }
        let day = if per_day { span.start } else { String::new() };
        for value in span.values {
            let keyword = if reading.per_keyword {
                value.v.clone()
            } else {
                String::new()
            };
            for cell in value.c {
                for (campaign, sign) in &apart {
                    let campaign = if reading.per_campaign || reading.campaign.is_some() {
                        campaign.clone()
                    } else {
                        String::new()
                    };
                    let sum = sums
                        .entry((
                            cell.f.clone(),
                            campaign,
                            keyword.clone(),
                            day.clone(),
                            value.v.clone(),
                            cell.s.clone(),
                        ))
                        .or_default();
                    sum.0 += sign * cell.n;
                    sum.1 += sign * cell.c;
                }
            }
        }
    }
    for index in 0..raw.len() {
        let rows: Vec<RawSum> = response.take(index + 2)?;
        for row in rows {
            // A span of raw days may hold clean ones (past MAX_RAW_RANGES): those were read packed.
            if parse_day(&row.day).is_some_and(|day| clean.contains(&day)) {
                continue;
            }
            let kept = |kept: bool, value: String| if kept { value } else { String::new() };
            let sum = sums
                .entry((
                    row.funnel,
                    kept(
                        reading.per_campaign || reading.campaign.is_some(),
                        row.campaignid,
                    ),
                    kept(reading.per_keyword, row.keyword),
                    kept(per_day, row.day),
                    row.value,
                    row.step,
                ))
                .or_default();
            sum.0 += row.n;
            sum.1 += row.cents;
        }
    }
    Ok(sums
        .into_iter()
        .filter(|(_, (n, cents))| *n != 0 || *cents != 0)
        .map(
            |((funnel, campaign, keyword, day, value, step), (n, cents))| Sum {
                funnel,
                campaign,
                keyword,
                day,
                value,
                step,
                n,
                cents,
            },
        )
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        funnel: &str,
        campaign: &str,
        keyword: &str,
        step: &str,
        n: i64,
        cents: i64,
    ) -> DailyRow {
        DailyRow {
            funnel: funnel.to_owned(),
            campaignid: campaign.to_owned(),
            keyword: keyword.to_owned(),
            utm_source: if campaign.is_empty() { "" } else { "google" }.to_owned(),
            utm_medium: String::new(),
            utm_campaign: String::new(),
            step: step.to_owned(),
            n,
            cents,
        }
    }

    #[test]
    fn a_day_sums_once_overall_and_once_within_each_campaign() {
        let rows = [
            row("chat_funnel", "1", "wifi", "visitors", 3, 0),
            row("chat_funnel", "1", "printer", "visitors", 2, 0),
            row("chat_funnel", "1", "printer", "fee", 1, 100),
            row("help_funnel", "", "", "visitors", 4, 0),
        ];
        let day = NaiveDate::from_ymd_opt(2026, 11, 1).unwrap_or_default();
        let records = spans(0, day, &sum_day(&rows));
        let find = |by: &str, scope: &str| {
            records
                .iter()
                .find(|r| r.id == ["0", "2026-11-01", by, scope])
                .map(|r| r.values.clone())
                .unwrap_or_default()
        };
        let cell = |f: &str, s: &str, n: i64, c: i64| Cell {
            f: f.to_owned(),
            s: s.to_owned(),
            n,
            c,
        };
        let value = |v: &str, c: Vec<Cell>| ValueCells { v: v.to_owned(), c };
        assert_eq!(
            find("funnel", ""),
            [value(
                "",
                vec![
                    cell("chat_funnel", "fee", 1, 100),
                    cell("chat_funnel", "visitors", 5, 0),
                    cell("help_funnel", "visitors", 4, 0)
                ]
            )]
        );
        assert_eq!(
            find("keyword", "c:1"),
            [
                value(
                    "printer",
                    vec![
                        cell("chat_funnel", "fee", 1, 100),
                        cell("chat_funnel", "visitors", 2, 0)
                    ]
                ),
                value("wifi", vec![cell("chat_funnel", "visitors", 3, 0)])
            ]
        );
        assert_eq!(
            find("campaignid", "")[0],
            value("", vec![cell("help_funnel", "visitors", 4, 0)])
        );
        // The journeys without a campaign are no campaign's: six breakdowns overall, and six
        // within campaign 1.
        assert_eq!(records.len(), 12);
        assert!(records.iter().all(|r| r.scope != "c:"));
    }

    #[test]
    fn spans_begin_on_multiples_of_their_length() {
        let day = |d: u32| NaiveDate::from_ymd_opt(2026, 11, d).unwrap_or_default();
        // 2026-11-27 is day 20,784 since 1970-01-01: 20,784 = 16 x 1,299.
        assert_eq!(day_number(day(27)), 20_784);
        assert_eq!(span_start(day(27), 0), day(27));
        assert_eq!(span_start(day(27), 4), day(27));
        assert_eq!(span_start(day(28), 4), day(27));
        assert_eq!(span_start(day(26), 1), day(25));
        assert_eq!(span_start(day(27), 5), day(11));
    }

    #[test]
    fn days_pack_two_days_after_they_end() {
        let now = "2026-11-27T00:05:00Z"
            .parse::<DateTime<Utc>>()
            .unwrap_or_default();
        assert_eq!(last_packable(now).to_string(), "2026-11-24");
        let later = "2026-11-27T00:15:00Z"
            .parse::<DateTime<Utc>>()
            .unwrap_or_default();
        assert_eq!(last_packable(later).to_string(), "2026-11-25");
    }
}
