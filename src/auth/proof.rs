//! Proving an address takes the account (docs/operations.md, "Accounts: who holds one"): the use
//! of a mailed sign-in link, with what it ends on every process.

use crate::cluster::{Cluster, ClusterEvent};
use crate::store::{self, Db};

pub use store::billing::Redeemed;

/// Spends a one-time sign-in token ([`store::billing::redeem_sign_in_token`]). When its use took
/// the account over, the account's sessions were ended in the store, and here their chat sockets
/// are closed on every process. `session`: the hash of a new session's secret, created for the
/// token's owner in the same transaction (see the store's function).
pub async fn redeem_sign_in_token(
    db: &Db,
    cluster: &Cluster,
    token_hash: &str,
    session: Option<String>,
) -> Result<Option<Redeemed>, surrealdb::Error> {
    let session = session.map(|hash| (hash, super::session::SESSION_LIFETIME));
    let redeemed = store::billing::redeem_sign_in_token(db, token_hash, session).await?;
    if let Some(owner) = redeemed.as_ref().filter(|owner| owner.took_over) {
        tracing::info!(
            user = owner.user_id,
            password_pending = owner.password_pending,
            "a mailed link proved an account's address: its other sessions ended"
        );
        cluster.publish(ClusterEvent::SignedOut {
            user_id: owner.user_id.clone(),
            session: None,
        });
    }
    Ok(redeemed)
}
