//! The operator's dashboard (issue 19): which funnels, campaigns and keywords bring visitors who
//! pay and stay, and what they earn. Every figure is a sum of the daily roll-ups
//! (`store::journeys`), over the journeys that began in the chosen days; the live panel reads the
//! process's metrics (`Metrics::live`, served by routes::admin).

pub mod costs;
pub mod forward;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::domain::journey::{DayRange, Figures, Step, week_of};
use crate::store::Db;
use crate::store::journeys::{self, Breakdown};
use crate::store::rollups;

/// What a table of the dashboard is broken down by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    Campaign,
    Keyword,
    UtmSource,
    UtmMedium,
    UtmCampaign,
    Day,
    Week,
}

impl By {
    pub const ALL: [By; 7] = [
        By::Campaign,
        By::Keyword,
        By::UtmSource,
        By::UtmMedium,
        By::UtmCampaign,
        By::Day,
        By::Week,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            By::Campaign => "campaign",
            By::Keyword => "keyword",
            By::UtmSource => "utm_source",
            By::UtmMedium => "utm_medium",
            By::UtmCampaign => "utm_campaign",
            By::Day => "day",
            By::Week => "week",
        }
    }

    pub fn parse(value: &str) -> Option<By> {
        Self::ALL.into_iter().find(|by| by.as_str() == value)
    }

    fn breakdown(self) -> Breakdown {
        match self {
            By::Campaign => Breakdown::Campaign,
            By::Keyword => Breakdown::Keyword,
            By::UtmSource => Breakdown::UtmSource,
            By::UtmMedium => Breakdown::UtmMedium,
            By::UtmCampaign => Breakdown::UtmCampaign,
            By::Day | By::Week => Breakdown::Day,
        }
    }
}

/// What the dashboard was asked for.
#[derive(Debug, Clone)]
pub struct Query {
    pub range: DayRange,
    pub by: By,
    /// Only this funnel's journeys in the table (all funnels when none).
    pub funnel: Option<String>,
    /// Only this campaign's journeys in the table (a campaign's keywords).
    pub campaign: Option<String>,
}

/// One funnel's figures over the range.
#[derive(Debug, Clone, Serialize)]
pub struct FunnelFigures {
    pub funnel: String,
    #[serde(flatten)]
    pub figures: Figures,
}

/// One row of the breakdown table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The campaign id, keyword, UTM value, day or week (a week is its Monday); empty when the
    /// journeys had none.
    pub key: String,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub from: String,
    pub to: String,
    pub by: By,
    pub funnel: Option<String>,
    pub campaign: Option<String>,
    /// Each funnel's figures, the busiest first.
    pub funnels: Vec<FunnelFigures>,
    /// All funnels together.
    pub total: Figures,
    /// The breakdown, the most visitors first (days and weeks in order).
    pub rows: Vec<Row>,
}

/// The dashboard's figures for a query.
pub async fn report(db: &Db, query: &Query) -> Result<Report, surrealdb::Error> {
    let sums = rollups::step_sums(
        db,
        &query.range,
        query.by.breakdown(),
        query.campaign.as_deref(),
    )
    .await?;
    // Every roll-up row names its funnel, so the breakdown's sums hold the funnels' totals too,
    // unless they are one campaign's: one read of the range instead of two.
    let per_funnel = if query.campaign.is_none() {
        None
    } else {
        Some(rollups::step_sums(db, &query.range, Breakdown::Funnel, None).await?)
    };
    let mut funnels: BTreeMap<String, Figures> = BTreeMap::new();
    for sum in per_funnel.as_ref().unwrap_or(&sums) {
        if let Some(step) = Step::parse(&sum.step) {
            funnels.entry(sum.funnel.clone()).or_default().add(
                step,
                sum.n.max(0) as u64,
                sum.cents,
            );
        }
    }
    let mut total = Figures::default();
    for figures in funnels.values() {
        total.merge(figures);
    }
    let mut funnels: Vec<FunnelFigures> = funnels
        .into_iter()
        .map(|(funnel, figures)| FunnelFigures { funnel, figures })
        .collect();
    funnels.sort_by_key(|f| std::cmp::Reverse(f.figures.visitors));

    let mut rows: BTreeMap<String, Figures> = BTreeMap::new();
    for sum in sums {
        if query
            .funnel
            .as_ref()
            .is_some_and(|funnel| *funnel != sum.funnel)
        {
            continue;
        }
        let Some(step) = Step::parse(&sum.step) else {
            continue;
        };
        let key = match query.by {
            By::Week => week_of(&sum.key).unwrap_or(sum.key),
            _ => sum.key,
        };
        rows.entry(key)
            .or_default()
            .add(step, sum.n.max(0) as u64, sum.cents);
    }
    let mut rows: Vec<Row> = rows
        .into_iter()
        .map(|(key, figures)| Row { key, figures })
        .collect();
    if !matches!(query.by, By::Day | By::Week) {
        rows.sort_by(|a, b| {
            b.figures
                .visitors
                .cmp(&a.figures.visitors)
                .then_with(|| a.key.cmp(&b.key))
        });
    }
    Ok(Report {
        from: query.range.from_key(),
        to: query.range.to_key(),
        by: query.by,
        funnel: query.funnel.clone(),
        campaign: query.campaign.clone(),
        funnels,
        total,
        rows,
    })
}

/// Forgets what is older than `retention_days` (analytics.retention_days; 0 keeps everything):
/// the events, and the journeys that began before it with their steps. The daily roll-ups stay,
/// so the dashboard's older figures stay too. Answers how many records went.
pub async fn forget_old(db: &Db, retention_days: u32) -> Result<u64, surrealdb::Error> {
    if retention_days == 0 {
        return Ok(0);
    }
    let cutoff = chrono::Utc::now() - chrono::Duration::days(i64::from(retention_days));
    let mut gone = 0;
    loop {
        let pass = journeys::forget_before(db, cutoff).await?;
        gone += pass;
        if pass < journeys::FORGET_BATCH {
            return Ok(gone);
        }
    }
}

/// Runs [`forget_old`] every `every`.
pub fn spawn_retention(
    db: Db,
    retention_days: u32,
    every: std::time::Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match forget_old(&db, retention_days).await {
                Ok(0) => {}
                Ok(gone) => tracing::info!(gone, "old analytics records forgotten"),
                Err(error) => tracing::warn!(%error, "the analytics retention pass failed"),
            }
        }
    })
}

/// A table as CSV: the key column, then each step's count and each sum in dollars. A value that
/// a spreadsheet would read as a formula is quoted and prefixed with `'`.
pub fn csv<'a>(key: &str, rows: impl Iterator<Item = (&'a str, &'a Figures)>) -> String {
    let mut out = String::new();
    let header = [
        key,
        "visitors",
        "first_message",
        "final_message",
        "checkout",
        "trial",
        "paid",
        "retained_30d",
        "fees_usd",
        "fees_refunded_usd",
        "subscriptions_usd",
        "net_usd",
        "net_per_visitor_usd",
    ];
    out.push_str(&header.join(","));
    out.push('\n');
    let dollars = |cents: i64| format!("{:.2}", cents as f64 / 100.0);
    for (name, figures) in rows {
        let mut cells = vec![csv_cell(name)];
        cells.extend(
            Step::FUNNEL
                .iter()
                .map(|step| figures.count(*step).to_string()),
        );
        cells.extend(
            [
                figures.fee_cents,
                figures.fee_refund_cents,
                figures.subscription_cents,
                figures.net_cents,
                figures.net_cents_per_visitor,
            ]
            .map(dollars),
        );
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

fn csv_cell(value: &str) -> String {
    let guarded = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_owned()
    };
    if guarded.contains([',', '"', '\n', '\r']) || guarded != value {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_hold_counts_and_dollars_and_no_formulas() {
        let mut figures = Figures::default();
        figures.add(Step::Visitors, 4, 0);
        figures.add(Step::Trial, 1, 0);
        figures.add(Step::Fee, 1, 100);
        let csv = csv(
            "keyword",
            [("printer, wifi", &figures), ("=HYPERLINK()", &figures)].into_iter(),
        );
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("keyword,visitors,first_message"));
        assert_eq!(
            lines[1],
            "\"printer, wifi\",4,0,0,0,1,0,0,1.00,0.00,0.00,1.00,0.25"
        );
        assert!(lines[2].starts_with("\"'=HYPERLINK()\",4,"));
    }
}
