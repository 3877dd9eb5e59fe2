//! The members' chat on the server: the `/member` Socket.IO namespace that joins each signed-in
//! member with access to their actor (`helpnow_actors::member`), and the ports those actors use
//! (SurrealDB for chats, tasks and access; the analytics table).

mod namespace;
mod ports;
mod resync;

use std::sync::Arc;

use helpnow_actors::member::ports::{MemberPeers, NoPeers};
use helpnow_actors::member::{Deps, FunnelBrief, MemberRegistry, MemberSettings};
use helpnow_actors::ports::{Ai, Telemetry};

pub use namespace::MemberNamespace;
pub use resync::close_ended_sessions;

use crate::adapters::analytics::BatchedAnalytics;
use crate::cluster::Cluster;
use crate::config::Settings;
use crate::domain::billing::Access;
use crate::store::batch::Batcher;
use crate::store::billing::AccessFacts;
use crate::store::{self, Db};

/// Builds the registry of member actors for this process.
/// The members' hot store calls (access reads, messages, chat reads and events) go in groups
/// with the funnels' through `batcher`; a new chat and a task read run on their own.
pub fn registry(
    settings: &Settings,
    db: Db,
    batcher: Batcher,
    analytics: Batcher,
    ai: Arc<dyn Ai>,
    telemetry: Arc<dyn Telemetry>,
    cluster: &Cluster,
) -> MemberRegistry {
    let peers: Arc<dyn MemberPeers> = if cluster.is_shared() {
        Arc::new(ports::ClusterPeers(cluster.clone()))
    } else {
        Arc::new(NoPeers)
    };
    MemberRegistry::new(Deps {
        store: Arc::new(ports::StoredChats { db, batcher }),
        ai,
        analytics: Arc::new(BatchedAnalytics::members(analytics)),
        telemetry,
        peers,
        settings: MemberSettings::new(&settings.product.assistant_name, &settings.product.name),
    })
}

/// Whether the user has an active trial or subscription now (DESIGN.md section 6).
pub async fn has_access(db: &Db, user_id: &str) -> Result<bool, surrealdb::Error> {
    let facts = store::billing::access_facts(db, user_id).await?;
    Ok(access_left(facts.as_ref(), chrono::Utc::now()).is_some())
}

/// How long these access facts (none: no such user) give access from `now`, by the access rule
/// (`Access::compute`): `None` without it; `Duration::MAX` while a subscription grants it (until
/// a payment event changes it); else the trial's time left.
pub(super) fn access_left(
    facts: Option<&AccessFacts>,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<std::time::Duration> {
    let facts = facts?;
    let status = facts
        .subscription
        .as_ref()
        .and_then(store::billing::StoredSubscription::status);
    let access = Access::compute(facts.trial_end_date, status, now);
    if access.subscription_active {
        return Some(std::time::Duration::MAX);
    }
    if !access.trial_active {
        return None;
    }
    facts
        .trial_end_date?
        .signed_duration_since(now)
        .to_std()
        .ok()
}

/// What the members' chat needs of the funnel record on the account (spec section 3): the
/// issue, and the visitor's own words and messages when the record kept them.
pub fn funnel_brief(record: &serde_json::Value) -> Option<FunnelBrief> {
    let text = |key: &str| {
        record
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    };
    let user_messages: Vec<String> = record
        .get("userMessages")
        .and_then(serde_json::Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let raw_input = text("rawUserInput");
    // A chat funnel's record has no summary: its first message names the issue.
    let issue = text("userIssue")
        .or_else(|| raw_input.clone())
        .or_else(|| user_messages.first().cloned())?;
    Some(FunnelBrief {
        issue,
        raw_input,
        user_messages,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_funnel_brief_takes_the_summary_or_else_the_visitors_words() {
        let help = json!({ "funnel": "help_funnel", "userIssue": "Printer is offline", "rawUserInput": "my printer wont print" });
        let brief = funnel_brief(&help).expect("a brief");
        assert_eq!(brief.issue, "Printer is offline");
        assert_eq!(brief.raw_input.as_deref(), Some("my printer wont print"));

        let chat = json!({ "funnel": "chat_funnel", "userMessages": ["outlook wont open", "since monday"] });
        let brief = funnel_brief(&chat).expect("a brief");
        assert_eq!(brief.issue, "outlook wont open");
        assert_eq!(brief.user_messages.len(), 2);

        assert_eq!(funnel_brief(&json!({ "funnel": "chat_funnel" })), None);
        assert_eq!(funnel_brief(&json!({ "userIssue": "  " })), None);
    }

    /// The access facts of a member with this trial end and a subscription in this status.
    fn facts(
        trial_end: Option<chrono::DateTime<chrono::Utc>>,
        status: Option<&str>,
    ) -> AccessFacts {
        AccessFacts {
            email: "ann@example.com".into(),
            trial_started: trial_end.is_some(),
            trial_start_date: None,
            trial_end_date: trial_end,
            payment_customer_id: None,
            payment_session_id: None,
            subscription_id: None,
            has_password: true,
            subscription: status.map(|status| store::billing::StoredSubscription {
                id: "sub_1".into(),
                customer_id: None,
                status: status.into(),
                price_id: None,
                current_period_end: None,
                trial_end: None,
                cancel_at_period_end: false,
            }),
        }
    }

    #[test]
    fn access_lasts_the_trials_time_left_or_while_a_subscription_grants_it() {
        // A moment other than the clock's: the rule is applied at `now`.
        let now = chrono::Utc::now() + chrono::Duration::days(3);
        let hour = chrono::Duration::hours(1);
        let std_hour = std::time::Duration::from_secs(3600);
        assert_eq!(access_left(None, now), None, "no such user");
        assert_eq!(access_left(Some(&facts(None, None)), now), None);
        assert_eq!(access_left(Some(&facts(Some(now - hour), None)), now), None);
        assert_eq!(
            access_left(Some(&facts(Some(now + hour), None)), now),
            Some(std_hour)
        );
        assert_eq!(
            access_left(Some(&facts(Some(now + hour), Some("active"))), now),
            Some(std::time::Duration::MAX),
            "a subscription outlasts the trial"
        );
        assert_eq!(
            access_left(Some(&facts(Some(now - hour), Some("trialing"))), now),
            Some(std::time::Duration::MAX)
        );
        assert_eq!(
            access_left(Some(&facts(Some(now + hour), Some("canceled"))), now),
            Some(std_hour),
            "an ended subscription leaves the trial"
        );
        assert_eq!(access_left(Some(&facts(None, Some("unpaid"))), now), None);
    }
}
