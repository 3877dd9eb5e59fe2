//! Parse-don't-validate types: a value of one of these types is known to be valid.

pub mod analytics;
pub mod email;
pub mod password;

pub use email::{Email, EmailError};
pub use password::{NewPassword, PasswordError};
