//! The HelpNow server: configuration, store, HTTP routes and (in later modules) the real-time channel.

pub mod config;
pub mod content;
pub mod domain;
pub mod metrics;
pub mod realtime;
pub mod routes;
pub mod startup;
pub mod store;
pub mod telemetry;
