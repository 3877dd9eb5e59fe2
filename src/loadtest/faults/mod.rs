//! The fault run (issue 49, docs/reliability.md): the deployment of `scripts/cluster` (three
//! helpnow processes, the SurrealDB server, Redis, HAProxy) with a [`FaultProxy`] in each link
//! between them, funnel visitors and members (two devices each) chatting through the balancer
//! and writing down everything they were told ([`history`]), and a nemesis injecting faults on a
//! schedule drawn from a seed: a process cut off from Redis, from the database or from the
//! balancer, a link held or slowed or lossy, a process paused (SIGSTOP) or killed, Redis or the
//! database server killed (each is started again by the script). Then every fault heals, the
//! clients finish in a quiet period, and the checker ([`checker`]) judges the history against
//! the store.
//!
//! Everything stays on loopback: the proxies listen on 127.0.0.1 and refuse other upstreams, the
//! signals go to the deployment's own processes (its `run/*.pid`), and every fault heals before
//! the run ends, which it does by itself.

pub mod checker;
pub mod history;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tokio::time::Instant;

use super::ai_mock;
use super::client::Target;
use super::proxy::{Fault, FaultProxy};
use super::stats::Stats;
use checker::{Stored, StoredConversation, StoredMessage, Verdict};
use history::{Ctx, History, Member, Phases};

/// The command line of `helpnow-loadtest faults`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "helpnow-loadtest faults",
    about = "Runs the deployment of scripts/cluster with faults injected on a seeded schedule, \
             then checks every message (docs/reliability.md). Exits 0 with no violation, 1 with \
             any, 2 when the run could not be made or checked too little."
)]
pub struct Options {
    /// The seed of the fault schedule (and of which members sign out when).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How long faults are injected, in seconds; a quiet period follows.
    #[arg(long, default_value_t = 90)]
    pub duration: u64,
    /// The time from one fault's start to the next one's, on average, in seconds.
    #[arg(long, default_value_t = 20)]
    pub every: u64,
    /// The longest pause (SIGSTOP) of a process, in seconds.
    #[arg(long, default_value_t = 40)]
    pub max_pause: u64,
    /// Funnel visitors chatting at once.
    #[arg(long, default_value_t = 12)]
    pub visitors: u64,
    /// Members, each on two devices.
    #[arg(long, default_value_t = 4)]
    pub members: u64,
    /// Where the deployment's files, the history, the faults and the report go (emptied first).
    #[arg(long, default_value = "data/faults")]
    pub out: PathBuf,
    /// The checkout of HelpNow (scripts/cluster is there).
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Take helpnow and helpnow-surreal from here (scripts/cluster's HELPNOW_BIN_DIR).
    #[arg(long)]
    pub bin_dir: PathBuf,
    /// Switch on bugs put in on purpose (`HELPNOW_MUTATE`; the build needs the fault-mutations
    /// feature): the run should then find violations.
    #[arg(long)]
    pub mutation: Option<String>,
    /// Only these kinds of fault (comma-separated names, as the report prints them).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Print the verdict as one JSON object on the last line too.
    #[arg(long)]
    pub json: bool,
}

/// The funnel the visitors chat in, and what they say (the load generator's).
const FUNNEL: &str = super::FUNNEL;
const TEXTS: &[&str] = &super::FUNNEL_MESSAGES;
/// After the faults, clients may send for this long, then only wait for what is owed.
const SENDING_AFTER_FAULTS: Duration = Duration::from_secs(5);
/// The quiet period after the faults healed, before the clients close.
const QUIET: Duration = Duration::from_secs(40);
/// The deployment's helpnow processes.
const PROCESSES: usize = 3;

/// What the nemesis can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    CutRedis,
    CutDatabase,
    CutBalancer,
    Hold,
    Slow,
    Lossy,
    Pause,
    Kill,
    RestartRedis,
    RestartDatabase,
}

const ALL_KINDS: [Kind; 10] = [
    Kind::CutRedis,
    Kind::CutDatabase,
    Kind::CutBalancer,
    Kind::Hold,
    Kind::Slow,
    Kind::Lossy,
    Kind::Pause,
    Kind::Kill,
    Kind::RestartRedis,
    Kind::RestartDatabase,
];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::CutRedis => "cut_from_redis",
            Kind::CutDatabase => "cut_from_database",
            Kind::CutBalancer => "cut_from_balancer",
            Kind::Hold => "link_held",
            Kind::Slow => "link_slow",
            Kind::Lossy => "link_lossy",
            Kind::Pause => "pause",
            Kind::Kill => "kill",
            Kind::RestartRedis => "restart_redis",
            Kind::RestartDatabase => "restart_database",
        }
    }
}

/// The links of each process that a proxy sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Redis,
    Database,
    Balancer,
}

impl Link {
    fn name(self) -> &'static str {
        match self {
            Link::Redis => "redis",
            Link::Database => "database",
            Link::Balancer => "balancer",
        }
    }
}

/// One fault of the schedule.
#[derive(Debug, Clone)]
struct Planned {
    at: Duration,
    kind: Kind,
    /// Which process (0-based), where the fault has one.
    process: usize,
    link: Link,
    lasts: Duration,
    /// The delay of a slow link, the percent lost on a lossy one.
    amount: u64,
}

impl Planned {
    fn target(&self) -> String {
        match self.kind {
            Kind::RestartRedis => "redis".into(),
            Kind::RestartDatabase => "database".into(),
            Kind::Pause | Kind::Kill => format!("p{}", self.process + 1),
            Kind::CutRedis | Kind::CutDatabase | Kind::CutBalancer => {
                format!("p{}", self.process + 1)
            }
            Kind::Hold => format!("p{}-{}", self.process + 1, self.link.name()),
            Kind::Slow => format!(
                "p{}-{} +{} ms",
                self.process + 1,
                self.link.name(),
                self.amount
            ),
            Kind::Lossy => format!(
                "p{}-{} {} %",
                self.process + 1,
                self.link.name(),
                self.amount
            ),
        }
    }
}

/// The schedule a seed gives: one fault after another, `every` apart on average, each kind in
/// turn of a shuffled order (so a short run sees several kinds), within `duration`.
fn schedule(options: &Options, kinds: &[Kind]) -> Vec<Planned> {
    let mut rng = StdRng::seed_from_u64(options.seed);
    let mut order: Vec<Kind> = Vec::new();
    let mut planned = Vec::new();
    let duration = Duration::from_secs(options.duration);
    let every = options.every.max(2) as f64;
    // The first fault after the clients have begun.
    let mut at = Duration::from_secs_f64(rng.random_range(2.0..every.max(3.0) / 2.0));
    while at < duration {
        if order.is_empty() {
            order = kinds.to_vec();
            order.shuffle(&mut rng);
        }
        let kind = order.pop().unwrap_or(Kind::Kill);
        let room = duration.saturating_sub(at).as_secs_f64().max(1.0);
        let lasts = match kind {
            Kind::Pause => rng.random_range(5.0..(options.max_pause.max(6) as f64)),
            Kind::Kill | Kind::RestartRedis | Kind::RestartDatabase => 0.0,
            _ => rng.random_range(3.0..15.0),
        }
        .min(room);
        let link = [Link::Redis, Link::Database, Link::Balancer][rng.random_range(0..3)];
        let amount = match kind {
            Kind::Slow => rng.random_range(50..=500),
            Kind::Lossy => rng.random_range(1..=10),
            _ => 0,
        };
        planned.push(Planned {
            at,
            kind,
            process: rng.random_range(0..PROCESSES),
            link,
            lasts: Duration::from_secs_f64(lasts),
            amount,
        });
        // The next one starts after this one healed, `every` later on average.
        let gap = rng.random_range(every * 0.5..every * 1.5);
        at += Duration::from_secs_f64(lasts.max(gap));
    }
    planned
}

/// A loopback port free now.
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|error| format!("no free port: {error}"))
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
}

/// The proxies of one process.
struct Links {
    redis: FaultProxy,
    database: FaultProxy,
    balancer: FaultProxy,
}

impl Links {
    fn get(&self, link: Link) -> &FaultProxy {
        match link {
            Link::Redis => &self.redis,
            Link::Database => &self.database,
            Link::Balancer => &self.balancer,
        }
    }

    fn heal(&self) {
        for proxy in [&self.redis, &self.database, &self.balancer] {
            proxy.set(Fault::Pass);
        }
    }
}

/// The deployment, as the run drives it.
struct Deployment {
    script: tokio::process::Child,
    run: PathBuf,
    links: Vec<Links>,
    helpnow_ports: Vec<u16>,
    surreal_port: u16,
    redis_port: u16,
    balancer: u16,
    password: String,
}

impl Deployment {
    fn pid(&self, part: &str) -> Option<String> {
        std::fs::read_to_string(self.run.join(format!("{part}.pid")))
            .ok()
            .map(|pid| pid.trim().to_owned())
            .filter(|pid| !pid.is_empty() && pid.chars().all(|c| c.is_ascii_digit()))
    }

    fn signal(&self, part: &str, signal: &str) {
        if let Some(pid) = self.pid(part) {
            let _ = std::process::Command::new("kill")
                .args([format!("-{signal}"), pid])
                .status();
        }
    }

    /// Every fault off: links pass, paused processes go on.
    fn heal_all(&self) {
        for links in &self.links {
            links.heal();
        }
        for n in 1..=self.links.len() {
            self.signal(&format!("p{n}"), "CONT");
        }
    }

    /// Waits (at most `within`) until every part answers: each helpnow process's and the
    /// database's /health, and Redis's port.
    async fn wait_healthy(&self, within: Duration) -> bool {
        let until = Instant::now() + within;
        let http = reqwest::Client::new();
        while Instant::now() < until {
            let mut all = true;
            for port in self.helpnow_ports.iter().chain([&self.surreal_port]) {
                let ok = http
                    .get(format!("http://127.0.0.1:{port}/health"))
                    .timeout(Duration::from_secs(1))
                    .send()
                    .await
                    .is_ok_and(|answer| answer.status().is_success());
                all &= ok;
            }
            all &= tokio::net::TcpStream::connect(loopback(self.redis_port))
                .await
                .is_ok();
            if all {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        false
    }

    async fn stop(mut self) {
        if let Some(pid) = self.script.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        if tokio::time::timeout(Duration::from_secs(60), self.script.wait())
            .await
            .is_err()
        {
            // Its process group: the script and every part it started.
            if let Some(pid) = self.script.id() {
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", "--", &format!("-{pid}")])
                    .status();
            }
            let _ = self.script.wait().await;
        }
    }
}

/// Starts the proxies and scripts/cluster behind them; answers once it is ready.
async fn start_deployment(options: &Options, ai: SocketAddr) -> Result<Deployment, String> {
    let cluster_data = options.out.join("cluster");
    let surreal_port = free_port()?;
    let redis_port = free_port()?;
    let balancer = free_port()?;
    let mut links = Vec::new();
    let mut helpnow_ports = Vec::new();
    let mut env: Vec<(String, String)> = vec![
        (
            "HELPNOW_BIN_DIR".into(),
            options.bin_dir.display().to_string(),
        ),
        ("CLUSTER_DATA".into(), cluster_data.display().to_string()),
        ("CLUSTER_PORT".into(), balancer.to_string()),
        ("CLUSTER_PROCESSES".into(), PROCESSES.to_string()),
        ("CLUSTER_SURREAL_PORT".into(), surreal_port.to_string()),
        ("CLUSTER_REDIS_PORT".into(), redis_port.to_string()),
        ("APP__AI__PROVIDER".into(), "openai".into()),
        ("APP__AI__BASE_URL".into(), format!("http://{ai}/v1")),
        ("APP__AI__API_KEY".into(), "sk-loadtest".into()),
        // Every client comes from a few loopback addresses.
        ("APP__REALTIME__FUNNEL_JOINS_PER_MINUTE".into(), "0".into()),
        ("APP__REALTIME__MEMBER_JOINS_PER_MINUTE".into(), "0".into()),
        (
            "APP__LOG__FILTER".into(),
            std::env::var("APP__LOG__FILTER").unwrap_or_else(|_| "warn".into()),
        ),
    ];
    if let Some(mutation) = &options.mutation {
        env.push(("HELPNOW_MUTATE".into(), mutation.clone()));
    }
    for n in 1..=PROCESSES {
        let port = free_port()?;
        helpnow_ports.push(port);
        let to = |port| FaultProxy::start(loopback(port));
        let proxies = Links {
            redis: to(redis_port).await.map_err(|e| e.to_string())?,
            database: to(surreal_port).await.map_err(|e| e.to_string())?,
            balancer: to(port).await.map_err(|e| e.to_string())?,
        };
        env.push((format!("CLUSTER_P{n}_PORT"), port.to_string()));
        env.push((
            format!("CLUSTER_P{n}_REDIS_PORT"),
            proxies.redis.address().port().to_string(),
        ));
        env.push((
            format!("CLUSTER_P{n}_SURREAL_PORT"),
            proxies.database.address().port().to_string(),
        ));
        env.push((
            format!("CLUSTER_P{n}_BALANCED_PORT"),
            proxies.balancer.address().port().to_string(),
        ));
        links.push(proxies);
    }
    let log = std::fs::File::create(options.out.join("cluster.log"))
        .map_err(|error| format!("cannot write the cluster's log: {error}"))?;
    let mut script = tokio::process::Command::new(options.root.join("scripts/cluster"))
        .envs(env)
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        .stdin(std::process::Stdio::null())
        // A group of its own: whatever happens to this run, the whole deployment can be stopped.
        .process_group(0)
        .kill_on_drop(false)
        .spawn()
        .map_err(|error| format!("cannot start scripts/cluster: {error}"))?;
    let stdout = script.stdout.take().ok_or("no standard output")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(300), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.starts_with("ready:") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    let password = std::fs::read_to_string(cluster_data.join("secrets"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| {
            line.strip_prefix("surreal_root_password=")
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let deployment = Deployment {
        script,
        run: cluster_data.join("run"),
        links,
        helpnow_ports,
        surreal_port,
        redis_port,
        balancer,
        password,
    };
    if !ready {
        deployment.stop().await;
        return Err(format!(
            "scripts/cluster did not get ready; its log: {}",
            options.out.join("cluster.log").display()
        ));
    }
    Ok(deployment)
}

/// Injects `fault`, waits out its time, heals it; answers what it was, as the checker reads it.
async fn inject(
    deployment: &Deployment,
    fault: &Planned,
    began: Instant,
    log: &std::sync::Mutex<std::fs::File>,
) -> checker::Fault {
    let start = began.elapsed().as_millis() as u64;
    let process = format!("p{}", fault.process + 1);
    let links = &deployment.links[fault.process];
    match fault.kind {
        Kind::CutRedis => links.redis.set(Fault::Cut),
        Kind::CutDatabase => links.database.set(Fault::Cut),
        Kind::CutBalancer => links.balancer.set(Fault::Cut),
        Kind::Hold => links.get(fault.link).set(Fault::Stall),
        Kind::Slow => links
            .get(fault.link)
            .set(Fault::Delay(Duration::from_millis(fault.amount))),
        Kind::Lossy => links
            .get(fault.link)
            .set(Fault::Lossy(u8::try_from(fault.amount).unwrap_or(10))),
        Kind::Pause => deployment.signal(&process, "STOP"),
        Kind::Kill => deployment.signal(&process, "KILL"),
        Kind::RestartRedis => deployment.signal("redis", "KILL"),
        Kind::RestartDatabase => deployment.signal("surreal", "KILL"),
    }
    tokio::time::sleep(fault.lasts).await;
    match fault.kind {
        Kind::Pause => deployment.signal(&process, "CONT"),
        Kind::Kill | Kind::RestartRedis | Kind::RestartDatabase => {
            // Healed when the part is back (its script starts it again).
            tokio::time::sleep(Duration::from_millis(300)).await;
            deployment.wait_healthy(Duration::from_secs(60)).await;
        }
        _ => links.heal(),
    }
    let done = checker::Fault {
        kind: fault.kind.name().to_owned(),
        target: fault.target(),
        start,
        heal: began.elapsed().as_millis() as u64,
    };
    if let Ok(mut file) = log.lock() {
        use std::io::Write;
        let _ = writeln!(file, "{}", json!(done));
    }
    eprintln!(
        "  {:>6.1} s {} {} for {:.1} s",
        start as f64 / 1000.0,
        done.kind,
        done.target,
        (done.heal - done.start) as f64 / 1000.0
    );
    done
}

/// What a run found.
pub struct Outcome {
    pub verdict: Verdict,
    /// Too little was checked for a clean verdict to mean anything.
    pub too_little: Option<String>,
}

/// The whole run: deployment, load, faults, quiet, dump, check.
pub async fn run(options: &Options) -> Result<Outcome, String> {
    let kinds: Vec<Kind> = if options.kinds.is_empty() {
        ALL_KINDS.to_vec()
    } else {
        options
            .kinds
            .iter()
            .map(|name| {
                ALL_KINDS
                    .iter()
                    .copied()
                    .find(|kind| kind.name() == name)
                    .ok_or_else(|| {
                        let names: Vec<_> = ALL_KINDS.iter().map(|k| k.name()).collect();
                        format!("no fault {name}: one of {}", names.join(", "))
                    })
            })
            .collect::<Result<_, _>>()?
    };
    let plan = schedule(options, &kinds);
    if options.out.exists() {
        std::fs::remove_dir_all(&options.out)
            .map_err(|error| format!("cannot empty {}: {error}", options.out.display()))?;
    }
    std::fs::create_dir_all(&options.out)
        .map_err(|error| format!("cannot make {}: {error}", options.out.display()))?;
    let ai_settings = ai_mock::MockAiSettings {
        latency: Duration::from_millis(200),
        tokens_per_second: 25.0,
        reply_tokens: 40,
    };
    let (ai, _mock) = ai_mock::start(loopback(0), ai_settings)
        .await
        .map_err(|error| format!("the mock AI provider cannot start: {error}"))?;
    eprintln!(
        "==> starting the deployment (scripts/cluster) behind {} proxies",
        PROCESSES * 3
    );
    let deployment = start_deployment(options, ai).await?;
    let result = drive(options, &deployment, &plan).await;
    let stored = match &result {
        Ok(driven) => dump(&deployment, driven.began_wall).await,
        Err(_) => Err("not read".into()),
    };
    eprintln!("==> stopping the deployment");
    deployment.stop().await;
    let Driven {
        history: history_path,
        faults,
        ends,
        ..
    } = result?;
    let stored = stored?;
    let _ = std::fs::write(
        options.out.join("store.json"),
        serde_json::to_string_pretty(&stored).unwrap_or_default(),
    );
    let history = history::read(&history_path)?;
    let verdict = checker::check(&history, &faults, &stored, ends);
    let too_little = if faults.is_empty() {
        Some("no fault was injected".to_owned())
    } else if verdict.operations.acknowledged == 0 || verdict.operations.sends_during_faults == 0 {
        Some("no message was sent while a fault was on".to_owned())
    } else {
        None
    };
    let report = json!({ "seed": options.seed, "duration": options.duration, "every": options.every, "mutation": options.mutation, "verdict": verdict, "faults": faults });
    let _ = std::fs::write(
        options.out.join("report.json"),
        serde_json::to_string_pretty(&report).unwrap_or_default(),
    );
    Ok(Outcome {
        verdict,
        too_little,
    })
}

/// What the load and the faults left.
struct Driven {
    history: PathBuf,
    faults: Vec<checker::Fault>,
    /// When the run ended, in milliseconds since it began.
    ends: u64,
    /// When it began, in Unix milliseconds (the store's times are read relative to it).
    began_wall: i64,
}

/// The load and the faults.
async fn drive(
    options: &Options,
    deployment: &Deployment,
    plan: &[Planned],
) -> Result<Driven, String> {
    let base: url::Url = format!("http://127.0.0.1:{}/", deployment.balancer)
        .parse()
        .map_err(|error| format!("{error}"))?;
    let target = Target {
        address: loopback(deployment.balancer),
        host: format!("127.0.0.1:{}", deployment.balancer),
    };
    eprintln!("==> making {} members", options.members);
    let http = super::http_clients_for(target.address, options.members.max(1))?;
    let stats = Stats::default();
    let secrets = super::member::make_members(&base, &http, options.members, &stats).await;
    let secrets: Vec<String> = secrets.into_iter().flatten().collect();
    if secrets.len() as u64 != options.members {
        return Err(format!(
            "only {} of {} members could be made",
            secrets.len(),
            options.members
        ));
    }
    let began = Instant::now();
    let began_wall = chrono::Utc::now();
    let faults_end = began + Duration::from_secs(options.duration);
    let phases = Phases {
        sending_ends: faults_end + SENDING_AFTER_FAULTS,
        ends: faults_end + QUIET,
    };
    let history_path = options.out.join("history.jsonl");
    let ctx = Arc::new(Ctx {
        target,
        history: Arc::new(History::create(&history_path, began)?),
        phases,
    });
    let mut clients = tokio::task::JoinSet::new();
    for n in 0..options.visitors {
        let local = super::source_address(ctx.target.address, n);
        clients.spawn(history::visitor(ctx.clone(), n, local, FUNNEL, TEXTS));
    }
    let mut rng = StdRng::seed_from_u64(options.seed ^ 0x5167_6e6f_7574);
    for (index, secret) in secrets.into_iter().enumerate() {
        let member = Arc::new(Member {
            secret,
            name: format!("m{index}"),
            chat: std::sync::Mutex::new(None),
            signed_out: std::sync::atomic::AtomicBool::new(false),
        });
        for (device, n) in [('a', 0), ('b', 1)] {
            let local =
                super::source_address(ctx.target.address, options.visitors + 2 * index as u64 + n);
            clients.spawn(history::device(ctx.clone(), member.clone(), device, local));
        }
        // Every other member signs out, at a moment of the fault period.
        if index % 2 == 1 {
            let at = began
                + Duration::from_secs_f64(rng.random_range(0.3..0.9) * options.duration as f64);
            clients.spawn(history::sign_out(
                ctx.clone(),
                member,
                http[index % http.len()].clone(),
                base.clone(),
                at,
            ));
        }
    }
    eprintln!(
        "==> {} visitors and {} members chatting; faults for {} s (seed {})",
        options.visitors, options.members, options.duration, options.seed
    );
    let log = std::sync::Mutex::new(
        std::fs::File::create(options.out.join("faults.jsonl"))
            .map_err(|error| format!("cannot write the faults: {error}"))?,
    );
    let mut faults = Vec::new();
    for fault in plan {
        tokio::time::sleep_until(began + fault.at).await;
        faults.push(inject(deployment, fault, began, &log).await);
    }
    tokio::time::sleep_until(faults_end).await;
    deployment.heal_all();
    if !deployment.wait_healthy(Duration::from_secs(90)).await {
        eprintln!("warning: a part did not answer within 90 s of the faults' end");
    }
    eprintln!("==> every fault healed; quiet until the clients finish");
    let _ = tokio::time::timeout_at(phases.ends + Duration::from_secs(20), async {
        while clients.join_next().await.is_some() {}
    })
    .await;
    clients.abort_all();
    ctx.history.flush();
    Ok(Driven {
        history: history_path,
        faults,
        ends: began.elapsed().as_millis() as u64,
        began_wall: began_wall.timestamp_millis(),
    })
}

/// Reads what the store holds, as the root user of the SurrealDB server; times in milliseconds
/// since `began` (Unix milliseconds).
async fn dump(deployment: &Deployment, began: i64) -> Result<Stored, String> {
    let settings = crate::config::DatabaseSettings {
        url: format!("ws://127.0.0.1:{}", deployment.surreal_port),
        namespace: "helpnow".into(),
        database: "main".into(),
        username: Some("root".into()),
        password: Some(deployment.password.clone().into()),
        unanswered_exit_secs: 0,
    };
    let db = crate::store::open(&settings)
        .await
        .map_err(|error| format!("cannot read the store: {error}"))?;
    let mut answer = db
        .query(
            "SELECT record::id(id) AS id, record::id(visitor) AS visitor, \
                 IF checkout_deadline THEN <string> checkout_deadline END AS deadline, \
                 IF checkout_started_at THEN <string> checkout_started_at END AS started \
                 FROM funnel_conversation;
             SELECT record::id(id) AS id, role, text, <string> at AS at FROM funnel_message;
             SELECT record::id(visitor) AS visitor FROM checkout_session WHERE visitor != NONE;
             SELECT record::id(id) AS id, record::id(chat) AS chat, role, content, \
                 <string> created_at AS at FROM message;",
        )
        .await
        .map_err(|error| format!("cannot read the store: {error}"))?;
    let rows = |answer: &mut surrealdb::IndexedResults, index: usize| {
        answer
            .take::<Vec<serde_json::Value>>(index)
            .map_err(|error| format!("cannot read the store: {error}"))
    };
    let conversations = rows(&mut answer, 0)?;
    let messages = rows(&mut answer, 1)?;
    let checkouts = rows(&mut answer, 2)?;
    let chat_messages = rows(&mut answer, 3)?;
    let text = |value: &serde_json::Value, key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let millis = |value: &serde_json::Value, key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .and_then(|at| {
                chrono::DateTime::parse_from_rfc3339(
                    at.trim_start_matches("d'").trim_end_matches('\''),
                )
                .ok()
            })
            .map(|at| at.timestamp_millis() - began)
    };
    let mut by_id: BTreeMap<String, StoredConversation> = conversations
        .iter()
        .map(|row| {
            let id = text(row, "id");
            (
                id.clone(),
                StoredConversation {
                    id,
                    visitor: text(row, "visitor"),
                    messages: Vec::new(),
                    at: Vec::new(),
                    deadline: millis(row, "deadline"),
                    started: millis(row, "started"),
                },
            )
        })
        .collect();
    let mut placed: BTreeMap<String, Vec<(i64, String, String, i64)>> = BTreeMap::new();
    for row in &messages {
        let Some([conversation, place]) = row
            .get("id")
            .and_then(serde_json::Value::as_array)
            .and_then(|key| <&[serde_json::Value; 2]>::try_from(key.as_slice()).ok())
        else {
            continue;
        };
        placed
            .entry(conversation.as_str().unwrap_or_default().to_owned())
            .or_default()
            .push((
                place.as_i64().unwrap_or(0),
                text(row, "role"),
                text(row, "text"),
                millis(row, "at").unwrap_or(0),
            ));
    }
    for (conversation, mut messages) in placed {
        messages.sort();
        if let Some(stored) = by_id.get_mut(&conversation) {
            stored.at = messages.iter().map(|m| m.3).collect();
            stored.messages = messages
                .into_iter()
                .map(|(_, role, text, _)| (role, text))
                .collect();
        }
    }
    Ok(Stored {
        conversations: by_id.into_values().collect(),
        checkouts: checkouts.iter().map(|row| text(row, "visitor")).collect(),
        messages: chat_messages
            .iter()
            .map(|row| StoredMessage {
                id: text(row, "id"),
                chat: text(row, "chat"),
                role: text(row, "role"),
                content: text(row, "content"),
                at: millis(row, "at").unwrap_or(0),
            })
            .collect(),
    })
}

/// Where a run's files are, for the report.
pub fn files(out: &Path) -> String {
    format!(
        "{}/history.jsonl, faults.jsonl, store.json, cluster.log, report.json",
        out.display()
    )
}
