//! The adapters of the ports only the funnel actors use: checkouts through billing, and the
//! conversations' claims through the event engine. (Their store is `store::funnels`; the shared
//! ones are in `crate::adapters`.)

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use helpnow_actors::funnel::ports::{
    CheckoutError, FunnelCheckout, FunnelCheckoutRequest, FunnelClaims, Holder,
};
use helpnow_actors::rules::FunnelKind;

use super::{CHECKOUT_HANDOFF_PATH, checkout_source};
use crate::auth::AuthThrottle;
use crate::billing::Billing;
use crate::billing::service::{FunnelLink, StartCheckout};
use crate::cluster::Cluster;
use crate::domain::billing::Attribution;

fn attribution_param(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|value| !value.is_empty())
}

/// Where a canceled checkout of a chat funnel returns: the funnel's page, with its keyword and
/// campaign, where the conversation (the final message and its 'Get started >>') is still there.
pub fn funnel_page_after_cancel(
    funnel: FunnelKind,
    keyword: Option<&str>,
    campaignid: Option<&str>,
) -> String {
    let path = match funnel {
        FunnelKind::Refundable => "/Chat-Help-2",
        FunnelKind::Chat => "/chat-help",
        FunnelKind::Help => "/get-help",
    };
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    if let Some(keyword) = keyword {
        query.append_pair("keyword", keyword);
    }
    if let Some(campaignid) = campaignid {
        query.append_pair("campaignid", campaignid);
    }
    query.append_pair("canceled", "true");
    format!("{path}?{}", query.finish())
}

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
            let cancel_path = funnel_page_after_cancel(
                request.funnel,
                attribution_param(request.attribution.keyword.as_deref()),
                attribution_param(request.attribution.campaignid.as_deref()),
            );
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
                    cancel_path,
                    funnel: Some(FunnelLink {
                        conversation_id: request.conversation_id,
                        record: request.record,
                    }),
                    handoff: true,
                    // The conversation's own campaign is the visitor's touch here.
                    first_touch: None,
                    arm: request.arm,
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

/// Where a preview's checkout leads: nowhere real. The preview page shows that a visitor would
/// go to the checkout now instead of leaving (web: `ChatFunnelPage` in preview mode).
pub const PREVIEW_CHECKOUT_URL: &str = "/admin/flows";

/// A preview's checkout: opens none (no call to the payment provider, no checkout record).
pub struct PreviewCheckout;

impl FunnelCheckout for PreviewCheckout {
    fn start(
        &self,
        _request: FunnelCheckoutRequest,
    ) -> BoxFuture<'static, Result<String, CheckoutError>> {
        futures_util::future::ready(Ok(PREVIEW_CHECKOUT_URL.to_owned())).boxed()
    }
}

/// A preview's analytics: none (a preview is counted nowhere).
pub struct NoAnalytics;

impl helpnow_actors::ports::Analytics for NoAnalytics {
    fn record(&self, _event: &'static str, _subject: &str, _properties: serde_json::Value) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_canceled_chat_checkout_returns_to_its_funnel_page_with_its_campaign() {
        assert_eq!(
            funnel_page_after_cancel(FunnelKind::Refundable, Some("printer help"), Some("555")),
            "/Chat-Help-2?keyword=printer+help&campaignid=555&canceled=true"
        );
        assert_eq!(
            funnel_page_after_cancel(FunnelKind::Chat, None, None),
            "/chat-help?canceled=true"
        );
    }
}
