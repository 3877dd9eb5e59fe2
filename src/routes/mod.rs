//! HTTP handlers by area, one module each.

pub mod account;
pub mod admin;
pub mod auth;
pub mod billing;
pub mod chats;
pub mod content;
pub mod error;
pub mod events;
pub mod funnels;
pub mod health;
pub mod tasks;
pub mod web_app;

pub use error::ApiError;
