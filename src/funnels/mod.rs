//! The funnels on the server: the `/funnel` Socket.IO namespace that joins each visitor to their
//! conversation actor (`helpnow_actors::funnel`), the ports those actors use (store, AI, checkout,
//! analytics), and the help funnel's summary and intro.

mod events;
pub mod help;
mod namespace;
mod ports;
pub mod relay;

use std::sync::Arc;

use helpnow_actors::funnel::ports::{FlowTally, FunnelClaims, NoClaims};
use helpnow_actors::funnel::{Deps, FunnelRegistry, FunnelSettings};
use helpnow_actors::ports::{Ai, SystemClock, Telemetry};
use helpnow_actors::rules::FunnelKind;
use helpnow_actors::rules::flows::FlowSource;

pub use namespace::{FunnelNamespace, PreviewChats};
pub use ports::FunnelCheckouts;

use crate::adapters::analytics::BatchedAnalytics;
use crate::billing::service::FunnelLink;
use crate::cluster::Cluster;
use crate::config::Settings;
use crate::domain::VisitorId;
use crate::domain::billing::CheckoutSource;
use crate::store::batch::Batcher;
use crate::store::{self, Db};

/// Where a checkout the funnel actor opened sends the browser: a one-time link that marks this
/// browser as the one that started the checkout, then redirects to the provider's page.
pub const CHECKOUT_HANDOFF_PATH: &str = "/api/funnels/checkout/";

/// Where the funnel actors' writes go.
pub struct FunnelStores {
    /// The conversations' group commit.
    pub conversations: Batcher,
    /// The analytics events' group commit.
    pub analytics: Batcher,
    /// The dashboard's journey steps, recorded behind the conversations.
    pub journeys: store::journeys::JourneyRecorder,
}

/// The flows the funnel actors follow, and where they count the steps reached (issue 47).
pub struct FunnelFlows {
    pub flows: Arc<dyn FlowSource>,
    pub tally: Arc<dyn FlowTally>,
}

/// Builds the registry of funnel conversations for this process.
pub fn registry(
    settings: &Settings,
    stores: FunnelStores,
    ai: Arc<dyn Ai>,
    checkouts: FunnelCheckouts,
    flows: FunnelFlows,
    telemetry: Arc<dyn Telemetry>,
    cluster: &Cluster,
) -> FunnelRegistry {
    let claims: Arc<dyn FunnelClaims> = if cluster.is_shared() {
        Arc::new(ports::ClusterClaims(cluster.clone()))
    } else {
        Arc::new(NoClaims)
    };
    FunnelRegistry::new(Deps {
        store: Arc::new(store::funnels::ConversationStore::new(stores.conversations)),
        ai,
        checkout: Arc::new(checkouts),
        analytics: Arc::new(BatchedAnalytics::visitors(
            stores.analytics,
            stores.journeys,
        )),
        clock: Arc::new(SystemClock),
        flows: flows.flows,
        tally: flows.tally,
        telemetry,
        claims,
        settings: FunnelSettings::new(&settings.product.assistant_name, &settings.product.name),
    })
}

/// Builds the registry of the previews' conversations (`/admin`'s "Try it"): the real funnel
/// actor on the same store and AI, counted nowhere (no analytics, no drop-off, no metrics), its
/// checkout opening none. Each process serves its own (no claims): a preview is one admin's tab.
pub fn preview_registry(
    settings: &Settings,
    conversations: Batcher,
    ai: Arc<dyn Ai>,
    flows: Arc<dyn FlowSource>,
) -> FunnelRegistry {
    FunnelRegistry::new(Deps {
        store: Arc::new(store::funnels::ConversationStore::new(conversations)),
        ai,
        checkout: Arc::new(ports::PreviewCheckout),
        analytics: Arc::new(ports::NoAnalytics),
        clock: Arc::new(SystemClock),
        flows,
        tally: Arc::new(helpnow_actors::funnel::ports::NoTally),
        telemetry: Arc::new(helpnow_actors::ports::NoTelemetry),
        claims: Arc::new(NoClaims),
        settings: FunnelSettings::new(&settings.product.assistant_name, &settings.product.name),
    })
}

pub fn checkout_source(funnel: FunnelKind) -> CheckoutSource {
    match funnel {
        FunnelKind::Chat => CheckoutSource::ChatFunnel,
        FunnelKind::Refundable => CheckoutSource::RefundableFeeFunnel,
        FunnelKind::Help => CheckoutSource::HelpFunnel,
    }
}

/// The funnel a checkout source is of (none for the members' own checkouts).
pub fn funnel_of_source(source: CheckoutSource) -> Option<FunnelKind> {
    FunnelKind::ALL
        .into_iter()
        .find(|funnel| checkout_source(*funnel) == source)
}

/// The visitor's funnel record for a checkout started over HTTP (`create-checkout.js`) from a
/// funnel page: the help funnel's record, or the chat conversation's. Other sources carry none.
pub async fn record_for_checkout(
    db: &Db,
    visitor_id: &VisitorId,
    source: CheckoutSource,
) -> Option<FunnelLink> {
    let funnel = match source {
        CheckoutSource::HelpFunnel => FunnelKind::Help,
        CheckoutSource::ChatFunnel => FunnelKind::Chat,
        CheckoutSource::RefundableFeeFunnel => FunnelKind::Refundable,
        CheckoutSource::ChatTrialPrompt | CheckoutSource::DirectSignup => return None,
    };
    let found = if funnel == FunnelKind::Help {
        store::funnels::help_record(db, visitor_id.as_str())
            .await
            .map_err(|error| error.to_string())
    } else {
        let key = helpnow_actors::funnel::ConversationKey {
            visitor_id: visitor_id.as_str().to_owned(),
            funnel,
        };
        store::funnels::load_conversation(db, &key)
            .await
            .map(|found| found.map(|conversation| (conversation.id.clone(), conversation.record())))
            .map_err(|error| error.to_string())
    };
    match found {
        Ok(found) => found.map(|(conversation_id, record)| FunnelLink {
            conversation_id,
            record,
        }),
        Err(error) => {
            // The checkout goes ahead without the record rather than not at all.
            tracing::warn!(%error, "a funnel record could not be read for a checkout");
            None
        }
    }
}
