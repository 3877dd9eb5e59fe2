//! Real processes for the tests that need them: the `helpnow` binary (durability, several
//! processes) and the SurrealDB server (`helpnow-surreal`) that several of them share.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::helpers::project_root;

pub struct Server {
    child: Child,
    pub address: String,
    /// How many migrations the server applied while it started.
    pub migrations_applied: usize,
    /// Log lines after the start-up line.
    log: mpsc::Receiver<serde_json::Value>,
}

pub fn start(database_url: &str) -> Server {
    start_with(database_url, &[])
}

pub fn start_with(database_url: &str, settings: &[(&str, &str)]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_helpnow"))
        .current_dir(project_root())
        .env("APP_ENV", "test")
        .env("APP__SERVER__PORT", "0")
        .env("APP__DATABASE__URL", database_url)
        .env("APP__LOG__FORMAT", "json")
        .env("APP__LOG__FILTER", "info")
        .env_remove("RUST_LOG")
        .envs(settings.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the helpnow binary starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let (sender, log) = mpsc::channel();
    let show_log = std::env::var_os("HELPNOW_TEST_SERVER_LOG").is_some();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // HELPNOW_TEST_SERVER_LOG=1 shows what the servers log, to see why a test failed.
            if show_log {
                eprintln!("server: {line}");
            }
            if let Ok(entry) = serde_json::from_str::<serde_json::Value>(&line) {
                let _ = sender.send(entry);
            }
        }
    });
    let mut migrations_applied = 0;
    let address = loop {
        let entry = log
            .recv_timeout(Duration::from_secs(60))
            .expect("the server logs its address within a minute");
        if entry["message"] == "migration applied" {
            migrations_applied += 1;
        }
        if entry["message"] == "HelpNow is listening" {
            assert_eq!(
                entry["database"], database_url,
                "the start-up line names the database"
            );
            assert_eq!(entry["level"], "INFO");
            break entry["address"].as_str().expect("address").to_owned();
        }
    };
    Server {
        child,
        address,
        migrations_applied,
        log,
    }
}

impl Drop for Server {
    /// A failing test must not leave its server running.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub fn kill_hard(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// Waits up to `within` for the server to exit by itself: its exit and what it logged
    /// meanwhile, or `None` while it still runs.
    pub fn exited_within(
        &mut self,
        within: Duration,
    ) -> Option<(std::process::ExitStatus, Vec<serde_json::Value>)> {
        let until = std::time::Instant::now() + within;
        while std::time::Instant::now() < until {
            if let Some(exit) = self.child.try_wait().expect("wait") {
                let mut lines = Vec::new();
                while let Ok(entry) = self.log.recv_timeout(Duration::from_secs(2)) {
                    lines.push(entry);
                }
                return Some((exit, lines));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    /// Sends SIGTERM, waits for the exit, and returns it with what the server logged meanwhile.
    pub fn terminate(mut self) -> (std::process::ExitStatus, Vec<serde_json::Value>) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        for _ in 0..300 {
            if let Some(exit) = self.child.try_wait().expect("wait") {
                // The reader thread ends with the pipe; give it a moment to pass on the last lines.
                let mut lines = Vec::new();
                while let Ok(entry) = self.log.recv_timeout(Duration::from_secs(2)) {
                    lines.push(entry);
                }
                return (exit, lines);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the server did not stop within 30 s of SIGTERM");
    }
}

/// The SurrealDB server (`helpnow-surreal`, surreal/main.rs) on SurrealKV files of its own, on a
/// free loopback port, with root credentials of its own; stopped (SIGKILL) when dropped.
pub struct SurrealServer {
    child: Child,
    /// `ws://127.0.0.1:PORT`: `database.url` of the helpnow processes that share it.
    pub url: String,
    pub username: String,
    pub password: String,
    port: u16,
    _folder: tempfile::TempDir,
}

impl SurrealServer {
    pub fn start() -> Self {
        let folder = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let password = format!("test-{}", rand::random::<u64>());
        let mut server = Self {
            child: Self::spawn(port, &password, folder.path()),
            url: format!("ws://127.0.0.1:{port}"),
            username: "root".into(),
            password,
            port,
            _folder: folder,
        };
        server.wait_until_healthy();
        server
    }

    fn spawn(port: u16, password: &str, folder: &std::path::Path) -> Child {
        Command::new(env!("CARGO_BIN_EXE_helpnow-surreal"))
            .args([
                "start",
                "--no-banner",
                "--log",
                "warn",
                "--user",
                "root",
                "--pass",
                password,
                "--bind",
                &format!("127.0.0.1:{port}"),
                &format!("surrealkv://{}/db", folder.display()),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the SurrealDB server starts")
    }

    fn wait_until_healthy(&mut self) {
        let health = format!("http://127.0.0.1:{}/health", self.port);
        for _ in 0..600 {
            if status_of_get(&health).is_ok_and(|status| status == 200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the SurrealDB server was not healthy within a minute");
    }

    /// `kill -9`, then nothing until `restart`.
    pub fn kill_hard(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// Starts it again on the same port and files.
    pub fn restart(&mut self) {
        self.child = Self::spawn(self.port, &self.password, self._folder.path());
        self.wait_until_healthy();
    }

    /// The settings a helpnow process needs to use this server.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("APP__DATABASE__URL", self.url.clone()),
            ("APP__DATABASE__USERNAME", self.username.clone()),
            ("APP__DATABASE__PASSWORD", self.password.clone()),
        ]
    }
}

impl Drop for SurrealServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nobody listens on now (the operating system's pick, released at once).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// The status of a GET, without a runtime (the processes start from synchronous code).
pub fn status_of_get(url: &str) -> std::io::Result<u16> {
    {
        use std::io::{Read, Write};
        let url = url::Url::parse(url).map_err(std::io::Error::other)?;
        let address = format!(
            "{}:{}",
            url.host_str().unwrap_or("127.0.0.1"),
            url.port().unwrap_or(80)
        );
        let mut stream = std::net::TcpStream::connect(address)?;
        stream.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
        write!(
            stream,
            "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            url.path(),
            url.host_str().unwrap_or("")
        )?;
        let mut head = [0; 12];
        stream.read_exact(&mut head)?;
        let status = std::str::from_utf8(&head[9..12])
            .ok()
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| std::io::Error::other("not an HTTP response"))?;
        Ok(status)
    }
}

/// Debian's HAProxy with the configuration we ship (`config/haproxy.cfg`) in front of `servers`,
/// on a free loopback port, for a public URL over plain http (as the processes' is); stopped
/// (SIGKILL) when dropped.
pub struct Balancer {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub address: String,
    /// HAProxy's own statistics page for the tests (`http://127.0.0.1:PORT/stats`), on a port of
    /// its own that the shipped configuration does not have.
    stats: String,
    _config: tempfile::NamedTempFile,
}

impl Balancer {
    pub fn start(servers: &[&Server]) -> Self {
        Self::start_for(servers, "http")
    }

    /// The same, for a public URL of `scheme` (`HELPNOW_PUBLIC_SCHEME`).
    pub fn start_for(servers: &[&Server], scheme: &str) -> Self {
        use std::io::Write;
        let shipped = std::fs::read_to_string(project_root().join("config/haproxy.cfg"))
            .expect("config/haproxy.cfg");
        let mut config = tempfile::NamedTempFile::new().expect("a temp file");
        write!(config, "{shipped}").expect("written");
        for (n, server) in servers.iter().enumerate() {
            let url = url::Url::parse(&server.address).expect("address");
            let address = format!(
                "{}:{}",
                url.host_str().expect("host"),
                url.port().expect("port")
            );
            writeln!(config, "    server p{n} {address} cookie p{n}").expect("written");
        }
        let stats_port = free_port();
        write!(
            config,
            "\nfrontend test_stats\n    bind 127.0.0.1:{stats_port}\n    stats enable\n    stats uri /stats\n"
        )
        .expect("written");
        config.flush().expect("flushed");
        let port = free_port();
        let child = Command::new(haproxy())
            .arg("-db")
            .arg("-f")
            .arg(config.path())
            .env("HELPNOW_BIND", format!("127.0.0.1:{port}"))
            .env("HELPNOW_PUBLIC_SCHEME", scheme)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("haproxy starts (scripts/test installs Debian's haproxy)");
        let balancer = Self {
            child,
            address: format!("http://127.0.0.1:{port}"),
            stats: format!("http://127.0.0.1:{stats_port}/stats;csv"),
            _config: config,
        };
        let health = format!("{}/health", balancer.address);
        for _ in 0..300 {
            if status_of_get(&health).is_ok_and(|status| status == 200) {
                return balancer;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the balancer did not answer /health within 30 s");
    }
}

impl Balancer {
    /// What HAProxy says of the server `p{n}` (the `status` column of its statistics: `UP`,
    /// `DOWN`, `UP 1/2` while a check is under way...).
    pub async fn status_of(&self, n: usize) -> String {
        let csv = reqwest::get(&self.stats)
            .await
            .expect("the statistics answer")
            .text()
            .await
            .expect("text");
        let mut lines = csv.lines();
        let header = lines.next().unwrap_or_default().trim_start_matches("# ");
        let column = |name: &str| header.split(',').position(|field| field == name);
        let (proxy, server, status) = (
            column("pxname").expect("pxname"),
            column("svname").expect("svname"),
            column("status").expect("status"),
        );
        lines
            .map(|line| line.split(',').collect::<Vec<_>>())
            .find(|fields| fields[proxy] == "helpnow" && fields[server] == format!("p{n}"))
            .map(|fields| fields[status].to_owned())
            .unwrap_or_else(|| panic!("no server p{n} in {csv}"))
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian puts haproxy in /usr/sbin, which a non-root PATH may lack.
fn haproxy() -> &'static str {
    if std::path::Path::new("/usr/sbin/haproxy").exists() {
        "/usr/sbin/haproxy"
    } else {
        "haproxy"
    }
}

/// Debian's Redis server on a free loopback port, nothing kept on disk, with the ACL we ship
/// (`config/redis.conf`) and a password of its own: the event engine that several helpnow
/// processes share; stopped (SIGKILL) when dropped.
pub struct RedisServer {
    child: Child,
    /// `redis://helpnow:PASSWORD@127.0.0.1:PORT`: `events.redis_url` of the helpnow processes that
    /// share it.
    pub url: String,
    /// `redis://127.0.0.1:PORT`: the same server without credentials.
    pub address: String,
    /// A user that may only count a channel's subscribers (`PUBSUB NUMSUB`), for the tests that
    /// watch the processes subscribe: `redis://observer:PASSWORD@127.0.0.1:PORT`.
    pub observer_url: String,
    password: String,
    port: u16,
}

impl RedisServer {
    pub fn start() -> Self {
        let port = free_port();
        let password = format!("test-{:032x}", rand::random::<u128>());
        let mut server = Self {
            child: Self::spawn(port, &password),
            url: format!("redis://helpnow:{password}@127.0.0.1:{port}"),
            address: format!("redis://127.0.0.1:{port}"),
            observer_url: format!("redis://observer:{password}@127.0.0.1:{port}"),
            password,
            port,
        };
        server.wait_until_listening();
        server
    }

    /// `config/redis.conf` with `password`, read from the standard input (so the password is not
    /// in the process list), listening on loopback at `port`.
    fn spawn(port: u16, password: &str) -> Child {
        use std::io::Write;
        let shipped = std::fs::read_to_string(project_root().join("config/redis.conf"))
            .expect("config/redis.conf");
        let config = format!(
            "{}\nuser observer on >{password} -@all +pubsub|numsub\n",
            shipped.replace("HELPNOW_REDIS_PASSWORD", password)
        );
        let mut child = Command::new("redis-server")
            .args(["-", "--port", &port.to_string(), "--bind", "127.0.0.1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("redis-server starts (scripts/test installs Debian's redis-server)");
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin
            .write_all(config.as_bytes())
            .expect("the configuration");
        child
    }

    fn wait_until_listening(&mut self) {
        for _ in 0..300 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("redis-server did not listen within 30 s");
    }

    /// Where it listens, for a fault proxy in front of it.
    pub fn socket_address(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `url`, reaching it through `address` (a fault proxy in front of it).
    pub fn url_through(&self, address: std::net::SocketAddr) -> String {
        format!("redis://helpnow:{}@{address}", self.password)
    }

    /// `kill -9`, then nothing until `restart`.
    pub fn kill_hard(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// Starts it again on the same port and password (empty: it keeps nothing on disk).
    pub fn restart(&mut self) {
        self.child = Self::spawn(self.port, &self.password);
        self.wait_until_listening();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
