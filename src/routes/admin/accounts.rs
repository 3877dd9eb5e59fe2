//! `/api/admin/accounts` and `/api/admin/held`: an account looked up before it is deleted, and the payments held for their owners (issue 52).

/// This file's endpoints.
pub fn configure(_cfg: &mut actix_web::web::ServiceConfig) {}
