//! The HelpNow server: configuration, store, accounts, HTTP routes and the real-time channel.

pub mod adapters;
pub mod ai;
pub mod auth;
pub mod billing;
pub mod client;
pub mod cluster;
pub mod config;
pub mod content;
pub mod dashboard;
pub mod domain;
pub mod error;
pub mod experiments;
pub mod flows;
pub mod funnels;
pub mod ids;
pub mod loadtest;
pub mod mail;
pub mod members;
pub mod metrics;
pub mod realtime;
pub mod routes;
pub mod startup;
pub mod store;
mod sync;
pub mod telemetry;
