//! Parse-don't-validate types: a value of one of these types is known to be valid.

pub mod ad_costs;
pub mod analytics;
pub mod billing;
pub mod email;
pub mod journey;
pub mod password;
pub mod task;
pub mod visitor;

pub use email::{Email, EmailError};
pub use password::{NewPassword, PasswordError};
pub use task::{ItemText, TaskError, TaskItems, TaskName};
pub use visitor::VisitorId;
