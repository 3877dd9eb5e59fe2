//! What the ads cost (issue 52), as the store keeps it: a Google Ads report uploaded in /admin,
//! kept per day and campaign (and keyword, from a keyword report), beside the revenue the
//! dashboard counts.
//!
//! `ad_cost:[day, campaignid, keyword]` (migration 0026) holds a day's clicks and cost of a
//! campaign (keyword '') or of one of its keywords. An upload ([`load`]) replaces, in one
//! transaction, every row of its level on the days it covers and inserts its own, so loading a
//! file again never counts it twice and a day it covers loses what it no longer holds. The
//! dashboard reads a range of days as one range of ids ([`spending`]). `ad_cost_day:[day]` sums
//! each day, for what [`loaded`] says is there.

use std::collections::{BTreeMap, BTreeSet};

use surrealdb::types::SurrealValue;

use crate::domain::ad_costs::{self, CURRENCY, CostFile, Level};
use crate::domain::journey::DayRange;
use crate::store::Db;

/// Clicks and what they cost, in cents (USD, the revenue's currency).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spend {
    pub cost_cents: i64,
    pub clicks: u64,
}

impl Spend {
    pub fn add(&mut self, other: Spend) {
        self.cost_cents += other.cost_cents;
        self.clicks += other.clicks;
    }

    /// The sum of `spends`; none when there are none (no cost loaded, as against a cost of 0).
    pub fn total(spends: impl IntoIterator<Item = Spend>) -> Option<Spend> {
        let mut spends = spends.into_iter();
        let first = spends.next()?;
        Some(spends.fold(first, |mut sum, spend| {
            sum.add(spend);
            sum
        }))
    }
}

/// The costs of a range of days, as the dashboard's rows need them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spending {
    /// Per campaign id: its campaign-level costs, or on days without them the sum of its
    /// keyword-level ones.
    pub campaigns: BTreeMap<String, Spend>,
    /// Per (campaign id, [`keyword_key`]): keyword-level costs.
    pub keywords: BTreeMap<(String, String), Spend>,
    /// Per day (`YYYY-MM-DD`): every campaign's costs (as `campaigns` counts them).
    pub days: BTreeMap<String, Spend>,
}

/// A keyword as costs and journeys are matched by: trimmed and lower-cased.
pub fn keyword_key(keyword: &str) -> String {
    ad_costs::keyword_key(keyword)
}

/// One `ad_cost` row as it is read: its id's parts and its figures.
#[derive(Debug, Clone, PartialEq, Eq, SurrealValue)]
struct CostRow {
    day: String,
    campaign: String,
    keyword: String,
    clicks: i64,
    cost_cents: i64,
}

impl CostRow {
    fn spend(&self) -> Spend {
        Spend {
            cost_cents: self.cost_cents,
            clicks: u64::try_from(self.clicks).unwrap_or_default(),
        }
    }
}

/// One `ad_cost` record as it is written.
#[derive(Debug, Clone, SurrealValue)]
struct CostRecord {
    id: Vec<String>,
    clicks: i64,
    cost_cents: i64,
    currency: String,
}

/// One `ad_cost_day` record.
#[derive(Debug, Clone, SurrealValue)]
struct DayRecord {
    id: Vec<String>,
    clicks: i64,
    cost_cents: i64,
    campaigns: Vec<String>,
}

/// An `ad_cost_day` record as it is read.
#[derive(Debug, Clone, SurrealValue)]
struct DayRow {
    cost_cents: i64,
    campaigns: Vec<String>,
}

/// The rows of a range of days, as one range of `ad_cost` ids.
const RANGE_ROWS: &str = "SELECT record::id(id)[0] AS day, record::id(id)[1] AS campaign, \
     record::id(id)[2] AS keyword, clicks, cost_cents FROM ad_cost:[$from]..[$to, {}]";

/// Each day's and campaign's costs: its campaign-level row, or without one the sum of its
/// keyword-level rows.
fn per_day_and_campaign(rows: &[CostRow]) -> BTreeMap<(&str, &str), Spend> {
    let mut top: BTreeMap<(&str, &str), Spend> = BTreeMap::new();
    let mut keywords: BTreeMap<(&str, &str), Spend> = BTreeMap::new();
    for row in rows {
        let key = (row.day.as_str(), row.campaign.as_str());
        let sums = if row.keyword.is_empty() {
            &mut top
        } else {
            &mut keywords
        };
        sums.entry(key).or_default().add(row.spend());
    }
    for (key, spend) in keywords {
        top.entry(key).or_insert(spend);
    }
    top
}

/// The dashboard's view of a range's rows.
fn spending_of(rows: &[CostRow]) -> Spending {
    let mut spending = Spending::default();
    for row in rows.iter().filter(|row| !row.keyword.is_empty()) {
        spending
            .keywords
            .entry((row.campaign.clone(), row.keyword.clone()))
            .or_default()
            .add(row.spend());
    }
    for ((day, campaign), spend) in per_day_and_campaign(rows) {
        spending
            .campaigns
            .entry(campaign.to_owned())
            .or_default()
            .add(spend);
        spending.days.entry(day.to_owned()).or_default().add(spend);
    }
    spending
}

/// The costs loaded for the days of `range` (only `campaign`'s when one is given): one read of
/// the range's `ad_cost` ids.
pub async fn spending(
    db: &Db,
    range: &DayRange,
    campaign: Option<&str>,
) -> Result<Spending, surrealdb::Error> {
    let sql = if campaign.is_some() {
        format!("{RANGE_ROWS} WHERE record::id(id)[1] = $campaign")
    } else {
        RANGE_ROWS.to_owned()
    };
    let mut response = db
        .query(sql)
        .bind(("from", range.from_key()))
        .bind(("to", range.to_key()))
        .bind(("campaign", campaign.map(str::to_owned)))
        .await?
        .check()?;
    let rows: Vec<CostRow> = response.take(0)?;
    Ok(spending_of(&rows))
}

/// What an upload did: how many rows it stored and how many it replaced (rows of its level
/// loaded before on its days).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loaded {
    pub rows: usize,
    pub replaced: usize,
}

/// Rows inserted by one statement.
const INSERT_CHUNK: usize = 1_000;

/// Stores a report, in one transaction: every row of its level on the days it covers goes, its
/// rows come, and the days' sums are written again. Run again when it met another upload.
pub async fn load(db: &Db, file: &CostFile) -> Result<Loaded, surrealdb::Error> {
    crate::store::retry_on_conflict(|| load_once(db, file)).await
}

async fn load_once(db: &Db, file: &CostFile) -> Result<Loaded, surrealdb::Error> {
    let from = file.from.format("%Y-%m-%d").to_string();
    let to = file.to.format("%Y-%m-%d").to_string();
    let keyword_level = file.level == Level::Keyword;
    let tx = (**db).clone().begin().await?;
    let written = async {
        let mut response = tx
            .query(RANGE_ROWS)
            .bind(("from", from.clone()))
            .bind(("to", to.clone()))
            .await?
            .check()?;
        let before: Vec<CostRow> = response.take(0)?;
        let (replaced, mut kept): (Vec<CostRow>, Vec<CostRow>) = before
            .into_iter()
            .partition(|row| row.keyword.is_empty() != keyword_level);
        let level_filter = if keyword_level { "!=" } else { "=" };
        tx.query(format!(
            "DELETE ad_cost:[$from]..[$to, {{}}] WHERE record::id(id)[2] {level_filter} '' RETURN NONE"
        ))
        .bind(("from", from.clone()))
        .bind(("to", to.clone()))
        .await?
        .check()?;
        for chunk in file.rows.chunks(INSERT_CHUNK) {
            let records: Vec<CostRecord> = chunk
                .iter()
                .map(|row| CostRecord {
                    id: vec![
                        row.day.format("%Y-%m-%d").to_string(),
                        row.campaign.clone(),
                        row.keyword.clone(),
                    ],
                    clicks: i64::try_from(row.clicks).unwrap_or(i64::MAX),
                    cost_cents: row.cost_cents,
                    currency: CURRENCY.to_owned(),
                })
                .collect();
            tx.query("INSERT INTO ad_cost $records RETURN NONE")
                .bind(("records", records))
                .await?
                .check()?;
        }

        // The days' sums, from the rows of the other level kept and the new ones.
        kept.extend(file.rows.iter().map(|row| CostRow {
            day: row.day.format("%Y-%m-%d").to_string(),
            campaign: row.campaign.clone(),
            keyword: row.keyword.clone(),
            clicks: i64::try_from(row.clicks).unwrap_or(i64::MAX),
            cost_cents: row.cost_cents,
        }));
        let mut days: BTreeMap<&str, (Spend, BTreeSet<&str>)> = BTreeMap::new();
        for ((day, campaign), spend) in per_day_and_campaign(&kept) {
            let entry = days.entry(day).or_default();
            entry.0.add(spend);
            entry.1.insert(campaign);
        }
        let days: Vec<DayRecord> = days
            .into_iter()
            .map(|(day, (spend, campaigns))| DayRecord {
                id: vec![day.to_owned()],
                clicks: i64::try_from(spend.clicks).unwrap_or(i64::MAX),
                cost_cents: spend.cost_cents,
                campaigns: campaigns.into_iter().map(str::to_owned).collect(),
            })
            .collect();
        tx.query(
            "DELETE ad_cost_day:[$from]..=[$to] RETURN NONE;
             INSERT INTO ad_cost_day $days RETURN NONE;",
        )
        .bind(("from", from.clone()))
        .bind(("to", to.clone()))
        .bind(("days", days))
        .await?
        .check()?;
        Ok::<Loaded, surrealdb::Error>(Loaded {
            rows: file.rows.len(),
            replaced: replaced.len(),
        })
    }
    .await;
    match written {
        Ok(loaded) => {
            tx.commit().await?;
            Ok(loaded)
        }
        Err(error) => {
            if let Err(cancel) = tx.cancel().await {
                tracing::warn!(%cancel, "an upload's transaction could not be cancelled");
            }
            Err(error)
        }
    }
}

/// What is loaded: the first and last day with costs, how many days, campaigns, and what they
/// cost in all (as the dashboard counts campaigns).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    pub from: Option<String>,
    pub to: Option<String>,
    pub days: usize,
    pub campaigns: usize,
    pub cost_cents: i64,
}

/// The loaded costs' summary, from the days' sums (a record per day with costs).
pub async fn loaded(db: &Db) -> Result<Summary, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT VALUE record::id(id)[0] FROM ad_cost_day;
             SELECT cost_cents, campaigns FROM ad_cost_day;",
        )
        .await?
        .check()?;
    let days: Vec<String> = response.take(0)?;
    let sums: Vec<DayRow> = response.take(1)?;
    let mut campaigns = BTreeSet::new();
    let mut cost_cents = 0;
    for day in &sums {
        cost_cents += day.cost_cents;
        campaigns.extend(day.campaigns.iter().cloned());
    }
    Ok(Summary {
        from: days.iter().min().cloned(),
        to: days.iter().max().cloned(),
        days: days.len(),
        campaigns: campaigns.len(),
        cost_cents,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ad_costs::parse;
    use crate::store::migrate::migrated_memory_db;

    fn range(from: &str, to: &str) -> DayRange {
        DayRange::parse(from, to).expect("a range")
    }

    fn spend(cost_cents: i64, clicks: u64) -> Spend {
        Spend { cost_cents, clicks }
    }

    const HEADER: &str = "Day,Campaign ID,Clicks,Cost,Currency code\n";

    fn campaign_file(range_line: &str, rows: &str) -> CostFile {
        parse(format!("Campaign report\n\"{range_line}\"\n{HEADER}{rows}").as_bytes())
            .expect("a campaign report")
    }

    fn keyword_file(range_line: &str, rows: &str) -> CostFile {
        parse(
            format!(
                "Search keyword report\n\"{range_line}\"\nDay,Campaign ID,Keyword,Match type,Clicks,Cost,Currency code\n{rows}"
            )
            .as_bytes(),
        )
        .expect("a keyword report")
    }

    #[tokio::test]
    async fn an_upload_replaces_its_levels_days_and_spending_reads_campaigns_keywords_and_days() {
        let db = migrated_memory_db().await;
        let november = "November 1, 2026 - November 3, 2026";
        let first = campaign_file(
            november,
            "2026-11-01,11,10,10.00,USD\n2026-11-02,11,20,\"1,020.00\",USD\n2026-11-03,22,5,5.55,USD\n",
        );
        assert_eq!(
            load(&db, &first).await.expect("loads"),
            Loaded {
                rows: 3,
                replaced: 0
            }
        );
        // The same file again: nothing doubles.
        assert_eq!(
            load(&db, &first).await.expect("loads"),
            Loaded {
                rows: 3,
                replaced: 3
            }
        );
        // Keywords of campaign 22 on the 2nd (no campaign row that day) and the 3rd (one).
        let keywords = keyword_file(
            "November 2, 2026 - November 3, 2026",
            "2026-11-02,22,[printer],Exact match,1,1.00,USD\n2026-11-02,22,\"\"\"printer\"\"\",Phrase match,2,2.00,USD\n2026-11-03,22,wifi,Broad match,3,3.00,USD\n",
        );
        load(&db, &keywords).await.expect("loads");
        let all = spending(&db, &range("2026-11-01", "2026-11-30"), None)
            .await
            .expect("reads");
        assert_eq!(
            all.campaigns,
            BTreeMap::from([
                ("11".to_owned(), spend(103_000, 30)),
                // The 2nd from its keywords, the 3rd from its campaign row.
                ("22".to_owned(), spend(300 + 555, 3 + 5)),
            ])
        );
        assert_eq!(
            all.keywords,
            BTreeMap::from([
                (("22".to_owned(), "printer".to_owned()), spend(300, 3)),
                (("22".to_owned(), "wifi".to_owned()), spend(300, 3)),
            ])
        );
        assert_eq!(
            all.days,
            BTreeMap::from([
                ("2026-11-01".to_owned(), spend(1000, 10)),
                ("2026-11-02".to_owned(), spend(102_000 + 300, 23)),
                ("2026-11-03".to_owned(), spend(555, 5)),
            ])
        );
        let one = spending(&db, &range("2026-11-02", "2026-11-02"), Some("22"))
            .await
            .expect("reads");
        assert_eq!(
            one.campaigns,
            BTreeMap::from([("22".to_owned(), spend(300, 3))])
        );
        assert!(one.days.len() == 1 && one.keywords.len() == 1, "{one:?}");

        // A campaign upload covering the 2nd and 3rd only: the 1st stays, the 3rd loses
        // campaign 22's row, and the keyword rows stay.
        let part = campaign_file(
            "November 2, 2026 - November 3, 2026",
            "2026-11-02,11,1,1.00,USD\n",
        );
        assert_eq!(
            load(&db, &part).await.expect("loads"),
            Loaded {
                rows: 1,
                replaced: 2
            }
        );
        let all = spending(&db, &range("2026-11-01", "2026-11-30"), None)
            .await
            .expect("reads");
        assert_eq!(
            all.campaigns,
            BTreeMap::from([
                ("11".to_owned(), spend(1100, 11)),
                ("22".to_owned(), spend(600, 6)),
            ])
        );
        assert_eq!(
            loaded(&db).await.expect("summary"),
            Summary {
                from: Some("2026-11-01".to_owned()),
                to: Some("2026-11-03".to_owned()),
                days: 3,
                campaigns: 2,
                cost_cents: 1100 + 600,
            }
        );
    }

    /// Two uploads of the same days at once: each is whole, the later one wins, nothing mixes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn uploads_at_once_each_replace_the_days_whole() {
        let db = migrated_memory_db().await;
        let days = "November 1, 2026 - November 2, 2026";
        let a = campaign_file(days, "2026-11-01,1,1,1.00,USD\n2026-11-02,1,1,1.00,USD\n");
        let b = campaign_file(days, "2026-11-01,2,2,2.00,USD\n2026-11-02,2,2,2.00,USD\n");
        for _ in 0..10 {
            let (first, second) = tokio::join!(load(&db, &a), load(&db, &b));
            first.expect("loads");
            second.expect("loads");
            let now = spending(&db, &range("2026-11-01", "2026-11-02"), None)
                .await
                .expect("reads");
            let one = |campaign: &str, cents: i64, clicks: u64| {
                BTreeMap::from([(campaign.to_owned(), spend(cents, clicks))])
            };
            assert!(
                now.campaigns == one("1", 200, 2) || now.campaigns == one("2", 400, 4),
                "{now:?}"
            );
        }
    }

    #[tokio::test]
    async fn spending_reads_the_range_of_ids_and_nothing_else() {
        let db = migrated_memory_db().await;
        for sql in [
            RANGE_ROWS.to_owned(),
            format!("{RANGE_ROWS} WHERE record::id(id)[1] = $campaign"),
        ] {
            let mut plan = db
                .query(format!("{sql} EXPLAIN"))
                .bind(("from", "2026-11-01"))
                .bind(("to", "2026-11-30"))
                .bind(("campaign", "11"))
                .await
                .expect("explained");
            let plan: Option<serde_json::Value> = plan.take(0).expect("the plan");
            let plan = plan.expect("a plan").to_string();
            assert!(
                plan.contains("RecordIdScan") && !plan.contains("TableScan"),
                "{plan}"
            );
        }
    }

    #[test]
    fn a_campaign_row_wins_over_its_keywords_on_its_day() {
        let row = |day: &str, campaign: &str, keyword: &str, cents: i64| CostRow {
            day: day.to_owned(),
            campaign: campaign.to_owned(),
            keyword: keyword.to_owned(),
            clicks: 1,
            cost_cents: cents,
        };
        let spending = spending_of(&[
            row("2026-11-01", "1", "", 500),
            row("2026-11-01", "1", "a", 100),
            row("2026-11-02", "1", "a", 100),
            row("2026-11-02", "1", "b", 200),
        ]);
        assert_eq!(spending.campaigns["1"], spend(800, 3));
        assert_eq!(
            spending.keywords[&("1".to_owned(), "a".to_owned())],
            spend(200, 2)
        );
        assert_eq!(spending.days["2026-11-02"], spend(300, 2));
    }
}
