//! `/api/admin/costs`: the ads' costs, loaded from a Google Ads campaign report (issue 52).

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use futures_util::StreamExt;
use serde_json::json;

use super::Admin;
use crate::domain::ad_costs::{self, CostFileError, Level};
use crate::error::{ApiError, Context};
use crate::store::Db;
use crate::store::ad_costs as costs;

/// The largest file taken: a month of a keyword report is far smaller.
pub const MAX_FILE_BYTES: usize = 5 * 1024 * 1024;

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "file_too_large",
        "The file is too large: at most 5 MB.",
    )
}

/// 400 `invalid_costs`, with the row (the file's line) and the column named, or null.
fn refused(error: CostFileError) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({
        "error": "invalid_costs",
        "message": error.message,
        "row": error.row,
        "column": error.column,
    }))
}

/// `$1,234.56`.
fn dollars(cents: i64) -> String {
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    for (index, digit) in whole.chars().enumerate() {
        if index > 0 && (whole.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("${grouped}.{:02}", cents % 100)
}

fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// `POST /api/admin/costs`: the body is a Google Ads report as downloaded (CSV, at most 5 MB).
/// Its costs replace those of its level (campaign or keyword) on the days it covers, in one
/// transaction: `{message, from, to, days, campaigns, rows, cost_cents, replaced}`. 400
/// `invalid_costs` `{message, row, column}` for a file that cannot be read (nothing is stored);
/// 413 past 5 MB.
#[post("/admin/costs")]
pub async fn upload_costs(
    req: HttpRequest,
    db: web::Data<Db>,
    _admin: Admin,
    mut body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    if announced.is_some_and(|length| length > MAX_FILE_BYTES) {
        return Err(too_large());
    }
    let mut bytes = web::BytesMut::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|error| {
            ApiError::bad_request(
                "invalid_costs",
                "The file could not be received. Try again.",
            )
            .with_cause(format!("costs: the upload: {error}"))
        })?;
        if bytes.len() + chunk.len() > MAX_FILE_BYTES {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    if bytes.is_empty() {
        return Ok(refused(CostFileError {
            row: None,
            column: None,
            message: "The file is empty. Choose the report downloaded from Google Ads.".to_owned(),
        }));
    }
    let file = match web::block(move || ad_costs::parse(&bytes)).await {
        Ok(Ok(file)) => file,
        Ok(Err(error)) => return Ok(refused(error)),
        Err(error) => return Err(ApiError::internal("costs: reading the file", error)),
    };
    let loaded = costs::load(&db, &file).await.context("costs: load")?;
    let (from, to) = (
        file.from.format("%Y-%m-%d").to_string(),
        file.to.format("%Y-%m-%d").to_string(),
    );
    let campaigns = count(file.campaigns(), "campaign", "campaigns");
    let what = match file.level {
        Level::Campaign => format!("Costs loaded for {campaigns}"),
        Level::Keyword => format!(
            "Keyword costs loaded for {} of {campaigns}",
            count(file.keywords(), "keyword", "keywords")
        ),
    };
    let replaced = if loaded.replaced > 0 {
        " They replace the costs loaded before for these days."
    } else {
        ""
    };
    tracing::info!(
        level = file.level.as_str(),
        from,
        to,
        rows = loaded.rows,
        replaced = loaded.replaced,
        "ad costs loaded"
    );
    Ok(HttpResponse::Ok().json(json!({
        "message": format!(
            "{what} from {from} to {to}: {}.{replaced}",
            dollars(file.cost_cents())
        ),
        "level": file.level.as_str(),
        "from": from,
        "to": to,
        "days": file.days(),
        "campaigns": file.campaigns(),
        "rows": loaded.rows,
        "cost_cents": file.cost_cents(),
        "replaced": loaded.replaced,
    })))
}

/// `GET /api/admin/costs`: what is loaded, `{from, to, days, campaigns, cost_cents}` (`from` and
/// `to` null when nothing is).
#[get("/admin/costs")]
pub async fn loaded_costs(db: web::Data<Db>, _admin: Admin) -> Result<HttpResponse, ApiError> {
    let summary = costs::loaded(&db).await.context("costs: what is loaded")?;
    Ok(HttpResponse::Ok().json(summary))
}

/// This file's endpoints.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    cfg.service(upload_costs).service(loaded_costs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_are_grouped_by_thousands() {
        assert_eq!(dollars(0), "$0.00");
        assert_eq!(dollars(5), "$0.05");
        assert_eq!(dollars(123_456), "$1,234.56");
        assert_eq!(dollars(100_000_000), "$1,000,000.00");
        assert_eq!(count(1, "campaign", "campaigns"), "1 campaign");
        assert_eq!(count(3, "campaign", "campaigns"), "3 campaigns");
    }
}
