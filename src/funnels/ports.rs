//! The adapters of the ports only the funnel actors use: checkouts through billing, and the
//! conversations' claims through the event engine. (Their store is `store::funnels`; the shared
//! ones are in `crate::adapters`.)

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::funnel::ports::{
    CheckoutError, FunnelCheckout, FunnelCheckoutRequest, FunnelClaims, Holder,
};

use super::{CHECKOUT_HANDOFF_PATH, checkout_source};
use crate::auth::AuthThrottle;
use crate::billing::Billing;
use crate::billing::service::{FunnelLink, StartCheckout};
use crate::cluster::Cluster;
use crate::domain::billing::Attribution;

/// What the funnel actors open checkouts with: billing, under the per-address checkout limit
/// that `create-checkout.js` has too (every checkout is a call to the payment provider).
pub struct FunnelCheckouts {
    pub billing: Arc<Billing>,
    pub throttle: Arc<AuthThrottle>,
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

/// The conversations' claims, shared by the processes through the event engine.
pub(super) struct ClusterClaims(pub(super) Cluster);

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
