//! `GET /api/admin/flows/dropoff`: the drop-off at every step of the chat funnels, by flow
//! version (issue 47), as JSON or CSV. docs/dashboard.md, "Drop-off by flow version".

use actix_web::{HttpResponse, get, web};
use helpnow_actors::rules::FunnelKind;
use serde::Deserialize;

use super::Admin;
use crate::error::{ApiError, Context};
use crate::flows::dropoff;
use crate::store::Db;

#[derive(Deserialize)]
pub struct DropoffRequest {
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
    /// `chat` or `refundable`.
    #[serde(default)]
    funnel: Option<String>,
    #[serde(default)]
    flow: Option<String>,
    #[serde(default)]
    campaign: Option<String>,
    /// A keyword (within the campaign, if one is chosen).
    #[serde(default)]
    keyword: Option<String>,
    /// `csv`: the report as CSV.
    #[serde(default)]
    format: Option<String>,
}

/// The query a request asks for: the last 30 days, every funnel, flow, campaign and keyword
/// unless it says.
fn dropoff_query(request: &DropoffRequest) -> Result<dropoff::Query, ApiError> {
    let range = super::requested_days(request.from.as_deref(), request.to.as_deref())?;
    let nonempty = super::filter_value;
    let funnel = match nonempty(&request.funnel) {
        None => None,
        Some(funnel) => Some(
            FunnelKind::parse(&funnel)
                .filter(|funnel| *funnel != FunnelKind::Help)
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "invalid_funnel",
                        "Choose the chat funnel or the refundable-fee funnel.",
                    )
                })?,
        ),
    };
    Ok(dropoff::Query {
        range,
        funnel,
        flow: nonempty(&request.flow),
        campaign: nonempty(&request.campaign),
        keyword: nonempty(&request.keyword),
    })
}

/// `GET /api/admin/flows/dropoff`: for each flow version, the conversations that reached each
/// step and the median time spent at it before the next, over a range of cohort days, as JSON or
/// (`format=csv`) as CSV.
#[get("/admin/flows/dropoff")]
pub async fn dropoff_report(
    db: web::Data<Db>,
    _admin: Admin,
    request: web::Query<DropoffRequest>,
) -> Result<HttpResponse, ApiError> {
    let query = dropoff_query(&request)?;
    let report = dropoff::report(&db, &query)
        .await
        .context("flows: drop-off")?;
    if request.format.as_deref() == Some("csv") {
        let file = format!("helpnow-dropoff-{}-{}.csv", report.from, report.to);
        return Ok(super::csv_file(&file, dropoff::csv(&report)));
    }
    Ok(HttpResponse::Ok().json(report))
}

/// This file's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(dropoff_report);
}
