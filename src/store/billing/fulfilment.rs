//! Fulfilment is one transaction: a checkout is marked fulfilled together with everything it grants
//! (the account, the trial, the attribution, the sign-in token, the welcome mail and the analytics
//! events), so it happens whole, once, whichever caller (webhook or success page) comes first.

use chrono::{DateTime, Utc};
use surrealdb::types::SurrealValue;

use crate::store::Db;

/// Everything fulfilment writes, prepared by the caller (texts, the token's hash).
#[derive(Debug, Clone)]
pub struct Fulfilment {
    pub provider_session_id: String,
    pub email: String,
    pub customer_id: Option<String>,
    pub subscription_id: Option<String>,
    pub payment_intent_id: Option<String>,
    pub completed_at: DateTime<Utc>,
    pub trial_end: DateTime<Utc>,
    /// The hash of the sign-in link's token in the welcome mail.
    pub mail_token_hash: String,
    pub token_expires_at: DateTime<Utc>,
    pub welcome_subject: String,
    pub welcome_text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FulfilOutcome {
    /// This call fulfilled the checkout.
    Fulfilled { user_id: String, email: String },
    /// It was fulfilled before (by the webhook or the success page).
    AlreadyFulfilled { user_id: String, email: String },
}

#[derive(Debug, thiserror::Error)]
pub enum FulfilError {
    #[error("no checkout {0} was started here")]
    UnknownCheckout(String),
    #[error(transparent)]
    Database(#[from] surrealdb::Error),
}

const FULFIL: &str = r"
BEGIN TRANSACTION;
LET $cs = (SELECT * FROM checkout_session WHERE provider_session_id = $f.provider_session_id LIMIT 1)[0];
IF $cs = NONE { THROW 'unknown_checkout'; };
IF $cs.fulfilled_at != NONE { THROW 'already_fulfilled'; };
-- A checkout started signed in belongs to that account, whatever address was typed; else the
-- account of the typed address, or a new one.
LET $starter = IF $cs.user != NONE AND record::exists($cs.user) { $cs.user } ELSE { NONE };
LET $found = $starter ?? (SELECT VALUE id FROM user WHERE email = $f.email LIMIT 1)[0];
LET $uid = IF $found != NONE { $found } ELSE { (CREATE user CONTENT { email: $f.email } RETURN VALUE id)[0] };
LET $att = $cs.attribution ?? {};
-- The account's acquisition is the visitor's first campaign touch: as the browser kept it (any
-- page), else as the server saw it (the first funnel visit of this visitor), else this
-- checkout's own campaign.
LET $seen = IF $cs.visitor != NONE { $cs.visitor.acquisition } ELSE { NONE };
LET $touch = $cs.first_touch ?? $seen ?? $att;
LET $history = {
    startDate: $f.completed_at, endDate: $f.trial_end, status: 'active',
    paymentSessionId: $f.provider_session_id, attribution: $att
};

-- One trial per account: a later checkout of the same account starts no second one.
LET $first_trial = !((SELECT VALUE trial_used FROM ONLY $uid) ?? false);
-- isSubscribed: the subscription's status when its events came first, else running (it begins here).
LET $sub = IF $f.subscription_id != NONE { type::record('subscription', $f.subscription_id).* } ELSE { NONE };
LET $subscribed = IF $sub != NONE AND $sub.status != NONE { $sub.status IN ['active', 'trialing'] } ELSE { true };
UPDATE $uid SET
    trial_started = true,
    trial_used = true,
    trial_start_date = IF $first_trial { $f.completed_at } ELSE { trial_start_date },
    trial_end_date = IF $first_trial { $f.trial_end } ELSE { trial_end_date },
    checkout_session_id = $cs.tracking_id,
    checkout_completed = true,
    checkout_completed_at = $f.completed_at,
    payment_session_id = $f.provider_session_id,
    payment_customer_id = $f.customer_id ?? payment_customer_id,
    subscription_id = $f.subscription_id ?? subscription_id,
    acquisition = acquisition ?? {
        utm_source: $touch.utm_source, utm_medium: $touch.utm_medium, utm_campaign: $touch.utm_campaign,
        keyword: $touch.keyword, campaignid: $touch.campaignid, gclid: $touch.gclid,
        signup_date: $f.completed_at,
        source: $touch.utm_source ?? 'direct', medium: $touch.utm_medium ?? 'none', campaign: $touch.utm_campaign ?? 'none'
    },
    is_subscribed = $subscribed,
    trial_attribution = {
        campaignid: $att.campaignid, keyword: $att.keyword,
        utm_source: $att.utm_source, utm_medium: $att.utm_medium, utm_campaign: $att.utm_campaign,
        funnel_type: $cs.source, funnel_timestamp: $cs.created_at, paymentSessionId: $f.provider_session_id
    },
    trial_history = IF $first_trial { array::append(trial_history ?? [], $history) } ELSE { trial_history },
    funnel = $cs.funnel_record ?? funnel;
UPDATE $cs.id SET
    status = 'complete', email = $f.email, user = $uid, created_account = ($found = NONE),
    customer_id = $f.customer_id, subscription_id = $f.subscription_id,
    payment_intent_id = $f.payment_intent_id,
    completed_at = $f.completed_at, fulfilled_at = time::now();
IF $cs.visitor != NONE { UPDATE $cs.visitor SET user = $uid; };
IF $cs.funnel_conversation != NONE { UPDATE $cs.funnel_conversation SET user = $uid; };
CREATE sign_in_token CONTENT {
    token_hash: $f.mail_token_hash, user: $uid, email: $f.email, purpose: 'mail',
    checkout_session_id: $f.provider_session_id, expires_at: $f.token_expires_at
};
CREATE mail_outbox CONTENT { recipient: $f.email, subject: $f.welcome_subject, body: $f.welcome_text, kind: 'welcome', pending: true };
CREATE analytics_event CONTENT { name: 'purchase', user: $uid, properties: {
    source: $cs.source, value: IF $cs.refundable_fee { 1 } ELSE { 0 }, currency: 'USD', paymentSessionId: $f.provider_session_id } };
IF $first_trial {
    CREATE analytics_event CONTENT { name: 'begin_trial', user: $uid, properties: { source: $cs.source, trial: '7_day' } };
};
-- The subscription begins here (in its trial): once per subscription, however many checkouts.
IF $f.subscription_id != NONE AND !record::exists(type::record('analytics_event', 'subscription_start_' + $f.subscription_id)) {
    CREATE type::record('analytics_event', 'subscription_start_' + $f.subscription_id) CONTENT {
        name: 'subscription_start', user: $uid,
        properties: { source: $cs.source, subscriptionId: $f.subscription_id, trial: $first_trial }
    };
};
COMMIT TRANSACTION;
";

#[derive(Debug, Clone, SurrealValue)]
struct FulfilParams {
    provider_session_id: String,
    email: String,
    customer_id: Option<String>,
    subscription_id: Option<String>,
    payment_intent_id: Option<String>,
    completed_at: DateTime<Utc>,
    trial_end: DateTime<Utc>,
    mail_token_hash: String,
    token_expires_at: DateTime<Utc>,
    welcome_subject: String,
    welcome_text: String,
}

#[derive(Debug, Clone, SurrealValue)]
struct FulfilledBy {
    user_id: Option<String>,
    email: Option<String>,
}

/// Fulfils a paid checkout once; later and concurrent calls get `AlreadyFulfilled`.
pub async fn fulfil(db: &Db, fulfilment: Fulfilment) -> Result<FulfilOutcome, FulfilError> {
    let params = FulfilParams {
        provider_session_id: fulfilment.provider_session_id.clone(),
        email: fulfilment.email,
        customer_id: fulfilment.customer_id,
        subscription_id: fulfilment.subscription_id,
        payment_intent_id: fulfilment.payment_intent_id,
        completed_at: fulfilment.completed_at,
        trial_end: fulfilment.trial_end,
        mail_token_hash: fulfilment.mail_token_hash,
        token_expires_at: fulfilment.token_expires_at,
        welcome_subject: fulfilment.welcome_subject,
        welcome_text: fulfilment.welcome_text,
    };
    let id = fulfilment.provider_session_id;
    let result = crate::store::retry_on_conflict(|| async {
        db.query(FULFIL)
            .bind(("f", params.clone()))
            .await
            .and_then(crate::store::check_transaction)
    })
    .await;
    match result {
        Ok(_) => {
            let by = fulfilled_by(db, &id).await?;
            Ok(FulfilOutcome::Fulfilled {
                user_id: by.user_id.unwrap_or_default(),
                email: by.email.unwrap_or_default(),
            })
        }
        Err(error) if error.to_string().contains("unknown_checkout") => {
            Err(FulfilError::UnknownCheckout(id))
        }
        Err(error) if error.to_string().contains("already_fulfilled") => {
            let by = fulfilled_by(db, &id).await?;
            Ok(FulfilOutcome::AlreadyFulfilled {
                user_id: by.user_id.unwrap_or_default(),
                email: by.email.unwrap_or_default(),
            })
        }
        Err(error) => Err(error.into()),
    }
}

async fn fulfilled_by(db: &Db, provider_session_id: &str) -> Result<FulfilledBy, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT IF user THEN record::id(user) ELSE NONE END AS user_id, email \
             FROM checkout_session WHERE provider_session_id = $id LIMIT 1",
        )
        .bind(("id", provider_session_id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<FulfilledBy> = response.take(0)?;
    Ok(rows.into_iter().next().unwrap_or(FulfilledBy {
        user_id: None,
        email: None,
    }))
}
