//! The adapters of the actors' ports that both the funnel and the member actors use: a real-time
//! socket as an actor's client, and the analytics table. The ports only one of them uses have
//! their adapters beside its namespace (`funnels::ports`, `members::ports`), in the same shape:
//! a struct holding what it needs, implementing the port.

pub mod analytics;
pub mod socket;
