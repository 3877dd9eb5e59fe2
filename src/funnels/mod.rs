//! The funnels on the server: the `/funnel` Socket.IO namespace that joins each visitor to their
//! conversation actor (`helpnow_actors::funnel`), the ports those actors use (store, AI, checkout,
//! analytics), and the help funnel's summary and intro.

mod events;
pub mod help;
mod namespace;
pub mod relay;

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::funnel::ports::{
    CheckoutError, FunnelCheckout, FunnelCheckoutRequest, FunnelClaims, Holder, NoClaims,
};
use helpnow_actors::funnel::{Deps, FunnelRegistry, FunnelSettings};
use helpnow_actors::ports::{Ai, Analytics, SystemClock, Telemetry};
use helpnow_actors::rules::FunnelKind;
use helpnow_actors::rules::scripts::FunnelScripts;

pub use namespace::{FunnelNamespace, VISITOR_COOKIE};

use crate::auth::AuthThrottle;
use crate::billing::Billing;
use crate::billing::service::{FunnelLink, StartCheckout};
use crate::cluster::Cluster;
use crate::config::Settings;
use crate::domain::VisitorId;
use crate::domain::billing::{Attribution, CheckoutSource};
use crate::store::batch::{Batcher, Statement};
use crate::store::{self, Db};

/// Where a checkout the funnel actor opened sends the browser: a one-time link that marks this
/// browser as the one that started the checkout, then redirects to the provider's page.
pub const CHECKOUT_HANDOFF_PATH: &str = "/api/funnels/checkout/";

/// What the funnel actors open checkouts with: billing, under the per-address checkout limit
/// that `create-checkout.js` has too (every checkout is a call to the payment provider).
pub struct FunnelCheckouts {
    pub billing: Arc<Billing>,
    pub throttle: Arc<AuthThrottle>,
}

/// Builds the registry of funnel conversations for this process.
pub fn registry(
    settings: &Settings,
    batcher: Batcher,
    ai: Arc<dyn Ai>,
    checkouts: FunnelCheckouts,
    scripts: Arc<FunnelScripts>,
    telemetry: Arc<dyn Telemetry>,
    cluster: &Cluster,
) -> FunnelRegistry {
    let claims: Arc<dyn FunnelClaims> = if cluster.is_shared() {
        Arc::new(ClusterClaims(cluster.clone()))
    } else {
        Arc::new(NoClaims)
    };
    FunnelRegistry::new(Deps {
        store: Arc::new(store::funnels::ConversationStore::new(batcher.clone())),
        ai,
        checkout: Arc::new(checkouts),
        analytics: Arc::new(StoredAnalytics(batcher)),
        clock: Arc::new(SystemClock),
        scripts,
        telemetry,
        claims,
        settings: FunnelSettings::new(&settings.product.assistant_name, &settings.product.name),
    })
}

/// The conversations' claims, shared by the processes through the event engine.
struct ClusterClaims(Cluster);

impl FunnelClaims for ClusterClaims {
    fn claim(&self, conversation_id: &str, actor: u64) -> BoxFuture<'static, Holder> {
        let cluster = self.0.clone();
        let conversation_id = conversation_id.to_owned();
        async move { cluster.claim(&conversation_id, actor).await }.boxed()
    }

    fn release(&self, conversation_id: &str, actor: u64) {
        self.0.release(conversation_id, actor);
    }

    fn renew_every(&self) -> Option<std::time::Duration> {
        Some(crate::cluster::CLAIM_RENEW_EVERY)
    }
}

pub fn checkout_source(funnel: FunnelKind) -> CheckoutSource {
    match funnel {
        FunnelKind::Chat => CheckoutSource::ChatFunnel,
        FunnelKind::Refundable => CheckoutSource::RefundableFeeFunnel,
        FunnelKind::Help => CheckoutSource::HelpFunnel,
    }
}

/// Opens the funnel's checkout through billing, with the conversation's record attached.
impl FunnelCheckout for FunnelCheckouts {
    fn start(
        &self,
        request: FunnelCheckoutRequest,
    ) -> BoxFuture<'static, Result<String, CheckoutError>> {
        let billing = self.billing.clone();
        let throttle = self.throttle.clone();
        async move {
            if !throttle.allow_checkout(request.client_address).await {
                return Err(CheckoutError("too many checkouts from this address".into()));
            }
            let attribution = request.attribution;
            let started = billing
                .start_checkout(StartCheckout {
                    source: checkout_source(request.funnel),
                    attribution: Attribution {
                        source: None,
                        campaignid: attribution.campaignid,
                        keyword: attribution.keyword,
                        headline: Some(request.headline),
                        utm_source: attribution.utm_source,
                        utm_medium: attribution.utm_medium,
                        utm_campaign: attribution.utm_campaign,
                        gclid: attribution.gclid,
                    },
                    user: None,
                    visitor_id: Some(request.visitor_id),
                    cancel_path: "/?canceled=true".to_owned(),
                    funnel: Some(FunnelLink {
                        conversation_id: request.conversation_id,
                        record: request.record,
                    }),
                    handoff: true,
                })
                .await
                .map_err(|error| CheckoutError(error.to_string()))?;
            let handoff = started
                .handoff
                .ok_or_else(|| CheckoutError("no handoff link was made".into()))?;
            Ok(format!("{CHECKOUT_HANDOFF_PATH}{handoff}"))
        }
        .boxed()
    }
}

/// Funnel events go to the analytics table with the conversations' writes; a failure is logged,
/// never shown to the visitor.
struct StoredAnalytics(Batcher);

impl Analytics for StoredAnalytics {
    fn record(&self, event: &'static str, visitor_id: &str, properties: serde_json::Value) {
        let batcher = self.0.clone();
        let event = store::analytics::NewAnalyticsEvent {
            name: event.to_owned(),
            properties,
            visitor: Some(visitor_id.to_owned()),
            path: None,
        };
        tokio::spawn(async move {
            if let Err(error) = batcher.submit(Statement::Analytics(event)).await {
                tracing::warn!(%error, "a funnel analytics event could not be stored");
            }
        });
    }
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
