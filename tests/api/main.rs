//! The one integration-test binary: each module drives the real server over HTTP.

mod content;
mod durability;
mod events;
mod health;
mod helpers;
mod realtime;
mod web_app;
