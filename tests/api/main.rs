//! The one integration-test binary: each module drives the real server over HTTP.

mod ai;
mod ai_mock;
mod auth;
mod billing;
mod chats;
mod cluster;
mod content;
mod durability;
mod events;
mod funnels;
mod health;
mod helpers;
mod lifecycle;
mod loadtest;
mod mail;
mod members;
mod processes;
mod realtime;
mod recovery;
mod static_files;
mod stripe;
mod stripe_mock;
mod stripe_routes;
mod tasks;
mod web_app;
