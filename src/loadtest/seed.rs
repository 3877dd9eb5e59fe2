//! Realistic synthetic analytics for the dashboard's benchmark (`helpnow-seed-analytics`): visitors
//! spread over the last days, over campaigns with their keywords and UTM fields, through the
//! funnels at plausible rates, each step written as the product writes it (an `analytics_event`
//! row, and the journey's step through `store::journeys::record`, so the daily roll-ups are the
//! product's own).

use chrono::{DateTime, Duration, Utc};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use crate::domain::billing::{CheckoutSource, MONTHLY_PRICE_CENTS, REFUNDABLE_FEE_CENTS};
use crate::domain::journey::{Figures, Step};
use crate::store::Db;
use crate::store::journeys::{self, JourneyStep};

/// What to generate.
#[derive(Debug, Clone)]
pub struct SeedPlan {
    /// Stop once this many events are written.
    pub events: u64,
    /// Visitors arrive over this many days, up to now.
    pub days: i64,
    pub campaigns: usize,
    pub now: DateTime<Utc>,
}

/// What was generated: the events written, and the figures the dashboard must show for them (per
/// funnel, summed over every day).
#[derive(Debug, Clone, Default)]
pub struct SeedTally {
    pub events: u64,
    pub journeys: u64,
    pub steps: u64,
    pub funnels: std::collections::BTreeMap<String, Figures>,
}

/// How many steps (and their events) go to the store in one transaction.
const CHUNK: usize = 200;

struct Campaign {
    id: String,
    keywords: Vec<String>,
    source: &'static str,
    name: String,
}

fn campaigns(rng: &mut StdRng, count: usize) -> Vec<Campaign> {
    const SOURCES: [&str; 3] = ["google", "bing", "facebook"];
    const WORDS: [&str; 12] = [
        "printer",
        "wifi",
        "email",
        "password",
        "virus",
        "slow computer",
        "facebook login",
        "iphone",
        "backup",
        "zoom",
        "scam call",
        "bluetooth",
    ];
    (0..count)
        .map(|n| {
            let keywords = (0..rng.random_range(4..24))
                .map(|k| format!("{} {}", WORDS[(n + k) % WORDS.len()], k))
                .collect();
            Campaign {
                id: format!("{}", 10_000 + n),
                keywords,
                source: SOURCES[if rng.random_bool(0.8) { 0 } else { 1 + n % 2 }],
                name: format!("campaign-{n}"),
            }
        })
        .collect()
}

/// The event a funnel's step is recorded as.
fn event_name(funnel: CheckoutSource, step: Step) -> &'static str {
    let chat = funnel == CheckoutSource::ChatFunnel;
    match (funnel, step) {
        (CheckoutSource::ChatFunnel | CheckoutSource::RefundableFeeFunnel, Step::Visitors) => {
            if chat {
                "chatbot_funnel_view"
            } else {
                "refundable_fee_funnel_view"
            }
        }
        (CheckoutSource::ChatFunnel | CheckoutSource::RefundableFeeFunnel, Step::FirstMessage) => {
            if chat {
                "chatbot_first_message"
            } else {
                "refundable_fee_first_message"
            }
        }
        (CheckoutSource::ChatFunnel | CheckoutSource::RefundableFeeFunnel, Step::FinalMessage) => {
            if chat {
                "chatbot_final_message"
            } else {
                "refundable_fee_final_message"
            }
        }
        (CheckoutSource::ChatFunnel | CheckoutSource::RefundableFeeFunnel, Step::Checkout) => {
            if chat {
                "chatbot_checkout_initiated"
            } else {
                "refundable_fee_checkout_initiated"
            }
        }
        (_, Step::Visitors) => "page_view",
        (_, Step::FirstMessage | Step::FinalMessage) => "issue_submission",
        (_, Step::Checkout) => "begin_checkout",
        (_, Step::Trial) => "begin_trial",
        (_, Step::Paid | Step::Subscription | Step::Fee) => "purchase",
        (_, Step::Retained | Step::FeeRefund) => "page_view",
    }
}

struct Pending {
    steps: Vec<JourneyStep>,
    events: Vec<Value>,
}

/// Writes synthetic visitors until `plan.events` events are stored; answers what it wrote.
pub async fn seed(
    db: &Db,
    plan: &SeedPlan,
    rng: &mut StdRng,
) -> Result<SeedTally, surrealdb::Error> {
    let campaigns = campaigns(rng, plan.campaigns.max(1));
    let mut tally = SeedTally::default();
    let mut pending = Pending {
        steps: Vec::new(),
        events: Vec::new(),
    };
    let span = Duration::days(plan.days.max(1));
    while tally.events < plan.events {
        let started = plan.now - span + Duration::seconds(rng.random_range(0..span.num_seconds()));
        let funnel = match rng.random_range(0..100) {
            0..45 => CheckoutSource::ChatFunnel,
            45..70 => CheckoutSource::RefundableFeeFunnel,
            70..90 => CheckoutSource::HelpFunnel,
            _ => CheckoutSource::DirectSignup,
        };
        let campaign = rng
            .random_bool(0.85)
            .then(|| &campaigns[rng.random_range(0..campaigns.len())]);
        let attribution = campaign.map(|c| {
            json!({
                "campaignid": c.id,
                "keyword": c.keywords[rng.random_range(0..c.keywords.len())],
                "utm_source": c.source, "utm_medium": "cpc", "utm_campaign": c.name,
            })
        });
        let visitor = format!("seed-{:016x}", rng.random::<u64>());
        tally.journeys += 1;
        let figures = tally.funnels.entry(funnel.as_str().to_owned()).or_default();
        let mut at = started;
        let mut push =
            |step: Step, at: DateTime<Utc>, cents: i64, key: Option<String>, rng: &mut StdRng| {
                let mut journey = JourneyStep::new(&visitor, funnel, step).at(at).cents(cents);
                if step == Step::Visitors {
                    journey = journey.attribution(attribution.clone());
                }
                if let Some(key) = key {
                    journey = journey.key(&key);
                }
                pending.steps.push(journey);
                figures.add(step, 1, cents);
                // The pages a visitor sees around a step: one to three page views beside its event.
                let views = if step == Step::Visitors {
                    rng.random_range(1..4)
                } else {
                    0
                };
                let mut properties = attribution.clone().unwrap_or_else(|| json!({}));
                properties["funnel"] = json!(funnel.as_str());
                for name in
                    std::iter::once(event_name(funnel, step)).chain((0..views).map(|_| "page_view"))
                {
                    pending.events.push(json!({
                        "name": name, "visitor": visitor, "properties": properties,
                        "created_at": at.to_rfc3339(),
                    }));
                }
                tally.steps += 1;
                tally.events += 1 + views;
            };
        push(Step::Visitors, at, 0, None, rng);
        let chat_like = funnel != CheckoutSource::DirectSignup;
        let go = |rng: &mut StdRng, p: f64| rng.random_bool(p);
        let mut reached_offer = !chat_like;
        if chat_like && go(rng, 0.6) {
            at += Duration::seconds(rng.random_range(5..120));
            push(Step::FirstMessage, at, 0, None, rng);
            if go(rng, 0.55) {
                at += Duration::seconds(rng.random_range(20..300));
                push(Step::FinalMessage, at, 0, None, rng);
                reached_offer = true;
            }
        }
        if reached_offer && go(rng, if chat_like { 0.35 } else { 0.5 }) {
            at += Duration::seconds(rng.random_range(5..120));
            push(Step::Checkout, at, 0, None, rng);
            if go(rng, 0.7) {
                at += Duration::seconds(rng.random_range(30..600));
                let fee = funnel.charges_refundable_fee();
                if fee {
                    push(Step::Fee, at, REFUNDABLE_FEE_CENTS, None, rng);
                }
                push(Step::Trial, at, 0, None, rng);
                if fee && go(rng, 0.08) {
                    push(
                        Step::FeeRefund,
                        at + Duration::hours(2),
                        REFUNDABLE_FEE_CENTS,
                        None,
                        rng,
                    );
                }
                // Months paid after the trial, while still subscribed.
                let mut month = at + Duration::days(7);
                let mut months = 0;
                while month <= plan.now && go(rng, if months == 0 { 0.55 } else { 0.85 }) {
                    if months == 0 {
                        push(Step::Paid, month, 0, None, rng);
                    }
                    push(
                        Step::Subscription,
                        month,
                        MONTHLY_PRICE_CENTS,
                        Some(format!("m{months}")),
                        rng,
                    );
                    months += 1;
                    month += Duration::days(30);
                }
                if months > 0 && at + Duration::days(30) <= plan.now && months >= 2 {
                    push(Step::Retained, at + Duration::days(30), 0, None, rng);
                }
            }
        }
        if pending.steps.len() >= CHUNK {
            flush(db, &mut pending).await?;
        }
    }
    flush(db, &mut pending).await?;
    Ok(tally)
}

async fn flush(db: &Db, pending: &mut Pending) -> Result<(), surrealdb::Error> {
    let steps = std::mem::take(&mut pending.steps);
    let events = std::mem::take(&mut pending.events);
    journeys::record(db, steps).await?;
    if !events.is_empty() {
        db.query(
            "INSERT INTO analytics_event (SELECT name, visitor, properties, \
             <datetime> created_at AS created_at FROM $events) RETURN NONE",
        )
        .bind(("events", events))
        .await?
        .check()?;
    }
    Ok(())
}
