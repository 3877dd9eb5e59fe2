//! Analytics event names: only the events the product spec lists (section 7) are accepted.

use std::fmt;

/// The spec's analytics events, in its order.
pub const EVENT_NAMES: &[&str] = &[
    "sign_up",
    "login",
    "page_view",
    "begin_trial",
    "subscription_start",
    "begin_checkout",
    "purchase",
    "feature_use",
    "chat_message_sent",
    "new_chat_started",
    "task_added",
    "task_completed",
    "issue_submission",
    "refundable_fee_funnel_view",
    "refundable_fee_first_message",
    "refundable_fee_final_message",
    "refundable_fee_checkout_initiated",
    "chatbot_funnel_view",
    "chatbot_first_message",
    "chatbot_final_message",
    "chatbot_checkout_initiated",
    "account_setup",
    "members_area",
    "sidebar_opened",
];

/// The events that happen in the browser: views and clicks the server does not see.
const BROWSER_EVENTS: &[&str] = &[
    "page_view",
    "feature_use",
    "sidebar_opened",
    "members_area",
    "refundable_fee_funnel_view",
    "chatbot_funnel_view",
];

/// A known analytics event name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventName(&'static str);

impl EventName {
    // The events the server records itself (accounts and the money path).
    pub const SIGN_UP: EventName = EventName("sign_up");
    pub const LOGIN: EventName = EventName("login");
    pub const BEGIN_CHECKOUT: EventName = EventName("begin_checkout");
    pub const PURCHASE: EventName = EventName("purchase");
    pub const BEGIN_TRIAL: EventName = EventName("begin_trial");
    pub const SUBSCRIPTION_START: EventName = EventName("subscription_start");
    pub const ACCOUNT_SETUP: EventName = EventName("account_setup");

    pub fn parse(name: &str) -> Result<Self, UnknownEvent> {
        EVENT_NAMES
            .iter()
            .find(|known| **known == name)
            .map(|known| EventName(known))
            .ok_or(UnknownEvent)
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// Whether the browser may report this event. Sign-ups, sign-ins, checkouts, payments, trials,
    /// funnel messages, tasks and chats happen on the server, which records them itself, so a
    /// client cannot inflate them.
    pub fn is_reported_by_browser(self) -> bool {
        BROWSER_EVENTS.contains(&self.0)
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("Unknown analytics event")]
pub struct UnknownEvent;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_event_parses() {
        for name in EVENT_NAMES {
            assert_eq!(EventName::parse(name).map(EventName::as_str), Ok(*name));
        }
        assert_eq!(EVENT_NAMES.len(), 24);
    }

    #[test]
    fn the_server_events_are_listed_events() {
        for name in [
            EventName::SIGN_UP,
            EventName::LOGIN,
            EventName::BEGIN_CHECKOUT,
            EventName::PURCHASE,
            EventName::BEGIN_TRIAL,
            EventName::SUBSCRIPTION_START,
            EventName::ACCOUNT_SETUP,
        ] {
            assert_eq!(EventName::parse(name.as_str()), Ok(name));
            assert!(!name.is_reported_by_browser(), "{name}");
        }
    }

    #[test]
    fn only_browser_events_may_come_from_the_browser() {
        let browser = |name| {
            EventName::parse(name)
                .expect("known")
                .is_reported_by_browser()
        };
        assert!(browser("page_view"));
        assert!(browser("sidebar_opened"));
        for server_side in [
            "purchase",
            "sign_up",
            "login",
            "begin_trial",
            "subscription_start",
            "task_added",
        ] {
            assert!(!browser(server_side), "{server_side}");
        }
        assert!(BROWSER_EVENTS.iter().all(|name| EVENT_NAMES.contains(name)));
    }

    #[test]
    fn unknown_or_differently_written_names_are_refused() {
        for name in [
            "",
            "pageview",
            "Page_View",
            "page_view ",
            "drop table",
            "purchase;",
        ] {
            assert_eq!(EventName::parse(name), Err(UnknownEvent), "{name:?}");
        }
    }
}
