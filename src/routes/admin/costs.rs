//! `/api/admin/costs`: the ads' costs, loaded from a Google Ads campaign report (issue 52).

/// This file's endpoints.
pub fn configure(_cfg: &mut actix_web::web::ServiceConfig) {}
