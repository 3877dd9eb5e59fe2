//! `helpnow-loadtest`: many concurrent Socket.IO clients over WebSocket against a running server,
//! each running a scenario, and a report of what the server did (see docs/benchmarks.md).
//!
//! - `idle`: join `/` and hold the connection, answering pings.
//! - `funnel`: a chat funnel conversation to its final message (three messages, `--think` apart),
//!   then a new conversation, until the run ends. Every send is timed to its acknowledgement
//!   (the message stored) and to the assistant's reply; `reply_late_ms` is how much later than
//!   the typing delay the server announced (`typing.delayMs`) the reply came.
//! - `burst`: every client joins `/funnel` at once (give a high `--ramp`) and runs one conversation
//!   of three messages, each sent 0.5-1.5 s after the previous reply, then leaves: the crowd an ad
//!   campaign sends at the same moment. `join_ms` times each join (connect to the `conversation`
//!   event); the largest `joined_at_ms` is how long the whole crowd took to get in.
//! - `join`: every client joins `/funnel`, gets its conversation, and holds it until the run ends:
//!   how fast visitors get in and what a live conversation costs the server in memory.
//! - `member`: a member made through sign-up and the demo checkout, chatting on `/member` with
//!   streamed replies (see [`member`]). With `--ai-mock ADDR` the generator serves its own
//!   OpenAI-compatible provider there ([`ai_mock`]) for the server to use.
//! - `experiment`: an A/B experiment's visitors (issue 48), one new visitor after another: the
//!   ad's page (`--campaign`), the funnel it sends them to, the three messages, and with the
//!   probability `--convert` gives their arm the demo checkout paid; the report counts each arm's
//!   visitors, payments and target rate (see [`experiment`]).
//!
//! Connections are opened at `--ramp` per second from 127.0.0.1-127.0.0.200 when the server is
//! on loopback, so source ports never run out. The run ends by itself after `--duration`. A
//! connection the server drops, or one it refuses (it died, it restarts), is counted and the
//! client carries on, so a run survives the server's `kill -9` ([`acks`]: the crash test).

pub mod acks;
pub mod ai_mock;
pub mod client;
mod experiment;
pub mod faults;
mod member;
pub mod proxy;
pub mod seed;
pub mod stats;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use serde_json::{Value, json};
use tokio::time::Instant;

use acks::{AckLog, FunnelConversation};
use client::{Client, ClientError, Target, ack_of, event_of};
use stats::{Report, ServerUse, Stats};

/// How long one wait (a connection, an acknowledgement, a reply) may take before it is an error.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);
/// After the run's end, clients get this long to finish what they are doing.
const GRACE: Duration = Duration::from_secs(10);
/// How many loopback addresses connections are spread over.
const LOOPBACK_SOURCES: u32 = 200;
/// How long an HTTP connection of the generator stays pooled unused: well within the server's
/// keep-alive (5 s), so it is never reused as the server closes it.
const IDLE_HTTP: Duration = Duration::from_secs(2);
/// The funnel the generator's visitors chat in.
const FUNNEL: &str = "chat";
/// A funnel conversation: three messages lead to the final one.
const FUNNEL_MESSAGES: [&str; 3] = [
    "My email keeps asking for my password",
    "It started yesterday on my laptop",
    "I restarted the computer and it did not help",
];

/// What each virtual client does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// Hold a `/` connection open (memory per idle connection).
    Idle,
    /// A chat funnel conversation to its final message, three messages `--think` apart.
    Funnel,
    /// Everyone joins `/funnel` at once, then one conversation each (give a high `--ramp`).
    Burst,
    /// Join `/funnel` and hold the live conversation until the end.
    Join,
    /// A signed-in member sends chat messages and follows the streamed replies.
    Member,
    /// New visitors of an experiment's campaign: the page, the chat, and a paid checkout at
    /// their arm's `--convert` rate.
    Experiment,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Idle => "idle",
            Scenario::Funnel => "funnel",
            Scenario::Burst => "burst",
            Scenario::Join => "join",
            Scenario::Member => "member",
            Scenario::Experiment => "experiment",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub url: url::Url,
    pub scenario: Scenario,
    pub connections: u64,
    /// New connections per second.
    pub ramp: u64,
    pub duration: Duration,
    /// The pause before each message (funnel and member scenarios).
    pub think: Duration,
    /// Where to serve the generator's own mock AI provider, if anywhere.
    pub ai_mock: Option<SocketAddr>,
    pub ai: ai_mock::MockAiSettings,
    /// The share of errors (of connections plus messages) above which the run fails.
    pub max_error_rate: f64,
    pub json: bool,
    /// Where to append each acknowledged message (`--record-acks`), if anywhere.
    pub record_acks: Option<PathBuf>,
    /// The ad's campaign the experiment scenario's visitors come from (`campaignid`), if any.
    pub campaign: Option<String>,
    /// The experiment scenario's share of each arm's visitors who pay (`--convert a=0.05`); an
    /// arm not listed: none.
    pub convert: BTreeMap<String, f64>,
    /// How many visitors the experiment scenario brings in all before the run ends; `None`: new
    /// ones until `duration` is over.
    pub visitors: Option<u64>,
}

/// What the command line asks for.
#[derive(Debug, Clone)]
pub enum Invocation {
    /// A load run.
    Run(Options),
    /// Reading back every message recorded in `file` (`--verify-acks`).
    VerifyAcks {
        url: url::Url,
        file: PathBuf,
        json: bool,
    },
}

/// A number of zero or more (seconds, milliseconds, a fraction).
fn non_negative(value: &str) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| format!("a number of zero or more, not {value:?}"))
}

/// Each arm's share of visitors who pay, as `a=0.05,b=0.10` (arm keys, fractions 0-1).
fn conversion_rates(value: &str) -> Result<BTreeMap<String, f64>, String> {
    value
        .split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (arm, rate) = pair
                .split_once('=')
                .ok_or_else(|| format!("ARM=RATE pairs such as a=0.05, not {pair:?}"))?;
            let arm = arm.trim();
            if arm.is_empty() || !arm.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(format!("an arm's key such as a or b, not {arm:?}"));
            }
            let rate = rate
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|rate| (0.0..=1.0).contains(rate))
                .ok_or_else(|| format!("a rate from 0 to 1 for arm {arm}, not {rate:?}"))?;
            Ok((arm.to_owned(), rate))
        })
        .collect()
}

/// The command line, as clap reads it (`--help` lists it).
#[derive(Debug, clap::Parser)]
#[command(
    name = "helpnow-loadtest",
    about = "Drives thousands of simulated visitors or members against a HelpNow server and reports \
             latencies, errors and the server's resource use (docs/benchmarks.md).",
    after_help = "Exits 0 when the run passed, 1 when errors passed --max-error-rate, 2 on a bad \
                  command line or an unreachable server. With --verify-acks: 0 when every \
                  recorded message is stored, 1 when one is missing or could not be checked, 2 \
                  when the file cannot be read. With --json the last line is the report."
)]
struct Cli {
    /// The server, such as http://127.0.0.1:8080.
    #[arg(long)]
    url: url::Url,
    /// What each virtual client does.
    #[arg(long, value_enum, required_unless_present = "verify_acks")]
    scenario: Option<Scenario>,
    /// How many virtual clients.
    #[arg(long, default_value_t = 100)]
    connections: u64,
    /// New connections per second.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    ramp: u64,
    /// How long the run lasts, in seconds.
    #[arg(long, default_value_t = 30.0, value_parser = non_negative, value_name = "SECONDS")]
    duration: f64,
    /// The pause before each message, in seconds (funnel and member scenarios).
    #[arg(long, default_value_t = 5.0, value_parser = non_negative, value_name = "SECONDS")]
    think: f64,
    /// The share of errors (of connections plus messages) above which the run fails.
    #[arg(long, default_value_t = 0.01, value_parser = non_negative, value_name = "FRACTION")]
    max_error_rate: f64,
    /// Print the report as one JSON object on the last line too.
    #[arg(long)]
    json: bool,
    /// Serve a mock OpenAI-compatible provider here for the server to use (member scenario).
    #[arg(long, value_name = "HOST:PORT")]
    ai_mock: Option<SocketAddr>,
    /// The mock's wait before its first token, in milliseconds.
    #[arg(long, default_value_t = 200.0, value_parser = non_negative, value_name = "MS")]
    ai_latency_ms: f64,
    /// The mock's tokens per second.
    #[arg(long, default_value_t = 50.0, value_parser = non_negative, value_name = "N")]
    ai_tokens_per_second: f64,
    /// The tokens of each mock reply.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    ai_reply_tokens: u32,
    /// Append each acknowledged message (funnel, burst and member scenarios) to FILE as its
    /// acknowledgement arrives, one JSON object a line, for --verify-acks after the run.
    #[arg(long, value_name = "FILE", conflicts_with = "verify_acks")]
    record_acks: Option<PathBuf>,
    /// Instead of a run: read every message recorded in FILE back from the server and list those
    /// it does not hold.
    #[arg(long, value_name = "FILE")]
    verify_acks: Option<PathBuf>,
    /// The ad's campaign the visitors come from: /chat-help?campaignid=ID (experiment scenario).
    #[arg(long, value_name = "ID")]
    campaign: Option<String>,
    /// The share of each arm's visitors who pay the checkout, such as a=0.05,b=0.10; an arm not
    /// listed pays never (experiment scenario).
    #[arg(long, value_parser = conversion_rates, value_name = "ARM=RATE,...")]
    convert: Option<BTreeMap<String, f64>>,
    /// New visitors in all, then the run ends (experiment scenario; default: until --duration).
    #[arg(long, value_name = "N")]
    visitors: Option<u64>,
}

impl Invocation {
    /// Parses the command line (without the program name). A bad one, and `--help`, are clap's
    /// errors: `error.exit()` prints them and exits (2, or 0 for the help).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, clap::Error> {
        use clap::{CommandFactory, Parser};
        let cli = Cli::try_parse_from(std::iter::once("helpnow-loadtest".to_owned()).chain(args))?;
        if let Some(file) = cli.verify_acks {
            return Ok(Invocation::VerifyAcks {
                url: cli.url,
                file,
                json: cli.json,
            });
        }
        let scenario = cli.scenario.ok_or_else(|| {
            Cli::command().error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "--scenario is required for a run",
            )
        })?;
        Ok(Invocation::Run(Options {
            url: cli.url,
            scenario,
            connections: cli.connections,
            ramp: cli.ramp,
            duration: Duration::from_secs_f64(cli.duration),
            think: Duration::from_secs_f64(cli.think),
            ai_mock: cli.ai_mock,
            ai: ai_mock::MockAiSettings {
                latency: Duration::from_secs_f64(cli.ai_latency_ms / 1000.0),
                tokens_per_second: cli.ai_tokens_per_second.max(0.001),
                reply_tokens: cli.ai_reply_tokens,
            },
            max_error_rate: cli.max_error_rate,
            json: cli.json,
            record_acks: cli.record_acks,
            campaign: cli.campaign,
            convert: cli.convert.unwrap_or_default(),
            visitors: cli.visitors,
        }))
    }
}

/// What a run found, and whether it passed.
pub struct Outcome {
    pub report: Report,
    pub stats: Arc<Stats>,
    pub passed: bool,
}

/// Where the server at `url` is.
async fn target_of(url: &url::Url) -> Result<Target, String> {
    let host = url.host_str().ok_or("the URL names no host")?.to_owned();
    let port = url.port_or_known_default().ok_or("the URL names no port")?;
    let address = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|error| format!("{host}: {error}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))?;
    Ok(Target {
        address,
        host: format!("{host}:{port}"),
    })
}

/// Runs the load and reports. Fails only when the server cannot be found at all, or the
/// `--record-acks` file cannot be opened.
pub async fn run(options: &Options) -> Result<Outcome, String> {
    let target = Arc::new(target_of(&options.url).await?);
    let address = target.address;
    let acks = match &options.record_acks {
        Some(path) => Some(Arc::new(AckLog::open(path)?)),
        None => None,
    };
    let mock = match options.ai_mock {
        Some(address) => Some(
            ai_mock::start(address, options.ai)
                .await
                .map_err(|error| {
                    format!("the mock AI provider cannot listen on {address}: {error}")
                })?
                .1,
        ),
        None => None,
    };
    let http = reqwest::Client::new();
    // The HTTP requests of the member and experiment scenarios' clients go from their own source
    // addresses, as their connections do (the server limits sign-ups and checkouts per address).
    let http_by_source = Arc::new(match options.scenario {
        Scenario::Member | Scenario::Experiment => http_clients_for(address, options.connections)?,
        _ => Vec::new(),
    });
    let metrics_url = options
        .url
        .join("/metrics")
        .map_err(|error| error.to_string())?;
    let stats = Arc::new(Stats::default());
    // The member scenario's members are made first (sign-up hashes a password: the server makes
    // a few a second per CPU), so the run itself measures chats, not sign-ups.
    let secrets: Arc<Vec<Option<String>>> = Arc::new(if options.scenario == Scenario::Member {
        member::make_members(&options.url, &http_by_source, options.connections, &stats).await
    } else {
        Vec::new()
    });
    // The run's figures start here, after the members are made (their sign-ups hash passwords).
    let before_text = metrics_text(&http, &metrics_url).await;
    let before = ServerUse::parse(&before_text);

    let started = Instant::now();
    let ends = started + options.duration;
    let peak = Arc::new(std::sync::Mutex::new(before));
    let sampler = tokio::spawn(sample_peak(http.clone(), metrics_url.clone(), peak.clone()));
    // Long runs say how they go, once a second, on standard error.
    let progress = (options.duration >= PROGRESS_FROM)
        .then(|| tokio::spawn(report_progress(stats.clone(), started)));
    // What the server holds just before the clients leave: the cost of what they hold (idle
    // connections, live conversations), apart from the transient peak of getting them in.
    let holding = tokio::spawn({
        let (http, url) = (http.clone(), metrics_url.clone());
        let at = ends - (options.duration / 10).min(Duration::from_secs(1));
        async move {
            tokio::time::sleep_until(at).await;
            server_use(&http, &url).await
        }
    });

    let mut clients = Vec::with_capacity(options.connections as usize);
    for index in 0..options.connections {
        let due = started + Duration::from_secs_f64(index as f64 / options.ramp as f64);
        if due >= ends {
            break;
        }
        tokio::time::sleep_until(due).await;
        let local = source_address(address, index);
        let (target, stats, options) = (target.clone(), stats.clone(), options.clone());
        let (secrets, acks, http) = (secrets.clone(), acks.clone(), http_by_source.clone());
        clients.push(tokio::spawn(async move {
            let acks = acks.as_deref();
            match options.scenario {
                Scenario::Idle => idle(&target, local, &stats, ends).await,
                Scenario::Funnel => {
                    funnel(&target, local, &stats, started, ends, options.think, acks).await
                }
                Scenario::Burst => burst(&target, local, &stats, started, ends, acks).await,
                Scenario::Join => join(&target, local, &stats, started, ends).await,
                Scenario::Member => {
                    // A member that could not be made was counted as failed already.
                    if let Some(Some(secret)) = secrets.get(index as usize) {
                        member::run(&target, local, secret, &stats, ends, options.think, acks)
                            .await;
                    }
                }
                Scenario::Experiment => {
                    if let Some(http) = http.get(index as usize % http.len().max(1)) {
                        let origin = experiment::Origin {
                            target: &target,
                            local,
                            http,
                            base: &options.url,
                        };
                        experiment::run(&origin, &options, &stats, started, ends, acks).await;
                    }
                }
            }
        }));
    }
    let opened = clients.len() as u64;
    let deadline = ends + GRACE;
    for client in clients {
        if tokio::time::timeout_at(deadline, client).await.is_err() {
            stats.error("unfinished");
        }
    }
    sampler.abort();
    if let Some(progress) = progress {
        progress.abort();
    }
    if let Some(mock) = mock {
        mock.abort();
    }
    let after_text = metrics_text(&http, &metrics_url).await;
    let after = ServerUse::parse(&after_text);
    let mut peak = *peak
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    peak.rss_bytes = max_of(peak.rss_bytes, after.rss_bytes);
    // A run whose clients all finished early (burst) held nothing at its end.
    let held = if holding.is_finished() {
        holding.await.unwrap_or_default()
    } else {
        holding.abort();
        ServerUse::default()
    };
    let report = Report {
        scenario: options.scenario.name().to_owned(),
        connections: opened,
        elapsed: started.elapsed(),
        before,
        peak,
        after,
        held,
        server_timers: stats::ServerTimers::between(&before_text, &after_text),
        convert: (options.scenario == Scenario::Experiment).then(|| options.convert.clone()),
    };
    let load =
        |counter: &std::sync::atomic::AtomicU64| counter.load(std::sync::atomic::Ordering::Relaxed);
    let attempts = opened + load(&stats.messages_sent);
    let passed = (stats.error_count() as f64) <= options.max_error_rate * attempts.max(1) as f64;
    Ok(Outcome {
        report,
        stats,
        passed,
    })
}

fn max_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// Loopback servers are reached from 127.0.0.1-200 in turn; others from the default address.
fn source_address(server: SocketAddr, index: u64) -> IpAddr {
    match server.ip() {
        IpAddr::V4(ip) if ip.is_loopback() => IpAddr::V4(Ipv4Addr::new(
            127,
            0,
            0,
            1 + (index % LOOPBACK_SOURCES as u64) as u8,
        )),
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    }
}

/// One HTTP client per source address (one in all when the server is not on loopback).
fn http_clients(server: SocketAddr) -> Result<Vec<reqwest::Client>, String> {
    http_clients_for(server, u64::from(LOOPBACK_SOURCES))
}

/// [`http_clients`] for the source addresses of `connections` clients only (all 200 take seconds
/// to build in an unoptimised build): client `index`'s is `index % len`.
fn http_clients_for(server: SocketAddr, connections: u64) -> Result<Vec<reqwest::Client>, String> {
    let sources = if server.ip().is_loopback() && server.is_ipv4() {
        u64::from(LOOPBACK_SOURCES).min(connections.max(1))
    } else {
        1
    };
    (0..sources)
        .map(|index| {
            reqwest::Client::builder()
                .local_address(source_address(server, index))
                .timeout(PATIENCE)
                // A client's turn comes every few seconds among 200; the server closes an
                // HTTP connection idle for 5 s (actix-web's keep-alive), and a request sent on
                // one as it closes fails ("connection closed before message completed").
                .pool_idle_timeout(IDLE_HTTP)
                // A redirect is an answer to read (the experiment's pages, the checkout's link).
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|error| format!("cannot build an HTTP client: {error}"))
        })
        .collect()
}

/// The server's `/metrics` text (empty when it cannot be read).
async fn metrics_text(http: &reqwest::Client, url: &url::Url) -> String {
    match http.get(url.clone()).send().await {
        Ok(response) => response.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

async fn server_use(http: &reqwest::Client, url: &url::Url) -> ServerUse {
    ServerUse::parse(&metrics_text(http, url).await)
}

/// Runs at least this long print a progress line each second.
const PROGRESS_FROM: Duration = Duration::from_secs(10);

/// One line a second on standard error: connections opened, messages a second, errors, and the
/// p99 so far of the acknowledgements (or of the first latency series there is).
async fn report_progress(stats: Arc<Stats>, started: Instant) {
    use std::sync::atomic::Ordering::Relaxed;
    let mut last_sent = 0;
    let mut tick =
        tokio::time::interval_at(started + Duration::from_secs(1), Duration::from_secs(1));
    loop {
        tick.tick().await;
        let sent = stats.messages_sent.load(Relaxed);
        let latencies = stats.latencies();
        let p99 = latencies
            .get("ack_ms")
            .map(|p| ("ack_ms", p))
            .or_else(|| latencies.iter().next().map(|(series, p)| (*series, p)))
            .map(|(series, p)| format!(", {series} p99 {:.1} ms", p.p99))
            .unwrap_or_default();
        eprintln!(
            "[{:>4}s] {} connections opened ({} failed), {} messages/s, {} errors{p99}",
            started.elapsed().as_secs(),
            stats.connections_opened.load(Relaxed),
            stats.connections_failed.load(Relaxed),
            sent - last_sent,
            stats.error_count(),
        );
        last_sent = sent;
    }
}

/// Keeps the highest memory and connection count the server reports, once a second.
async fn sample_peak(http: reqwest::Client, url: url::Url, peak: Arc<std::sync::Mutex<ServerUse>>) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = server_use(&http, &url).await;
        let mut peak = peak
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        peak.rss_bytes = max_of(peak.rss_bytes, now.rss_bytes);
        peak.realtime_connections = max_of(peak.realtime_connections, now.realtime_connections);
        peak.actors_live = max_of(peak.actors_live, now.actors_live);
        peak.cpu_seconds = now.cpu_seconds;
    }
}

fn failed(stats: &Stats, error: &ClientError) {
    stats.error(error.kind());
}

async fn idle(target: &Target, local: IpAddr, stats: &Stats, ends: Instant) {
    let began = Instant::now();
    let mut client = match Client::connect(target, local, "/", &json!({}), None, PATIENCE).await {
        // The WebSocket upgrade and the namespace join: how fast the server takes new connections.
        Ok(client) => {
            stats.sample("connect_ms", began.elapsed());
            client
        }
        Err(error) => {
            Stats::count(&stats.connections_failed);
            return failed(stats, &error);
        }
    };
    Stats::count(&stats.connections_opened);
    tokio::select! {
        error = client.hold() => failed(stats, &error),
        () = tokio::time::sleep_until(ends) => client.close().await,
    }
}

/// A random visitor id, as the funnel's handshake takes it.
fn visitor_id() -> String {
    let mut rng = rand::rng();
    let suffix: String = (0..20)
        .map(|_| char::from(rng.sample(rand::distr::Alphanumeric)))
        .collect();
    format!("loadtest_{suffix}")
}

/// A think time around `think` (±20 %), so clients do not send in lockstep.
pub(crate) fn jittered(think: Duration) -> Duration {
    think.mul_f64(rand::rng().random_range(0.8..1.2))
}

async fn funnel(
    target: &Target,
    local: IpAddr,
    stats: &Stats,
    started: Instant,
    ends: Instant,
    think: Duration,
    acks: Option<&AckLog>,
) {
    while Instant::now() < ends {
        let Joined {
            mut client,
            conversation,
            ..
        } = match join_funnel(target, local, stats, started).await {
            Ok(joined) => joined,
            Err(error) => {
                failed(stats, &error);
                // A refused or failed join is not retried in a tight loop.
                tokio::time::sleep(think).await;
                continue;
            }
        };
        let record = acks.map(|log| (log, &conversation));
        match messages(&mut client, stats, ends, || jittered(think), record).await {
            Ok(Finished::Conversation) => client.close().await,
            Ok(Finished::Run) => return client.close().await,
            Err(error) => failed(stats, &error),
        }
    }
}

/// Why a conversation ended.
pub(crate) enum Finished {
    /// It reached its final message: the client starts another.
    Conversation,
    /// The run's end came first: the client stops.
    Run,
}

/// The three messages of a joined conversation, each after `pause()`, each timed to its ack and
/// to the assistant's reply; with `record`, each acknowledged one is recorded as it is.
async fn messages(
    client: &mut Client,
    stats: &Stats,
    ends: Instant,
    pause: impl Fn() -> Duration,
    record: Option<(&AckLog, &FunnelConversation)>,
) -> Result<Finished, ClientError> {
    for text in FUNNEL_MESSAGES {
        let pause = pause();
        if Instant::now() + pause >= ends {
            return Ok(Finished::Run);
        }
        tokio::time::sleep(pause).await;
        let sent = Instant::now();
        let id = client
            .emit_with_ack("send", json!({ "text": text }))
            .await?;
        Stats::count(&stats.messages_sent);
        let mut acked = None;
        let mut typing: Option<(Instant, Duration)> = None;
        let reply = tokio::time::timeout(PATIENCE, async {
            loop {
                let packet = client.next_packet().await?;
                if let Some(ack) = ack_of(&packet, id) {
                    acknowledged(ack, stats, sent)?;
                    if let Some((log, conversation)) = record {
                        log.record(&conversation.ack(text), stats);
                    }
                    acked = Some(Instant::now());
                } else if let Some(("typing", data)) = event_of(&packet)
                    && let Some(delay) = data.get("delayMs").and_then(Value::as_u64)
                {
                    typing = Some((Instant::now(), Duration::from_millis(delay)));
                } else if let Some(("message", message)) = event_of(&packet)
                    && message.get("role").and_then(Value::as_str) == Some("assistant")
                {
                    // How much later than the announced typing delay the reply came.
                    if let Some((shown, delay)) = typing {
                        let took = shown.elapsed();
                        // Typing and reply share one connection, so a reply seen sooner than
                        // the delay (less a little for jitter) came early: a server bug.
                        if took + Duration::from_millis(20) < delay {
                            stats.error("reply_early");
                        }
                        stats.sample("reply_late_ms", took.saturating_sub(delay));
                    }
                    return Ok(message.get("isFinal") == Some(&Value::Bool(true)));
                }
            }
        })
        .await
        .map_err(|_| ClientError::Timeout("the reply"))??;
        if let Some(acked) = acked {
            stats.sample("reply_ms", acked.elapsed());
        }
        Stats::count(&stats.replies);
        if reply {
            return Ok(Finished::Conversation);
        }
    }
    Ok(Finished::Conversation)
}

/// A visitor in their conversation.
struct Joined {
    client: Client,
    conversation: FunnelConversation,
    /// The `conversation` event's data (its messages, the experiment's arm, ...).
    view: Value,
}

/// Who joins a funnel: its name, the visitor's id, and the ad's campaign, if any.
struct Visit<'a> {
    funnel: &'a str,
    visitor: String,
    campaign: Option<&'a str>,
}

/// Connects to `/funnel` as a new visitor and waits for the conversation (see [`join_as`]).
async fn join_funnel(
    target: &Target,
    local: IpAddr,
    stats: &Stats,
    started: Instant,
) -> Result<Joined, ClientError> {
    let visit = Visit {
        funnel: FUNNEL,
        visitor: visitor_id(),
        campaign: None,
    };
    join_as(target, local, stats, started, visit).await
}

/// Connects to `/funnel` as `visit` says and waits for the conversation: a join, timed to
/// `join_ms`, with `joined_at_ms` the moment since the run's start it was done.
async fn join_as(
    target: &Target,
    local: IpAddr,
    stats: &Stats,
    started: Instant,
    visit: Visit<'_>,
) -> Result<Joined, ClientError> {
    let began = Instant::now();
    let Visit {
        funnel,
        visitor,
        campaign,
    } = visit;
    let mut auth = json!({ "funnel": funnel, "visitorId": visitor });
    if let Some(campaign) = campaign {
        auth["campaignid"] = json!(campaign);
    }
    let mut client = match Client::connect(target, local, "/funnel", &auth, None, PATIENCE).await {
        Ok(client) => client,
        Err(error) => {
            Stats::count(&stats.connections_failed);
            return Err(error);
        }
    };
    Stats::count(&stats.connections_opened);
    let conversation = next_conversation(&mut client).await?;
    stats.sample("join_ms", began.elapsed());
    stats.sample("joined_at_ms", started.elapsed());
    let id = conversation
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| ClientError::Protocol("a conversation without an id".into()))?
        .to_owned();
    Ok(Joined {
        conversation: FunnelConversation {
            funnel: funnel.to_owned(),
            visitor,
            id,
        },
        client,
        view: conversation,
    })
}

/// The crowd of one campaign: one conversation each, joined at once, three messages each sent
/// 0.5-1.5 s after the previous reply.
async fn burst(
    target: &Target,
    local: IpAddr,
    stats: &Stats,
    started: Instant,
    ends: Instant,
    acks: Option<&AckLog>,
) {
    let Joined {
        mut client,
        conversation,
        ..
    } = match join_funnel(target, local, stats, started).await {
        Ok(joined) => joined,
        Err(error) => return failed(stats, &error),
    };
    // The join waited for the conversation event: the first pause starts now.
    let pause = || Duration::from_secs_f64(rand::rng().random_range(0.5..1.5));
    let record = acks.map(|log| (log, &conversation));
    match messages(&mut client, stats, ends, pause, record).await {
        Ok(_) => client.close().await,
        Err(error) => failed(stats, &error),
    }
}

/// Visitors who join and stay: each holds its live conversation until the run ends.
async fn join(target: &Target, local: IpAddr, stats: &Stats, started: Instant, ends: Instant) {
    let mut client = match join_funnel(target, local, stats, started).await {
        Ok(joined) => joined.client,
        Err(error) => return failed(stats, &error),
    };
    tokio::select! {
        error = client.hold() => failed(stats, &error),
        () = tokio::time::sleep_until(ends) => client.close().await,
    }
}

/// A send's acknowledgement: timed and counted when it says stored, an error when refused.
pub(crate) fn acknowledged(ack: &Value, stats: &Stats, sent: Instant) -> Result<(), ClientError> {
    if ack.get("ok") != Some(&Value::Bool(true)) {
        let code = ack.get("code").and_then(Value::as_str).unwrap_or("unknown");
        return Err(ClientError::Refused(code.to_owned()));
    }
    stats.sample("ack_ms", sent.elapsed());
    Stats::count(&stats.messages_acked);
    Ok(())
}

/// The next `conversation` event's data (a `/funnel` client gets one on every join).
async fn next_conversation(client: &mut Client) -> Result<Value, ClientError> {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let packet = client.next_packet().await?;
            if let Some(("conversation", data)) = event_of(&packet) {
                return Ok(data.clone());
            }
        }
    })
    .await
    .map_err(|_| ClientError::Timeout("an event"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation(line: &str) -> Result<Invocation, String> {
        Invocation::parse(line.split_whitespace().map(str::to_owned)).map_err(|e| e.to_string())
    }

    fn parse(line: &str) -> Result<Options, String> {
        match invocation(line)? {
            Invocation::Run(options) => Ok(options),
            other => Err(format!("not a run: {other:?}")),
        }
    }

    #[test]
    fn the_command_line_is_read_with_defaults() {
        let options = parse(
            "--url http://127.0.0.1:8080 --scenario funnel --connections 5000 --ramp 500 --duration 60 --json",
        )
        .expect("parses");
        assert_eq!(options.scenario, Scenario::Funnel);
        assert_eq!(options.connections, 5000);
        assert_eq!(options.ramp, 500);
        assert_eq!(options.duration, Duration::from_secs(60));
        assert_eq!(options.think, Duration::from_secs(5));
        assert!(options.json);
        for (name, scenario) in [("burst", Scenario::Burst), ("join", Scenario::Join)] {
            let line = format!("--url http://127.0.0.1:8080 --scenario {name}");
            assert_eq!(parse(&line).expect("parses").scenario, scenario);
        }
        assert!(parse("--scenario idle").is_err_and(|e| e.contains("--url <URL>")));
        assert!(
            parse("--url http://x --scenario dance")
                .is_err_and(|e| e.contains("invalid value 'dance'") && e.contains("member"))
        );
        assert!(parse("--url http://x --scenario idle --connections many").is_err());
        assert!(parse("--url http://x --scenario idle --think -1").is_err());
        assert!(parse("--url http://x --scenario idle --ramp 0").is_err());
        let help = Invocation::parse(["--help".to_owned()]).expect_err("help is clap's");
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
        assert!(help.to_string().contains("--max-error-rate <FRACTION>"));
    }

    #[test]
    fn the_experiment_scenario_takes_a_campaign_rates_per_arm_and_a_number_of_visitors() {
        let options = parse(
            "--url http://x --scenario experiment --campaign exp-demo --convert a=0.05,b=0.1 --visitors 2000",
        )
        .expect("parses");
        assert_eq!(options.scenario, Scenario::Experiment);
        assert_eq!(options.campaign.as_deref(), Some("exp-demo"));
        assert_eq!(
            options.convert,
            BTreeMap::from([("a".to_owned(), 0.05), ("b".to_owned(), 0.1)])
        );
        assert_eq!(options.visitors, Some(2000));
        let plain = parse("--url http://x --scenario experiment").expect("parses");
        assert!(plain.convert.is_empty() && plain.campaign.is_none() && plain.visitors.is_none());
        for wrong in ["a=1.5", "a", "=0.1", "a=x", "a=-0.1", "a+=0.1"] {
            let line = format!("--url http://x --scenario experiment --convert {wrong}");
            assert!(
                parse(&line).is_err_and(|e| e.contains("--convert")),
                "{wrong}"
            );
        }
    }

    #[test]
    fn acknowledgements_are_recorded_by_a_run_and_verified_without_one() {
        let run = parse("--url http://x --scenario funnel --record-acks /tmp/acks.jsonl")
            .expect("parses");
        assert_eq!(run.record_acks, Some(PathBuf::from("/tmp/acks.jsonl")));
        assert_eq!(
            parse("--url http://x --scenario funnel")
                .expect("parses")
                .record_acks,
            None
        );
        match invocation("--url http://x --verify-acks /tmp/acks.jsonl --json") {
            Ok(Invocation::VerifyAcks { url, file, json }) => {
                assert_eq!(url.as_str(), "http://x/");
                assert_eq!(file, PathBuf::from("/tmp/acks.jsonl"));
                assert!(json);
            }
            other => panic!("{other:?}"),
        }
        assert!(invocation("--url http://x").is_err_and(|e| e.contains("--scenario")));
        assert!(
            invocation("--url http://x --scenario funnel --record-acks a --verify-acks a")
                .is_err_and(|e| e.contains("cannot be used with"))
        );
    }

    #[test]
    fn loopback_connections_spread_over_two_hundred_source_addresses() {
        let server: SocketAddr = "127.0.0.1:8080".parse().expect("address");
        assert_eq!(source_address(server, 0), IpAddr::from([127, 0, 0, 1]));
        assert_eq!(source_address(server, 199), IpAddr::from([127, 0, 0, 200]));
        assert_eq!(source_address(server, 200), IpAddr::from([127, 0, 0, 1]));
        let remote: SocketAddr = "10.0.0.5:80".parse().expect("address");
        assert_eq!(source_address(remote, 7), IpAddr::from([0, 0, 0, 0]));
    }
}
