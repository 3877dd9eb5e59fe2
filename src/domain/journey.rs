//! A visitor's way through a funnel, as the operator's dashboard counts it (issue 19).
//!
//! A journey is one visitor in one funnel (the funnels are the checkout sources). Its first step
//! makes it a visitor of that funnel; the steps after it count once each; money adds up. Every
//! step and cent counts on the journey's cohort: the day it began and the campaign it came from.

use serde::Serialize;

use super::billing::CheckoutSource;

/// A step of a journey, in the funnel's order, then the money it brings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Came to the funnel (its page, its chat, or a checkout started from it).
    Visitors,
    /// Sent a first message (the help funnel's issue counts as the first and the final one).
    FirstMessage,
    /// Reached the funnel's final message (the offer).
    FinalMessage,
    /// Started a checkout.
    Checkout,
    /// Began the free trial (a paid checkout fulfilled with the trial).
    Trial,
    /// Paid a first month.
    Paid,
    /// Still subscribed 30 days after the trial began.
    Retained,
    /// The setup fee taken (cents).
    Fee,
    /// The setup fee given back (cents).
    FeeRefund,
    /// Monthly subscription payments (cents).
    Subscription,
}

impl Step {
    /// The funnel's steps, in order: the dashboard's columns.
    pub const FUNNEL: [Step; 7] = [
        Step::Visitors,
        Step::FirstMessage,
        Step::FinalMessage,
        Step::Checkout,
        Step::Trial,
        Step::Paid,
        Step::Retained,
    ];
    pub const MONEY: [Step; 3] = [Step::Fee, Step::FeeRefund, Step::Subscription];

    pub fn as_str(self) -> &'static str {
        match self {
            Step::Visitors => "visitors",
            Step::FirstMessage => "first_message",
            Step::FinalMessage => "final_message",
            Step::Checkout => "checkout",
            Step::Trial => "trial",
            Step::Paid => "paid",
            Step::Retained => "retained",
            Step::Fee => "fee",
            Step::FeeRefund => "fee_refund",
            Step::Subscription => "subscription",
        }
    }

    pub fn parse(value: &str) -> Option<Step> {
        Self::FUNNEL
            .into_iter()
            .chain(Self::MONEY)
            .find(|step| step.as_str() == value)
    }

    /// Whether a journey counts this step once (every funnel step), or each time (money).
    pub fn once(self) -> bool {
        Self::FUNNEL.contains(&self)
    }

    /// The funnel and step a funnel actor's event marks (`chatbot_first_message`, ...).
    pub fn of_funnel_event(name: &str) -> Option<(CheckoutSource, Step)> {
        let (funnel, step) = if let Some(step) = name.strip_prefix("chatbot_") {
            (CheckoutSource::ChatFunnel, step)
        } else if let Some(step) = name.strip_prefix("refundable_fee_") {
            (CheckoutSource::RefundableFeeFunnel, step)
        } else {
            return None;
        };
        let step = match step {
            "first_message" => Step::FirstMessage,
            "final_message" => Step::FinalMessage,
            "checkout_initiated" => Step::Checkout,
            _ => return None,
        };
        Some((funnel, step))
    }
}

/// The funnel a browser's view event or page view is a visit of: the two chat funnels' view
/// events, and a page view of the help funnel's pages.
pub fn funnel_viewed(event: &str, path: Option<&str>) -> Option<CheckoutSource> {
    match event {
        "chatbot_funnel_view" => Some(CheckoutSource::ChatFunnel),
        "refundable_fee_funnel_view" => Some(CheckoutSource::RefundableFeeFunnel),
        "page_view" => {
            let path = path?.split(['?', '#']).next()?.trim_end_matches('/');
            matches!(path, "/get-help" | "/funnel").then_some(CheckoutSource::HelpFunnel)
        }
        _ => None,
    }
}

/// The fields that name where a visitor came from, as pages and events carry them.
pub const CAMPAIGN_FIELDS: [&str; 6] = [
    "campaignid",
    "keyword",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "gclid",
];

/// The campaign a page's address or an event names (`field` reads each of
/// [`CAMPAIGN_FIELDS`]): each a trimmed string of at most 200 characters, and none with an `@`
/// (an address is no campaign, and analytics keep none).
pub fn campaign<'a>(field: impl Fn(&str) -> Option<&'a str>) -> serde_json::Value {
    let mut campaign = serde_json::Map::new();
    for key in CAMPAIGN_FIELDS {
        if let Some(value) = field(key)
            .map(str::trim)
            .filter(|value| !value.is_empty() && !value.contains('@'))
        {
            campaign.insert(
                key.to_owned(),
                value.chars().take(200).collect::<String>().into(),
            );
        }
    }
    serde_json::Value::Object(campaign)
}

/// A funnel's figures: each step's count and each money step's cents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Figures {
    pub visitors: u64,
    pub first_message: u64,
    pub final_message: u64,
    pub checkout: u64,
    pub trial: u64,
    pub paid: u64,
    pub retained: u64,
    pub fee_cents: i64,
    pub fee_refund_cents: i64,
    pub subscription_cents: i64,
    /// Payments taken less fees given back.
    pub net_cents: i64,
    /// Net cents per visitor, rounded half away from zero (what a visitor is worth, against the
    /// cost per click).
    pub net_cents_per_visitor: i64,
}

impl Figures {
    /// Adds `n` arrivals at the step and the cents they brought.
    pub fn add(&mut self, step: Step, n: u64, cents: i64) {
        match step {
            Step::Visitors => self.visitors += n,
            Step::FirstMessage => self.first_message += n,
            Step::FinalMessage => self.final_message += n,
            Step::Checkout => self.checkout += n,
            Step::Trial => self.trial += n,
            Step::Paid => self.paid += n,
            Step::Retained => self.retained += n,
            Step::Fee => self.fee_cents += cents,
            Step::FeeRefund => self.fee_refund_cents += cents,
            Step::Subscription => self.subscription_cents += cents,
        }
        self.net_cents = self.fee_cents + self.subscription_cents - self.fee_refund_cents;
        self.net_cents_per_visitor = if self.visitors == 0 {
            0
        } else {
            rounded_div(self.net_cents, self.visitors as i64)
        };
    }

    pub fn merge(&mut self, other: &Figures) {
        for step in Step::FUNNEL {
            self.add(step, other.count(step), 0);
        }
        self.add(Step::Fee, 0, other.fee_cents);
        self.add(Step::FeeRefund, 0, other.fee_refund_cents);
        self.add(Step::Subscription, 0, other.subscription_cents);
    }

    pub fn count(&self, step: Step) -> u64 {
        match step {
            Step::Visitors => self.visitors,
            Step::FirstMessage => self.first_message,
            Step::FinalMessage => self.final_message,
            Step::Checkout => self.checkout,
            Step::Trial => self.trial,
            Step::Paid => self.paid,
            Step::Retained => self.retained,
            Step::Fee | Step::FeeRefund | Step::Subscription => 0,
        }
    }
}

/// `numerator / denominator` rounded to the nearest whole number, halves away from zero (2/3 is
/// 1, -1/2 is -1), as money is rounded to the cent. The denominator must not be 0.
pub fn rounded_div(numerator: i64, denominator: i64) -> i64 {
    let (numerator, denominator) = (i128::from(numerator), i128::from(denominator));
    let half_away = if (numerator < 0) == (denominator < 0) {
        numerator * 2 + denominator
    } else {
        numerator * 2 - denominator
    };
    // (Integer division cuts toward zero.)
    (half_away / (denominator * 2)) as i64
}

/// A date range of whole UTC days, both ends included, as `YYYY-MM-DD`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayRange {
    pub from: chrono::NaiveDate,
    pub to: chrono::NaiveDate,
}

/// The longest range the dashboard sums (a little over two years).
pub const MAX_RANGE_DAYS: i64 = 800;

impl DayRange {
    pub fn parse(from: &str, to: &str) -> Result<DayRange, &'static str> {
        let day = |value: &str| chrono::NaiveDate::parse_from_str(value.trim(), "%Y-%m-%d");
        let (Ok(from), Ok(to)) = (day(from), day(to)) else {
            return Err("Dates must be written as YYYY-MM-DD.");
        };
        if from > to {
            return Err("The start date must not be after the end date.");
        }
        if (to - from).num_days() > MAX_RANGE_DAYS {
            return Err("Choose a range of at most 800 days.");
        }
        Ok(DayRange { from, to })
    }

    pub fn from_key(&self) -> String {
        self.from.format("%Y-%m-%d").to_string()
    }

    pub fn to_key(&self) -> String {
        self.to.format("%Y-%m-%d").to_string()
    }
}

/// The Monday that begins the ISO week of a `YYYY-MM-DD` day, as `YYYY-MM-DD`.
pub fn week_of(day: &str) -> Option<String> {
    use chrono::Datelike;
    let date = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
    let monday = date - chrono::Days::new(u64::from(date.weekday().num_days_from_monday()));
    Some(monday.format("%Y-%m-%d").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_read_back_and_money_adds_up() {
        for step in Step::FUNNEL.into_iter().chain(Step::MONEY) {
            assert_eq!(Step::parse(step.as_str()), Some(step));
        }
        assert!(Step::Trial.once());
        assert!(!Step::Subscription.once());
        let mut figures = Figures::default();
        figures.add(Step::Visitors, 3, 0);
        figures.add(Step::Fee, 2, 200);
        figures.add(Step::FeeRefund, 1, 100);
        figures.add(Step::Subscription, 1, 2000);
        assert_eq!(figures.net_cents, 2100);
        assert_eq!(figures.net_cents_per_visitor, 700);
        let mut total = Figures::default();
        total.merge(&figures);
        total.merge(&figures);
        assert_eq!((total.visitors, total.net_cents), (6, 4200));
    }

    #[test]
    fn net_per_visitor_is_rounded_half_away_from_zero_not_cut() {
        let per_visitor = |cents: i64, visitors: u64| {
            let mut figures = Figures::default();
            figures.add(Step::Visitors, visitors, 0);
            figures.add(Step::Fee, 1, cents);
            figures.net_cents_per_visitor
        };
        // 2 cents over 3 visitors is 0.67 cents: 1, where cutting made 0.
        assert_eq!(per_visitor(2, 3), 1);
        assert_eq!(per_visitor(200, 3), 67);
        assert_eq!(per_visitor(100, 3), 33);
        assert_eq!(per_visitor(1, 2), 1);
        // A loss rounds the same way, from zero (cutting down made -1 of -0.33).
        assert_eq!(per_visitor(-200, 3), -67);
        assert_eq!(per_visitor(-1, 3), 0);
        assert_eq!(per_visitor(-1, 2), -1);
        assert_eq!(per_visitor(-2, 3), -1);
        assert_eq!(per_visitor(5, 0), 0);
        assert_eq!(rounded_div(7, -2), -4);
        assert_eq!(rounded_div(-7, -2), 4);
        assert_eq!(rounded_div(i64::MAX, 1), i64::MAX);
    }

    #[test]
    fn funnel_events_and_views_name_their_step_and_funnel() {
        assert_eq!(
            Step::of_funnel_event("chatbot_first_message"),
            Some((CheckoutSource::ChatFunnel, Step::FirstMessage))
        );
        assert_eq!(
            Step::of_funnel_event("refundable_fee_checkout_initiated"),
            Some((CheckoutSource::RefundableFeeFunnel, Step::Checkout))
        );
        assert_eq!(Step::of_funnel_event("chat_message_sent"), None);
        assert_eq!(Step::of_funnel_event("chatbot_funnel_view"), None);
        assert_eq!(
            funnel_viewed("page_view", Some("/get-help?keyword=wifi")),
            Some(CheckoutSource::HelpFunnel)
        );
        assert_eq!(funnel_viewed("page_view", Some("/login")), None);
        assert_eq!(
            funnel_viewed("chatbot_funnel_view", None),
            Some(CheckoutSource::ChatFunnel)
        );
    }

    #[test]
    fn a_range_is_whole_days_in_order_and_not_too_long() {
        assert!(DayRange::parse("2026-11-01", "2026-11-30").is_ok());
        assert!(DayRange::parse("2026-11-30", "2026-11-01").is_err());
        assert!(DayRange::parse("2026-11-01", "yesterday").is_err());
        assert!(DayRange::parse("2020-01-01", "2026-01-01").is_err());
        assert_eq!(week_of("2026-11-26").as_deref(), Some("2026-11-23"));
        assert_eq!(week_of("2026-11-23").as_deref(), Some("2026-11-23"));
    }
}
