//! A local mock of Stripe's HTTP API, in its real wire format.
//!
//! `MockStripe::start()` serves on 127.0.0.1 (a free port) what HelpNow uses of
//! `https://api.stripe.com/`: form-encoded requests with bracketed keys, Bearer auth, JSON objects
//! shaped as Stripe (API version `2026-09-30.endive`) sends them and as async-stripe 1.0 parses
//! them, Stripe's error bodies, `expand[]`, and idempotency keys (a repeat gets the first answer;
//! a repeat with other parameters gets Stripe's `idempotency_error`). Every request is recorded,
//! so a test can assert exactly what was sent.
//!
//! Test controls stand in for the customer and for time: `pay` completes a checkout as Stripe's
//! page would (customer, card, trialing subscription, first invoice, and the $1 payment when the
//! checkout carries the fee; `pay_with_card` with a chosen card, `pay_with` with a card Stripe
//! gives no fingerprint or with no payment method at all), `renew` bills the first month,
//! `set_subscription_status` and `expire` change state, and the `*_event` helpers build webhook
//! bodies from the current state.
//!
//! Route tests use it as the app's Stripe: `settings.stripe = mock.settings()` with
//! `settings.payments.provider = Stripe`, then sign the bodies with `MockStripe::signed`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use actix_web::dev::ServerHandle;
use actix_web::{HttpRequest, HttpResponse, web};
use helpnow::config::StripeSettings;
use serde_json::{Value, json};

/// The Stripe-Version async-stripe 1.0.0-rc.10 sends, and the version the events are rendered in
/// (the webhook endpoint is meant to be pinned to it).
pub const API_VERSION: &str = "2026-09-30.endive";
pub const SECRET_KEY: &str = "sk_test_mock_51HelpNowSecretKey";
pub const WEBHOOK_SECRET: &str = "whsec_mock_helpnow_webhook_secret";
/// The $20/month recurring price.
pub const SUBSCRIPTION_PRICE_ID: &str = "price_mock_monthly_2000";
/// The $1 one-time refundable fee.
pub const FEE_PRICE_ID: &str = "price_mock_refundable_fee_100";

const DAY: i64 = 24 * 60 * 60;
const MONTH: i64 = 30 * DAY;

/// Ids are unique across every mock in the test process, as Stripe's are across accounts.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn new_id(prefix: &str) -> String {
    format!(
        "{prefix}_mock{:08}",
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    )
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// One request as the mock received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Without the query string.
    pub path: String,
    /// Form body and query parameters, decoded, in the order sent.
    pub params: Vec<(String, String)>,
    pub idempotency_key: Option<String>,
    pub stripe_version: Option<String>,
    pub authorization: Option<String>,
}

impl RecordedRequest {
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
    }

    /// The parameters whose keys start with `prefix` (e.g. `line_items[`).
    pub fn params_starting_with(&self, prefix: &str) -> Vec<(String, String)> {
        self.params
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .cloned()
            .collect()
    }
}

/// What `pay` created.
#[derive(Debug, Clone)]
pub struct Completed {
    pub customer_id: String,
    pub subscription_id: String,
    pub invoice_id: String,
    /// The fee's payment; `None` for a checkout that charged nothing today.
    pub payment_intent_id: Option<String>,
}

struct Price {
    unit_amount: i64,
    recurring: bool,
}

struct Session {
    id: String,
    created: i64,
    expires_at: i64,
    status: String,
    payment_status: String,
    line_items: Vec<(String, u64)>,
    metadata: BTreeMap<String, String>,
    subscription_metadata: BTreeMap<String, String>,
    trial_period_days: Option<i64>,
    /// `allowed_payment_method_types`, when the checkout narrowed them.
    allowed_payment_method_types: Option<Vec<String>>,
    /// `custom_text[submit][message]`: shown beside the pay button.
    submit_message: Option<String>,
    client_reference_id: Option<String>,
    customer_email: Option<String>,
    success_url: String,
    cancel_url: Option<String>,
    customer: Option<String>,
    customer_details_email: Option<String>,
    subscription: Option<String>,
    invoice: Option<String>,
    amount_total: i64,
}

struct Customer {
    id: String,
    created: i64,
    email: String,
}

struct Subscription {
    id: String,
    item_id: String,
    customer: String,
    price: String,
    status: String,
    created: i64,
    start_date: i64,
    trial_start: Option<i64>,
    trial_end: Option<i64>,
    current_period_start: i64,
    current_period_end: i64,
    cancel_at_period_end: bool,
    canceled_at: Option<i64>,
    metadata: BTreeMap<String, String>,
    latest_invoice: Option<String>,
    /// The card it charges (a payment method id).
    default_payment_method: Option<String>,
}

/// A card as a payment method. Stripe gives the same card the same fingerprint, whoever pays,
/// and some cards none (`card.fingerprint` is nullable).
struct PaymentMethod {
    id: String,
    customer: String,
    fingerprint: Option<String>,
    created: i64,
}

/// How the customer paid on Stripe's page.
#[derive(Debug, Clone)]
pub enum PaidWith {
    /// A card with this fingerprint.
    Card(String),
    /// A card Stripe reports without a fingerprint.
    CardWithoutFingerprint,
    /// Nothing the subscription keeps: it has no default payment method.
    NoPaymentMethod,
}

/// The payment method types a checkout offers when it does not narrow them (an account with
/// cards and Link turned on in its dashboard).
const DYNAMIC_PAYMENT_METHOD_TYPES: [&str; 2] = ["card", "link"];
/// The types the mock knows for `allowed_payment_method_types` (a few of Stripe's many).
const KNOWN_PAYMENT_METHOD_TYPES: [&str; 6] = [
    "card",
    "link",
    "us_bank_account",
    "cashapp",
    "amazon_pay",
    "klarna",
];
/// Stripe's limit for each custom text.
const CUSTOM_TEXT_MAX_CHARS: usize = 1200;

struct InvoiceLine {
    id: String,
    price: String,
    amount: i64,
    description: String,
    period_start: i64,
    period_end: i64,
}

struct Invoice {
    id: String,
    customer: String,
    subscription: String,
    billing_reason: String,
    created: i64,
    amount: i64,
    status: String,
    paid_at: Option<i64>,
    lines: Vec<InvoiceLine>,
}

struct InvoicePayment {
    id: String,
    invoice: String,
    payment_intent: String,
    amount: i64,
    created: i64,
}

struct Charge {
    id: String,
    customer: String,
    payment_intent: String,
    amount: i64,
    amount_refunded: i64,
    created: i64,
}

struct Refund {
    id: String,
    charge: String,
    payment_intent: String,
    amount: i64,
    reason: Option<String>,
    created: i64,
}

/// A successful answer, replayed to a request that repeats its idempotency key.
struct IdempotentResult {
    fingerprint: String,
    body: Value,
}

#[derive(Default)]
struct State {
    requests: Vec<RecordedRequest>,
    idempotent: HashMap<String, IdempotentResult>,
    prices: HashMap<String, Price>,
    sessions: BTreeMap<String, Session>,
    customers: BTreeMap<String, Customer>,
    subscriptions: BTreeMap<String, Subscription>,
    invoices: BTreeMap<String, Invoice>,
    /// In creation order; lists answer newest first, as Stripe's do.
    invoice_payments: Vec<InvoicePayment>,
    charges: Vec<Charge>,
    refunds: Vec<Refund>,
    portal_sessions: Vec<(String, String)>,
    payment_methods: BTreeMap<String, PaymentMethod>,
}

/// A Stripe error answer.
struct ApiError {
    status: u16,
    body: Value,
}

impl ApiError {
    fn invalid(status: u16, message: String, param: Option<&str>) -> Self {
        Self::with_code(status, None, message, param)
    }

    fn with_code(status: u16, code: Option<&str>, message: String, param: Option<&str>) -> Self {
        let mut error = json!({"type": "invalid_request_error", "message": message});
        if let Some(code) = code {
            error["code"] = json!(code);
            error["doc_url"] = json!(format!("https://stripe.com/docs/error-codes/{code}"));
        }
        if let Some(param) = param {
            error["param"] = json!(param);
        }
        Self {
            status,
            body: json!({ "error": error }),
        }
    }

    fn missing(kind: &str, id: &str, param: &str, status: u16) -> Self {
        Self::with_code(
            status,
            Some("resource_missing"),
            format!("No such {kind}: '{id}'"),
            Some(param),
        )
    }
}

type Answer = Result<Value, ApiError>;

pub struct MockStripe {
    url: String,
    state: Arc<Mutex<State>>,
    server: ServerHandle,
}

impl Drop for MockStripe {
    fn drop(&mut self) {
        // `stop` sends the command at once; its future only waits for the workers to finish.
        drop(self.server.stop(false));
    }
}

impl MockStripe {
    /// Starts the mock on a free port, with the monthly price and the fee price on file.
    pub async fn start() -> Self {
        let mut state = State::default();
        state.prices.insert(
            SUBSCRIPTION_PRICE_ID.to_owned(),
            Price {
                unit_amount: 2000,
                recurring: true,
            },
        );
        state.prices.insert(
            FEE_PRICE_ID.to_owned(),
            Price {
                unit_amount: 100,
                recurring: false,
            },
        );
        let state = Arc::new(Mutex::new(state));
        let (port, handle) = crate::helpers::serve_mock(Arc::clone(&state), handle);
        MockStripe {
            url: format!("http://127.0.0.1:{port}/"),
            state,
            server: handle,
        }
    }

    /// The API base to give the client (`stripe.api_base`), with its trailing slash.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    pub fn secret_key(&self) -> &'static str {
        SECRET_KEY
    }

    pub fn webhook_secret(&self) -> &'static str {
        WEBHOOK_SECRET
    }

    /// Settings that point the app (or a `StripeProvider`) at this mock.
    pub fn settings(&self) -> StripeSettings {
        StripeSettings {
            secret_key: Some(SECRET_KEY.to_owned().into()),
            webhook_secret: Some(WEBHOOK_SECRET.to_owned().into()),
            subscription_price_id: Some(SUBSCRIPTION_PRICE_ID.to_owned()),
            refundable_fee_price_id: Some(FEE_PRICE_ID.to_owned()),
            api_base: Some(self.url()),
        }
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().requests.clone()
    }

    /// The requests with this method to this path.
    pub fn requests_to(&self, method: &str, path: &str) -> Vec<RecordedRequest> {
        self.state()
            .requests
            .iter()
            .filter(|request| request.method == method && request.path == path)
            .cloned()
            .collect()
    }

    /// Completes a checkout as Stripe's hosted page does once the customer pays: a customer, a
    /// card of its own, a subscription trialing for the checkout's trial days, and its first
    /// invoice, paid. The invoice charges the one-time items today (the fee) and nothing for the
    /// trial month.
    pub fn pay(&self, session_id: &str, email: &str) -> Completed {
        self.pay_with_card(session_id, email, &new_id("fp"))
    }

    /// `pay` with the card whose fingerprint is `card_fingerprint` (the same card for two
    /// checkouts gives the same fingerprint, whatever the email).
    pub fn pay_with_card(
        &self,
        session_id: &str,
        email: &str,
        card_fingerprint: &str,
    ) -> Completed {
        self.pay_with(
            session_id,
            email,
            PaidWith::Card(card_fingerprint.to_owned()),
        )
    }

    /// `pay`, paid as `paid_with` says. The page offers only the checkout's payment method types.
    pub fn pay_with(&self, session_id: &str, email: &str, paid_with: PaidWith) -> Completed {
        let mut state = self.state();
        let now = now();
        let session = state.sessions.get(session_id).expect("a checkout session");
        assert_eq!(session.status, "open", "only an open checkout can be paid");
        if !matches!(paid_with, PaidWith::NoPaymentMethod) {
            assert!(
                session_payment_method_types(session).contains(&"card".to_owned()),
                "this checkout offers no card: {:?}",
                session.allowed_payment_method_types
            );
        }
        let (recurring, one_time): (Vec<_>, Vec<_>) = session
            .line_items
            .iter()
            .map(|(price, quantity)| {
                let price_info = &state.prices[price];
                (
                    price.clone(),
                    price_info.unit_amount * i64::try_from(*quantity).expect("quantity"),
                    price_info.recurring,
                )
            })
            .partition(|(_, _, recurring)| *recurring);
        let (price, monthly_amount, _) = recurring.first().cloned().expect("a recurring price");
        let trial_days = session.trial_period_days.unwrap_or(0);
        let subscription_metadata = session.subscription_metadata.clone();

        let customer_id = new_id("cus");
        state.customers.insert(
            customer_id.clone(),
            Customer {
                id: customer_id.clone(),
                created: now,
                email: email.to_owned(),
            },
        );

        let fingerprint = match &paid_with {
            PaidWith::Card(fingerprint) => Some(fingerprint.clone()),
            PaidWith::CardWithoutFingerprint | PaidWith::NoPaymentMethod => None,
        };
        let payment_method_id = (!matches!(paid_with, PaidWith::NoPaymentMethod)).then(|| {
            let id = new_id("pm");
            state.payment_methods.insert(
                id.clone(),
                PaymentMethod {
                    id: id.clone(),
                    customer: customer_id.clone(),
                    fingerprint,
                    created: now,
                },
            );
            id
        });

        let subscription_id = new_id("sub");
        let invoice_id = new_id("in");
        let (status, trial_start, trial_end, period_end) = if trial_days > 0 {
            let end = now + trial_days * DAY;
            ("trialing", Some(now), Some(end), end)
        } else {
            ("active", None, None, now + MONTH)
        };
        state.subscriptions.insert(
            subscription_id.clone(),
            Subscription {
                id: subscription_id.clone(),
                item_id: new_id("si"),
                customer: customer_id.clone(),
                price: price.clone(),
                status: status.to_owned(),
                created: now,
                start_date: now,
                trial_start,
                trial_end,
                current_period_start: now,
                current_period_end: period_end,
                cancel_at_period_end: false,
                canceled_at: None,
                metadata: subscription_metadata,
                latest_invoice: Some(invoice_id.clone()),
                default_payment_method: payment_method_id,
            },
        );

        let mut lines = vec![InvoiceLine {
            id: new_id("il"),
            price: price.clone(),
            amount: if trial_days > 0 { 0 } else { monthly_amount },
            description: if trial_days > 0 {
                "Trial period for HelpNow".to_owned()
            } else {
                "1 × HelpNow (at $20.00 / month)".to_owned()
            },
            period_start: now,
            period_end,
        }];
        lines.extend(one_time.iter().map(|(price, amount, _)| InvoiceLine {
            id: new_id("il"),
            price: price.clone(),
            amount: *amount,
            description: "Refundable setup fee".to_owned(),
            period_start: now,
            period_end: now,
        }));
        let amount: i64 = lines.iter().map(|line| line.amount).sum();
        state.invoices.insert(
            invoice_id.clone(),
            Invoice {
                id: invoice_id.clone(),
                customer: customer_id.clone(),
                subscription: subscription_id.clone(),
                billing_reason: "subscription_create".to_owned(),
                created: now,
                amount,
                status: "paid".to_owned(),
                paid_at: Some(now),
                lines,
            },
        );
        let payment_intent_id =
            (amount > 0).then(|| state.record_payment(&invoice_id, &customer_id, amount, now));

        let session = state
            .sessions
            .get_mut(session_id)
            .expect("a checkout session");
        session.status = "complete".to_owned();
        // A trial with nothing due today is not a payment, and Stripe says so.
        session.payment_status = if amount > 0 {
            "paid"
        } else {
            "no_payment_required"
        }
        .to_owned();
        session.customer = Some(customer_id.clone());
        session.customer_details_email = Some(email.to_owned());
        session.subscription = Some(subscription_id.clone());
        session.invoice = Some(invoice_id.clone());
        session.amount_total = amount;
        Completed {
            customer_id,
            subscription_id,
            invoice_id,
            payment_intent_id,
        }
    }

    /// Ends the trial and bills the first month: a paid `subscription_cycle` invoice of $20.
    /// Returns the new invoice's id and its payment intent.
    pub fn renew(&self, subscription_id: &str) -> (String, String) {
        self.state()
            .bill_month(subscription_id, "subscription_cycle", now())
    }

    /// Opens a checkout as another system on the same Stripe account would (the monthly price,
    /// with a trial): one the app under test never started. Returns its id.
    pub fn open_checkout_elsewhere(&self) -> String {
        let params: Vec<(String, String)> = [
            ("mode", "subscription"),
            ("success_url", "https://elsewhere.example/done"),
            ("line_items[0][price]", SUBSCRIPTION_PRICE_ID),
            ("line_items[0][quantity]", "1"),
            ("subscription_data[trial_period_days]", "7"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
        let created = self
            .state()
            .create_session(&params)
            .unwrap_or_else(|error| panic!("the mock refused the checkout: {}", error.body));
        created["id"].as_str().expect("an id").to_owned()
    }

    /// Lets an open checkout lapse, as Stripe does after 24 hours.
    pub fn expire(&self, session_id: &str) {
        let mut state = self.state();
        let session = state
            .sessions
            .get_mut(session_id)
            .expect("a checkout session");
        session.status = "expired".to_owned();
    }

    pub fn set_subscription_status(&self, subscription_id: &str, status: &str) {
        let mut state = self.state();
        let subscription = state
            .subscriptions
            .get_mut(subscription_id)
            .expect("a subscription");
        subscription.status = status.to_owned();
        if status == "canceled" {
            subscription.canceled_at.get_or_insert(now());
        }
    }

    /// How much of a payment intent's charge has been refunded, in cents.
    pub fn refunded(&self, payment_intent_id: &str) -> i64 {
        self.state()
            .charges
            .iter()
            .filter(|charge| charge.payment_intent == payment_intent_id)
            .map(|charge| charge.amount_refunded)
            .sum()
    }

    // --- webhooks -------------------------------------------------------------------------

    /// A webhook body as Stripe sends it, created now.
    pub fn event(&self, event_type: &str, object: Value) -> Vec<u8> {
        self.event_at(event_type, object, now())
    }

    /// A webhook body created at `created` (seconds), for ordering tests.
    pub fn event_at(&self, event_type: &str, object: Value, created: i64) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "id": new_id("evt"),
            "object": "event",
            "api_version": API_VERSION,
            "created": created,
            "data": { "object": object },
            "livemode": false,
            "pending_webhooks": 1,
            "request": { "id": null, "idempotency_key": null },
            "type": event_type,
        }))
        .expect("an event serialises")
    }

    /// `checkout.session.completed` with the session as it is now.
    pub fn session_event(&self, session_id: &str) -> Vec<u8> {
        self.event(
            "checkout.session.completed",
            self.session_object(session_id),
        )
    }

    /// A `customer.subscription.*` event with the subscription as it is now.
    pub fn subscription_event(&self, event_type: &str, subscription_id: &str) -> Vec<u8> {
        self.event(event_type, self.subscription_object(subscription_id))
    }

    /// An `invoice.*` event with the invoice as it is now.
    pub fn invoice_event(&self, event_type: &str, invoice_id: &str) -> Vec<u8> {
        self.event(event_type, self.invoice_object(invoice_id))
    }

    pub fn session_object(&self, session_id: &str) -> Value {
        let state = self.state();
        let session = state.sessions.get(session_id).expect("a checkout session");
        state.session_json(session, &[])
    }

    pub fn subscription_object(&self, subscription_id: &str) -> Value {
        let state = self.state();
        let subscription = state
            .subscriptions
            .get(subscription_id)
            .expect("a subscription");
        state.subscription_json(subscription, &[])
    }

    pub fn invoice_object(&self, invoice_id: &str) -> Value {
        let state = self.state();
        let invoice = state.invoices.get(invoice_id).expect("an invoice");
        state.invoice_json(invoice, &[])
    }

    /// A `Stripe-Signature` header for `payload`, made by async-stripe's own signer so that it
    /// is an independent witness for the code under test.
    pub fn signed(payload: &[u8], secret: &str, timestamp: i64) -> String {
        let payload = std::str::from_utf8(payload).expect("events are UTF-8 JSON");
        stripe_webhook::Webhook::generate_test_header(payload, secret, Some(timestamp))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("mock state lock")
    }
}

// --- the HTTP side ------------------------------------------------------------------------

async fn handle(
    request: HttpRequest,
    body: web::Bytes,
    state: web::Data<Mutex<State>>,
) -> HttpResponse {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let method = request.method().as_str().to_owned();
    let path = request.path().to_owned();
    // GETs carry their parameters in the query (async-stripe sends a bare `?` when there are
    // none); the others in a form body.
    let mut params: Vec<(String, String)> =
        url::form_urlencoded::parse(request.query_string().as_bytes())
            .into_owned()
            .collect();
    params.extend(url::form_urlencoded::parse(&body).into_owned());
    let recorded = RecordedRequest {
        method: method.clone(),
        path: path.clone(),
        params: params.clone(),
        idempotency_key: header("idempotency-key"),
        stripe_version: header("stripe-version"),
        authorization: header("authorization"),
    };

    let mut state = state.lock().expect("mock state lock");
    state.requests.push(recorded.clone());

    if recorded.authorization.as_deref() != Some(format!("Bearer {SECRET_KEY}").as_str()) {
        let message = match &recorded.authorization {
            None => "You did not provide an API key. You need to provide your API key in the \
                     Authorization header, using Bearer auth."
                .to_owned(),
            Some(_) => "Invalid API Key provided: sk_test_********".to_owned(),
        };
        return respond(Err(ApiError::invalid(401, message, None)), false);
    }

    // Stripe compares parameters, not their order (async-stripe sends metadata in hash order).
    let mut sorted = params.clone();
    sorted.sort();
    let fingerprint = format!("{method} {path} {sorted:?}");
    if let Some(key) = &recorded.idempotency_key
        && let Some(previous) = state.idempotent.get(key)
    {
        if previous.fingerprint != fingerprint {
            return respond(
                Err(ApiError {
                    status: 400,
                    body: json!({"error": {
                        "type": "idempotency_error",
                        "message": format!(
                            "Keys for idempotent requests can only be used with the same parameters \
                             they were first used with. Try using a key other than '{key}' if you \
                             meant to execute a different request."
                        ),
                    }}),
                }),
                false,
            );
        }
        return respond(Ok(previous.body.clone()), true);
    }

    let answer = state.route(&method, &path, &params);
    // Stripe keeps the result of a request that ran; one refused by validation may be retried.
    if let (Some(key), Ok(body)) = (&recorded.idempotency_key, &answer) {
        state.idempotent.insert(
            key.clone(),
            IdempotentResult {
                fingerprint,
                body: body.clone(),
            },
        );
    }
    respond(answer, false)
}

fn respond(answer: Answer, replayed: bool) -> HttpResponse {
    let (status, body) = match answer {
        Ok(body) => (200, body),
        Err(error) => (error.status, error.body),
    };
    let status = actix_web::http::StatusCode::from_u16(status).expect("a status code");
    let mut response = HttpResponse::build(status);
    response.insert_header(("request-id", new_id("req")));
    if replayed {
        response.insert_header(("idempotent-replayed", "true"));
    }
    response.json(body)
}

/// `name[key]=value` pairs as a map (metadata).
fn bracket_map(params: &[(String, String)], name: &str) -> BTreeMap<String, String> {
    let prefix = format!("{name}[");
    params
        .iter()
        .filter_map(|(key, value)| {
            let inner = key.strip_prefix(&prefix)?.strip_suffix(']')?;
            (!inner.contains('[')).then(|| (inner.to_owned(), value.clone()))
        })
        .collect()
}

/// `name[0][field]=value` pairs as a list of field maps (line items).
fn indexed_list(params: &[(String, String)], name: &str) -> Vec<BTreeMap<String, String>> {
    let prefix = format!("{name}[");
    let mut items: BTreeMap<usize, BTreeMap<String, String>> = BTreeMap::new();
    for (key, value) in params {
        let Some(rest) = key.strip_prefix(&prefix) else {
            continue;
        };
        let Some((index, field)) = rest.split_once("][") else {
            continue;
        };
        let (Ok(index), Some(field)) = (index.parse::<usize>(), field.strip_suffix(']')) else {
            continue;
        };
        items
            .entry(index)
            .or_default()
            .insert(field.to_owned(), value.clone());
    }
    items.into_values().collect()
}

/// `name[0]=value` pairs as a list (an array of strings).
fn indexed_values(params: &[(String, String)], name: &str) -> Vec<String> {
    let prefix = format!("{name}[");
    let mut values: BTreeMap<usize, String> = BTreeMap::new();
    for (key, value) in params {
        if let Some(index) = key
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(']'))
            .and_then(|index| index.parse::<usize>().ok())
        {
            values.insert(index, value.clone());
        }
    }
    values.into_values().collect()
}

/// What a checkout's page offers: its allowed types, else the account's dynamic ones.
fn session_payment_method_types(session: &Session) -> Vec<String> {
    session
        .allowed_payment_method_types
        .clone()
        .unwrap_or_else(|| {
            DYNAMIC_PAYMENT_METHOD_TYPES
                .iter()
                .map(|kind| (*kind).to_owned())
                .collect()
        })
}

fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(name, _)| name == key)
        .map(|(_, value)| value.as_str())
}

fn expansions(params: &[(String, String)]) -> Vec<String> {
    params
        .iter()
        .filter(|(key, _)| key == "expand" || key.starts_with("expand["))
        .map(|(_, value)| value.clone())
        .collect()
}

/// Stripe refuses to expand what cannot be expanded, rather than ignoring it.
fn check_expansions(expand: &[String], allowed: &[&str]) -> Result<(), ApiError> {
    match expand.iter().find(|path| !allowed.contains(&path.as_str())) {
        Some(path) => Err(ApiError::invalid(
            400,
            format!("This property cannot be expanded ({path})."),
            Some("expand"),
        )),
        None => Ok(()),
    }
}

fn list(data: Vec<Value>, url: &str) -> Value {
    json!({"object": "list", "data": data, "has_more": false, "url": url})
}

fn metadata_json(metadata: &BTreeMap<String, String>) -> Value {
    json!(metadata)
}

impl State {
    fn route(&mut self, method: &str, path: &str, params: &[(String, String)]) -> Answer {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        match (method, segments.as_slice()) {
            ("POST", ["v1", "checkout", "sessions"]) => self.create_session(params),
            ("GET", ["v1", "checkout", "sessions", id]) => {
                let expand = expansions(params);
                check_expansions(
                    &expand,
                    &[
                        "subscription",
                        "subscription.default_payment_method",
                        "invoice",
                        "customer",
                    ],
                )?;
                let session = self
                    .sessions
                    .get(*id)
                    .ok_or_else(|| ApiError::missing("checkout.session", id, "session", 404))?;
                Ok(self.session_json(session, &expand))
            }
            ("POST", ["v1", "billing_portal", "sessions"]) => self.create_portal_session(params),
            ("GET", ["v1", "subscriptions", id]) => {
                let expand = expansions(params);
                check_expansions(
                    &expand,
                    &["latest_invoice", "customer", "default_payment_method"],
                )?;
                let subscription = self.subscription(id)?;
                Ok(self.subscription_json(subscription, &expand))
            }
            ("POST", ["v1", "subscriptions", id]) => self.update_subscription(id, params),
            ("DELETE", ["v1", "subscriptions", id]) => self.cancel_subscription(id),
            ("GET", ["v1", "invoices", id]) => {
                let expand = expansions(params);
                check_expansions(&expand, &["payments", "customer"])?;
                let invoice = self
                    .invoices
                    .get(*id)
                    .ok_or_else(|| ApiError::missing("invoice", id, "id", 404))?;
                Ok(self.invoice_json(invoice, &expand))
            }
            ("GET", ["v1", "invoice_payments"]) => {
                let invoice = param(params, "invoice");
                let status = param(params, "status");
                let data = self
                    .invoice_payments
                    .iter()
                    .rev()
                    .filter(|payment| invoice.is_none_or(|invoice| payment.invoice == invoice))
                    .filter(|_| status.is_none_or(|status| status == "paid"))
                    .map(invoice_payment_json)
                    .collect();
                Ok(list(data, "/v1/invoice_payments"))
            }
            ("GET", ["v1", "charges"]) => {
                let customer = param(params, "customer");
                let limit = param(params, "limit")
                    .and_then(|limit| limit.parse::<usize>().ok())
                    .unwrap_or(10);
                let data = self
                    .charges
                    .iter()
                    .rev()
                    .filter(|charge| customer.is_none_or(|customer| charge.customer == customer))
                    .take(limit)
                    .map(charge_json)
                    .collect();
                Ok(list(data, "/v1/charges"))
            }
            ("POST", ["v1", "refunds"]) => self.create_refund(params),
            _ => Err(ApiError::invalid(
                404,
                format!("Unrecognized request URL ({method}: {path})."),
                None,
            )),
        }
    }

    fn create_session(&mut self, params: &[(String, String)]) -> Answer {
        let required = |key: &str| {
            param(params, key).ok_or_else(|| {
                ApiError::invalid(400, format!("Missing required param: {key}."), Some(key))
            })
        };
        let mode = required("mode")?;
        if mode != "subscription" {
            return Err(ApiError::invalid(
                400,
                format!("The mock serves subscription mode only, not `{mode}`."),
                Some("mode"),
            ));
        }
        let success_url = required("success_url")?.to_owned();
        if param(params, "customer").is_some() && param(params, "customer_email").is_some() {
            return Err(ApiError::invalid(
                400,
                "You may only specify one of these parameters: customer, customer_email."
                    .to_owned(),
                Some("customer_email"),
            ));
        }

        let items = indexed_list(params, "line_items");
        if items.is_empty() {
            return Err(ApiError::invalid(
                400,
                "Missing required param: line_items.".to_owned(),
                Some("line_items"),
            ));
        }
        let mut line_items = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let price_param = format!("line_items[{index}][price]");
            let price = item.get("price").ok_or_else(|| {
                ApiError::invalid(
                    400,
                    format!("Missing required param: {price_param}."),
                    Some(&price_param),
                )
            })?;
            if !self.prices.contains_key(price) {
                return Err(ApiError::missing("price", price, &price_param, 400));
            }
            let quantity_param = format!("line_items[{index}][quantity]");
            let quantity = item
                .get("quantity")
                .and_then(|quantity| quantity.parse::<u64>().ok())
                .filter(|quantity| *quantity > 0)
                .ok_or_else(|| {
                    ApiError::invalid(
                        400,
                        format!("Invalid integer: {quantity_param}."),
                        Some(&quantity_param),
                    )
                })?;
            line_items.push((price.clone(), quantity));
        }
        if !line_items
            .iter()
            .any(|(price, _)| self.prices[price].recurring)
        {
            return Err(ApiError::invalid(
                400,
                "You must provide at least one recurring price in `subscription` mode when \
                 using prices."
                    .to_owned(),
                Some("line_items"),
            ));
        }
        let trial_period_days = match param(params, "subscription_data[trial_period_days]") {
            None => None,
            Some(days) => Some(
                days.parse::<i64>()
                    .ok()
                    .filter(|days| *days >= 1)
                    .ok_or_else(|| {
                        ApiError::invalid(
                            400,
                            "The minimum number of trial period days is 1.".to_owned(),
                            Some("subscription_data[trial_period_days]"),
                        )
                    })?,
            ),
        };
        // API 2026-09-30 removed `payment_method_types` from this call for the filter below.
        if let Some((key, _)) = params
            .iter()
            .find(|(key, _)| key.starts_with("payment_method_types"))
        {
            return Err(ApiError::with_code(
                400,
                Some("parameter_unknown"),
                format!("Received unknown parameter: {key}"),
                Some(key),
            ));
        }
        let allowed = indexed_values(params, "allowed_payment_method_types");
        if let Some(unknown) = allowed
            .iter()
            .find(|kind| !KNOWN_PAYMENT_METHOD_TYPES.contains(&kind.as_str()))
        {
            return Err(ApiError::invalid(
                400,
                format!(
                    "Invalid allowed_payment_method_types: `{unknown}` is not a payment method type."
                ),
                Some("allowed_payment_method_types"),
            ));
        }
        let submit_message = param(params, "custom_text[submit][message]").map(str::to_owned);
        if submit_message
            .as_ref()
            .is_some_and(|message| message.chars().count() > CUSTOM_TEXT_MAX_CHARS)
        {
            return Err(ApiError::invalid(
                400,
                format!("Custom text can be up to {CUSTOM_TEXT_MAX_CHARS} characters long."),
                Some("custom_text[submit][message]"),
            ));
        }
        let metadata = bracket_map(params, "metadata");
        let subscription_metadata = bracket_map(params, "subscription_data[metadata]");
        for (key, value) in metadata.iter().chain(&subscription_metadata) {
            if value.chars().count() > 500 || key.chars().count() > 40 {
                return Err(ApiError::invalid(
                    400,
                    format!(
                        "Metadata values can have up to 500 characters, but you passed in a value \
                         that is longer for key {key}."
                    ),
                    Some("metadata"),
                ));
            }
        }

        let now = now();
        let id = new_id("cs_test");
        let session = Session {
            id: id.clone(),
            created: now,
            expires_at: now + DAY,
            status: "open".to_owned(),
            payment_status: "unpaid".to_owned(),
            line_items,
            metadata,
            subscription_metadata,
            trial_period_days,
            allowed_payment_method_types: (!allowed.is_empty()).then_some(allowed),
            submit_message,
            client_reference_id: param(params, "client_reference_id").map(str::to_owned),
            customer_email: param(params, "customer_email").map(str::to_owned),
            success_url,
            cancel_url: param(params, "cancel_url").map(str::to_owned),
            customer: None,
            customer_details_email: None,
            subscription: None,
            invoice: None,
            amount_total: 0,
        };
        let body = self.session_json(&session, &[]);
        self.sessions.insert(id, session);
        Ok(body)
    }

    fn create_portal_session(&mut self, params: &[(String, String)]) -> Answer {
        let customer = param(params, "customer").ok_or_else(|| {
            ApiError::invalid(
                400,
                "Missing required param: customer.".to_owned(),
                Some("customer"),
            )
        })?;
        if !self.customers.contains_key(customer) {
            return Err(ApiError::missing("customer", customer, "customer", 400));
        }
        let id = new_id("bps");
        self.portal_sessions.push((id.clone(), customer.to_owned()));
        Ok(json!({
            "id": id,
            "object": "billing_portal.session",
            "configuration": "bpc_mock_default",
            "created": now(),
            "customer": customer,
            "flow": null,
            "livemode": false,
            "locale": null,
            "on_behalf_of": null,
            "return_url": param(params, "return_url"),
            "url": format!("https://billing.stripe.com/p/session/test_{id}"),
        }))
    }

    fn subscription(&self, id: &str) -> Result<&Subscription, ApiError> {
        self.subscriptions
            .get(id)
            .ok_or_else(|| ApiError::missing("subscription", id, "id", 404))
    }

    fn update_subscription(&mut self, id: &str, params: &[(String, String)]) -> Answer {
        let subscription = self
            .subscriptions
            .get_mut(id)
            .ok_or_else(|| ApiError::missing("subscription", id, "id", 404))?;
        if subscription.status == "canceled" {
            return Err(ApiError::invalid(
                400,
                "A canceled subscription can only update its cancellation_details and metadata."
                    .to_owned(),
                None,
            ));
        }
        let end_trial = match param(params, "trial_end") {
            None => false,
            Some("now") if subscription.status == "trialing" => true,
            Some("now") => {
                return Err(ApiError::invalid(
                    400,
                    format!("Subscription {id} is not in a trial: there is no trial to end."),
                    Some("trial_end"),
                ));
            }
            Some(other) => {
                return Err(ApiError::invalid(
                    400,
                    format!("The mock ends trials with trial_end=now only, not `{other}`."),
                    Some("trial_end"),
                ));
            }
        };
        match param(params, "cancel_at_period_end") {
            Some("true") => subscription.cancel_at_period_end = true,
            Some("false") => subscription.cancel_at_period_end = false,
            Some(other) => {
                return Err(ApiError::invalid(
                    400,
                    format!("Invalid boolean: {other}"),
                    Some("cancel_at_period_end"),
                ));
            }
            None => {}
        }
        subscription
            .metadata
            .extend(bracket_map(params, "metadata"));
        if end_trial {
            // The trial ends now and the first month is invoiced and paid at once.
            let now = now();
            subscription.trial_end = Some(now);
            self.bill_month(id, "subscription_update", now);
        }
        let subscription = self.subscription(id)?;
        Ok(self.subscription_json(subscription, &[]))
    }

    fn cancel_subscription(&mut self, id: &str) -> Answer {
        let subscription = self
            .subscriptions
            .get_mut(id)
            .ok_or_else(|| ApiError::missing("subscription", id, "id", 404))?;
        subscription.status = "canceled".to_owned();
        subscription.canceled_at.get_or_insert(now());
        let subscription = self.subscription(id)?;
        Ok(self.subscription_json(subscription, &[]))
    }

    fn create_refund(&mut self, params: &[(String, String)]) -> Answer {
        let charge_index = match (param(params, "payment_intent"), param(params, "charge")) {
            (Some(payment_intent), _) => self
                .charges
                .iter()
                .position(|charge| charge.payment_intent == payment_intent)
                .ok_or_else(|| {
                    ApiError::missing("payment_intent", payment_intent, "payment_intent", 400)
                })?,
            (None, Some(charge_id)) => self
                .charges
                .iter()
                .position(|charge| charge.id == charge_id)
                .ok_or_else(|| ApiError::missing("charge", charge_id, "charge", 400))?,
            (None, None) => {
                return Err(ApiError::invalid(
                    400,
                    "One of the following params should be provided for this request: \
                     payment_intent or charge."
                        .to_owned(),
                    None,
                ));
            }
        };
        let reason = param(params, "reason").map(str::to_owned);
        if let Some(reason) = &reason
            && !["duplicate", "fraudulent", "requested_by_customer"].contains(&reason.as_str())
        {
            return Err(ApiError::invalid(
                400,
                format!("Invalid reason: {reason}"),
                Some("reason"),
            ));
        }
        let charge = &mut self.charges[charge_index];
        let remaining = charge.amount - charge.amount_refunded;
        if remaining == 0 {
            return Err(ApiError::with_code(
                400,
                Some("charge_already_refunded"),
                format!("Charge {} has already been refunded.", charge.id),
                None,
            ));
        }
        let amount = match param(params, "amount") {
            None => remaining,
            Some(amount) => amount
                .parse::<i64>()
                .ok()
                .filter(|amount| *amount > 0)
                .ok_or_else(|| {
                    ApiError::invalid(400, format!("Invalid integer: {amount}"), Some("amount"))
                })?,
        };
        if amount > remaining {
            return Err(ApiError::with_code(
                400,
                Some("amount_too_large"),
                format!(
                    "Refund amount (${:.2}) is greater than unrefunded amount on charge (${:.2})",
                    amount as f64 / 100.0,
                    remaining as f64 / 100.0
                ),
                Some("amount"),
            ));
        }
        charge.amount_refunded += amount;
        let refund = Refund {
            id: new_id("re"),
            charge: charge.id.clone(),
            payment_intent: charge.payment_intent.clone(),
            amount,
            reason,
            created: now(),
        };
        let body = refund_json(&refund);
        self.refunds.push(refund);
        Ok(body)
    }

    /// Ends any trial and bills a month from `now`: a paid invoice of the monthly price, with
    /// `billing_reason` (`subscription_cycle` for a renewal, `subscription_update` for a trial
    /// ended early). Returns the invoice's id and its payment intent.
    fn bill_month(
        &mut self,
        subscription_id: &str,
        billing_reason: &str,
        now: i64,
    ) -> (String, String) {
        let subscription = &self.subscriptions[subscription_id];
        let customer = subscription.customer.clone();
        let price = subscription.price.clone();
        let amount = self.prices[&price].unit_amount;
        let invoice_id = new_id("in");
        self.invoices.insert(
            invoice_id.clone(),
            Invoice {
                id: invoice_id.clone(),
                customer: customer.clone(),
                subscription: subscription_id.to_owned(),
                billing_reason: billing_reason.to_owned(),
                created: now,
                amount,
                status: "paid".to_owned(),
                paid_at: Some(now),
                lines: vec![InvoiceLine {
                    id: new_id("il"),
                    price,
                    amount,
                    description: "1 × HelpNow (at $20.00 / month)".to_owned(),
                    period_start: now,
                    period_end: now + MONTH,
                }],
            },
        );
        let payment_intent = self.record_payment(&invoice_id, &customer, amount, now);
        let subscription = self
            .subscriptions
            .get_mut(subscription_id)
            .expect("a subscription");
        subscription.status = "active".to_owned();
        subscription.current_period_start = now;
        subscription.current_period_end = now + MONTH;
        subscription.latest_invoice = Some(invoice_id.clone());
        (invoice_id, payment_intent)
    }

    /// A succeeded payment of an invoice: payment intent, charge and invoice payment.
    fn record_payment(
        &mut self,
        invoice_id: &str,
        customer_id: &str,
        amount: i64,
        now: i64,
    ) -> String {
        let payment_intent = new_id("pi");
        self.charges.push(Charge {
            id: new_id("ch"),
            customer: customer_id.to_owned(),
            payment_intent: payment_intent.clone(),
            amount,
            amount_refunded: 0,
            created: now,
        });
        self.invoice_payments.push(InvoicePayment {
            id: new_id("inpay"),
            invoice: invoice_id.to_owned(),
            payment_intent: payment_intent.clone(),
            amount,
            created: now,
        });
        payment_intent
    }

    // --- objects as Stripe renders them -------------------------------------------------

    fn session_json(&self, session: &Session, expand: &[String]) -> Value {
        let expanded = |field: &str| expand.iter().any(|path| path == field);
        // `subscription.x` expands the subscription and, within it, `x`.
        let within_subscription: Vec<String> = expand
            .iter()
            .filter_map(|path| path.strip_prefix("subscription."))
            .map(str::to_owned)
            .collect();
        let subscription = match &session.subscription {
            Some(id) if expanded("subscription") || !within_subscription.is_empty() => self
                .subscriptions
                .get(id)
                .map(|subscription| self.subscription_json(subscription, &within_subscription))
                .unwrap_or(Value::Null),
            other => json!(other),
        };
        let invoice = match &session.invoice {
            Some(id) if expanded("invoice") => self
                .invoices
                .get(id)
                .map(|invoice| self.invoice_json(invoice, &[]))
                .unwrap_or(Value::Null),
            other => json!(other),
        };
        let customer = match &session.customer {
            Some(id) if expanded("customer") => self
                .customers
                .get(id)
                .map(customer_json)
                .unwrap_or(Value::Null),
            other => json!(other),
        };
        merged([
            json!({
                "id": session.id,
                "object": "checkout.session",
                "after_expiration": null,
                "allow_promotion_codes": null,
                "amount_subtotal": session.amount_total,
                "amount_total": session.amount_total,
                "automatic_tax": {"enabled": false, "liability": null, "status": null},
                "billing_address_collection": null,
                "cancel_url": session.cancel_url,
                "client_reference_id": session.client_reference_id,
                "client_secret": null,
                "consent": null,
                "consent_collection": null,
                "created": session.created,
                "currency": "usd",
                "custom_fields": [],
                "custom_text": {
                    "after_submit": null, "shipping_address": null,
                    "submit": session.submit_message.as_ref().map(|message| json!({"message": message})),
                    "terms_of_service_acceptance": null
                },
                "customer": customer,
                "customer_creation": "always",
                "customer_details": session.customer_details_email.as_ref().map(|email| json!({
                    "address": null, "email": email, "name": null, "phone": null,
                    "tax_exempt": "none", "tax_ids": []
                })),
            }),
            json!({
                "customer_email": session.customer_email,
                "discounts": [],
                "expires_at": session.expires_at,
                "invoice": invoice,
                "invoice_creation": null,
                "livemode": false,
                "locale": null,
                "metadata": metadata_json(&session.metadata),
                "mode": "subscription",
                "payment_intent": null,
                "payment_link": null,
                "payment_method_collection": "always",
                "payment_method_types": session_payment_method_types(session),
                "payment_status": session.payment_status,
                "phone_number_collection": {"enabled": false},
                "recovered_from": null,
                "setup_intent": null,
                "shipping_address_collection": null,
                "shipping_cost": null,
                "shipping_options": [],
                "status": session.status,
                "submit_type": null,
                "subscription": subscription,
                "success_url": session.success_url,
                "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0},
                "ui_mode": "hosted",
                // Stripe drops the page's address once the checkout is over.
                "url": (session.status == "open")
                    .then(|| format!("https://checkout.stripe.com/c/pay/{}#mock", session.id)),
            }),
        ])
    }

    fn subscription_json(&self, subscription: &Subscription, expand: &[String]) -> Value {
        let expanded = |field: &str| expand.iter().any(|path| path == field);
        let latest_invoice = match &subscription.latest_invoice {
            Some(id) if expanded("latest_invoice") => self
                .invoices
                .get(id)
                .map(|invoice| self.invoice_json(invoice, &[]))
                .unwrap_or(Value::Null),
            other => json!(other),
        };
        let customer = if expanded("customer") {
            self.customers
                .get(&subscription.customer)
                .map(customer_json)
                .unwrap_or(Value::Null)
        } else {
            json!(subscription.customer)
        };
        let price = &self.prices[&subscription.price];
        let canceled = subscription.status == "canceled";
        merged([
            json!({
                "id": subscription.id,
                "object": "subscription",
                "application": null,
                "application_fee_percent": null,
                "automatic_tax": {"disabled_reason": null, "enabled": false, "liability": null},
                "billing_cycle_anchor": subscription.trial_end.unwrap_or(subscription.start_date),
                "billing_cycle_anchor_config": null,
                "billing_mode": {"type": "classic"},
                "billing_schedules": [],
                "billing_thresholds": null,
                "cancel_at": subscription
                    .cancel_at_period_end
                    .then_some(subscription.current_period_end),
                "cancel_at_period_end": subscription.cancel_at_period_end,
                "canceled_at": subscription.canceled_at,
                "cancellation_details": {"comment": null, "feedback": null, "reason": null},
                "collection_method": "charge_automatically",
                "created": subscription.created,
                "currency": "usd",
                "customer": customer,
                "days_until_due": null,
                "default_payment_method": match &subscription.default_payment_method {
                    Some(id) if expanded("default_payment_method") => self
                        .payment_methods
                        .get(id)
                        .map(payment_method_json)
                        .unwrap_or(Value::Null),
                    other => json!(other),
                },
                "default_source": null,
                "default_tax_rates": [],
                "description": null,
                "discounts": [],
                "ended_at": if canceled { subscription.canceled_at } else { None },
            }),
            json!({
                "invoice_settings": {"account_tax_ids": null, "issuer": {"type": "self"}},
                "items": {
                    "object": "list",
                    "data": [{
                        "id": subscription.item_id,
                        "object": "subscription_item",
                        "billing_thresholds": null,
                        "created": subscription.created,
                        "current_period_end": subscription.current_period_end,
                        "current_period_start": subscription.current_period_start,
                        "discounts": [],
                        "metadata": {},
                        "plan": {
                            "id": subscription.price,
                            "object": "plan",
                            "active": true,
                            "amount": price.unit_amount,
                            "amount_decimal": price.unit_amount.to_string(),
                            "billing_scheme": "per_unit",
                            "created": 1_700_000_000,
                            "currency": "usd",
                            "interval": "month",
                            "interval_count": 1,
                            "livemode": false,
                            "metadata": {},
                            "nickname": null,
                            "product": "prod_mock_helpnow",
                            "usage_type": "licensed"
                        },
                        "price": price_json(&subscription.price, price),
                        "quantity": 1,
                        "subscription": subscription.id,
                        "tax_rates": []
                    }],
                    "has_more": false,
                    "total_count": 1,
                    "url": format!("/v1/subscription_items?subscription={}", subscription.id),
                },
            }),
            json!({
                "latest_invoice": latest_invoice,
                "livemode": false,
                "metadata": metadata_json(&subscription.metadata),
                "next_pending_invoice_item_invoice": null,
                "on_behalf_of": null,
                "pause_collection": null,
                "pending_invoice_item_interval": null,
                "pending_setup_intent": null,
                "pending_update": null,
                "schedule": null,
                "start_date": subscription.start_date,
                "status": subscription.status,
                "test_clock": null,
                "transfer_data": null,
                "trial_end": subscription.trial_end,
                "trial_settings": {"end_behavior": {"missing_payment_method": "create_invoice"}},
                "trial_start": subscription.trial_start,
            }),
        ])
    }

    fn invoice_json(&self, invoice: &Invoice, expand: &[String]) -> Value {
        let expanded = |field: &str| expand.iter().any(|path| path == field);
        let mut body = merged([
            json!({
                "id": invoice.id,
                "object": "invoice",
                "account_country": "US",
                "account_name": "HelpNow",
                "amount_due": invoice.amount,
                "amount_overpaid": 0,
                "amount_paid": if invoice.status == "paid" { invoice.amount } else { 0 },
                "amount_remaining": if invoice.status == "paid" { 0 } else { invoice.amount },
                "amount_shipping": 0,
                "attempt_count": 1,
                "attempted": true,
                "auto_advance": false,
                "automatic_tax": {
                    "disabled_reason": null, "enabled": false, "liability": null, "status": null
                },
                "billing_reason": invoice.billing_reason,
                "collection_method": "charge_automatically",
                "created": invoice.created,
                "currency": "usd",
                "customer": if expanded("customer") {
                    self.customers.get(&invoice.customer).map(customer_json).unwrap_or(Value::Null)
                } else {
                    json!(invoice.customer)
                },
                "customer_email": self
                    .customers
                    .get(&invoice.customer)
                    .map(|customer| customer.email.clone()),
            }),
            json!({
                "default_tax_rates": [],
                "description": null,
                "discounts": [],
                "hosted_invoice_url": format!("https://invoice.stripe.com/i/{}", invoice.id),
                "issuer": {"type": "self"},
                "lines": list(
                    invoice.lines.iter().map(|line| json!({
                        "id": line.id,
                        "object": "line_item",
                        "amount": line.amount,
                        "currency": "usd",
                        "description": line.description,
                        "discountable": true,
                        "discounts": [],
                        "invoice": invoice.id,
                        "livemode": false,
                        "metadata": {},
                        "period": {"end": line.period_end, "start": line.period_start},
                        "quantity": 1,
                        "subtotal": line.amount,
                        "pricing": {
                            "type": "price_details",
                            "price_details": {"price": line.price, "product": "prod_mock_helpnow"},
                            "unit_amount_decimal": line.amount.to_string()
                        }
                    })).collect(),
                    &format!("/v1/invoices/{}/lines", invoice.id),
                ),
            }),
            json!({
                "livemode": false,
                "metadata": {},
                "number": format!("MOCK-{}", invoice.id),
                "parent": {
                    "type": "subscription_details",
                    "quote_details": null,
                    "subscription_details": {
                        "metadata": self.subscriptions.get(&invoice.subscription)
                            .map(|subscription| metadata_json(&subscription.metadata)),
                        "subscription": invoice.subscription,
                    }
                },
                "payment_settings": {
                    "default_mandate": null, "payment_method_options": null,
                    "payment_method_types": null
                },
                "period_end": invoice.created,
                "period_start": invoice.created,
                "post_payment_credit_notes_amount": 0,
                "pre_payment_credit_notes_amount": 0,
                "starting_balance": 0,
                "status": invoice.status,
                "status_transitions": {
                    "finalized_at": invoice.created,
                    "marked_uncollectible_at": null,
                    "paid_at": invoice.paid_at,
                    "voided_at": null
                },
                "subtotal": invoice.amount,
                "total": invoice.amount,
            }),
        ]);
        if expanded("payments") {
            let payments = self
                .invoice_payments
                .iter()
                .filter(|payment| payment.invoice == invoice.id)
                .map(invoice_payment_json)
                .collect();
            body["payments"] = list(
                payments,
                &format!("/v1/invoice_payments?invoice={}", invoice.id),
            );
        }
        body
    }
}

/// `json!` recurses too deep for Stripe's larger objects in one go; they are built in parts.
fn merged(parts: impl IntoIterator<Item = Value>) -> Value {
    let mut object = serde_json::Map::new();
    for part in parts {
        if let Value::Object(fields) = part {
            object.extend(fields);
        }
    }
    Value::Object(object)
}

fn price_json(id: &str, price: &Price) -> Value {
    json!({
        "id": id,
        "object": "price",
        "active": true,
        "billing_scheme": "per_unit",
        "created": 1_700_000_000,
        "currency": "usd",
        "livemode": false,
        "lookup_key": null,
        "metadata": {},
        "nickname": null,
        "product": "prod_mock_helpnow",
        "recurring": price.recurring.then(|| json!({
            "interval": "month", "interval_count": 1, "meter": null, "usage_type": "licensed"
        })),
        "tax_behavior": "unspecified",
        "type": if price.recurring { "recurring" } else { "one_time" },
        "unit_amount": price.unit_amount,
        "unit_amount_decimal": price.unit_amount.to_string(),
    })
}

fn customer_json(customer: &Customer) -> Value {
    json!({
        "id": customer.id,
        "object": "customer",
        "created": customer.created,
        "email": customer.email,
        "livemode": false,
        "metadata": {},
    })
}

fn payment_method_json(method: &PaymentMethod) -> Value {
    json!({
        "id": method.id,
        "object": "payment_method",
        "allow_redisplay": "unspecified",
        "billing_details": {
            "address": null, "email": null, "name": null, "phone": null, "tax_id": null
        },
        "card": {
            "brand": "visa",
            "checks": {
                "address_line1_check": null, "address_postal_code_check": null,
                "cvc_check": "pass"
            },
            "country": "US",
            "display_brand": "visa",
            "exp_month": 12,
            "exp_year": 2034,
            "fingerprint": method.fingerprint,
            "funding": "credit",
            "generated_from": null,
            "last4": "4242",
            "networks": {"available": ["visa"], "preferred": null},
            "regulated_status": "unregulated",
            "three_d_secure_usage": {"supported": true},
            "wallet": null
        },
        "created": method.created,
        "customer": method.customer,
        "livemode": false,
        "metadata": {},
        "type": "card",
    })
}

fn invoice_payment_json(payment: &InvoicePayment) -> Value {
    json!({
        "id": payment.id,
        "object": "invoice_payment",
        "amount_paid": payment.amount,
        "amount_requested": payment.amount,
        "created": payment.created,
        "currency": "usd",
        "invoice": payment.invoice,
        "is_default": true,
        "livemode": false,
        "payment": {"type": "payment_intent", "payment_intent": payment.payment_intent},
        "status": "paid",
        "status_transitions": {"canceled_at": null, "paid_at": payment.created},
    })
}

fn charge_json(charge: &Charge) -> Value {
    json!({
        "id": charge.id,
        "object": "charge",
        "amount": charge.amount,
        "amount_captured": charge.amount,
        "amount_refunded": charge.amount_refunded,
        "billing_details": {"address": null, "email": null, "name": null, "phone": null},
        "captured": true,
        "created": charge.created,
        "currency": "usd",
        "customer": charge.customer,
        "disputed": false,
        "livemode": false,
        "metadata": {},
        "paid": true,
        "payment_intent": charge.payment_intent,
        "refunded": charge.amount_refunded == charge.amount,
        "status": "succeeded",
    })
}

fn refund_json(refund: &Refund) -> Value {
    json!({
        "id": refund.id,
        "object": "refund",
        "amount": refund.amount,
        "charge": refund.charge,
        "created": refund.created,
        "currency": "usd",
        "metadata": {},
        "payment_intent": refund.payment_intent,
        "reason": refund.reason,
        "status": "succeeded",
    })
}
