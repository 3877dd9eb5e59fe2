//! The conversation actors and their pure rules, free of HTTP and database code. The server
//! implements the [`ports`] (store, AI, checkout, analytics, clock) that the actors talk through,
//! so the actors are tested with paused time and in-memory ports.

pub mod funnel;
pub mod live;
pub mod member;
pub mod mutation;
pub mod ports;
pub mod reply;
pub mod rules;
#[cfg(test)]
pub(crate) mod test_support;
