//! Checkouts, subscriptions, payment events and one-time sign-in tokens, one module per table
//! (fulfilment, which writes several in one transaction, has its own).

mod checkouts;
mod fulfilment;
mod held;
mod sign_in_tokens;
mod subscriptions;
mod webhook_debug;
mod webhook_events;

pub use checkouts::*;
pub use fulfilment::*;
pub use held::*;
pub use sign_in_tokens::*;
pub use subscriptions::*;
pub use webhook_debug::*;
pub use webhook_events::*;

/// Whether an error is a lost optimistic-concurrency race, worth retrying.
pub(crate) fn is_conflict(error: &surrealdb::Error) -> bool {
    let text = error.to_string().to_lowercase();
    text.contains("conflict") || text.contains("retry") || super::users::is_unique_violation(error)
}
