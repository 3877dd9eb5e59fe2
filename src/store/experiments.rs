//! Experiments as the store keeps them (issue 48, migration 0029): each experiment's document
//! (`experiment:[id]`, written with the flows' revision by [`super::flows::commit`]), the record
//! of its changes, and what its visitors did: an exposure per visitor (`experiment_exposure`)
//! and their money steps (`experiment_money`), which the money path's transactions write for a
//! checkout opened in an arm (`fn::experiment_money`).

use chrono::{DateTime, Utc};
use helpnow_actors::rules::experiments::ArmRef;
use surrealdb::types::SurrealValue;

use super::Db;

#[derive(Debug, Clone, SurrealValue)]
struct ExposeVars {
    experiment: String,
    arm: String,
    visitor: String,
    at: DateTime<Utc>,
}

/// Records that `visitor` was shown `arm` on the help form's page (once per experiment and
/// visitor: the first time counts). A chat funnel's conversation records its own with its start
/// (`store::batch`).
pub async fn expose_help_form(
    db: &Db,
    arm: &ArmRef,
    visitor: &str,
) -> Result<(), surrealdb::Error> {
    db.query("fn::experiment_expose($e)")
        .bind((
            "e",
            ExposeVars {
                experiment: arm.experiment.clone(),
                arm: arm.arm.clone(),
                visitor: visitor.to_owned(),
                at: Utc::now(),
            },
        ))
        .await?
        .check()?;
    Ok(())
}

/// Every experiment's document, newest first.
pub async fn all(db: &Db) -> Result<Vec<serde_json::Value>, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE doc FROM experiment ORDER BY doc.createdAt DESC")
        .await?
        .check()?;
    response.take(0)
}

/// One experiment's document.
pub async fn one(db: &Db, id: &str) -> Result<Option<serde_json::Value>, surrealdb::Error> {
    let mut response = db
        .query("SELECT VALUE doc FROM type::record('experiment', [$id])")
        .bind(("id", id.to_owned()))
        .await?
        .check()?;
    let docs: Vec<serde_json::Value> = response.take(0)?;
    Ok(docs.into_iter().next())
}

/// The records of an experiment's changes, oldest first.
pub async fn history(db: &Db, id: &str) -> Result<Vec<serde_json::Value>, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT at, by, kind, arm, note FROM experiment_record:[$id, NONE]..=[$id, {}] \
             ORDER BY at",
        )
        .bind(("id", id.to_owned()))
        .await?
        .check()?;
    response.take(0)
}

/// A visitor shown an arm.
#[derive(Debug, Clone, SurrealValue)]
pub struct Exposure {
    pub visitor: String,
    pub arm: String,
    pub at: DateTime<Utc>,
    /// The checkout source's name of the funnel they met (`chat_funnel`, ...).
    pub funnel: String,
    /// For a chat funnel's: whether they sent a second message.
    pub second_message: Option<bool>,
}

/// A money step of an exposed visitor.
#[derive(Debug, Clone, SurrealValue)]
pub struct Money {
    pub visitor: String,
    pub arm: String,
    /// `trial_paid`, `fee`, `fee_refund` or `subscription`.
    pub step: String,
    pub cents: i64,
    pub at: DateTime<Utc>,
}

/// Everything an experiment's visitors did: their exposures and money steps. One read of two
/// ranges of ids.
pub async fn outcomes(db: &Db, id: &str) -> Result<(Vec<Exposure>, Vec<Money>), surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT record::id(id)[1] AS visitor, arm, at, funnel,
                 IF conversation != NONE {
                     record::exists(type::record('funnel_message', [record::id(conversation), 3]))
                 } ELSE { NONE } AS second_message
             FROM experiment_exposure:[$id, NONE]..=[$id, {}];
             SELECT record::id(id)[1] AS visitor, arm, step, cents, at
             FROM experiment_money:[$id, NONE]..=[$id, {}];",
        )
        .bind(("id", id.to_owned()))
        .await?
        .check()?;
    Ok((response.take(0)?, response.take(1)?))
}
