//! `Application`: binds the listener (port 0 picks a free one), connects the store, and wires the
//! state, middleware and routes of the HTTP server.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::middleware::{Compress, from_fn};
use actix_web::{App, web};

use crate::auth::{AuthThrottle, SessionCookies};
use crate::billing::{Billing, BillingError};
use crate::cluster::{Cluster, ClusterEvent, Gap};
use crate::config::{PaymentProviderKind, RedactedUrl, Settings};
use crate::content::Content;
use crate::error::json_error_handler;
use crate::funnels;
use crate::mail::Mailer;
use crate::members;
use crate::metrics::{ConnectionGuard, Metrics, track_requests};
use crate::realtime::RealtimeServer;
use crate::routes;
use crate::store::{self, Db};

pub mod control;
pub mod runtime;
mod settings;

use settings::{payment_provider, realtime_config};

/// How often billing's upkeep runs: demo trials' reminders, trials that were not due ended, and
/// held payments nobody claimed declined (`Billing::run_upkeep`).
const BILLING_UPKEEP_INTERVAL: Duration = Duration::from_secs(3600);

/// How often the dashboard's days that are due are packed (`store::rollups`): soon after
/// midnight for the day that turned two days old, soon after a late step for its day.
const PACKING_INTERVAL: Duration = Duration::from_secs(60);

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
    /// How long a stop waits for conversations and connections to finish.
    shutdown_timeout: Duration,
    /// How long a stop waits, readiness failing, for the balancer to take the process out.
    drain: Duration,
    /// The live conversations, handed over at a stop.
    funnels: helpnow_actors::funnel::FunnelRegistry,
    members: helpnow_actors::member::MemberRegistry,
    /// The other processes, told at a stop that this one is gone.
    cluster: Cluster,
    /// The drop-off's counts still in memory are written when the process stops.
    flow_tallies: Arc<crate::flows::tally::FlowTallies>,
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
    #[error("analytics forwarding: {0}")]
    Forward(#[from] reqwest::Error),
    #[error("flows: {0}")]
    Flows(surrealdb::Error),
    #[error("cannot start the HTTP server: {0}")]
    Server(std::io::Error),
}

impl Application {
    pub async fn build(mut settings: Settings) -> Result<Self, StartupError> {
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
        // A public URL on port 0 (the one followed from `server.port = 0`, `Settings::load`) is
        // this server on the port it got.
        if settings.server.public_url.port() == Some(0) {
            let _ = settings.server.public_url.set_port(Some(port));
        }
        tracing::info!(
            address = %format!("http://{}:{port}", settings.server.host),
            database = %RedactedUrl(&settings.database.url),
            "HelpNow is listening"
        );
        let mailer = Mailer::from_settings(&settings.mail, db.clone())?;
        let mut workers = vec![mailer.spawn_retry_worker(MAIL_RETRY_INTERVAL)];
        workers.extend(store::spawn_watchdog(
            db.clone(),
            &settings.database.url,
            Duration::from_secs(settings.database.unanswered_exit_secs),
        ));
        // `helpnow backup` asks through it (an embedded store's lock keeps the command out).
        workers.extend(control::start(&settings.database.url, db.clone()));
        if let Some(folder) = &settings.backup.folder {
            let store = store::backup::Store::of(&settings.database.url)
                .map_or("mem", |store| store.kind());
            workers.push(store::backup::spawn_schedule(
                db.clone(),
                store,
                folder.clone(),
                Duration::from_secs(settings.backup.every_secs),
                settings.backup.keep,
            ));
        }
        let metrics = Arc::new(Metrics::new()?);
        let billing = Arc::new(Billing::new(
            db.clone(),
            payment_provider(&settings, db.clone())?,
            mailer.clone(),
            settings.server.public_url.clone(),
            settings.product.name.clone(),
        ));
        workers.push(billing.spawn_upkeep(BILLING_UPKEEP_INTERVAL));
        workers.push(crate::dashboard::spawn_retention(
            db.clone(),
            settings.analytics.retention_days,
            BILLING_UPKEEP_INTERVAL,
        ));
        workers.push(store::rollups::spawn_packer(db.clone(), PACKING_INTERVAL));
        let forward = &settings.analytics.forward;
        if let Some(target) = crate::dashboard::forward::Target::from_settings(forward) {
            workers.push(crate::dashboard::forward::spawn(
                db.clone(),
                target,
                Duration::from_millis(forward.interval_ms),
                Duration::from_millis(forward.settle_ms),
            )?);
        }
        let ai = crate::ai::provider(&settings.ai, content.help_library.clone(), |provider| {
            Arc::new(crate::metrics::TimedAi::new(provider, &metrics))
        })?;
        // One process alone, or several that share a Redis server for events and limits.
        let cluster = match &settings.events.redis_url {
            Some(url) => Cluster::connect(secrecy::ExposeSecret::expose_secret(url)).await?,
            None => Cluster::alone(),
        };
        let auth_throttle = Arc::new(AuthThrottle::new(cluster.clone()));
        // The funnels' flows (issue 47): the file's as version 1 on the first start, then what
        // is published, in memory, kept up to date from the store.
        let flows =
            crate::flows::FlowLibrary::start(db.clone(), cluster.clone(), &content.funnel_scripts)
                .await
                .map_err(StartupError::Flows)?;
        workers.push(flows.spawn_watcher(crate::flows::POLL_EVERY));
        // Experiments (issue 48): the rules of the running ones checked, and the winners the
        // operator asked to have promoted published.
        let experiments = crate::experiments::Experiments::new(db.clone(), flows.clone());
        workers.push(experiments.spawn_decider(crate::experiments::DECIDE_EVERY));
        let flow_tallies = crate::flows::tally::FlowTallies::start(db.clone());
        // The live conversations' store calls (conversation loads and saves, visits, funnel
        // events; the member chat's access reads, messages, chat reads and events), committed
        // in groups.
        let live_store = store::batch::Batcher::observed(db.clone(), metrics.batch_observer());
        // What the product records of visits for the dashboard (events, page views, journey
        // steps), committed in groups of their own: their writes never lengthen the transaction
        // an acknowledgement or a conversation's load waits for.
        let analytics_store = store::batch::Batcher::start(db.clone());
        // The dashboard's journey steps of the busy paths, recorded behind them.
        let journeys =
            store::journeys::JourneyRecorder::start(db.clone(), metrics.journey_observer());
        let funnel_registry = funnels::registry(
            &settings,
            funnels::FunnelStores {
                conversations: live_store.clone(),
                analytics: analytics_store.clone(),
                journeys: journeys.clone(),
            },
            ai.clone(),
            funnels::FunnelCheckouts {
                billing: billing.clone(),
                throttle: auth_throttle.clone(),
            },
            funnels::FunnelFlows {
                flows: Arc::new(flows.clone()),
                tally: flow_tallies.clone(),
            },
            metrics.clone(),
            &cluster,
        );
        let preview_chats = funnels::PreviewChats {
            registry: funnels::preview_registry(
                &settings,
                live_store.clone(),
                ai.clone(),
                Arc::new(flows.clone()),
            ),
            flows: flows.clone(),
            db: db.clone(),
            admins: settings.admin.emails.clone(),
        };
        let funnel_relay =
            funnels::relay::FunnelRelay::new(cluster.clone(), funnel_registry.clone());
        let member_registry = members::registry(
            &settings,
            db.clone(),
            live_store.clone(),
            analytics_store.clone(),
            ai.clone(),
            metrics.clone(),
            &cluster,
        );
        let reload_flows = {
            let flows = flows.clone();
            move || {
                let flows = flows.clone();
                tokio::spawn(async move {
                    if let Err(error) = flows.reload().await {
                        tracing::warn!(%error, "the flows could not be reloaded");
                    }
                });
            }
        };
        let listening = {
            let members = member_registry.clone();
            let funnel_relay = funnel_relay.clone();
            let reload_flows = reload_flows.clone();
            let here = cluster.id().to_owned();
            move |from: &str, event| match event {
                ClusterEvent::FlowsChanged => reload_flows(),
                ClusterEvent::SignedOut { .. }
                    if from != here && helpnow_actors::mutation::on("drop_signed_out") => {}
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
        };
        // What lost events would have told, read again from the store (docs/operations.md,
        // "Events between processes").
        let missed = {
            let members = member_registry.clone();
            let funnel_relay = funnel_relay.clone();
            let db = db.clone();
            move |gap| match gap {
                Gap::Events => {
                    reload_flows();
                    if helpnow_actors::mutation::on("drop_signed_out") {
                        return;
                    }
                    let (members, db) = (members.clone(), db.clone());
                    tokio::spawn(async move {
                        let ended = crate::members::close_ended_sessions(&members, &db).await;
                        if ended > 0 {
                            tracing::info!(
                                ended,
                                "sessions ended elsewhere closed their sockets here"
                            );
                        }
                    });
                }
                Gap::Member(user_id) => members.peers_missed(&user_id),
                Gap::Inbox(from) => funnel_relay.missed(from.as_deref()),
            }
        };
        cluster.listen(listening, missed);
        let realtime = RealtimeServer::builder(realtime_config(&settings))
            .connection_gauge(metrics.realtime_connections.clone())
            .namespace(
                "/funnel",
                funnels::FunnelNamespace::new(
                    funnel_registry.clone(),
                    funnel_relay,
                    live_store,
                    journeys.clone(),
                    settings.realtime.funnel_joins_per_minute,
                    SessionCookies::for_public_url(&settings.server.public_url),
                    preview_chats,
                ),
            )
            .namespace("/", crate::realtime::KeepAlive::new())
            .namespace(
                "/member",
                members::MemberNamespace::new(
                    member_registry.clone(),
                    db.clone(),
                    cluster.clone(),
                    settings.realtime.member_joins_per_minute,
                    SessionCookies::for_public_url(&settings.server.public_url),
                ),
            )
            .build();
        let shutdown_timeout = settings.server.shutdown_timeout_secs;
        let drain = Duration::from_millis(settings.server.drain_ms);
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
                members: member_registry.clone(),
                cluster: cluster.clone(),
                analytics_store,
                journeys,
                flows,
                flow_tallies: flow_tallies.clone(),
                experiments,
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
            drain,
            funnels: funnel_registry,
            members: member_registry,
            cluster,
            flow_tallies,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The store this application writes to (tests read through it).
    pub fn db(&self) -> Db {
        self.db.clone()
    }

    /// Serves until SIGTERM or SIGINT, then stops in steps (docs/operations.md, "Stopping"):
    /// 1. readiness fails (`/health` answers 503) while everything is still served, for
    ///    `server.drain_ms`, the balancer's time to take the process out;
    /// 2. no new connection is taken; every funnel conversation finishes its saves, asks its
    ///    sockets to connect again (to another process) and gives up its claim; every member's
    ///    replies end (stored and sent) before their sockets are asked the same;
    /// 3. the other processes are told this one is gone (its sign of life taken away);
    /// 4. the remaining connections are closed, and in-flight requests finish;
    /// 5. the batches are committed and the store is closed.
    ///
    /// Steps 2 and 4 share `server.shutdown_timeout_secs`; step 5 waits at most
    /// `STORE_CLOSE_TIMEOUT`. So the process exits within `drain_ms` + `shutdown_timeout_secs`
    /// + 10 s of the signal.
    pub async fn run_until_stopped(self) -> Result<(), std::io::Error> {
        let Self {
            mut server,
            db,
            realtime,
            workers,
            shutdown_timeout,
            drain,
            funnels,
            members,
            cluster,
            flow_tallies,
            ..
        } = self;
        let served = tokio::select! {
            served = &mut server => served,
            () = stop_requested() => {
                let signalled = tokio::time::Instant::now();
                tracing::info!(
                    connections = realtime.connection_count(),
                    drain_ms = drain.as_millis() as u64,
                    "stopping: readiness fails"
                );
                realtime.drain();
                tokio::time::sleep(drain).await;
                realtime.refuse_new();
                let handed_over = tokio::time::Instant::now();
                let (funnels_left, members_left) = tokio::join!(
                    funnels.drain(shutdown_timeout),
                    members.drain(shutdown_timeout),
                );
                cluster.leave().await;
                tracing::info!(
                    funnels_left,
                    members_left,
                    handover_ms = handed_over.elapsed().as_millis() as u64,
                    connections = realtime.connection_count(),
                    "stopping: conversations handed over; closing real-time connections"
                );
                realtime.close_all();
                let remaining = shutdown_timeout.saturating_sub(handed_over.elapsed());
                // Upgraded WebSockets are no longer the HTTP server's to wait for.
                realtime.wait_for_websockets(remaining).await;
                // The server future runs the stop, so it is polled alongside.
                let stopping = server.handle().stop(true);
                let (served, ()) = tokio::join!(server, stopping);
                tracing::info!(
                    after_ms = signalled.elapsed().as_millis() as u64,
                    "stopping: connections closed"
                );
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
        // The funnel actors' registry goes first, and the events' connection (its tasks end with
        // the last handle); then the drop-off's last counts are written and its task ends (it
        // holds a store handle).
        drop(realtime);
        drop(funnels);
        drop(members);
        drop(cluster);
        flow_tallies.stop().await;
        drop(flow_tallies);
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

/// Waits, at most `timeout`, until the runtime's tasks have ended (the embedded store's close
/// once its last handle is gone).
pub async fn wait_for_background_tasks(timeout: Duration) {
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
    /// The analytics writes' group commit, which page views go with.
    analytics_store: store::batch::Batcher,
    /// The dashboard's journey steps of page loads and view events.
    journeys: store::journeys::JourneyRecorder,
    /// The funnels' flows (the Flows page's changes and the help funnel's intro).
    flows: crate::flows::FlowLibrary,
    /// The drop-off's counts (the Flows page reads them written).
    flow_tallies: Arc<crate::flows::tally::FlowTallies>,
    /// The experiments (the Experiments page).
    experiments: crate::experiments::Experiments,
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
        analytics_store,
        journeys,
        flows,
        flow_tallies,
        experiments,
    } = services;
    let billing = web::Data::from(billing);
    let hsts = settings.server.public_url.scheme() == "https";
    let site_origins = Arc::new(crate::realtime::OriginPolicy::Only(
        settings.server.site_origins(),
    ));
    let shutdown_timeout = settings.server.shutdown_timeout_secs;
    let static_dir = settings.server.static_dir.clone();

    let db = web::Data::new(db);
    let settings = web::Data::new(settings);
    let content = web::Data::new(content);
    let metrics_data = web::Data::new(metrics.clone());
    let event_limiter = web::Data::new(routes::events::BrowserAnalytics::new(
        cluster.clone(),
        &metrics,
    ));
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
    let realtime_data = web::Data::new(realtime.clone());
    let analytics_store = web::Data::new(analytics_store);
    let journeys = web::Data::new(journeys);
    let flows = web::Data::new(flows);
    let flow_tallies = web::Data::from(flow_tallies);
    let experiments = web::Data::new(experiments);
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
            .app_data(flows.clone())
            .app_data(flow_tallies.clone())
            .app_data(experiments.clone())
            .app_data(realtime_data.clone())
            .app_data(analytics_store.clone())
            .app_data(journeys.clone())
            .app_data(
                web::JsonConfig::default()
                    .limit(JSON_LIMIT_BYTES)
                    .error_handler(json_error_handler),
            )
            .wrap(from_fn(track_requests))
            .wrap(from_fn(move |req, next| {
                routes::middleware::security_headers(req, next, hsts)
            }))
            .wrap(from_fn(routes::middleware::request_id_header))
            // Outermost: every log line of a request carries its span (method, route, request id).
            .wrap(tracing_actix_web::TracingLogger::default())
            .configure(routes::health::configure)
            .service(realtime.service())
            .service(
                web::scope("/api")
                    // Compressed per request, and only here: the JSON answers are built whole.
                    // The web app's files come precompressed (routes::web_app), and the
                    // real-time paths (WebSocket upgrades, long-polling) stay as they are.
                    .wrap(Compress::default())
                    .wrap(from_fn({
                        let origins = site_origins.clone();
                        move |req, next| {
                            routes::middleware::same_site_writes(req, next, origins.clone())
                        }
                    }))
                    .configure(|cfg| routes::configure_api(cfg, demo_payments))
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
