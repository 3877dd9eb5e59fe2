//! Accounts: password hashing, sessions, one-time secrets and the limits on guessing.

pub mod password;
pub mod proof;
pub mod session;
pub mod throttle;
pub mod token;

pub use session::{CurrentUser, MaybeUser, SessionCookies, SessionHolder};
pub use throttle::AuthThrottle;
