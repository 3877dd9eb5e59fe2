//! Payment events arrive in any order and any number of times: 1,000 shuffled trial lifecycles,
//! each event delivered 1 to 4 times, always end in the access the lifecycle implies.

use std::sync::Arc;

use chrono::{Duration, Utc};
use helpnow::billing::Billing;
use helpnow::billing::demo::DemoProvider;
use helpnow::billing::service::StartCheckout;
use helpnow::domain::billing::{
    Attribution, BillingEvent, CheckoutSource, CompletedCheckout, SubscriptionSnapshot,
    SubscriptionStatus,
};
use helpnow::mail::Mailer;
use helpnow::store::Db;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::helpers::test_settings;

const RUNS: usize = 1000;
/// Lifecycles run on this many databases side by side (one per core of a CI machine); within one
/// database they run one after another, as concurrency there only adds retried write conflicts.
const LANES: usize = 2;

#[derive(Debug, Clone, Copy)]
enum Ending {
    /// The first charge went through: active.
    Converted,
    /// Canceled during the trial: deleted when it ended.
    CanceledInTrial,
    /// The first charge failed: past due, then deleted.
    PaymentFailed,
    /// Still in the trial.
    StillTrialing,
}

struct Lifecycle {
    events: Vec<(String, BillingEvent)>,
    expect_access: bool,
    /// The subscription's final status: a stale event never revives a canceled one, nor wins a
    /// same-second tie against it.
    expect_status: &'static str,
}

fn snapshot(
    sub: &str,
    customer: &str,
    status: SubscriptionStatus,
    at: chrono::DateTime<Utc>,
    trial_end: chrono::DateTime<Utc>,
    cancel: bool,
) -> BillingEvent {
    BillingEvent::SubscriptionChanged(SubscriptionSnapshot {
        id: sub.to_owned(),
        customer_id: Some(customer.to_owned()),
        status,
        price_id: Some("price_monthly".to_owned()),
        current_period_end: Some(trial_end + Duration::days(30)),
        trial_end: Some(trial_end),
        cancel_at_period_end: cancel,
        event_created: at.timestamp(),
    })
}

fn lifecycle(n: usize, checkout_id: &str, ending: Ending) -> Lifecycle {
    let now = Utc::now();
    // A trial that is over, unless it is still running.
    let start = match ending {
        Ending::StillTrialing => now - Duration::days(1),
        _ => now - Duration::days(12),
    };
    let trial_end = start + Duration::days(7);
    let sub = format!("sub_{n}");
    let customer = format!("cus_{n}");
    let mut events = vec![
        BillingEvent::CheckoutCompleted(CompletedCheckout {
            provider_session_id: checkout_id.to_owned(),
            email: format!("life{n}@example.com"),
            customer_id: Some(customer.clone()),
            subscription_id: Some(sub.clone()),
            payment_intent_id: Some(format!("pi_{n}")),
            card_fingerprint: None,
            completed_at: start,
        }),
        snapshot(
            &sub,
            &customer,
            SubscriptionStatus::Trialing,
            start,
            trial_end,
            false,
        ),
    ];
    if !matches!(ending, Ending::StillTrialing) {
        events.push(BillingEvent::TrialWillEnd(SubscriptionSnapshot {
            id: sub.clone(),
            customer_id: Some(customer.clone()),
            status: SubscriptionStatus::Trialing,
            price_id: Some("price_monthly".to_owned()),
            current_period_end: Some(trial_end),
            trial_end: Some(trial_end),
            cancel_at_period_end: false,
            event_created: (trial_end - Duration::days(3)).timestamp(),
        }));
    }
    let expect_access = match ending {
        Ending::Converted => {
            events.push(BillingEvent::InvoicePaid {
                customer_id: Some(customer.clone()),
                subscription_id: Some(sub.clone()),
                amount_paid: 2000,
                billing_reason: Some("subscription_cycle".to_owned()),
            });
            events.push(snapshot(
                &sub,
                &customer,
                SubscriptionStatus::Active,
                trial_end,
                trial_end,
                false,
            ));
            true
        }
        Ending::CanceledInTrial => {
            events.push(snapshot(
                &sub,
                &customer,
                SubscriptionStatus::Trialing,
                start + Duration::days(2),
                trial_end,
                true,
            ));
            events.push(snapshot(
                &sub,
                &customer,
                SubscriptionStatus::Canceled,
                trial_end,
                trial_end,
                true,
            ));
            false
        }
        Ending::PaymentFailed => {
            events.push(BillingEvent::InvoicePaymentFailed {
                customer_id: Some(customer.clone()),
                subscription_id: Some(sub.clone()),
                amount_due: 2000,
            });
            events.push(snapshot(
                &sub,
                &customer,
                SubscriptionStatus::PastDue,
                trial_end + Duration::seconds(1),
                trial_end,
                false,
            ));
            // Deleted in the same second as a (late) update: canceled still wins.
            events.push(snapshot(
                &sub,
                &customer,
                SubscriptionStatus::Canceled,
                trial_end + Duration::days(3),
                trial_end,
                false,
            ));
            events.push(snapshot(
                &sub,
                &customer,
                SubscriptionStatus::PastDue,
                trial_end + Duration::days(3),
                trial_end,
                false,
            ));
            false
        }
        Ending::StillTrialing => true,
    };
    let expect_status = match ending {
        Ending::Converted => "active",
        Ending::CanceledInTrial | Ending::PaymentFailed => "canceled",
        Ending::StillTrialing => "trialing",
    };
    Lifecycle {
        events: events
            .into_iter()
            .enumerate()
            .map(|(index, event)| (format!("evt_{n}_{index}"), event))
            .collect(),
        expect_access,
        expect_status,
    }
}

async fn billing_on_a_fresh_database() -> (Arc<Billing>, Db) {
    let mut settings = test_settings();
    settings.database.url = "mem://".to_owned();
    let db = helpnow::store::connect(&settings.database)
        .await
        .expect("db");
    let mailer = Mailer::from_settings(&settings.mail, db.clone()).expect("mailer");
    let billing = Arc::new(Billing::new(
        db.clone(),
        Arc::new(DemoProvider::new(db.clone())),
        mailer,
        "http://127.0.0.1:8080".parse().expect("url"),
        "HelpNow".to_owned(),
    ));
    (billing, db)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_shuffled_lifecycles_with_repeats_end_in_the_right_access() {
    let seed: u64 = std::env::var("LIFECYCLE_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    let endings = [
        Ending::Converted,
        Ending::CanceledInTrial,
        Ending::PaymentFailed,
        Ending::StillTrialing,
    ];

    let run = move |billing: Arc<Billing>, db: Db, n: usize| async move {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed.wrapping_add(n as u64));
        let ending = endings[rng.random_range(0..endings.len())];
        let started = billing
            .start_checkout(StartCheckout {
                source: CheckoutSource::ChatFunnel,
                attribution: Attribution::default(),
                user: None,
                visitor_id: None,
                cancel_path: "/?canceled=true".to_owned(),
                funnel: None,
                handoff: false,
                first_touch: None,
                arm: None,
            })
            .await
            .expect("checkout");
        let life = lifecycle(n, &started.provider_session_id, ending);
        let mut deliveries: Vec<(String, BillingEvent)> = life
            .events
            .iter()
            .flat_map(|event| std::iter::repeat_n(event.clone(), rng.random_range(1..=4)))
            .collect();
        deliveries.shuffle(&mut rng);
        for (id, event) in deliveries {
            billing
                .process_event(
                    "stripe",
                    &id,
                    event.kind(),
                    serde_json::json!({"id": id}),
                    Some(event),
                )
                .await
                .expect("processed");
        }
        let mut response = db
            .query("SELECT VALUE record::id(id) FROM user WHERE email = $email")
            .bind(("email", format!("life{n}@example.com")))
            .await
            .expect("query");
        let ids: Vec<String> = response.take(0).expect("ids");
        assert_eq!(ids.len(), 1, "run {n}: one account");
        let check = billing
            .check(&ids[0])
            .await
            .expect("check")
            .expect("a user");
        let access = check.trial_active || check.has_active_subscription;
        assert_eq!(
            access, life.expect_access,
            "run {n} ({ending:?}), seed {seed}: {check:?}"
        );
        assert_eq!(
            check.subscription.as_ref().map(|s| s.status.as_str()),
            Some(life.expect_status),
            "run {n} ({ending:?}), seed {seed}: {check:?}"
        );
        // The spec's isSubscribed follows the status, whichever came first.
        let mut response = db
            .query("SELECT VALUE is_subscribed FROM ONLY type::record('user', $id)")
            .bind(("id", ids[0].clone()))
            .await
            .expect("query");
        let subscribed: Option<bool> = response.take(0).expect("is_subscribed");
        assert_eq!(
            subscribed,
            Some(matches!(life.expect_status, "active" | "trialing")),
            "run {n} ({ending:?}), seed {seed}: isSubscribed"
        );
    };
    let mut lanes = Vec::new();
    for lane in 0..LANES {
        let (billing, db) = billing_on_a_fresh_database().await;
        lanes.push(tokio::spawn(async move {
            for n in (lane..RUNS).step_by(LANES) {
                run(billing.clone(), db.clone(), n).await;
            }
            let mut response = db
                .query("RETURN count(SELECT VALUE id FROM analytics_event WHERE name = 'purchase' AND properties.source != 'subscription_cycle')")
                .await
                .expect("query");
            let purchases: Option<u64> = response.take(0).expect("count");
            purchases.unwrap_or(0)
        }));
    }
    let mut purchases = 0;
    for lane in lanes {
        purchases += lane.await.expect("a lane finished");
    }
    assert_eq!(
        purchases, RUNS as u64,
        "each checkout fulfilled exactly once (monthly charges are purchases of their own)"
    );
}
