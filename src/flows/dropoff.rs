//! The drop-off report (issue 47): from the roll-ups (`store::flow_tally`), how many
//! conversations of each flow version reached each step of the chat funnels, and the median time
//! they spent at each step before the next; filtered by days (the conversations' cohort), funnel,
//! flow, campaign and keyword. Versions are kept apart: each has its own counts, and publishing
//! a new one resets nothing. docs/dashboard.md, "Drop-off by flow version".

use std::collections::BTreeMap;

use helpnow_actors::rules::FunnelKind;
use serde::Serialize;

use crate::dashboard::csv_cell;
use crate::domain::journey::DayRange;
use crate::store::Db;
use crate::store::ad_costs::keyword_key;
use crate::store::flow_tally::{
    self, COUNTED_STEPS, PaidRow, Scope, TallyRow, WAIT_BUCKETS, WAIT_STEPS, bucket_range,
};

/// The steps of the report, in order, as the API names them.
pub const STEPS: [&str; 10] = [
    "joined",
    "first_message",
    "first_reply",
    "second_message",
    "second_reply",
    "third_message",
    "final_message",
    "checkout",
    "trial_paid",
    "month_paid",
];

/// What the report was asked for.
#[derive(Debug, Clone)]
pub struct Query {
    pub range: DayRange,
    pub funnel: Option<FunnelKind>,
    pub flow: Option<String>,
    pub campaign: Option<String>,
    /// Matched trimmed and case-blind, within the campaign if one is chosen.
    pub keyword: Option<String>,
}

/// A step's figures in one flow version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepFigures {
    pub step: &'static str,
    /// Conversations that reached the step.
    pub count: u64,
    /// The median time those that reached the next step spent at this one before it, in ms
    /// (interpolated within its histogram bucket for the chat's steps; exact for checkout and
    /// trial paid). None when none reached the next step, and for the last step.
    pub median_ms_to_next: Option<u64>,
    /// The checkout step only: opened by the 'Get started >>' button, or by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub button: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automatic: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionDropoff {
    pub version: u32,
    pub steps: Vec<StepFigures>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlowDropoff {
    pub name: String,
    /// Newest first.
    pub versions: Vec<VersionDropoff>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub from: String,
    pub to: String,
    pub steps: Vec<&'static str>,
    /// By name.
    pub flows: Vec<FlowDropoff>,
}

/// The report: one range of roll-up rows (the keyword's, else the campaign's, else every
/// conversation's) and the money steps' records of the range.
pub async fn report(db: &Db, query: &Query) -> Result<Report, surrealdb::Error> {
    let keyword = query.keyword.as_deref().map(keyword_key);
    let scope = match (&keyword, &query.campaign) {
        (Some(keyword), _) => Scope::Keyword(keyword),
        (None, Some(campaign)) => Scope::Campaign(campaign),
        (None, None) => Scope::All,
    };
    let tallies = flow_tally::tallies(db, &query.range, scope).await?;
    let paid = flow_tally::paid(db, &query.range).await?;
    Ok(assemble(query, &tallies, &paid))
}

/// One flow version's sums while they are gathered.
#[derive(Debug, Clone)]
struct Sums {
    n: [u64; COUNTED_STEPS],
    w: Vec<u64>,
    /// The waits before trial paid and before month paid, in ms.
    to_trial: Vec<u64>,
    to_month: Vec<u64>,
    trials: u64,
    months: u64,
}

impl Default for Sums {
    fn default() -> Self {
        Self {
            n: [0; COUNTED_STEPS],
            w: vec![0; WAIT_STEPS * WAIT_BUCKETS],
            to_trial: Vec::new(),
            to_month: Vec::new(),
            trials: 0,
            months: 0,
        }
    }
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The report from the rows read: those of another funnel, flow, campaign or keyword than the
/// query's are left out (the money steps' records are of every campaign).
pub fn assemble(query: &Query, tallies: &[TallyRow], paid: &[PaidRow]) -> Report {
    let keyword = query.keyword.as_deref().map(keyword_key);
    let funnel = query.funnel.map(FunnelKind::as_str);
    let kept = |row_funnel: &str, flow: &str, campaign: Option<&str>, row_keyword: Option<&str>| {
        funnel.is_none_or(|funnel| funnel == row_funnel)
            && query.flow.as_deref().is_none_or(|wanted| wanted == flow)
            && query
                .campaign
                .as_deref()
                .is_none_or(|wanted| campaign.is_none_or(|campaign| campaign == wanted))
            && keyword
                .as_deref()
                .is_none_or(|wanted| row_keyword.is_none_or(|row| row == wanted))
    };
    let mut sums: BTreeMap<(String, u32), Sums> = BTreeMap::new();
    let version = |value: i64| u32::try_from(value).unwrap_or(0);
    for row in tallies {
        if !kept(
            &row.funnel,
            &row.flow,
            row.campaign.as_deref(),
            row.keyword.as_deref(),
        ) {
            continue;
        }
        let sums = sums
            .entry((row.flow.clone(), version(row.version)))
            .or_default();
        for (sum, value) in sums.n.iter_mut().zip(&row.n) {
            *sum += count(*value);
        }
        for (sum, value) in sums.w.iter_mut().zip(&row.w) {
            *sum += count(*value);
        }
    }
    for row in paid {
        if !kept(
            &row.funnel,
            &row.flow,
            Some(&row.campaign),
            Some(&row.keyword),
        ) {
            continue;
        }
        let sums = sums
            .entry((row.flow.clone(), version(row.version)))
            .or_default();
        let wait = row.wait_ms.map(count);
        match row.step.as_str() {
            "trial_paid" => {
                sums.trials += 1;
                sums.to_trial.extend(wait);
            }
            "month_paid" => {
                sums.months += 1;
                sums.to_month.extend(wait);
            }
            _ => {}
        }
    }
    let mut flows: Vec<FlowDropoff> = Vec::new();
    // Flows by name, each one's versions newest first.
    for ((name, version), sums) in sums.into_iter().rev() {
        let figures = VersionDropoff {
            version,
            steps: steps_of(&sums),
        };
        match flows.last_mut() {
            Some(flow) if flow.name == name => flow.versions.push(figures),
            _ => flows.push(FlowDropoff {
                name,
                versions: vec![figures],
            }),
        }
    }
    flows.reverse();
    Report {
        from: query.range.from_key(),
        to: query.range.to_key(),
        steps: STEPS.to_vec(),
        flows,
    }
}

fn steps_of(sums: &Sums) -> Vec<StepFigures> {
    let figures = |step: &'static str, count: u64, median_ms_to_next: Option<u64>| StepFigures {
        step,
        count,
        median_ms_to_next,
        button: None,
        automatic: None,
    };
    let mut steps: Vec<StepFigures> = (0..WAIT_STEPS)
        .map(|at| {
            let buckets = &sums.w[at * WAIT_BUCKETS..(at + 1) * WAIT_BUCKETS];
            figures(STEPS[at], sums.n[at], histogram_median(buckets))
        })
        .collect();
    let (button, automatic) = (sums.n[7], sums.n[8]);
    steps.push(StepFigures {
        button: Some(button),
        automatic: Some(automatic),
        ..figures("checkout", button + automatic, exact_median(&sums.to_trial))
    });
    steps.push(figures(
        "trial_paid",
        sums.trials,
        exact_median(&sums.to_month),
    ));
    steps.push(figures("month_paid", sums.months, None));
    steps
}

/// The median of the waits a histogram holds (`buckets[i]` waits in bucket i of
/// `store::flow_tally::WAIT_EDGES_MS`), in ms: the middle of them, placed within its bucket as if
/// the bucket's waits were spread evenly over it. A median in the last bucket (past 30 days) is
/// its lower end. None for no waits.
pub fn histogram_median(buckets: &[u64]) -> Option<u64> {
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return None;
    }
    let half = total as f64 / 2.0;
    let mut before = 0u64;
    for (bucket, &n) in buckets.iter().enumerate() {
        if n > 0 && (before + n) as f64 >= half {
            let (lower, upper) = bucket_range(bucket);
            let Some(upper) = upper else {
                return Some(lower);
            };
            let share = (half - before as f64) / n as f64;
            return Some((lower as f64 + (upper - lower) as f64 * share).round() as u64);
        }
        before += n;
    }
    None
}

/// The median of `values` (the mean of the middle two, rounded, for an even number). None for
/// none.
pub fn exact_median(values: &[u64]) -> Option<u64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        len if len % 2 == 1 => Some(sorted[middle]),
        _ => Some((sorted[middle - 1] + sorted[middle]).div_ceil(2)),
    }
}

/// The report as CSV: a line per flow version and step (`flow,version,step,count,
/// median_ms_to_next,button,automatic`; the last three empty where they do not apply).
pub fn csv(report: &Report) -> String {
    let mut out = String::from("flow,version,step,count,median_ms_to_next,button,automatic\n");
    let number = |value: Option<u64>| value.map(|n| n.to_string()).unwrap_or_default();
    for flow in &report.flows {
        for version in &flow.versions {
            for step in &version.steps {
                let cells = [
                    csv_cell(&flow.name),
                    version.version.to_string(),
                    step.step.to_owned(),
                    step.count.to_string(),
                    number(step.median_ms_to_next),
                    number(step.button),
                    number(step.automatic),
                ];
                out.push_str(&cells.join(","));
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::flow_tally::{WAIT_CELLS, wait_bucket};

    fn buckets(waits: &[(u64, u64)]) -> Vec<u64> {
        let mut buckets = vec![0; WAIT_BUCKETS];
        for (ms, n) in waits {
            buckets[wait_bucket(*ms)] += n;
        }
        buckets
    }

    #[test]
    fn the_median_is_placed_within_its_bucket() {
        assert_eq!(histogram_median(&buckets(&[])), None);
        // One wait of 1.2 s: half of it lies halfway into (1 s, 1.5 s].
        assert_eq!(histogram_median(&buckets(&[(1_200, 1)])), Some(1_250));
        // Four waits in (1 s, 1.5 s]: the middle of the bucket.
        assert_eq!(histogram_median(&buckets(&[(1_100, 4)])), Some(1_250));
        // 1 in (0, 0.5 s], 3 in (10 s, 12 s]: the median (the 2nd of 4) is a third into it.
        assert_eq!(
            histogram_median(&buckets(&[(100, 1), (11_000, 3)])),
            Some(10_667)
        );
        // Two equal halves: the end of the first half's bucket.
        assert_eq!(
            histogram_median(&buckets(&[(400, 2), (16_000, 2)])),
            Some(500)
        );
        // Past 30 days: the last bucket's lower end.
        assert_eq!(
            histogram_median(&buckets(&[(40 * 86_400_000, 3)])),
            Some(30 * 86_400_000)
        );
    }

    #[test]
    fn the_exact_median_takes_the_middle_or_the_mean_of_the_middle_two() {
        assert_eq!(exact_median(&[]), None);
        assert_eq!(exact_median(&[7]), Some(7));
        assert_eq!(exact_median(&[9, 1, 5]), Some(5));
        assert_eq!(exact_median(&[4, 1, 2, 100]), Some(3));
        assert_eq!(exact_median(&[1, 2]), Some(2), "halves round up");
    }

    fn query(campaign: Option<&str>, keyword: Option<&str>) -> Query {
        Query {
            range: DayRange::parse("2026-11-01", "2026-11-30").expect("range"),
            funnel: None,
            flow: None,
            campaign: campaign.map(str::to_owned),
            keyword: keyword.map(str::to_owned),
        }
    }

    fn row(flow: &str, version: i64, campaign: Option<&str>, n: [i64; COUNTED_STEPS]) -> TallyRow {
        TallyRow {
            funnel: "chat".to_owned(),
            flow: flow.to_owned(),
            version,
            campaign: campaign.map(str::to_owned),
            keyword: campaign.map(|_| "printer".to_owned()),
            n: n.to_vec(),
            w: vec![0; WAIT_CELLS],
        }
    }

    fn paid(flow: &str, version: i64, step: &str, campaign: &str, wait_ms: i64) -> PaidRow {
        PaidRow {
            funnel: "chat".to_owned(),
            flow: flow.to_owned(),
            version,
            campaign: campaign.to_owned(),
            keyword: "printer".to_owned(),
            step: step.to_owned(),
            wait_ms: Some(wait_ms),
        }
    }

    fn counts(report: &Report, flow: &str, version: u32) -> Vec<u64> {
        report
            .flows
            .iter()
            .find(|f| f.name == flow)
            .and_then(|f| f.versions.iter().find(|v| v.version == version))
            .map(|v| v.steps.iter().map(|s| s.count).collect())
            .unwrap_or_default()
    }

    #[test]
    fn each_flow_version_sums_its_own_rows_and_payments_newest_version_first() {
        let mut waited = row("email", 1, None, [3, 2, 2, 2, 2, 2, 2, 1, 1]);
        // Joined -> first message: 1.2 s and 1.4 s; final message -> checkout: 16 s and 0.3 s.
        waited.w[wait_bucket(1_200)] = 2;
        waited.w[6 * WAIT_BUCKETS + wait_bucket(16_000)] = 1;
        waited.w[6 * WAIT_BUCKETS + wait_bucket(300)] = 1;
        let tallies = [
            waited,
            row("email", 1, None, [2, 1, 0, 0, 0, 0, 0, 0, 0]),
            row("email", 2, None, [4, 4, 4, 1, 0, 0, 0, 0, 0]),
            row("default", 1, None, [1, 0, 0, 0, 0, 0, 0, 0, 0]),
        ];
        let paid = [
            paid("email", 1, "trial_paid", "c1", 60_000),
            paid("email", 1, "trial_paid", "c2", 120_000),
            paid("email", 1, "month_paid", "c1", 7 * 86_400_000),
            paid("email", 2, "trial_paid", "c1", 1_000),
        ];
        let report = assemble(&query(None, None), &tallies, &paid);
        assert_eq!(report.steps, STEPS);
        assert_eq!(
            (report.from.as_str(), report.to.as_str()),
            ("2026-11-01", "2026-11-30")
        );
        let names: Vec<&str> = report.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["default", "email"]);
        let versions: Vec<u32> = report.flows[1].versions.iter().map(|v| v.version).collect();
        assert_eq!(versions, [2, 1], "newest first");
        assert_eq!(counts(&report, "email", 1), [5, 3, 2, 2, 2, 2, 2, 2, 2, 1]);
        assert_eq!(counts(&report, "email", 2), [4, 4, 4, 1, 0, 0, 0, 0, 1, 0]);
        assert_eq!(
            counts(&report, "default", 1),
            [1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );

        let one = &report.flows[1].versions[1].steps;
        assert_eq!(one[0].median_ms_to_next, Some(1_250));
        assert_eq!(one[1].median_ms_to_next, None, "no wait was recorded");
        assert_eq!(one[6].median_ms_to_next, Some(500), "the final message's");
        assert_eq!(
            (one[7].step, one[7].button, one[7].automatic),
            ("checkout", Some(1), Some(1))
        );
        assert_eq!(
            one[7].median_ms_to_next,
            Some(90_000),
            "checkout to trial paid"
        );
        assert_eq!(one[8].median_ms_to_next, Some(7 * 86_400_000));
        assert_eq!(one[9].median_ms_to_next, None, "month paid is last");
        assert!(one.iter().take(7).all(|s| s.button.is_none()));

        // A campaign keeps its payments (and its rows, read by the campaign's range).
        let c1 = assemble(&query(Some("c1"), None), &tallies[..1], &paid);
        assert_eq!(counts(&c1, "email", 1)[8..], [1, 1]);
        assert_eq!(counts(&c1, "email", 2)[8..], [1, 0]);
        // A keyword's rows carry their campaign: within a campaign, only its own.
        let keyword_rows = [
            row("email", 1, Some("c1"), [2, 0, 0, 0, 0, 0, 0, 0, 0]),
            row("email", 1, Some("c2"), [5, 0, 0, 0, 0, 0, 0, 0, 0]),
        ];
        let within = assemble(&query(Some("c2"), Some(" Printer")), &keyword_rows, &paid);
        assert_eq!(counts(&within, "email", 1), [5, 0, 0, 0, 0, 0, 0, 0, 1, 0]);
        let anywhere = assemble(&query(None, Some("printer")), &keyword_rows, &paid);
        assert_eq!(counts(&anywhere, "email", 1)[0], 7);
        assert!(
            assemble(&query(None, Some("wifi")), &[], &paid)
                .flows
                .is_empty(),
            "another keyword's payments are left out"
        );

        // A funnel or a flow keeps only its own.
        let mut refundable = query(None, None);
        refundable.funnel = Some(FunnelKind::Refundable);
        assert!(assemble(&refundable, &tallies, &paid).flows.is_empty());
        let mut default = query(None, None);
        default.flow = Some("default".to_owned());
        let names: Vec<String> = assemble(&default, &tallies, &paid)
            .flows
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, ["default"]);
    }

    #[test]
    fn the_csv_has_a_line_per_flow_version_and_step() {
        let tallies = [row("email", 1, None, [3, 2, 2, 2, 2, 2, 2, 1, 1])];
        let paid = [paid("email", 1, "trial_paid", "c1", 60_000)];
        let csv = csv(&assemble(&query(None, None), &tallies, &paid));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "flow,version,step,count,median_ms_to_next,button,automatic"
        );
        assert_eq!(lines.len(), 1 + STEPS.len());
        assert_eq!(lines[1], "email,1,joined,3,,,");
        assert_eq!(lines[8], "email,1,checkout,2,60000,1,1");
        assert_eq!(lines[9], "email,1,trial_paid,1,,,");
        assert_eq!(lines[10], "email,1,month_paid,0,,,");
        assert_eq!(csv_cell("=cmd"), "\"'=cmd\"");
    }
}
