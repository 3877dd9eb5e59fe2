//! `/api/admin/dashboard` and `/api/admin/live`: the operator's dashboard's figures.

use actix_web::{HttpResponse, get, web};
use serde::Deserialize;

use super::Admin;
use crate::dashboard;
use crate::error::{ApiError, Context};
use crate::metrics::Metrics;
use crate::store::Db;

#[derive(Deserialize)]
pub struct DashboardRequest {
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    by: Option<String>,
    #[serde(default)]
    funnel: Option<String>,
    #[serde(default)]
    campaign: Option<String>,
    /// A keyword (within the campaign, if one is chosen).
    #[serde(default)]
    keyword: Option<String>,
    /// `csv`: the breakdown table as CSV (`table=funnels`: the funnels' table).
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    table: Option<String>,
}

/// The query a dashboard request asks for: the last 30 days by campaign unless it says.
fn dashboard_query(request: &DashboardRequest) -> Result<dashboard::Query, ApiError> {
    let range = super::requested_days(request.from.as_deref(), request.to.as_deref())?;
    let by = match request.by.as_deref() {
        None | Some("") => dashboard::By::Campaign,
        Some(value) => dashboard::By::parse(value).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_breakdown",
                "Break down by campaign, keyword, utm_source, utm_medium, utm_campaign, day or week.",
            )
        })?,
    };
    let nonempty = super::filter_value;
    Ok(dashboard::Query {
        range,
        by,
        funnel: nonempty(&request.funnel),
        campaign: nonempty(&request.campaign),
        keyword: nonempty(&request.keyword),
    })
}

/// `GET /api/admin/dashboard`: the funnels' figures and a breakdown over a range of days, as JSON
/// or (`format=csv`) as CSV.
#[get("/admin/dashboard")]
pub async fn dashboard_report(
    db: web::Data<Db>,
    _admin: Admin,
    request: web::Query<DashboardRequest>,
) -> Result<HttpResponse, ApiError> {
    let query = dashboard_query(&request)?;
    let report = dashboard::report(&db, &query)
        .await
        .context("dashboard: figures")?;
    if request.format.as_deref() == Some("csv") {
        let funnels = request.table.as_deref() == Some("funnels");
        let (name, csv) = if funnels {
            ("funnels", dashboard::funnels_csv(&report.funnels))
        } else {
            (
                query.by.as_str(),
                dashboard::rows_csv(query.by, &report.rows),
            )
        };
        let file = format!("helpnow-{name}-{}-{}.csv", report.from, report.to);
        return Ok(super::csv_file(&file, csv));
    }
    Ok(HttpResponse::Ok().json(report))
}

/// `GET /api/admin/live`: this process's live figures (conversations open, messages stored, AI
/// calls and failures), from the same metrics as `/metrics`.
#[get("/admin/live")]
pub async fn dashboard_live(
    metrics: web::Data<std::sync::Arc<Metrics>>,
    _admin: Admin,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(metrics.live()))
}

/// This file's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(dashboard_report).service(dashboard_live);
}
