//! `/api/admin/flows*`: the funnels' flows, their drafts, publishing, rollback, routing, the
//! record of changes and previews (issue 47; docs/operations.md, "Flows"). Admins only, as all
//! of `/api/admin`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, delete, get, post, put, web};
use helpnow_actors::rules::flows::{
    FieldProblem, FlowScript, PLACEHOLDERS, Routing, TEXT_FIELDS, bounds,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Admin;
use crate::error::ApiError;
use crate::flows::{FlowError, FlowLibrary, routed_by};
use crate::store::flows::{Draft, Record};

/// The most history entries one answer gives.
const HISTORY_LIMIT: usize = 200;

/// 422 `invalid`: `message`, and the problems at their fields.
pub(super) fn invalid(message: &str, problems: &[FieldProblem]) -> HttpResponse {
    HttpResponse::UnprocessableEntity().json(json!({
        "error": "invalid",
        "message": message,
        "problems": problems,
    }))
}

/// An answer for a refused change: 422 with the problems at their fields, 409 when the flows
/// moved, 404 for what does not exist.
fn refused(error: FlowError) -> Result<HttpResponse, ApiError> {
    match error {
        FlowError::Invalid(problems) => Ok(invalid("Nothing was published: please correct the fields marked.", &problems)),
        FlowError::Moved => Ok(HttpResponse::Conflict().json(json!({
            "error": "moved",
            "message": "Someone else published a change meanwhile. Reload to see it, then make yours again.",
        }))),
        FlowError::NoDraft => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_draft",
            "This flow has no draft to publish.",
        )),
        FlowError::UnknownFlow => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_flow",
            "There is no flow with this name.",
        )),
        FlowError::UnknownVersion => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_version",
            "This flow has no such version.",
        )),
        FlowError::Store(error) => Err(ApiError::internal("flows", error)),
    }
}

fn draft_json(library: &FlowLibrary, draft: &Draft) -> Value {
    json!({
        "script": draft.script,
        "basedOn": draft.based_on,
        "updatedAt": draft.updated_at,
        "updatedBy": draft.updated_by,
        "problems": library.problems(&draft.name, &draft.script),
    })
}

fn record_json(record: &Record) -> Value {
    json!({
        "at": record.at,
        "by": record.by,
        "kind": record.kind,
        "flow": record.flow,
        "version": record.version,
        "fromVersion": record.from_version,
        "changes": record.changes,
    })
}

/// `GET /api/admin/flows`: every flow (its versions, its published script, its draft and where
/// the routing uses it), the routing, and what the editor explains (placeholders, fields, bounds).
#[get("/admin/flows")]
pub async fn get_flows(
    library: web::Data<FlowLibrary>,
    _admin: Admin,
) -> Result<HttpResponse, ApiError> {
    let failed = |error: FlowError| ApiError::internal("flows", error);
    let published = library
        .published()
        .await
        .map_err(failed)?
        .ok_or_else(|| ApiError::internal("flows", "nothing is published"))?;
    let drafts = library.drafts().await.map_err(failed)?;
    let routing = &published.routing.routing;
    let mut names: Vec<&str> = published
        .versions
        .iter()
        .map(|version| version.name.as_str())
        .chain(drafts.iter().map(|draft| draft.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let flows: Vec<Value> = names
        .into_iter()
        .map(|name| {
            let mut versions: Vec<_> = published
                .versions
                .iter()
                .filter(|version| version.name == name)
                .collect();
            versions.sort_by_key(|version| std::cmp::Reverse(version.version));
            let current = published.state.flows.get(name).copied();
            let script = versions
                .iter()
                .find(|version| Some(version.version) == current)
                .map(|version| &version.script);
            let draft = drafts.iter().find(|draft| draft.name == name);
            json!({
                "name": name,
                "published": current,
                "versions": versions.iter().map(|version| json!({
                    "version": version.version,
                    "publishedAt": version.published_at,
                    "publishedBy": version.published_by,
                })).collect::<Vec<_>>(),
                "script": script,
                "draft": draft.map(|draft| draft_json(&library, draft)),
                "usesKeyword": script.is_some_and(FlowScript::uses_keyword),
                "routedBy": routed_by(routing, name),
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({
        "flows": flows,
        "routing": {
            "version": published.routing.version,
            "campaigns": routing.campaigns,
            "keywords": routing.keywords,
            "keywordFlow": routing.keyword_flow,
            "defaultFlow": routing.default_flow,
            "offers": routing.offers,
            "publishedAt": published.routing.published_at,
            "publishedBy": published.routing.published_by,
        },
        "placeholders": PLACEHOLDERS.iter().map(|(name, meaning)| json!({
            "name": name,
            "meaning": meaning,
        })).collect::<Vec<_>>(),
        "fields": TEXT_FIELDS.iter().map(|(key, label)| json!({
            "key": key,
            "label": label,
        })).collect::<Vec<_>>(),
        "bounds": {
            "textMaxChars": bounds::TEXT_MAX_CHARS,
            "typingMinMs": bounds::TYPING_MIN_MS,
            "typingMaxMs": bounds::TYPING_MAX_MS,
            "autoCheckoutMinS": bounds::AUTO_CHECKOUT_MIN_S,
            "autoCheckoutMaxS": bounds::AUTO_CHECKOUT_MAX_S,
        },
    })))
}

/// `GET /api/admin/flows/{name}/versions/{version}`: a published version.
#[get("/admin/flows/{name}/versions/{version}")]
pub async fn get_version(
    library: web::Data<FlowLibrary>,
    _admin: Admin,
    path: web::Path<(String, u32)>,
) -> Result<HttpResponse, ApiError> {
    let (name, number) = path.into_inner();
    let found = match library.version(&name, number).await {
        Ok(found) => found,
        Err(error) => return refused(error),
    };
    let Some(version) = found else {
        return refused(FlowError::UnknownVersion);
    };
    Ok(HttpResponse::Ok().json(json!({
        "name": version.name,
        "version": version.version,
        "script": version.script,
        "publishedAt": version.published_at,
        "publishedBy": version.published_by,
    })))
}

/// A body the editor sends, read here so a missing or mistyped field gets words, not serde's.
pub(super) fn body_of<T: serde::de::DeserializeOwned>(body: web::Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(&body).map_err(|error| {
        ApiError::bad_request(
            "invalid_body",
            format!("The request could not be read: {error}."),
        )
    })
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DraftBody {
    script: FlowScript,
    based_on: Option<u32>,
}

/// `PUT /api/admin/flows/{name}/draft` `{script, basedOn}`: saves the draft (problems and all;
/// `draft.problems` says what publishing would refuse).
#[put("/admin/flows/{name}/draft")]
pub async fn put_draft(
    library: web::Data<FlowLibrary>,
    admin: Admin,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let body: DraftBody = body_of(body)?;
    match library
        .save_draft(&path, body.script, body.based_on, &admin.0.email)
        .await
    {
        Ok(draft) => Ok(HttpResponse::Ok().json(json!({ "draft": draft_json(&library, &draft) }))),
        Err(error) => refused(error),
    }
}

/// `DELETE /api/admin/flows/{name}/draft`: discards the draft.
#[delete("/admin/flows/{name}/draft")]
pub async fn delete_draft(
    library: web::Data<FlowLibrary>,
    _admin: Admin,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    match library.delete_draft(&path).await {
        Ok(_) => Ok(HttpResponse::NoContent().finish()),
        Err(error) => refused(error),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewFlowBody {
    name: String,
    copy_from: String,
}

/// `POST /api/admin/flows` `{name, copyFrom}`: a new flow, as a draft copied from another's
/// published script.
#[post("/admin/flows")]
pub async fn post_flow(
    library: web::Data<FlowLibrary>,
    admin: Admin,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let body: NewFlowBody = body_of(body)?;
    let name = body.name.trim();
    match library.create(name, &body.copy_from, &admin.0.email).await {
        Ok(draft) => {
            Ok(HttpResponse::Created().json(json!({ "draft": draft_json(&library, &draft) })))
        }
        Err(FlowError::Invalid(problems)) => Ok(invalid(
            problems.first().map_or("", |p| p.message.as_str()),
            &problems,
        )),
        Err(error) => refused(error),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PublishBody {
    based_on: Option<u32>,
}

/// `POST /api/admin/flows/{name}/publish` `{basedOn}`: publishes the draft as the next version,
/// if the version published now is still `basedOn`. `{version}`.
#[post("/admin/flows/{name}/publish")]
pub async fn post_publish(
    library: web::Data<FlowLibrary>,
    admin: Admin,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let body: PublishBody = body_of(body)?;
    match library.publish(&path, body.based_on, &admin.0.email).await {
        Ok(version) => Ok(HttpResponse::Ok().json(json!({ "version": version }))),
        Err(error) => refused(error),
    }
}

#[derive(Debug, Deserialize)]
struct RollbackBody {
    version: u32,
}

/// `POST /api/admin/flows/{name}/rollback` `{version}`: publishes an older version again.
#[post("/admin/flows/{name}/rollback")]
pub async fn post_rollback(
    library: web::Data<FlowLibrary>,
    admin: Admin,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let body: RollbackBody = body_of(body)?;
    match library.rollback(&path, body.version, &admin.0.email).await {
        Ok(()) => Ok(HttpResponse::Ok().json(json!({ "published": body.version }))),
        Err(error) => refused(error),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoutingBody {
    routing: Routing,
    based_on: u32,
}

/// `PUT /api/admin/flows/routing` `{routing, basedOn}`: publishes a routing. `{version}`.
#[put("/admin/flows/routing")]
pub async fn put_routing(
    library: web::Data<FlowLibrary>,
    admin: Admin,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let body: RoutingBody = body_of(body)?;
    let mut routing = body.routing;
    // Keyword routes are matched in lower case, and ids without spaces around them.
    routing.keywords = routing
        .keywords
        .into_iter()
        .map(|(keyword, flow)| (keyword.trim().to_lowercase(), flow))
        .collect();
    routing.campaigns = routing
        .campaigns
        .into_iter()
        .map(|(campaign, flow)| (campaign.trim().to_owned(), flow))
        .collect();
    routing.keyword_flow = routing.keyword_flow.filter(|flow| !flow.trim().is_empty());
    match library
        .publish_routing(routing, body.based_on, &admin.0.email)
        .await
    {
        Ok(version) => Ok(HttpResponse::Ok().json(json!({ "version": version }))),
        Err(error) => refused(error),
    }
}

#[derive(Debug, Deserialize)]
struct HistoryQuery {
    flow: Option<String>,
    limit: Option<usize>,
}

/// `GET /api/admin/flows/history?flow=&limit=`: who changed what and when, newest first.
#[get("/admin/flows/history")]
pub async fn get_history(
    library: web::Data<FlowLibrary>,
    _admin: Admin,
    query: web::Query<HistoryQuery>,
) -> Result<HttpResponse, ApiError> {
    let limit = query.limit.unwrap_or(50).clamp(1, HISTORY_LIMIT);
    let flow = query.flow.as_deref().filter(|flow| !flow.is_empty());
    match library.history(flow, limit).await {
        Ok(records) => Ok(HttpResponse::Ok().json(json!({
            "entries": records.iter().map(record_json).collect::<Vec<_>>(),
        }))),
        Err(error) => refused(error),
    }
}

#[derive(Debug, Deserialize)]
struct PreviewBody {
    script: FlowScript,
}

/// `POST /api/admin/flows/{name}/preview` `{script}`: a preview of the draft for an hour,
/// `{previewId, expiresAt}`, tried in the funnel's page (`/chat-help?preview=…`).
#[post("/admin/flows/{name}/preview")]
pub async fn post_preview(
    library: web::Data<FlowLibrary>,
    admin: Admin,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let body: PreviewBody = body_of(body)?;
    match library.preview(&path, body.script, &admin.0.email).await {
        Ok(preview) => Ok(HttpResponse::Created().json(json!({
            "previewId": preview.id,
            "expiresAt": preview.expires_at,
        }))),
        Err(FlowError::Invalid(problems)) => Ok(invalid(
            "The draft cannot be tried yet: please correct the fields marked.",
            &problems,
        )),
        Err(error) => refused(error),
    }
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(get_flows)
        .service(get_history)
        .service(put_routing)
        .service(get_version)
        .service(put_draft)
        .service(delete_draft)
        .service(post_flow)
        .service(post_publish)
        .service(post_rollback)
        .service(post_preview);
}
