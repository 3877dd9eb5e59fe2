//! `/api/admin/experiments*`: experiments, their changes, their analysis and the promotion of a
//! winner (issue 48; docs/experiments-api.md, docs/dashboard.md "Experiments"). Admins only, as
//! all of `/api/admin`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, put, web};
use serde::Deserialize;
use serde_json::json;

use super::Admin;
use super::flows::{body_of, invalid};
use crate::error::ApiError;
use crate::experiments::{Definition, ExperimentError, Experiments};

/// An answer for a refused change.
fn refused(error: ExperimentError) -> Result<HttpResponse, ApiError> {
    match error {
        ExperimentError::NotFound => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "There is no such experiment.",
        )),
        ExperimentError::Invalid(problems) => Ok(invalid(
            "Nothing was saved: please correct the fields marked.",
            &problems,
        )),
        ExperimentError::WrongStatus(message) => Ok(HttpResponse::Conflict().json(json!({
            "error": "wrong_status",
            "message": message,
        }))),
        ExperimentError::Overlaps(message) => Ok(HttpResponse::Conflict().json(json!({
            "error": "overlaps",
            "message": message,
        }))),
        ExperimentError::Moved => Ok(HttpResponse::Conflict().json(json!({
            "error": "moved",
            "message": "Someone else changed the flows or experiments meanwhile. Reload, then try again.",
        }))),
        ExperimentError::Store(error) => Err(ApiError::internal("experiments", error)),
    }
}

/// `GET /api/admin/experiments`: every experiment, and the published flow versions an arm may
/// follow.
#[get("/admin/experiments")]
pub async fn list(
    experiments: web::Data<Experiments>,
    _admin: Admin,
) -> Result<HttpResponse, ApiError> {
    let all = match experiments.list().await {
        Ok(all) => all,
        Err(error) => return refused(error),
    };
    let catalog = experiments.flows().catalog();
    let mut names: Vec<&String> = catalog.versions.keys().collect();
    names.sort();
    let flows: Vec<_> = names
        .into_iter()
        .map(|name| {
            json!({
                "name": name,
                "versions": catalog.versions[name].keys().collect::<Vec<_>>(),
                "published": catalog.published.get(name),
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({ "experiments": all, "flows": flows })))
}

/// `POST /api/admin/experiments` `Definition`: a new draft.
#[post("/admin/experiments")]
pub async fn create(
    experiments: web::Data<Experiments>,
    admin: Admin,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let definition: Definition = body_of(body)?;
    match experiments.create(definition, &admin.0.email).await {
        Ok(experiment) => Ok(HttpResponse::Created().json(experiment)),
        Err(error) => refused(error),
    }
}

/// `GET /api/admin/experiments/{id}`: the experiment, its analysis and its history.
#[get("/admin/experiments/{id}")]
pub async fn one(
    experiments: web::Data<Experiments>,
    _admin: Admin,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let found = async {
        let experiment = experiments.get(&path).await?;
        let analysis = experiments.analysis(&experiment).await?;
        let history = experiments.history(&path).await?;
        Ok::<_, ExperimentError>((experiment, analysis, history))
    };
    match found.await {
        Ok((experiment, analysis, history)) => Ok(HttpResponse::Ok().json(json!({
            "experiment": experiment,
            "analysis": analysis,
            "history": history,
        }))),
        Err(error) => refused(error),
    }
}

/// `PUT /api/admin/experiments/{id}` `Definition`: a draft's new definition.
#[put("/admin/experiments/{id}")]
pub async fn edit(
    experiments: web::Data<Experiments>,
    admin: Admin,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let definition: Definition = body_of(body)?;
    match experiments.edit(&path, definition, &admin.0.email).await {
        Ok(experiment) => Ok(HttpResponse::Ok().json(experiment)),
        Err(error) => refused(error),
    }
}

/// `POST /api/admin/experiments/{id}/{action}`: start (or resume), pause, stop, archive.
#[post("/admin/experiments/{id}/{action:start|pause|stop|archive}")]
pub async fn change(
    experiments: web::Data<Experiments>,
    admin: Admin,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, action) = path.into_inner();
    let by = &admin.0.email;
    let changed = match action.as_str() {
        "start" => experiments.start(&id, by).await,
        "pause" => experiments.pause(&id, by).await,
        "stop" => experiments.stop(&id, by).await,
        _ => experiments.archive(&id, by).await,
    };
    match changed {
        Ok(experiment) => Ok(HttpResponse::Ok().json(experiment)),
        Err(error) => refused(error),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PromoteBody {
    arm: String,
}

/// `POST /api/admin/experiments/{id}/promote` `{arm}`: the arm published as the scope's, and
/// the experiment ends.
#[post("/admin/experiments/{id}/promote")]
pub async fn promote(
    experiments: web::Data<Experiments>,
    admin: Admin,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let body: PromoteBody = body_of(body)?;
    match experiments
        .promote(&path, &body.arm, &admin.0.email, None)
        .await
    {
        Ok(experiment) => Ok(HttpResponse::Ok().json(experiment)),
        Err(error) => refused(error),
    }
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(list)
        .service(create)
        .service(one)
        .service(edit)
        .service(promote)
        .service(change);
}
