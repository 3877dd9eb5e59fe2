//! Fulfilment is one transaction: a checkout is marked fulfilled together with everything it grants
//! (the account, the trial, the attribution, the sign-in token, the welcome mail and the analytics
//! events), so it happens whole, once, whichever caller (webhook or success page) comes first.

use chrono::{DateTime, Utc};
use surrealdb::types::SurrealValue;

use crate::domain::billing::REFUNDABLE_FEE_CENTS;
use crate::store::Db;

/// Everything fulfilment writes, prepared by the caller (texts, the token's hash).
#[derive(Debug, Clone, SurrealValue)]
pub struct Fulfilment {
    pub provider_session_id: String,
    pub email: String,
    pub customer_id: Option<String>,
    pub subscription_id: Option<String>,
    pub payment_intent_id: Option<String>,
    /// The paying card's fingerprint, when the provider gives one: a card has one trial.
    pub card_fingerprint: Option<String>,
    /// The provider cannot tell the paying card apart (not a card, no fingerprint): no trial, as
    /// it may be a card that had one.
    pub card_unidentified: bool,
    pub completed_at: DateTime<Utc>,
    pub trial_end: DateTime<Utc>,
    /// The hash of the sign-in link's token in the mail.
    pub mail_token_hash: String,
    pub token_expires_at: DateTime<Utc>,
    /// The welcome mail when the trial starts.
    pub welcome_subject: String,
    pub welcome_text: String,
    /// The welcome mail when it does not (the account or the card had its trial).
    pub paid_subject: String,
    pub paid_text: String,
    /// The mail to the owner of an address that someone paid with while signed out.
    pub held_subject: String,
    pub held_text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FulfilOutcome {
    /// This call fulfilled the checkout.
    Fulfilled { user_id: String, email: String },
    /// It was fulfilled before (by the webhook or the success page).
    AlreadyFulfilled { user_id: String, email: String },
    /// Paid signed out with the address of the existing account `owner_id`: held for its owner.
    Held { owner_id: String, email: String },
}

#[derive(Debug, thiserror::Error)]
pub enum FulfilError {
    #[error("no checkout {0} was started here")]
    UnknownCheckout(String),
    #[error(transparent)]
    Database(#[from] surrealdb::Error),
}

/// What a checkout grants the account `$uid` (`$cs` the checkout, `$f` the payment), shared by
/// fulfilment and by the claim of a held payment. The trial is granted once per account and once
/// per card: `$first_trial` is false for an account that had one, for a card that paid for one
/// before or that the provider cannot identify, and for a checkout that asked for none; the
/// checkout then says `trial_to_end`, and the service ends the provider's trial, so the first
/// month is charged at once.
macro_rules! grant {
    () => {
        r"
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
LET $card = IF $f.card_fingerprint != NONE { type::record('trial_card', $f.card_fingerprint) } ELSE { NONE };
LET $card_had_trial = $card != NONE AND record::exists($card);
LET $first_trial = ($cs.trial_offered ?? true) AND !((SELECT VALUE trial_used FROM ONLY $uid) ?? false)
    AND !$card_had_trial AND !($f.card_unidentified ?? false);
IF $first_trial AND $card != NONE { CREATE $card CONTENT { user: $uid }; };
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
    status = 'complete', email = $f.email, user = $uid, held_for = NONE,
    customer_id = $f.customer_id, subscription_id = $f.subscription_id,
    payment_intent_id = $f.payment_intent_id, card_fingerprint = $f.card_fingerprint,
    card_unidentified = $f.card_unidentified ?? false,
    completed_at = $f.completed_at, fulfilled_at = $cs.fulfilled_at ?? time::now(),
    trial_granted = $first_trial,
    trial_to_end = !$first_trial AND ($cs.trial_offered ?? true) AND $f.subscription_id != NONE;
IF $cs.visitor != NONE { UPDATE $cs.visitor SET user = $uid; };
IF $cs.funnel_conversation != NONE { UPDATE $cs.funnel_conversation SET user = $uid; };
IF $first_trial {
    CREATE analytics_event CONTENT { name: 'begin_trial', user: $uid, properties: { source: $cs.source, trial: '7_day' } };
};
-- The journey's trial (or, without one, the account it paid for): monthly payments count on it.
LET $jv = fn::checkout_journey_visitor($cs);
fn::journey({ visitor: $jv, funnel: $cs.source, step: IF $first_trial { 'trial' } ELSE { 'checkout' }, once: true, user: $uid, attribution: $cs.first_touch });
UPDATE $uid SET journey = type::record('journey', [$jv, $cs.source]);
-- The subscription begins here (in its trial): once per subscription, however many checkouts.
IF $f.subscription_id != NONE AND !record::exists(type::record('analytics_event', 'subscription_start_' + $f.subscription_id)) {
    CREATE type::record('analytics_event', 'subscription_start_' + $f.subscription_id) CONTENT {
        name: 'subscription_start', user: $uid,
        properties: { source: $cs.source, subscriptionId: $f.subscription_id, trial: $first_trial }
    };
};
"
    };
}

const FULFIL: &str = concat!(
    r"
BEGIN TRANSACTION;
LET $cs = (SELECT * FROM checkout_session WHERE provider_session_id = $f.provider_session_id LIMIT 1)[0];
IF $cs = NONE { THROW 'unknown_checkout'; };
IF $cs.fulfilled_at != NONE { THROW 'already_fulfilled'; };
-- The drop-off by flow version (migration 0028): the trial paid of the funnel conversation that
-- opened the checkout, once per conversation, held or not.
fn::flow_trial_paid($cs);
-- A checkout started signed in belongs to that account, whatever address was typed.
LET $starter = IF $cs.user != NONE AND record::exists($cs.user) { $cs.user } ELSE { NONE };
LET $owner = (SELECT VALUE id FROM user WHERE email = $f.email LIMIT 1)[0];
LET $purchase = {
    source: $cs.source, value: IF $cs.refundable_fee { 1 } ELSE { 0 }, currency: 'USD',
    paymentSessionId: $f.provider_session_id
};
-- The visitor's journey through the checkout's funnel (the dashboard): the fee was taken, held
-- or not. The key is the one Billing::start_checkout counted the checkout under.
LET $jv = fn::checkout_journey_visitor($cs);
IF $cs.refundable_fee {
    fn::journey({ visitor: $jv, funnel: $cs.source, step: 'fee', once: false, cents: $fee_cents, attribution: $cs.first_touch });
    fn::experiment_money($cs, 'fee', $fee_cents, <string> $cs.id);
};
-- The experiment's arm the checkout was opened in (migration 0029): a trial paid, held or not.
fn::experiment_money($cs, 'trial_paid', 0, <string> $cs.id);
IF $starter = NONE AND $owner != NONE {
    -- Paid signed out with the address of an existing account: nothing of that account changes.
    -- The payment is held for the owner, who is mailed a sign-in link to claim or decline it.
    UPDATE $cs.id SET
        status = 'held', held_for = $owner, email = $f.email,
        customer_id = $f.customer_id, subscription_id = $f.subscription_id,
        payment_intent_id = $f.payment_intent_id, card_fingerprint = $f.card_fingerprint,
        card_unidentified = $f.card_unidentified,
        completed_at = $f.completed_at, trial_end = $f.trial_end, fulfilled_at = time::now();
    CREATE sign_in_token CONTENT {
        token_hash: $f.mail_token_hash, user: $owner, email: $f.email, purpose: 'mail',
        checkout_session_id: $f.provider_session_id, expires_at: $f.token_expires_at
    };
    CREATE mail_outbox CONTENT { recipient: $f.email, subject: $f.held_subject, body: $f.held_text, kind: 'payment_held', pending: true };
    CREATE analytics_event CONTENT { name: 'purchase', user: NONE, properties: {
        source: $purchase.source, value: $purchase.value, currency: 'USD',
        paymentSessionId: $f.provider_session_id, held: true } };
} ELSE {
    LET $uid = IF $starter != NONE { $starter } ELSE { (CREATE user CONTENT { email: $f.email } RETURN VALUE id)[0] };
    CREATE analytics_event CONTENT { name: 'purchase', user: $uid, properties: $purchase };
",
    grant!(),
    r"
    UPDATE $cs.id SET created_account = ($starter = NONE);
    CREATE sign_in_token CONTENT {
        token_hash: $f.mail_token_hash, user: $uid, email: $f.email, purpose: 'mail',
        checkout_session_id: $f.provider_session_id, expires_at: $f.token_expires_at
    };
    CREATE mail_outbox CONTENT {
        recipient: $f.email, kind: 'welcome', pending: true,
        subject: IF $first_trial { $f.welcome_subject } ELSE { $f.paid_subject },
        body: IF $first_trial { $f.welcome_text } ELSE { $f.paid_text }
    };
};
COMMIT TRANSACTION;
"
);

/// The owner's claim of a payment held for the account: what fulfilment would have granted, now.
const CLAIM: &str = concat!(
    r"
BEGIN TRANSACTION;
LET $uid = type::record('user', $user);
LET $cs = (SELECT * FROM checkout_session WHERE held_for = $uid AND tracking_id = $tracking AND status = 'held' LIMIT 1)[0];
IF $cs = NONE { THROW 'not_held'; };
LET $f = {
    provider_session_id: $cs.provider_session_id, email: $cs.email,
    customer_id: $cs.customer_id, subscription_id: $cs.subscription_id,
    payment_intent_id: $cs.payment_intent_id, card_fingerprint: $cs.card_fingerprint,
    card_unidentified: $cs.card_unidentified ?? false,
    completed_at: $cs.completed_at, trial_end: $cs.trial_end
};
",
    grant!(),
    r"
UPDATE $cs.id SET claimed_at = time::now();
COMMIT TRANSACTION;
"
);

#[derive(Debug, Clone, SurrealValue)]
struct FulfilledBy {
    user_id: Option<String>,
    held_for: Option<String>,
    email: Option<String>,
}

/// Fulfils a paid checkout once; later and concurrent calls get `AlreadyFulfilled` (or `Held`).
pub async fn fulfil(db: &Db, fulfilment: Fulfilment) -> Result<FulfilOutcome, FulfilError> {
    let id = fulfilment.provider_session_id.clone();
    let result = crate::store::retry_on_conflict(|| async {
        db.query(FULFIL)
            .bind(("f", fulfilment.clone()))
            .bind(("fee_cents", REFUNDABLE_FEE_CENTS))
            .await
            .and_then(crate::store::check_transaction)
    })
    .await;
    let fresh = match result {
        Ok(_) => true,
        Err(error) if error.to_string().contains("unknown_checkout") => {
            return Err(FulfilError::UnknownCheckout(id));
        }
        Err(error) if error.to_string().contains("already_fulfilled") => false,
        Err(error) => return Err(error.into()),
    };
    let by = fulfilled_by(db, &id).await?;
    let email = by.email.unwrap_or_default();
    Ok(match (by.held_for, by.user_id) {
        (Some(owner_id), _) => FulfilOutcome::Held { owner_id, email },
        (None, user_id) if fresh => FulfilOutcome::Fulfilled {
            user_id: user_id.unwrap_or_default(),
            email,
        },
        (None, user_id) => FulfilOutcome::AlreadyFulfilled {
            user_id: user_id.unwrap_or_default(),
            email,
        },
    })
}

/// Why a held payment was not claimed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// No payment with that tracking id is held for this account (claimed or declined already).
    #[error("no payment {0} is held for this account")]
    NotHeld(String),
    #[error(transparent)]
    Database(#[from] surrealdb::Error),
}

/// The owner's claim of a held payment (by its tracking id): the account gets what fulfilment
/// would have granted it. Once: a second claim is `NotHeld`.
pub async fn claim_held(db: &Db, user_id: &str, tracking_id: &str) -> Result<(), ClaimError> {
    let result = crate::store::retry_on_conflict(|| async {
        db.query(CLAIM)
            .bind(("user", user_id.to_owned()))
            .bind(("tracking", tracking_id.to_owned()))
            .await
            .and_then(crate::store::check_transaction)
    })
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(error) if error.to_string().contains("not_held") => {
            Err(ClaimError::NotHeld(tracking_id.to_owned()))
        }
        Err(error) => Err(error.into()),
    }
}

async fn fulfilled_by(db: &Db, provider_session_id: &str) -> Result<FulfilledBy, surrealdb::Error> {
    let mut response = db
        .query(
            "SELECT IF user THEN record::id(user) ELSE NONE END AS user_id, \
             IF held_for THEN record::id(held_for) ELSE NONE END AS held_for, email \
             FROM checkout_session WHERE provider_session_id = $id LIMIT 1",
        )
        .bind(("id", provider_session_id.to_owned()))
        .await?
        .check()?;
    let rows: Vec<FulfilledBy> = response.take(0)?;
    Ok(rows.into_iter().next().unwrap_or(FulfilledBy {
        user_id: None,
        held_for: None,
        email: None,
    }))
}
