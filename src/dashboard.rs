//! The operator's dashboard (issue 19): which funnels, campaigns and keywords bring visitors who
//! pay and stay, what they earn and (issue 52) what their ads cost. Every figure is a sum of the
//! daily roll-ups (`store::journeys`, read by `store::rollups`), over the journeys that began in
//! the chosen days; the costs are the ads' reports the operator loaded (`costs`); the live panel
//! reads the process's metrics (`Metrics::live`, served by routes::admin).

pub mod forward;

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::Serialize;

use crate::domain::billing::TRIAL_DAYS;
use crate::domain::journey::{DayRange, Figures, Step, rounded_div, week_of};
use crate::store::Db;
use crate::store::ad_costs::{self as costs, Spend, Spending, keyword_key};
use crate::store::journeys::{self, Breakdown};
use crate::store::rollups::{self, Reading, Sum};

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
}

/// What the dashboard was asked for.
#[derive(Debug, Clone)]
pub struct Query {
    pub range: DayRange,
    pub by: By,
    /// Only this funnel's journeys in the table and the total (the funnels' table shows every
    /// funnel, to compare them).
    pub funnel: Option<String>,
    /// Only this campaign's journeys (a campaign's keywords).
    pub campaign: Option<String>,
    /// Only the journeys of this keyword (within the campaign, if one is chosen), as
    /// [`keyword_key`] matches them: 'Printer' is 'printer'.
    pub keyword: Option<String>,
}

impl Query {
    /// What the roll-ups are read by: the breakdown's values, or a keyword's beside them.
    fn reading(&self) -> Reading<'_> {
        let keyword = self.keyword.is_some();
        let reading = match self.by {
            // A keyword's campaigns: each campaign's keywords, that one kept.
            By::Campaign if keyword => Reading::of(Breakdown::Keyword).per_campaign(),
            By::Campaign => Reading::of(Breakdown::Campaign),
            By::Keyword => Reading::of(Breakdown::Keyword).per_campaign(),
            By::UtmSource => Reading::of(Breakdown::UtmSource),
            By::UtmMedium => Reading::of(Breakdown::UtmMedium),
            By::UtmCampaign => Reading::of(Breakdown::UtmCampaign),
            // A keyword's days: each day's keywords, that one kept.
            By::Day | By::Week if keyword => Reading::of(Breakdown::Keyword).per_day(),
            By::Day | By::Week => Reading::of(Breakdown::Funnel).per_day(),
        };
        let reading = if keyword || self.by == By::Keyword {
            reading.per_keyword()
        } else {
            reading
        };
        reading.within(self.campaign.as_deref())
    }
}

/// One funnel's figures over the range.
#[derive(Debug, Clone, Serialize)]
pub struct FunnelFigures {
    pub funnel: String,
    #[serde(flatten)]
    pub figures: Figures,
}

/// What the ads of a row (or of the total) cost, beside what its visitors brought. The cost does
/// not depend on the funnel chosen: a campaign's clicks are not per funnel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostFigures {
    /// What the clicks cost, in cents (USD).
    pub cost_cents: i64,
    pub clicks: u64,
    /// The cost per visitor, rounded to the cent (none without visitors).
    pub cost_per_visitor_cents: Option<i64>,
    /// The cost per trial begun, rounded to the cent: what a customer cost to acquire (none
    /// without trials).
    pub cost_per_trial_cents: Option<i64>,
    /// Return on ad spend: net revenue ÷ cost, to two decimals (none when nothing was spent).
    pub roas: Option<f64>,
    /// Net revenue less the cost, in cents.
    pub profit_cents: i64,
}

impl CostFigures {
    /// The cost figures of `spend` against the revenue of `figures`.
    pub fn of(spend: Spend, figures: &Figures) -> Self {
        let per = |count: u64| {
            (count > 0).then(|| rounded_div(spend.cost_cents, count.min(i64::MAX as u64) as i64))
        };
        let mut cost = CostFigures {
            cost_cents: spend.cost_cents,
            clicks: spend.clicks,
            cost_per_visitor_cents: per(figures.visitors),
            cost_per_trial_cents: per(figures.trial),
            roas: None,
            profit_cents: figures.net_cents - spend.cost_cents,
        };
        cost.roas = cost
            .roas_hundredths()
            .map(|hundredths| hundredths as f64 / 100.0);
        cost
    }

    /// The return on ad spend in hundredths (1.5 is 150), rounded half away from zero.
    fn roas_hundredths(&self) -> Option<i64> {
        let net = self.profit_cents + self.cost_cents;
        (self.cost_cents != 0).then(|| rounded_div(net.saturating_mul(100), self.cost_cents))
    }
}

/// One row of the breakdown table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The campaign id, keyword, UTM value, day or week (a week is its Monday); empty when the
    /// journeys had none.
    pub key: String,
    /// By keyword: the campaign id the keyword is of ('' for the journeys of no campaign).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign: Option<String>,
    #[serde(flatten)]
    pub figures: Figures,
    /// What its ads cost; none when no cost was loaded for it (and for the UTM breakdowns).
    pub cost: Option<CostFigures>,
}

/// The figures of the journeys chosen (funnel, campaign and keyword), with what their ads cost.
#[derive(Debug, Clone, Serialize)]
pub struct Total {
    #[serde(flatten)]
    pub figures: Figures,
    /// Every campaign's cost (or the chosen campaign's, or the chosen keyword's); none when no
    /// cost was loaded for it in the range.
    pub cost: Option<CostFigures>,
}

/// The first day of the range whose figures may still grow: cohorts too young for their trials
/// to be charged, or for their members to be 30 days in (none when every day is final).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    /// The first day whose "First month paid" may still grow.
    pub paid_from: Option<String>,
    /// The first day whose "Subscribed after 30 days" may still grow.
    pub retained_from: Option<String>,
}

/// The days (today and those before it) whose "First month paid" may still grow: a trial is
/// charged when it ends, `TRIAL_DAYS` (7) after it began, so a visitor of 7 days ago who began
/// the trial that day is charged today. (A trial begun days after its visitor came counts on the
/// day the visitor came, and is charged later still: the most are begun the day they came.)
pub const PAID_PENDING_DAYS: i64 = TRIAL_DAYS + 1;
/// How long after its trial began a member is found still subscribed or not (the hourly upkeep
/// decides it; `fn::journey`'s `retain_at`).
pub const RETAINED_AFTER_DAYS: i64 = 30;
/// The days (today and those before it) whose "Subscribed after 30 days" may still grow.
pub const RETAINED_PENDING_DAYS: i64 = RETAINED_AFTER_DAYS + 1;

/// Which days of `range` may still grow on `today`.
pub fn pending(range: &DayRange, today: NaiveDate) -> Pending {
    let from = |days: i64| {
        let first = today - chrono::Days::new((days - 1) as u64);
        (range.to >= first).then(|| range.from.max(first).format("%Y-%m-%d").to_string())
    };
    Pending {
        paid_from: from(PAID_PENDING_DAYS),
        retained_from: from(RETAINED_PENDING_DAYS),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub from: String,
    pub to: String,
    pub by: By,
    pub funnel: Option<String>,
    pub campaign: Option<String>,
    pub keyword: Option<String>,
    /// Each funnel's figures within the campaign and keyword chosen (every funnel, whichever is
    /// chosen), the busiest first.
    pub funnels: Vec<FunnelFigures>,
    /// The funnel, campaign and keyword chosen.
    pub total: Total,
    /// The breakdown, the most visitors first (days and weeks in order).
    pub rows: Vec<Row>,
    pub pending: Pending,
}

/// The dashboard's figures for a query.
pub async fn report(db: &Db, query: &Query) -> Result<Report, surrealdb::Error> {
    let sums = rollups::sums(db, &query.range, query.reading()).await?;
    let spending = costs::spending(db, &query.range, query.campaign.as_deref()).await?;
    Ok(assemble(
        query,
        &sums,
        &spending,
        chrono::Utc::now().date_naive(),
    ))
}

/// A row being gathered: its figures, and (by keyword) how each spelling of its keyword was
/// written, with its visitors.
#[derive(Default)]
struct Gathered {
    figures: Figures,
    spellings: BTreeMap<String, u64>,
}

/// The report of the roll-ups' `sums` (read by [`Query::reading`]) and the costs.
fn assemble(query: &Query, sums: &[Sum], spending: &Spending, today: NaiveDate) -> Report {
    let keyword = query.keyword.as_deref().map(keyword_key);
    let chosen_campaign = |campaign: &str| query.campaign.as_ref().is_none_or(|c| c == campaign);
    let mut funnels: BTreeMap<String, Figures> = BTreeMap::new();
    // (campaign, key) → the row; a keyword's spellings are one row ('Printer' is 'printer').
    let mut rows: BTreeMap<(String, String), Gathered> = BTreeMap::new();
    for sum in sums {
        let Some(step) = Step::parse(&sum.step) else {
            continue;
        };
        if keyword
            .as_ref()
            .is_some_and(|keyword| *keyword != keyword_key(&sum.keyword))
        {
            continue;
        }
        let n = sum.n.max(0) as u64;
        funnels
            .entry(sum.funnel.clone())
            .or_default()
            .add(step, n, sum.cents);
        if query
            .funnel
            .as_ref()
            .is_some_and(|funnel| *funnel != sum.funnel)
        {
            continue;
        }
        let (campaign, key) = match query.by {
            By::Campaign if keyword.is_some() => (String::new(), sum.campaign.clone()),
            By::Keyword => (sum.campaign.clone(), keyword_key(&sum.value)),
            By::Day => (String::new(), sum.day.clone()),
            By::Week => (
                String::new(),
                week_of(&sum.day).unwrap_or_else(|| sum.day.clone()),
            ),
            _ => (String::new(), sum.value.clone()),
        };
        let row = rows.entry((campaign, key)).or_default();
        row.figures.add(step, n, sum.cents);
        if query.by == By::Keyword {
            *row.spellings.entry(sum.value.clone()).or_default() +=
                if step == Step::Visitors { n } else { 0 };
        }
    }

    // What each row's ads cost, and a row for what cost something but brought no visitor.
    let days_of_week = |week: &str| -> Option<Spend> {
        Spend::total(
            spending
                .days
                .iter()
                .filter(|(day, _)| week_of(day).as_deref() == Some(week))
                .map(|(_, spend)| *spend),
        )
    };
    let cost_of = |campaign: &str, key: &str| -> Option<Spend> {
        match (query.by, &keyword) {
            (By::Campaign, None) => spending.campaigns.get(key).copied(),
            (By::Campaign, Some(keyword)) => spending
                .keywords
                .get(&(key.to_owned(), keyword.clone()))
                .copied(),
            (By::Keyword, _) => spending
                .keywords
                .get(&(campaign.to_owned(), key.to_owned()))
                .copied(),
            (By::Day, None) => spending.days.get(key).copied(),
            (By::Week, None) => days_of_week(key),
            // Costs are not known per keyword and day, nor per UTM field.
            (By::Day | By::Week, Some(_)) => None,
            (By::UtmSource | By::UtmMedium | By::UtmCampaign, _) => None,
        }
    };
    let in_range = |day: &str| {
        NaiveDate::parse_from_str(day, "%Y-%m-%d")
            .is_ok_and(|day| query.range.from <= day && day <= query.range.to)
    };
    let costly: Vec<(String, String)> = match (query.by, &keyword) {
        (By::Campaign, None) => spending
            .campaigns
            .keys()
            .filter(|campaign| chosen_campaign(campaign))
            .map(|campaign| (String::new(), campaign.clone()))
            .collect(),
        (By::Campaign | By::Keyword, _) => spending
            .keywords
            .keys()
            .filter(|(campaign, key)| {
                chosen_campaign(campaign) && keyword.as_ref().is_none_or(|k| k == key)
            })
            .map(|(campaign, key)| match query.by {
                By::Keyword => (campaign.clone(), key.clone()),
                _ => (String::new(), campaign.clone()),
            })
            .collect(),
        (By::Day | By::Week, None) => spending
            .days
            .keys()
            .filter(|day| in_range(day))
            .map(|day| {
                let key = match query.by {
                    By::Week => week_of(day).unwrap_or_else(|| day.clone()),
                    _ => day.clone(),
                };
                (String::new(), key)
            })
            .collect(),
        _ => Vec::new(),
    };
    for row in costly {
        rows.entry(row).or_default();
    }

    let mut rows: Vec<Row> = rows
        .into_iter()
        .map(|((campaign, key), row)| {
            let cost = cost_of(&campaign, &key).map(|spend| CostFigures::of(spend, &row.figures));
            // By keyword, the row reads as its keyword was written most (its key with none).
            let shown = row
                .spellings
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
                .map(|(spelling, _)| spelling.clone())
                .unwrap_or(key);
            Row {
                key: shown,
                campaign: (query.by == By::Keyword).then_some(campaign),
                figures: row.figures,
                cost,
            }
        })
        .collect();
    if !matches!(query.by, By::Day | By::Week) {
        rows.sort_by(|a, b| {
            b.figures
                .visitors
                .cmp(&a.figures.visitors)
                .then_with(|| a.key.cmp(&b.key))
                .then_with(|| a.campaign.cmp(&b.campaign))
        });
    }

    let mut total = Figures::default();
    for (funnel, figures) in &funnels {
        if query.funnel.as_ref().is_none_or(|chosen| chosen == funnel) {
            total.merge(figures);
        }
    }
    let total_cost = match (&keyword, &query.campaign) {
        (Some(keyword), _) => Spend::total(
            spending
                .keywords
                .iter()
                .filter(|((campaign, key), _)| chosen_campaign(campaign) && key == keyword)
                .map(|(_, spend)| *spend),
        ),
        (None, Some(campaign)) => spending.campaigns.get(campaign).copied(),
        (None, None) => Spend::total(spending.campaigns.values().copied()),
    };

    let mut funnels: Vec<FunnelFigures> = funnels
        .into_iter()
        .map(|(funnel, figures)| FunnelFigures { funnel, figures })
        .collect();
    funnels.sort_by_key(|f| std::cmp::Reverse(f.figures.visitors));
    Report {
        from: query.range.from_key(),
        to: query.range.to_key(),
        by: query.by,
        funnel: query.funnel.clone(),
        campaign: query.campaign.clone(),
        keyword: query.keyword.clone(),
        funnels,
        total: Total {
            cost: total_cost.map(|spend| CostFigures::of(spend, &total)),
            figures: total,
        },
        rows,
        pending: pending(&query.range, today),
    }
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

/// The figures' columns of a CSV table, after its key (and campaign) column.
const FIGURE_COLUMNS: [&str; 12] = [
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

/// The cost columns of the breakdown's CSV, empty where no cost was loaded.
const COST_COLUMNS: [&str; 6] = [
    "cost_usd",
    "clicks",
    "cost_per_visitor_usd",
    "cost_per_trial_usd",
    "roas",
    "profit_usd",
];

/// Cents (or hundredths) as a number with two decimals, exactly: -5 is -0.05.
fn hundredths(value: i64) -> String {
    let sign = if value < 0 { "-" } else { "" };
    let value = value.unsigned_abs();
    format!("{sign}{}.{:02}", value / 100, value % 100)
}

fn figure_cells(figures: &Figures) -> impl Iterator<Item = String> + '_ {
    Step::FUNNEL
        .iter()
        .map(|step| figures.count(*step).to_string())
        .chain(
            [
                figures.fee_cents,
                figures.fee_refund_cents,
                figures.subscription_cents,
                figures.net_cents,
                figures.net_cents_per_visitor,
            ]
            .map(hundredths),
        )
}

fn cost_cells(cost: Option<&CostFigures>) -> Vec<String> {
    let Some(cost) = cost else {
        return vec![String::new(); COST_COLUMNS.len()];
    };
    let money = |cents: Option<i64>| cents.map(hundredths).unwrap_or_default();
    vec![
        hundredths(cost.cost_cents),
        cost.clicks.to_string(),
        money(cost.cost_per_visitor_cents),
        money(cost.cost_per_trial_cents),
        money(cost.roas_hundredths()),
        hundredths(cost.profit_cents),
    ]
}

fn csv_line(out: &mut String, cells: impl IntoIterator<Item = String>) {
    out.push_str(&cells.into_iter().collect::<Vec<_>>().join(","));
    out.push('\n');
}

/// The breakdown table as CSV: the key column (by keyword, then its campaign), each step's count,
/// each sum in dollars (rounded to the cent), then the costs. A value that a spreadsheet would
/// read as a formula is quoted and prefixed with `'`.
pub fn rows_csv(by: By, rows: &[Row]) -> String {
    let mut out = String::new();
    let campaign_column = by == By::Keyword;
    let mut header = vec![by.as_str()];
    if campaign_column {
        header.push("campaign");
    }
    header.extend(FIGURE_COLUMNS);
    header.extend(COST_COLUMNS);
    csv_line(&mut out, header.into_iter().map(str::to_owned));
    for row in rows {
        let mut cells = vec![csv_cell(&row.key)];
        if campaign_column {
            cells.push(csv_cell(row.campaign.as_deref().unwrap_or_default()));
        }
        cells.extend(figure_cells(&row.figures));
        cells.extend(cost_cells(row.cost.as_ref()));
        csv_line(&mut out, cells);
    }
    out
}

/// The funnels' table as CSV (no costs: they are not per funnel).
pub fn funnels_csv(funnels: &[FunnelFigures]) -> String {
    let mut out = String::new();
    csv_line(
        &mut out,
        std::iter::once("funnel")
            .chain(FIGURE_COLUMNS)
            .map(str::to_owned),
    );
    for funnel in funnels {
        csv_line(
            &mut out,
            std::iter::once(csv_cell(&funnel.funnel)).chain(figure_cells(&funnel.figures)),
        );
    }
    out
}

/// A CSV cell: quoted when it must be, and a value a spreadsheet would read as a formula
/// prefixed with `'` (the dashboard's files and the drop-off's).
pub fn csv_cell(value: &str) -> String {
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

    fn figures(visitors: u64, trials: u64, net_cents: i64) -> Figures {
        let mut figures = Figures::default();
        figures.add(Step::Visitors, visitors, 0);
        figures.add(Step::Trial, trials, 0);
        figures.add(Step::Fee, 1, net_cents);
        figures
    }

    fn spend(cost_cents: i64, clicks: u64) -> Spend {
        Spend { cost_cents, clicks }
    }

    fn day(day: &str) -> NaiveDate {
        NaiveDate::parse_from_str(day, "%Y-%m-%d").unwrap_or_default()
    }

    #[test]
    fn csv_rows_hold_counts_dollars_costs_and_no_formulas() {
        let row = |key: &str, campaign: &str, cost: Option<CostFigures>| Row {
            key: key.to_owned(),
            campaign: Some(campaign.to_owned()),
            figures: figures(4, 1, 100),
            cost,
        };
        let cost = CostFigures::of(spend(300, 7), &figures(4, 1, 100));
        let rows = [
            row("printer, wifi", "c1", Some(cost)),
            row("=HYPERLINK()", "", None),
        ];
        let csv = rows_csv(By::Keyword, &rows);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "keyword,campaign,visitors,first_message,final_message,checkout,trial,paid,retained_30d,\
             fees_usd,fees_refunded_usd,subscriptions_usd,net_usd,net_per_visitor_usd,\
             cost_usd,clicks,cost_per_visitor_usd,cost_per_trial_usd,roas,profit_usd"
        );
        assert_eq!(
            lines[1],
            "\"printer, wifi\",c1,4,0,0,0,1,0,0,1.00,0.00,0.00,1.00,0.25,3.00,7,0.75,3.00,0.33,-2.00"
        );
        // No cost loaded: empty cells.
        assert_eq!(
            lines[2],
            "\"'=HYPERLINK()\",,4,0,0,0,1,0,0,1.00,0.00,0.00,1.00,0.25,,,,,,"
        );
        // Other tables have no campaign column.
        let campaigns = rows_csv(By::Campaign, &rows[1..]);
        assert!(campaigns.starts_with("campaign,visitors,"), "{campaigns}");
        assert!(campaigns.contains("\n\"'=HYPERLINK()\",4,"), "{campaigns}");
        let funnels = funnels_csv(&[FunnelFigures {
            funnel: "chat_funnel".to_owned(),
            figures: figures(4, 1, 100),
        }]);
        assert_eq!(
            funnels.lines().nth(1),
            Some("chat_funnel,4,0,0,0,1,0,0,1.00,0.00,0.00,1.00,0.25")
        );
        assert!(!funnels.contains("cost_usd"));
    }

    #[test]
    fn csv_money_is_rounded_to_the_cent_not_cut() {
        let per_visitor = |net_cents: i64, visitors: u64| {
            let row = Row {
                key: "k".to_owned(),
                campaign: None,
                figures: figures(visitors, 0, net_cents),
                cost: Some(CostFigures::of(
                    spend(net_cents, 0),
                    &figures(visitors, 0, net_cents),
                )),
            };
            let csv = rows_csv(By::Campaign, &[row]);
            let cells: Vec<String> = csv
                .lines()
                .nth(1)
                .unwrap_or_default()
                .split(',')
                .map(str::to_owned)
                .collect();
            // Net per visitor, cost per visitor.
            (cells[12].clone(), cells[15].clone())
        };
        // $2.00 over 3 visitors is $0.666...: 0.67.
        assert_eq!(per_visitor(200, 3), ("0.67".to_owned(), "0.67".to_owned()));
        // 2 cents over 3 visitors: a cent.
        assert_eq!(per_visitor(2, 3), ("0.01".to_owned(), "0.01".to_owned()));
        assert_eq!(
            per_visitor(-200, 3),
            ("-0.67".to_owned(), "-0.67".to_owned())
        );
        assert_eq!(per_visitor(-1, 3), ("0.00".to_owned(), "0.00".to_owned()));
        assert_eq!(per_visitor(-5, 1), ("-0.05".to_owned(), "-0.05".to_owned()));
        assert_eq!(hundredths(123_456_789), "1234567.89");
        assert_eq!(hundredths(i64::MIN), "-92233720368547758.08");
    }

    #[test]
    fn cost_figures_set_cost_against_what_the_visitors_brought() {
        // $3 for 4 visitors and 1 trial who brought $1.
        let cost = CostFigures::of(spend(300, 7), &figures(4, 1, 100));
        assert_eq!(
            cost,
            CostFigures {
                cost_cents: 300,
                clicks: 7,
                cost_per_visitor_cents: Some(75),
                cost_per_trial_cents: Some(300),
                roas: Some(0.33),
                profit_cents: -200,
            }
        );
        assert_eq!(
            serde_json::to_value(&cost).ok(),
            Some(serde_json::json!({
                "cost_cents": 300, "clicks": 7, "cost_per_visitor_cents": 75,
                "cost_per_trial_cents": 300, "roas": 0.33, "profit_cents": -200
            }))
        );
        // Rounded, not cut: $2 over 3 visitors, 200/300 = 0.67.
        let cost = CostFigures::of(spend(200, 3), &figures(3, 3, 300));
        assert_eq!(cost.cost_per_visitor_cents, Some(67));
        assert_eq!(cost.roas, Some(1.5));
        assert_eq!(
            CostFigures::of(spend(300, 1), &figures(1, 0, 200)).roas,
            Some(0.67)
        );
        // Nothing spent: no return on it to speak of; all the revenue is profit.
        let free = CostFigures::of(spend(0, 12), &figures(4, 1, 100));
        assert_eq!(
            (free.roas, free.profit_cents, free.cost_per_visitor_cents),
            (None, 100, Some(0))
        );
        // No visitors, no trials: no cost per either.
        let idle = CostFigures::of(spend(500, 9), &Figures::default());
        assert_eq!(
            (
                idle.cost_per_visitor_cents,
                idle.cost_per_trial_cents,
                idle.roas,
                idle.profit_cents
            ),
            (None, None, Some(0.0), -500)
        );
        let untried = CostFigures::of(spend(500, 9), &figures(2, 0, 0));
        assert_eq!(
            (untried.cost_per_visitor_cents, untried.cost_per_trial_cents),
            (Some(250), None)
        );
        // Money given back beyond what came in: a negative return.
        let refunded = CostFigures::of(spend(300, 9), &figures(2, 0, -100));
        assert_eq!((refunded.roas, refunded.profit_cents), (Some(-0.33), -400));
    }

    #[test]
    fn the_last_days_of_a_range_are_pending_until_their_trials_are_due() {
        let today = day("2026-11-30");
        let range = |from: &str, to: &str| DayRange {
            from: day(from),
            to: day(to),
        };
        let pending_of = |from: &str, to: &str| {
            let pending = pending(&range(from, to), today);
            (pending.paid_from, pending.retained_from)
        };
        let some = |day: &str| Some(day.to_owned());
        // Today and the 7 days before for the first payment; today and the 30 before for the
        // 30 days' subscription.
        assert_eq!(
            pending_of("2026-10-01", "2026-11-30"),
            (some("2026-11-23"), some("2026-10-31"))
        );
        assert_eq!(
            pending_of("2026-11-01", "2026-11-30"),
            (some("2026-11-23"), some("2026-11-01"))
        );
        assert_eq!(
            pending_of("2026-11-25", "2026-11-27"),
            (some("2026-11-25"), some("2026-11-25"))
        );
        assert_eq!(
            pending_of("2026-11-01", "2026-11-23"),
            (some("2026-11-23"), some("2026-11-01"))
        );
        assert_eq!(
            pending_of("2026-11-01", "2026-11-22"),
            (None, some("2026-11-01"))
        );
        assert_eq!(
            pending_of("2026-10-01", "2026-10-31"),
            (None, some("2026-10-31"))
        );
        assert_eq!(pending_of("2026-10-01", "2026-10-30"), (None, None));
        assert_eq!(PAID_PENDING_DAYS, 8);
        assert_eq!(RETAINED_PENDING_DAYS, 31);
    }

    /// A sum as a reading of the roll-ups answers it: `[campaign, keyword, day, value]`.
    fn sum(funnel: &str, apart: [&str; 4], step: Step, n: i64, cents: i64) -> Sum {
        let [campaign, keyword, day, value] = apart;
        Sum {
            funnel: funnel.to_owned(),
            campaign: campaign.to_owned(),
            keyword: keyword.to_owned(),
            day: day.to_owned(),
            value: value.to_owned(),
            step: step.as_str().to_owned(),
            n,
            cents,
        }
    }

    fn query(by: By, funnel: Option<&str>, campaign: Option<&str>, keyword: Option<&str>) -> Query {
        Query {
            range: DayRange {
                from: day("2026-11-01"),
                to: day("2026-11-30"),
            },
            by,
            funnel: funnel.map(str::to_owned),
            campaign: campaign.map(str::to_owned),
            keyword: keyword.map(str::to_owned),
        }
    }

    fn spending() -> Spending {
        let mut spending = Spending::default();
        spending.campaigns.insert("c1".to_owned(), spend(1_000, 10));
        spending.campaigns.insert("c3".to_owned(), spend(500, 5));
        spending
            .keywords
            .insert(("c1".to_owned(), "printer".to_owned()), spend(600, 6));
        spending
            .keywords
            .insert(("c1".to_owned(), "wifi".to_owned()), spend(400, 4));
        spending
            .keywords
            .insert(("c3".to_owned(), "printer".to_owned()), spend(500, 5));
        spending.days.insert("2026-11-02".to_owned(), spend(900, 9));
        spending.days.insert("2026-11-03".to_owned(), spend(600, 6));
        spending
    }

    fn cost_of(row: &Row) -> Option<(i64, u64)> {
        row.cost.as_ref().map(|cost| (cost.cost_cents, cost.clicks))
    }

    fn found<'a>(report: &'a Report, key: &str, campaign: Option<&str>) -> &'a Row {
        report
            .rows
            .iter()
            .find(|row| row.key == key && row.campaign.as_deref() == campaign)
            .unwrap_or_else(|| panic!("no row {key} {campaign:?} in {:?}", report.rows))
    }

    #[test]
    fn rows_and_the_total_carry_their_ads_cost_and_costly_campaigns_without_visitors_show() {
        let today = day("2026-11-30");
        // By campaign: c1 and the journeys of no campaign came; c3 cost without a visitor.
        let sums = [
            sum("chat_funnel", ["", "", "", "c1"], Step::Visitors, 4, 0),
            sum("chat_funnel", ["", "", "", "c1"], Step::Trial, 1, 0),
            sum("chat_funnel", ["", "", "", "c1"], Step::Fee, 1, 2_100),
            sum("help_funnel", ["", "", "", "c1"], Step::Visitors, 1, 0),
            sum("help_funnel", ["", "", "", ""], Step::Visitors, 3, 0),
        ];
        let report = assemble(
            &query(By::Campaign, None, None, None),
            &sums,
            &spending(),
            today,
        );
        let c1 = found(&report, "c1", None);
        assert_eq!((c1.figures.visitors, cost_of(c1)), (5, Some((1_000, 10))));
        let c1_cost = c1.cost.clone().expect("a cost");
        assert_eq!(c1_cost.roas, Some(2.1));
        assert_eq!(c1_cost.cost_per_visitor_cents, Some(200));
        assert_eq!(c1_cost.profit_cents, 1_100);
        let c3 = found(&report, "c3", None);
        assert_eq!((c3.figures.visitors, cost_of(c3)), (0, Some((500, 5))));
        assert_eq!(
            c3.cost.as_ref().map(|c| c.cost_per_visitor_cents),
            Some(None)
        );
        assert_eq!(cost_of(found(&report, "", None)), None);
        assert_eq!(report.rows.last().map(|row| row.key.as_str()), Some("c3"));
        assert_eq!(report.total.figures.visitors, 8);
        assert_eq!(
            report.total.cost.as_ref().map(|c| (c.cost_cents, c.clicks)),
            Some((1_500, 15))
        );
        let json = serde_json::to_value(&report).unwrap_or_default();
        assert!(json["rows"][0].get("campaign").is_none(), "{json}");
        assert_eq!(json["total"]["cost"]["cost_cents"], 1_500, "{json}");
        assert_eq!(json["total"]["visitors"], 8, "{json}");

        // One funnel: the total and the rows are its, the funnels' table every funnel's; the
        // cost is not per funnel.
        let help = assemble(
            &query(By::Campaign, Some("help_funnel"), None, None),
            &sums,
            &spending(),
            today,
        );
        assert_eq!(help.total.figures.visitors, 4);
        assert_eq!(help.funnels.len(), 2);
        assert_eq!(found(&help, "c1", None).figures.visitors, 1);
        assert_eq!(cost_of(found(&help, "c1", None)), Some((1_000, 10)));
        assert_eq!(help.total.cost.as_ref().map(|c| c.cost_cents), Some(1_500));

        // One campaign: its cost.
        let one = assemble(
            &query(By::Campaign, None, Some("c1"), None),
            &sums[..4],
            &spending(),
            today,
        );
        assert_eq!(one.total.cost.as_ref().map(|c| c.cost_cents), Some(1_000));
        assert_eq!(one.rows.len(), 1);

        // No costs loaded: none anywhere.
        let bare = assemble(
            &query(By::Campaign, None, None, None),
            &sums,
            &Spending::default(),
            today,
        );
        assert!(bare.total.cost.is_none());
        assert!(bare.rows.iter().all(|row| row.cost.is_none()));
        assert_eq!(bare.rows.len(), 2);
        // UTM values have no cost.
        let utm = assemble(
            &query(By::UtmSource, None, None, None),
            &sums,
            &spending(),
            today,
        );
        assert!(utm.rows.iter().all(|row| row.cost.is_none()));
    }

    #[test]
    fn by_keyword_a_row_is_a_campaigns_keyword_with_that_keywords_cost() {
        let today = day("2026-11-30");
        let sums = [
            sum(
                "chat_funnel",
                ["c1", "Printer", "", "Printer"],
                Step::Visitors,
                3,
                0,
            ),
            sum(
                "chat_funnel",
                ["c1", "printer", "", "printer"],
                Step::Visitors,
                1,
                0,
            ),
            sum(
                "chat_funnel",
                ["c1", "printer", "", "printer"],
                Step::Fee,
                1,
                100,
            ),
            sum(
                "chat_funnel",
                ["c2", "printer", "", "printer"],
                Step::Visitors,
                2,
                0,
            ),
            sum(
                "chat_funnel",
                ["", "printer", "", "printer"],
                Step::Visitors,
                5,
                0,
            ),
            sum(
                "help_funnel",
                ["c2", "wifi", "", "wifi"],
                Step::Visitors,
                1,
                0,
            ),
        ];
        let report = assemble(
            &query(By::Keyword, None, None, None),
            &sums,
            &spending(),
            today,
        );
        // 'Printer' and 'printer' are one keyword, shown as it was written most.
        let c1 = found(&report, "Printer", Some("c1"));
        assert_eq!((c1.figures.visitors, c1.figures.net_cents), (4, 100));
        assert_eq!(cost_of(c1), Some((600, 6)));
        assert_eq!(cost_of(found(&report, "printer", Some("c2"))), None);
        assert_eq!(found(&report, "printer", Some("")).figures.visitors, 5);
        // Costly keywords without visitors.
        assert_eq!(cost_of(found(&report, "wifi", Some("c1"))), Some((400, 4)));
        assert_eq!(
            cost_of(found(&report, "printer", Some("c3"))),
            Some((500, 5))
        );
        assert_eq!(report.rows.len(), 6);
        assert_eq!(report.total.figures.visitors, 12);
        let json = serde_json::to_value(&report).unwrap_or_default();
        assert_eq!(json["rows"][0]["campaign"], "", "{json}");

        // One keyword: its rows and its total, with its cost in every campaign.
        let printer = assemble(
            &query(By::Keyword, None, None, Some(" PRINTER")),
            &sums,
            &spending(),
            today,
        );
        assert_eq!(printer.rows.len(), 4);
        assert_eq!(printer.total.figures.visitors, 11);
        assert_eq!(printer.funnels.len(), 1);
        assert_eq!(
            printer.total.cost.as_ref().map(|c| c.cost_cents),
            Some(1_100)
        );
        // Within a campaign.
        let in_c1 = assemble(
            &query(By::Keyword, None, Some("c1"), Some("printer")),
            &sums[..3],
            &spending(),
            today,
        );
        assert_eq!(in_c1.total.figures.visitors, 4);
        assert_eq!(in_c1.total.cost.as_ref().map(|c| c.cost_cents), Some(600));

        // By campaign, one keyword: each campaign's part of it, and its cost there.
        let campaign_sums = [
            sum(
                "chat_funnel",
                ["c1", "Printer", "", "Printer"],
                Step::Visitors,
                3,
                0,
            ),
            sum(
                "chat_funnel",
                ["c2", "printer", "", "printer"],
                Step::Visitors,
                2,
                0,
            ),
            sum(
                "help_funnel",
                ["c2", "wifi", "", "wifi"],
                Step::Visitors,
                1,
                0,
            ),
        ];
        let by_campaign = assemble(
            &query(By::Campaign, None, None, Some("printer")),
            &campaign_sums,
            &spending(),
            today,
        );
        assert_eq!(cost_of(found(&by_campaign, "c1", None)), Some((600, 6)));
        assert_eq!(found(&by_campaign, "c2", None).figures.visitors, 2);
        assert_eq!(cost_of(found(&by_campaign, "c3", None)), Some((500, 5)));
        assert_eq!(by_campaign.rows.len(), 3);
        assert_eq!(by_campaign.total.figures.visitors, 5);
    }

    #[test]
    fn by_day_a_row_has_every_campaigns_cost_of_its_days() {
        let today = day("2026-11-30");
        let sums = [
            sum(
                "chat_funnel",
                ["", "", "2026-11-02", ""],
                Step::Visitors,
                3,
                0,
            ),
            sum(
                "chat_funnel",
                ["", "", "2026-11-04", ""],
                Step::Visitors,
                1,
                0,
            ),
        ];
        let days = assemble(&query(By::Day, None, None, None), &sums, &spending(), today);
        let keys: Vec<(&str, Option<(i64, u64)>)> = days
            .rows
            .iter()
            .map(|row| (row.key.as_str(), cost_of(row)))
            .collect();
        assert_eq!(
            keys,
            [
                ("2026-11-02", Some((900, 9))),
                ("2026-11-03", Some((600, 6))),
                ("2026-11-04", None)
            ]
        );
        // 2 and 3 November are the week of Monday 2 November; the 4th too.
        let weeks = assemble(
            &query(By::Week, None, None, None),
            &sums,
            &spending(),
            today,
        );
        assert_eq!(weeks.rows.len(), 1);
        assert_eq!(
            (weeks.rows[0].figures.visitors, cost_of(&weeks.rows[0])),
            (4, Some((1_500, 15)))
        );
        // A keyword's days have no cost of their own.
        let keyword_days = [sum(
            "chat_funnel",
            ["", "wifi", "2026-11-02", "wifi"],
            Step::Visitors,
            3,
            0,
        )];
        let wifi = assemble(
            &query(By::Day, None, None, Some("wifi")),
            &keyword_days,
            &spending(),
            today,
        );
        assert_eq!(wifi.rows.len(), 1);
        assert_eq!(cost_of(&wifi.rows[0]), None);
        assert_eq!(wifi.total.cost.as_ref().map(|c| c.cost_cents), Some(400));
        assert_eq!(
            days.pending,
            Pending {
                paid_from: Some("2026-11-23".to_owned()),
                retained_from: Some("2026-11-01".to_owned())
            }
        );
    }
}
