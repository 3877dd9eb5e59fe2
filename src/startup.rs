//! `Application`: binds the listener (port 0 picks a free one), connects the store, and wires the
//! state, middleware and routes of the HTTP server.

use std::net::TcpListener;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::{Next, from_fn};
use actix_web::{App, web};

use crate::auth::{AuthThrottle, SessionCookies};
use crate::billing::demo::DemoProvider;
use crate::billing::stripe::StripeProvider;
use crate::billing::{Billing, BillingError, PaymentProvider};
use crate::cluster::{Cluster, ClusterEvent};
use crate::config::{PaymentProviderKind, RedactedUrl, Settings};
use crate::content::Content;
use crate::error::json_error_handler;
use crate::funnels;
use crate::mail::Mailer;
use crate::members;
use crate::metrics::{ConnectionGuard, Metrics, track_requests};
use crate::realtime::{OriginPolicy, RateLimit, RealtimeConfig, RealtimeServer};
use crate::routes;
use crate::store::{self, Db};

/// How often the demo provider looks for trials that end within 3 days.
const TRIAL_REMINDER_INTERVAL: Duration = Duration::from_secs(3600);

/// How often mail that could not be delivered is tried again.
const MAIL_RETRY_INTERVAL: Duration = Duration::from_secs(60);

/// Largest JSON body the API accepts.
const JSON_LIMIT_BYTES: usize = 64 * 1024;

pub struct Application {
    port: u16,
    server: Server,
    db: Db,
    realtime: RealtimeServer,
    /// Periodic workers (mail retries, trial reminders): they never end by themselves, so a stop
    /// ends them before waiting for the store's own tasks.
    workers: Vec<tokio::task::JoinHandle<()>>,
    /// How long a stop waits for connections to finish.
    shutdown_timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Content(#[from] crate::content::ContentError),
    #[error(transparent)]
    Mail(#[from] crate::mail::MailError),
    #[error(transparent)]
    Payments(#[from] BillingError),
    #[error(transparent)]
    Ai(#[from] crate::ai::AiSetupError),
    #[error(transparent)]
    Events(#[from] crate::cluster::ClusterError),
    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    #[error("cannot start the HTTP server: {0}")]
    Server(std::io::Error),
}

impl Application {
    pub async fn build(settings: Settings) -> Result<Self, StartupError> {
        // Two TLS crypto providers are compiled in (SurrealDB brings aws-lc, the HTTP clients ring),
        // so rustls cannot pick one by itself; without this the Stripe client panics. A second call
        // (tests build many applications in one process) finds it installed, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let content = Content::load(&settings.server.content_dir, &settings.product)?;
        let db = store::connect(&settings.database).await?;
        let address = settings.listen_address();
        let listener = TcpListener::bind(&address).map_err(|source| StartupError::Bind {
            address: address.clone(),
            source,
        })?;
        let port = listener.local_addr().map_err(StartupError::Server)?.port();
        tracing::info!(
            address = %format!("http://{}:{port}", settings.server.host),
            database = %RedactedUrl(&settings.database.url),
            "HelpNow is listening"
        );
        let mailer = Mailer::from_settings(&settings.mail, db.clone())?;
        let mut workers = vec![mailer.spawn_retry_worker(MAIL_RETRY_INTERVAL)];
        let metrics = Arc::new(Metrics::new()?);
        let billing = Arc::new(Billing::new(
            db.clone(),
            payment_provider(&settings, db.clone())?,
            mailer.clone(),
            settings.server.public_url.clone(),
            settings.product.name.clone(),
        ));
        workers.extend(billing.spawn_trial_reminders(TRIAL_REMINDER_INTERVAL));
        let ai = crate::ai::provider(&settings.ai, content.help_library.clone(), |provider| {
            Arc::new(crate::metrics::TimedAi::new(provider, &metrics))
        })?;
        // One process alone, or several that share a Redis server for events and limits.
        let cluster = match &settings.events.redis_url {
            Some(url) => Cluster::connect(secrecy::ExposeSecret::expose_secret(url)).await?,
            None => Cluster::alone(),
        };
        let auth_throttle = Arc::new(AuthThrottle::new(cluster.clone()));
        // The live conversations' store calls (conversation loads and saves, visits, funnel
        // events; the member chat's access reads, messages, chat reads and events), committed
        // in groups.
        let live_store = store::batch::Batcher::observed(db.clone(), metrics.batch_observer());
        let funnel_registry = funnels::registry(
            &settings,
            live_store.clone(),
            ai.clone(),
            funnels::FunnelCheckouts {
                billing: billing.clone(),
                throttle: auth_throttle.clone(),
            },
            content.funnel_scripts.clone(),
            metrics.clone(),
            &cluster,
        );
        let funnel_relay =
            funnels::relay::FunnelRelay::new(cluster.clone(), funnel_registry.clone());
        let member_registry = members::registry(
            &settings,
            db.clone(),
            live_store.clone(),
            ai.clone(),
            metrics.clone(),
            &cluster,
        );
        cluster.listen({
            let members = member_registry.clone();
            let funnel_relay = funnel_relay.clone();
            move |from, event| match event {
                ClusterEvent::SignedOut { user_id, session } => {
                    members.signed_out(&user_id, session);
                }
                ClusterEvent::Member {
                    user_id,
                    event,
                    data,
                    volatile,
                } => members.from_peer(
                    &user_id,
                    helpnow_actors::member::FromPeer {
                        from: from.to_owned(),
                        event,
                        data,
                        volatile,
                    },
                ),
                ClusterEvent::Funnel(message) => funnel_relay.receive_event(from, message),
            }
        });
        let realtime = RealtimeServer::builder(realtime_config(&settings))
            .connection_gauge(metrics.realtime_connections.clone())
            .namespace(
                "/funnel",
                funnels::FunnelNamespace::new(
                    funnel_registry,
                    funnel_relay,
                    live_store,
                    settings.realtime.funnel_joins_per_minute,
                ),
            )
            .namespace("/", crate::realtime::KeepAlive::new())
            .namespace(
                "/member",
                members::MemberNamespace::new(
                    member_registry.clone(),
                    db.clone(),
                    settings.realtime.member_joins_per_minute,
                ),
            )
            .build();
        let shutdown_timeout = settings.server.shutdown_timeout_secs;
        let server = run(
            listener,
            settings,
            Services {
                db: db.clone(),
                content,
                metrics,
                realtime: realtime.clone(),
                mailer,
                billing,
                ai,
                auth_throttle,
                members: member_registry,
                cluster,
            },
        )
        .map_err(StartupError::Server)?;
        Ok(Self {
            port,
            server,
            db,
            realtime,
            workers,
            shutdown_timeout: Duration::from_secs(shutdown_timeout),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The store this application writes to (tests read through it).
    pub fn db(&self) -> Db {
        self.db.clone()
    }

    /// Serves until SIGTERM or SIGINT. Then real-time connections are closed (their clients
    /// reconnect, to another process if there is one) and get `server.shutdown_timeout_secs` to
    /// write their last frames; then in-flight requests get as long again to finish. Last the store is closed: the embedded engine
    /// stops its background tasks once the last handle is gone, and waiting for them keeps them
    /// from being cut off mid-pass.
    pub async fn run_until_stopped(self) -> Result<(), std::io::Error> {
        let Self {
            mut server,
            db,
            realtime,
            workers,
            shutdown_timeout,
            ..
        } = self;
        let served = tokio::select! {
            served = &mut server => served,
            () = stop_requested() => {
                tracing::info!(
                    connections = realtime.connection_count(),
                    "stopping: closing real-time connections"
                );
                realtime.close_all();
                // Upgraded WebSockets are no longer the HTTP server's to wait for.
                realtime.wait_for_websockets(shutdown_timeout).await;
                // The server future runs the stop, so it is polled alongside.
                let stopping = server.handle().stop(true);
                let (served, ()) = tokio::join!(server, stopping);
                served
            }
        };
        // The store closes once its last handle is gone: the workers' and the real-time
        // namespaces' (the funnel actors' ports) go first.
        for worker in &workers {
            worker.abort();
        }
        for worker in workers {
            let _ = worker.await;
        }
        drop(realtime);
        drop(db);
        wait_for_background_tasks(STORE_CLOSE_TIMEOUT).await;
        served
    }
}

/// SIGTERM (how service managers stop a process) or SIGINT (Ctrl+C).
async fn stop_requested() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// How long a stopping server waits for the store's background tasks.
const STORE_CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

async fn wait_for_background_tasks(timeout: Duration) {
    let runtime = tokio::runtime::Handle::current();
    let deadline = tokio::time::Instant::now() + timeout;
    while runtime.metrics().num_alive_tasks() > 0 {
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(
                tasks = runtime.metrics().num_alive_tasks(),
                "background tasks still running at shutdown"
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What the handlers share, built once by `Application::build`.
struct Services {
    db: Db,
    content: Content,
    metrics: Arc<Metrics>,
    realtime: RealtimeServer,
    mailer: Mailer,
    billing: Arc<Billing>,
    ai: Arc<dyn helpnow_actors::ports::Ai>,
    auth_throttle: Arc<AuthThrottle>,
    members: helpnow_actors::member::MemberRegistry,
    cluster: Cluster,
}

fn run(
    listener: TcpListener,
    settings: Settings,
    services: Services,
) -> Result<Server, std::io::Error> {
    let Services {
        db,
        content,
        metrics,
        realtime,
        mailer,
        billing,
        ai,
        auth_throttle,
        members,
        cluster,
    } = services;
    let billing = web::Data::from(billing);
    let hsts = settings.server.public_url.scheme() == "https";
    let shutdown_timeout = settings.server.shutdown_timeout_secs;
    let static_dir = settings.server.static_dir.clone();

    let db = web::Data::new(db);
    let settings = web::Data::new(settings);
    let content = web::Data::new(content);
    let metrics_data = web::Data::new(metrics.clone());
    let event_limiter = web::Data::new(routes::events::EventLimiter::new());
    let session_cookies =
        web::Data::new(SessionCookies::for_public_url(&settings.server.public_url));
    let auth_throttle = web::Data::from(auth_throttle);
    let demo_payments = settings.payments.provider == PaymentProviderKind::Demo;
    let mailer = web::Data::new(mailer);
    let connections = metrics.open_connections.clone();
    let ai = web::Data::new(routes::funnels::AiProvider(ai));
    let help_limiter = web::Data::new(routes::funnels::HelpLimiter::new());
    let members = web::Data::new(members);
    let cluster = web::Data::new(cluster);

    let upgrades = realtime.clone();
    let app = move || {
        App::new()
            .app_data(db.clone())
            .app_data(settings.clone())
            .app_data(content.clone())
            .app_data(metrics_data.clone())
            .app_data(event_limiter.clone())
            .app_data(session_cookies.clone())
            .app_data(auth_throttle.clone())
            .app_data(mailer.clone())
            .app_data(billing.clone())
            .app_data(ai.clone())
            .app_data(help_limiter.clone())
            .app_data(members.clone())
            .app_data(cluster.clone())
            .app_data(
                web::JsonConfig::default()
                    .limit(JSON_LIMIT_BYTES)
                    .error_handler(json_error_handler),
            )
            .wrap(from_fn(track_requests))
            .wrap(from_fn(move |req, next| security_headers(req, next, hsts)))
            .service(routes::health::health)
            .service(routes::health::metrics)
            .service(realtime.service())
            .service(
                web::scope("/api")
                    .service(routes::content::public_config)
                    .service(routes::content::legal)
                    .service(routes::content::shortcuts)
                    .service(routes::events::record_event)
                    .service(routes::auth::signup)
                    .service(routes::auth::login)
                    .service(routes::auth::logout)
                    .service(routes::auth::me)
                    .service(routes::auth::request_reset)
                    .service(routes::auth::check_reset)
                    .service(routes::auth::confirm_reset)
                    .service(routes::account::redeem_token)
                    .service(routes::account::setup_status)
                    .service(routes::account::setup)
                    .service(routes::account::save_shortcuts)
                    .service(routes::billing::create_checkout)
                    .service(routes::billing::checkout_success)
                    .service(routes::billing::check_subscription)
                    .service(routes::billing::webhook_test)
                    .service(routes::admin::overview)
                    .service(routes::admin::create_account)
                    .service(routes::admin::reset_account)
                    .service(routes::billing::stripe_webhook)
                    .service(routes::billing::portal)
                    .service(routes::billing::refund_fee)
                    .service(routes::billing::cancel_subscription)
                    .service(routes::funnels::help_answer)
                    .service(routes::funnels::checkout_handoff)
                    .service(routes::tasks::list_tasks)
                    .service(routes::tasks::create_task)
                    .service(routes::tasks::add_item)
                    .service(routes::tasks::update_item)
                    .service(routes::tasks::delete_task)
                    .service(routes::chats::list_chats)
                    .service(routes::chats::get_chat)
                    .service(routes::chats::delete_chat)
                    .configure(|cfg| {
                        // The demo checkout exists only while it is the provider.
                        if demo_payments {
                            cfg.service(routes::billing::demo_checkout)
                                .service(routes::billing::complete_demo_checkout)
                                .service(routes::billing::cancel_demo_checkout);
                        }
                    })
                    .default_service(web::to(routes::api_not_found)),
            )
            .configure(|cfg| routes::web_app::configure(cfg, &static_dir))
    };
    let server = upgrades
        .http_server(listener, app, move |extensions| {
            extensions.insert(Arc::new(ConnectionGuard::open(&connections)));
        })?
        .shutdown_timeout(shutdown_timeout)
        // `Application::run_until_stopped` handles the signals, to close real-time connections
        // first.
        .disable_signals()
        .run();
    Ok(server)
}

/// The payment provider `payments.provider` names.
fn payment_provider(settings: &Settings, db: Db) -> Result<Arc<dyn PaymentProvider>, BillingError> {
    Ok(match settings.payments.provider {
        PaymentProviderKind::Demo => Arc::new(DemoProvider::new(db)),
        PaymentProviderKind::Stripe => Arc::new(StripeProvider::new(&settings.stripe)?),
    })
}

/// The real-time channel's settings. Browsers may connect from the public URL's origin and from
/// `server.allowed_origins`.
fn realtime_config(settings: &Settings) -> RealtimeConfig {
    let realtime = &settings.realtime;
    let origins = std::iter::once(settings.server.public_url.clone())
        .chain(
            settings
                .server
                .allowed_origins
                .iter()
                .filter_map(|origin| url::Url::parse(origin).ok()),
        )
        .map(|url| url.origin().ascii_serialization())
        .collect();
    RealtimeConfig {
        ping_interval: Duration::from_millis(realtime.ping_interval_ms),
        ping_timeout: Duration::from_millis(realtime.ping_timeout_ms),
        connect_timeout: Duration::from_millis(realtime.connect_timeout_ms),
        max_payload: realtime.max_payload_bytes,
        rate_limit: NonZeroU32::new(realtime.messages_per_second).map(|per_second| RateLimit {
            per_second,
            burst: NonZeroU32::new(realtime.message_burst).unwrap_or(per_second),
        }),
        recovery_window: (realtime.recovery_window_secs > 0)
            .then(|| Duration::from_secs(realtime.recovery_window_secs)),
        origins: OriginPolicy::Only(origins),
        trust_forwarded_for: settings.server.trust_forwarded_for,
        max_connections: match realtime.max_connections {
            0 => open_file_limit().map(connections_within),
            max => Some(max),
        },
        ..RealtimeConfig::default()
    }
}

/// Open files kept for what is not a real-time connection (HTTP requests, the database, the AI):
/// a quarter of the limit, at most this many.
const RESERVED_FILES: usize = 1000;

/// The real-time connections a process with `limit` open files holds at once.
fn connections_within(limit: usize) -> usize {
    limit.saturating_sub((limit / 4).min(RESERVED_FILES)).max(1)
}

/// This process's soft limit on open files (Linux: `/proc/self/limits`), if it has one.
fn open_file_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    parse_open_file_limit(&limits)
}

fn parse_open_file_limit(limits: &str) -> Option<usize> {
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))?;
    // "Max open files            20000                20000                files"
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Security headers on every answer; long caching for content-hashed assets.
async fn security_headers(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
    hsts: bool,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let cache = routes::web_app::cache_headers_for(req.path());
    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; \
             frame-ancestors 'none'; form-action 'self'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("strict-origin-when-cross-origin"),
    );
    headers.insert(
        header::HeaderName::from_static("permissions-policy"),
        HeaderValue::from_static("camera=(), microphone=(), geolocation=(), payment=()"),
    );
    headers.insert(
        header::HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    if hsts {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        );
    }
    if let Some(cache) = cache
        && response.status().is_success()
    {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_str(&cache.to_string())
                .unwrap_or_else(|_| HeaderValue::from_static("no-cache")),
        );
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_file_limit_is_read_from_proc_limits() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             95488                95488                processes \n\
                      Max open files            20000                40000                files     \n";
        assert_eq!(parse_open_file_limit(limits), Some(20_000));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_open_file_limit(unlimited), None);
        assert_eq!(parse_open_file_limit(""), None);
    }

    #[test]
    fn a_quarter_of_the_open_files_and_at_most_a_thousand_are_kept_for_the_rest() {
        assert_eq!(connections_within(20_000), 19_000);
        assert_eq!(connections_within(1024), 768);
        assert_eq!(connections_within(1), 1);
    }
}
