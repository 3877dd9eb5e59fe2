//! An experiment's figures per arm, from its exposures and money steps: exposures, conversions
//! and net revenue per visitor with their intervals, each variant against the control (the
//! Bayesian chance to beat it and the expected loss), the guardrails, the sample-ratio check and
//! the stopping rule's decision (docs/dashboard.md, "Experiments").

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use helpnow_actors::rules::experiments::Status;
use serde::Serialize;

use super::stats::{self, Comparison, Conversion, Decision, Interval, Revenue};
use super::{Experiment, Metric};
use crate::store::experiments::{Exposure, Money};

/// One arm's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArmFigures {
    pub key: String,
    pub name: String,
    pub exposures: u64,
    /// Visitors who paid for a trial within the goal's days.
    pub conversions: u64,
    pub conversion_rate: f64,
    pub conversion_interval: Interval,
    /// Net cents within the goal's days: fees and subscription payments less fees given back.
    pub net_cents: i64,
    /// Cents per exposed visitor.
    pub revenue_per_visitor: f64,
    pub revenue_interval: Interval,
    pub fees: u64,
    pub refunds: u64,
    pub refund_rate: Option<f64>,
    /// Exposed visitors of a chat funnel, and those of them who left before a second message.
    pub chat_exposures: u64,
    pub early_leaves: u64,
    pub early_leave_rate: Option<f64>,
    /// Against the control (none for the control).
    pub conversion: Option<Comparison>,
    pub revenue: Option<Comparison>,
    pub guardrail_breaches: Vec<String>,
}

/// The sample-ratio check: the arms' shares of the exposures against their weights.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Srm {
    pub p_value: f64,
    /// The p-value is under [`stats::SRM_THRESHOLD`]: the split is not the one set.
    pub warning: bool,
    pub expected_shares: Vec<f64>,
    pub observed_shares: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Analysis {
    /// Whole days since the start.
    pub days_running: u32,
    pub arms: Vec<ArmFigures>,
    pub srm: Srm,
    pub decision: Decision,
    /// The decision in a sentence, for the page.
    pub status: String,
    /// The arm the rule picks, which the operator may promote with one click.
    pub promotable: Option<String>,
}

impl Analysis {
    /// The arm to promote by the rule: the rule's pick while no guardrail of it is breached and
    /// the split is sound.
    pub fn auto_promotable(&self) -> Option<String> {
        let key = self.promotable.as_ref()?;
        let arm = self.arms.iter().find(|arm| &arm.key == key)?;
        (arm.guardrail_breaches.is_empty() && !self.srm.warning).then(|| key.clone())
    }
}

/// A share as the page shows it: `12.3 %`.
fn percent(share: f64) -> String {
    format!("{:.1} %", share * 100.0)
}

/// An expected loss in the goal's unit.
fn loss_words(metric: Metric, loss: f64) -> String {
    match metric {
        Metric::TrialPaid => format!("{:.2} percentage points", loss * 100.0),
        Metric::Revenue => format!("${:.3} per visitor", loss / 100.0),
    }
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| count_f64(part) / count_f64(whole))
}

/// A count as a float (exact below 2^53, and counts here are far below).
#[allow(clippy::cast_precision_loss)]
fn count_f64(n: u64) -> f64 {
    n as f64
}

/// Per visitor: their arm, when they were shown it, and what they did.
struct Visitor<'a> {
    exposure: &'a Exposure,
    converted: bool,
    net_cents: i64,
    fees: u64,
    refunds: u64,
}

/// The analysis of `experiment` from its exposures and money steps, at `now`.
pub fn analyse(
    experiment: &Experiment,
    exposures: &[Exposure],
    money: &[Money],
    now: DateTime<Utc>,
) -> Analysis {
    let definition = &experiment.definition;
    let window = chrono::Duration::days(i64::from(definition.goal.days));
    let mut visitors: HashMap<&str, Visitor<'_>> = exposures
        .iter()
        .map(|exposure| {
            (
                exposure.visitor.as_str(),
                Visitor {
                    exposure,
                    converted: false,
                    net_cents: 0,
                    fees: 0,
                    refunds: 0,
                },
            )
        })
        .collect();
    for step in money {
        let Some(visitor) = visitors.get_mut(step.visitor.as_str()) else {
            continue;
        };
        if visitor.exposure.arm != step.arm || step.at > visitor.exposure.at + window {
            continue;
        }
        match step.step.as_str() {
            "trial_paid" => visitor.converted = true,
            "fee" => {
                visitor.net_cents += step.cents;
                visitor.fees += 1;
            }
            "fee_refund" => {
                visitor.net_cents -= step.cents;
                visitor.refunds += 1;
            }
            "subscription" => visitor.net_cents += step.cents,
            _ => {}
        }
    }
    let mut conversions = vec![Conversion::default(); definition.arms.len()];
    let mut revenues = vec![Revenue::default(); definition.arms.len()];
    let mut arms: Vec<ArmFigures> = definition
        .arms
        .iter()
        .map(|arm| ArmFigures {
            key: arm.key.clone(),
            name: arm.name.clone(),
            exposures: 0,
            conversions: 0,
            conversion_rate: 0.0,
            conversion_interval: Interval {
                low: 0.0,
                high: 0.0,
            },
            net_cents: 0,
            revenue_per_visitor: 0.0,
            revenue_interval: Interval {
                low: 0.0,
                high: 0.0,
            },
            fees: 0,
            refunds: 0,
            refund_rate: None,
            chat_exposures: 0,
            early_leaves: 0,
            early_leave_rate: None,
            conversion: None,
            revenue: None,
            guardrail_breaches: Vec::new(),
        })
        .collect();
    for visitor in visitors.values() {
        let Some(index) = arms.iter().position(|arm| arm.key == visitor.exposure.arm) else {
            continue;
        };
        let figures = &mut arms[index];
        figures.exposures += 1;
        figures.conversions += u64::from(visitor.converted);
        figures.net_cents += visitor.net_cents;
        figures.fees += visitor.fees;
        figures.refunds += visitor.refunds;
        if let Some(second) = visitor.exposure.second_message {
            figures.chat_exposures += 1;
            figures.early_leaves += u64::from(!second);
        }
        conversions[index].visitors += 1;
        conversions[index].conversions += u64::from(visitor.converted);
        #[allow(clippy::cast_precision_loss)]
        revenues[index].add(visitor.net_cents as f64);
    }
    let guardrails = definition.guardrails;
    for (index, figures) in arms.iter_mut().enumerate() {
        figures.conversion_rate = share(figures.conversions, figures.exposures).unwrap_or(0.0);
        figures.conversion_interval = stats::conversion_interval(conversions[index]);
        figures.revenue_per_visitor = revenues[index].mean();
        figures.revenue_interval = stats::revenue_interval(revenues[index]);
        figures.refund_rate = share(figures.refunds, figures.fees);
        figures.early_leave_rate = share(figures.early_leaves, figures.chat_exposures);
        if index > 0 {
            figures.conversion = Some(stats::compare_conversion(
                conversions[0],
                conversions[index],
            ));
            figures.revenue = Some(stats::compare_revenue(revenues[0], revenues[index]));
        }
        if let (Some(rate), Some(max)) = (figures.refund_rate, guardrails.max_refund_rate)
            && rate > max
        {
            figures.guardrail_breaches.push(format!(
                "Refund rate {} is above the limit of {}.",
                percent(rate),
                percent(max)
            ));
        }
        if let (Some(rate), Some(max)) = (figures.early_leave_rate, guardrails.max_early_leave_rate)
            && rate > max
        {
            figures.guardrail_breaches.push(format!(
                "{} left before their second message, above the limit of {}.",
                percent(rate),
                percent(max)
            ));
        }
    }
    let observed: Vec<u64> = arms.iter().map(|arm| arm.exposures).collect();
    let weights: Vec<f64> = definition
        .arms
        .iter()
        .map(|arm| f64::from(arm.weight))
        .collect();
    let total_weight: f64 = weights.iter().sum();
    let total: u64 = observed.iter().sum();
    let p_value = stats::srm_p_value(&observed, &weights);
    let srm = Srm {
        p_value,
        warning: total > 0 && p_value < stats::SRM_THRESHOLD,
        expected_shares: weights
            .iter()
            .map(|w| {
                if total_weight > 0.0 {
                    w / total_weight
                } else {
                    0.0
                }
            })
            .collect(),
        observed_shares: observed
            .iter()
            .map(|n| share(*n, total).unwrap_or(0.0))
            .collect(),
    };
    let days_running = experiment
        .started_at
        .map(|start| {
            let end = experiment.ended_at.unwrap_or(now);
            u32::try_from((end - start).num_days().max(0)).unwrap_or(u32::MAX)
        })
        .unwrap_or(0);
    let comparisons: Vec<Comparison> = arms
        .iter()
        .skip(1)
        .filter_map(|arm| match definition.goal.metric {
            Metric::TrialPaid => arm.conversion,
            Metric::Revenue => arm.revenue,
        })
        .collect();
    let decision = stats::decide(&definition.rule, days_running, &observed, &comparisons);
    let promotable = match decision {
        Decision::Winner { arm } if experiment.winner.is_none() => {
            arms.get(arm).map(|figures| figures.key.clone())
        }
        _ => None,
    };
    let status = status_sentence(experiment, &arms, &decision);
    Analysis {
        days_running,
        arms,
        srm,
        decision,
        status,
        promotable,
    }
}

/// The decision (and the experiment's state) in a sentence.
fn status_sentence(experiment: &Experiment, arms: &[ArmFigures], decision: &Decision) -> String {
    let definition = &experiment.definition;
    let metric = definition.goal.metric;
    let rule = &definition.rule;
    let control = arms.first().map_or("the control", |arm| arm.name.as_str());
    if let Some(winner) = &experiment.winner {
        let name = arms
            .iter()
            .find(|arm| &arm.key == winner)
            .map_or(winner.as_str(), |arm| arm.name.as_str());
        let when = experiment
            .promoted_at
            .map(|at| at.format(" on %Y-%m-%d").to_string())
            .unwrap_or_default();
        return format!("{name} was promoted{when}.");
    }
    let prefix = match experiment.status {
        Status::Draft => return "Not started.".to_owned(),
        Status::Paused => "Paused. ",
        Status::Stopped | Status::Archived => "Stopped. ",
        Status::Running => "",
    };
    let sentence = match decision {
        Decision::Collecting {
            exposures_needed,
            days_needed,
        } => {
            let mut needs = Vec::new();
            if *exposures_needed > 0 {
                needs.push(format!("{exposures_needed} more visitors in an arm"));
            }
            if *days_needed > 0 {
                needs.push(format!(
                    "{days_needed} more day{}",
                    if *days_needed == 1 { "" } else { "s" }
                ));
            }
            format!(
                "Collecting: the rule needs {} before it decides.",
                needs.join(" and ")
            )
        }
        Decision::Undecided => format!(
            "No winner yet: no arm has a {} chance to beat {control} with an expected loss under {}.",
            percent(rule.chance),
            loss_words(metric, rule.max_loss)
        ),
        Decision::Winner { arm: 0 } => format!(
            "{control} (the control) wins: no other arm has more than a {} chance to beat it.",
            percent(1.0 - rule.chance)
        ),
        Decision::Winner { arm } => {
            let figures = &arms[*arm];
            let comparison = match metric {
                Metric::TrialPaid => figures.conversion,
                Metric::Revenue => figures.revenue,
            };
            match comparison {
                Some(c) => format!(
                    "{} wins: {} chance to beat {control}, expected loss {}.",
                    figures.name,
                    percent(c.chance_to_beat),
                    loss_words(metric, c.expected_loss)
                ),
                None => format!("{} wins.", figures.name),
            }
        }
    };
    format!("{prefix}{sentence}")
}
