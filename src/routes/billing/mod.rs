//! The billing endpoints under `/api`, one file per concern: the spec's checkout endpoints and the
//! success page (`checkout`), the demo checkout's own API (`demo`), the payment provider's webhook
//! and the debug tools' simulated one (`webhooks`), a member's billing actions (`member`) and the
//! payments held for an account's owner (`held`). The client says where a checkout comes from; the
//! server decides prices, and only a paid checkout, as the provider reports it, grants anything.
//!
//! The helpers the files share are here, so that no file imports a sibling.

mod checkout;
mod demo;
mod held;
mod member;
mod webhooks;

pub use checkout::{checkout_start_cookie, clear_checkout_cookie};

pub const MISSING_SESSION: &str = "Missing required session parameters";

/// Keeps short attribution texts only.
fn clean(value: Option<String>) -> Option<String> {
    value
        .map(|text| text.trim().chars().take(200).collect::<String>())
        .filter(|text| !text.is_empty())
}

/// A path a browser resolves on this site: one leading slash, no backslash (browsers read `/\x`
/// as `//x`), no control characters (they strip them, turning `/\t/x` into `//x`).
fn is_same_site_path(path: &str) -> bool {
    path.starts_with('/')
        && !path.starts_with("//")
        && !path.contains('\\')
        && !path.chars().any(char::is_control)
}

fn path_and_query(url: &url::Url) -> String {
    let mut path = url.path().to_owned();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    path
}

/// The billing endpoints under `/api`; the demo checkout's only while it is the provider.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig, demo_payments: bool) {
    cfg.service(checkout::create_checkout)
        .service(checkout::checkout_success)
        .service(checkout::check_subscription)
        .service(webhooks::webhook_test)
        .service(webhooks::stripe_webhook)
        .service(member::portal)
        .service(member::refund_fee)
        .service(member::cancel_subscription)
        .service(held::held_payments)
        .service(held::claim_held_payment)
        .service(held::decline_held_payment);
    if demo_payments {
        cfg.service(demo::demo_checkout)
            .service(demo::complete_demo_checkout)
            .service(demo::cancel_demo_checkout);
    }
}
