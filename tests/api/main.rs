//! The one integration-test binary: each module drives the real server over HTTP.

mod auth;
mod content;
mod durability;
mod events;
mod health;
mod helpers;
mod mail;
mod realtime;
mod web_app;
