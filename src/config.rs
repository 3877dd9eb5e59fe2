//! Layered settings: `config/base.toml` < `config/{APP_ENV}.toml` < `APP__SECTION__KEY` environment
//! variables. Secrets are `SecretString`s, so they never show up in logs or `Debug` output.
//! A bad value stops start-up with a message that names the key.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

/// Which layered file sits on top of `base.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppEnv {
    Local,
    Test,
    Production,
}

impl AppEnv {
    pub fn as_str(self) -> &'static str {
        match self {
            AppEnv::Local => "local",
            AppEnv::Test => "test",
            AppEnv::Production => "production",
        }
    }

    /// Reads `APP_ENV` (default `local`).
    pub fn from_env() -> Result<Self, ConfigError> {
        match std::env::var("APP_ENV") {
            Ok(value) => value.parse(),
            Err(_) => Ok(AppEnv::Local),
        }
    }
}

impl std::str::FromStr for AppEnv {
    type Err = ConfigError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.trim().to_lowercase().as_str() {
            "local" => Ok(AppEnv::Local),
            "test" => Ok(AppEnv::Test),
            "production" => Ok(AppEnv::Production),
            other => Err(ConfigError::invalid(
                "APP_ENV",
                format!("'{other}' is not one of local, test, production"),
            )),
        }
    }
}

/// Why the settings could not be loaded; the message always names the key at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration key `{key}`: {problem}")]
    Invalid { key: String, problem: String },
    #[error("configuration: {0}")]
    Load(String),
}

impl ConfigError {
    fn invalid(key: &str, problem: impl Into<String>) -> Self {
        ConfigError::Invalid {
            key: key.to_owned(),
            problem: problem.into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    pub server: ServerSettings,
    pub database: DatabaseSettings,
    pub product: ProductSettings,
    pub payments: PaymentSettings,
    #[serde(default)]
    pub stripe: StripeSettings,
    pub ai: AiSettings,
    pub mail: MailSettings,
    pub security: SecuritySettings,
    pub realtime: RealtimeSettings,
    #[serde(default)]
    pub admin: AdminSettings,
    #[serde(default)]
    pub analytics: AnalyticsSettings,
    #[serde(default)]
    pub events: EventsSettings,
    #[serde(default)]
    pub backup: BackupSettings,
    pub log: LogSettings,
}

/// Backups the server takes by itself (`store::backup::spawn_schedule`): none unless `folder` is
/// set. With several processes, set it on one of them.
#[derive(Debug, Clone, Deserialize)]
pub struct BackupSettings {
    /// Where they go, as `helpnow-backup-YYYYMMDDTHHMMSS.mmmZ.surql`.
    #[serde(default)]
    pub folder: Option<PathBuf>,
    /// Seconds between two (a day by default); the first is taken this long after the start.
    #[serde(default = "BackupSettings::default_every_secs")]
    pub every_secs: u64,
    /// How many are kept: after each new one, the oldest beyond this count are removed.
    #[serde(default = "BackupSettings::default_keep")]
    pub keep: usize,
}

impl BackupSettings {
    fn default_every_secs() -> u64 {
        86_400
    }

    fn default_keep() -> usize {
        7
    }
}

impl Default for BackupSettings {
    fn default() -> Self {
        Self {
            folder: None,
            every_secs: Self::default_every_secs(),
            keep: Self::default_keep(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct ServerSettings {
    pub host: String,
    pub port: u16,
    pub public_url: url::Url,
    /// The built web app (`web/dist`), relative to the working directory.
    pub static_dir: PathBuf,
    /// Where `legal/` and `shortcuts.toml` are read from.
    pub content_dir: PathBuf,
    /// Seconds a stop (SIGTERM/SIGINT) gives the live conversations to finish their saves and
    /// replies, the sockets to close and the requests in flight to finish, after `drain_ms`.
    pub shutdown_timeout_secs: u64,
    /// Milliseconds between a stop's first step (readiness fails) and the next (the
    /// conversations handed over, the sockets asked to connect again): the balancer's time to
    /// take the process out (its health checks' interval times the failures it waits for), so
    /// that clients connect again to another process. 0 without a balancer.
    #[serde(default)]
    pub drain_ms: u64,
    /// Extra origins allowed besides `public_url` (for the real-time channel).
    #[serde(default, deserialize_with = "list_or_commas")]
    pub allowed_origins: Vec<String>,
    /// Our own proxies (load balancer, reverse proxy, CDN), as addresses or networks
    /// (`10.0.0.5`, `10.0.0.0/24`): `X-Forwarded-For` is read exactly when the peer is one of
    /// them, and their entries in it are skipped from the right. Loopback by default (a balancer
    /// on the same machine); empty, the header is never read.
    #[serde(
        default = "ServerSettings::default_trusted_proxies",
        deserialize_with = "proxy_networks"
    )]
    pub trusted_proxies: Vec<crate::client::ProxyNetwork>,
    /// The nice value (0-19) of the main runtime's threads: the store's queries and the
    /// background jobs (`crate::startup::runtime`). 0 leaves them at the process's own.
    #[serde(default)]
    pub background_nice: i32,
}

impl ServerSettings {
    /// The origins browsers may use this server from, serialized (`https://helpnow.example`): the
    /// public URL's and `allowed_origins` (for the real-time channel and `/api` writes alike).
    pub fn site_origins(&self) -> Vec<String> {
        std::iter::once(self.public_url.clone())
            .chain(
                self.allowed_origins
                    .iter()
                    .filter_map(|origin| url::Url::parse(origin).ok()),
            )
            .map(|url| url.origin().ascii_serialization())
            .collect()
    }

    /// How the client's address is read (`crate::client::Forwarding`).
    pub fn forwarding(&self) -> crate::client::Forwarding {
        crate::client::Forwarding {
            proxies: self.trusted_proxies.as_slice().into(),
        }
    }

    fn default_trusted_proxies() -> Vec<crate::client::ProxyNetwork> {
        crate::client::ProxyNetwork::LOOPBACK.to_vec()
    }
}

/// The real-time channel at `/socket.io/` (see docs/protocol.md).
#[derive(Debug, Clone, Deserialize)]
pub struct RealtimeSettings {
    pub ping_interval_ms: u64,
    pub ping_timeout_ms: u64,
    /// A connection that joins no namespace within this is closed.
    pub connect_timeout_ms: u64,
    /// The largest message or polling request body, in bytes.
    pub max_payload_bytes: usize,
    /// Messages one connection may send per second (0: no limit), with bursts up to `message_burst`.
    pub messages_per_second: u32,
    pub message_burst: u32,
    /// How long a lost connection's sockets wait to be recovered (0: no recovery).
    pub recovery_window_secs: u64,
    /// Funnel conversations (and rejoins) one address may open per minute (0: no limit).
    pub funnel_joins_per_minute: u32,
    /// `/member` connections one address may open a minute (0 = no limit).
    pub member_joins_per_minute: u32,
    /// Real-time connections held at once; new ones past it are refused with 503. 0: the
    /// process's open-file limit less a quarter of it, keeping back at most 1,000 files (for HTTP
    /// requests, the database and the AI); no cap where the limit is unlimited or unknown.
    #[serde(default)]
    pub max_connections: usize,
    /// Real-time connections one address may hold at once; new ones past it are refused with 429
    /// (0: no limit).
    pub max_connections_per_address: usize,
    /// Bytes waiting for one client that does not read them; past it its connection is dropped
    /// (0: no limit).
    pub max_buffered_bytes: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DatabaseSettings {
    /// `surrealkv://path`, `mem://`, or `ws://host:port` / `wss://...` for a SurrealDB server.
    pub url: String,
    pub namespace: String,
    pub database: String,
    /// Root credentials for a SurrealDB server; unused by the embedded engines.
    pub username: Option<String>,
    pub password: Option<SecretString>,
    /// A process whose SurrealDB server has answered nothing for this long exits, for its service
    /// manager to start it afresh (0: never; the embedded engines: never). The fault run once saw
    /// the server's client not connect again after a cut (docs/operations.md, "Under faults").
    #[serde(default = "default_unanswered_exit_secs")]
    pub unanswered_exit_secs: u64,
}

fn default_unanswered_exit_secs() -> u64 {
    60
}

#[derive(Debug, Clone, Deserialize)]
pub struct ProductSettings {
    pub name: String,
    pub assistant_name: String,
    pub support_email: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PaymentProviderKind {
    Demo,
    Stripe,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PaymentSettings {
    pub provider: PaymentProviderKind,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct StripeSettings {
    pub secret_key: Option<SecretString>,
    pub webhook_secret: Option<SecretString>,
    pub subscription_price_id: Option<String>,
    pub refundable_fee_price_id: Option<String>,
    /// Overrides Stripe's API address (tests point it at a local mock).
    pub api_base: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AiProviderKind {
    Offline,
    Openai,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AiSettings {
    pub provider: AiProviderKind,
    pub base_url: Option<String>,
    pub api_key: Option<SecretString>,
    pub model: String,
    pub temperature: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MailProviderKind {
    Outbox,
    Smtp,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MailSettings {
    pub provider: MailProviderKind,
    /// `smtp://user:pass@host:port` — a secret, since it may carry credentials.
    pub smtp_url: Option<SecretString>,
    pub from: String,
}

/// What several processes share besides the database (src/cluster.rs).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct EventsSettings {
    /// `redis://helpnow:PASSWORD@host:6379` (`rediss://` for TLS): the Redis server through which
    /// the processes of one deployment send each other events and count the account limits, as
    /// its ACL user (`config/redis.conf`; production requires the password). Unset: one process
    /// alone. A secret, since it carries a password.
    pub redis_url: Option<SecretString>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SecuritySettings {
    pub debug_tools: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct AdminSettings {
    #[serde(default, deserialize_with = "list_or_commas")]
    pub emails: Vec<String>,
}

/// How long what the product records of visitors is kept (docs/operations.md).
#[derive(Debug, Clone, Deserialize)]
pub struct AnalyticsSettings {
    /// Days an analytics event, and a visitor's journey through a funnel, are kept; the daily
    /// roll-ups the dashboard reads hold no visitor and are kept. 0 = for ever.
    #[serde(default = "AnalyticsSettings::default_retention_days")]
    pub retention_days: u32,
    /// The external analytics service the events are sent on to (off unless a provider is set).
    #[serde(default)]
    pub forward: ForwardSettings,
}

/// The analytics services events can be forwarded to (`dashboard::forward`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForwardProvider {
    /// PostHog's batch capture API (`POST {url}/batch/` with the project's API key).
    Posthog,
    /// Google Analytics 4's Measurement Protocol (`POST {url}/mp/collect` with the measurement id
    /// and an API secret).
    Ga4,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ForwardSettings {
    pub provider: Option<ForwardProvider>,
    /// The service's address (PostHog: https://us.i.posthog.com by default, or your instance;
    /// GA4: https://www.google-analytics.com).
    pub url: Option<String>,
    /// PostHog's project API key, or GA4's Measurement Protocol API secret. Server-side only.
    pub key: Option<SecretString>,
    /// GA4's measurement id (G-...).
    pub measurement_id: Option<String>,
    /// How often a batch is sent (more at once while events wait).
    #[serde(default = "ForwardSettings::default_interval_ms")]
    pub interval_ms: u64,
    /// Events are sent once they are this old, so that none still committing is passed over.
    #[serde(default = "ForwardSettings::default_settle_ms")]
    pub settle_ms: u64,
}

impl ForwardSettings {
    fn default_interval_ms() -> u64 {
        5_000
    }

    fn default_settle_ms() -> u64 {
        10_000
    }

    /// What a configured provider still needs, in words.
    fn validate(&self) -> Result<(), ConfigError> {
        let Some(provider) = self.provider else {
            return Ok(());
        };
        if self.key.is_none() {
            return Err(ConfigError::invalid(
                "analytics.forward.key",
                "is required with a provider: PostHog's project API key, or GA4's API secret",
            ));
        }
        if provider == ForwardProvider::Ga4
            && self.measurement_id.as_deref().unwrap_or("").is_empty()
        {
            return Err(ConfigError::invalid(
                "analytics.forward.measurement_id",
                "is required for GA4 (G-...)",
            ));
        }
        if let Some(url) = &self.url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            return Err(ConfigError::invalid(
                "analytics.forward.url",
                "must be an http:// or https:// address",
            ));
        }
        Ok(())
    }
}

impl AnalyticsSettings {
    fn default_retention_days() -> u32 {
        395
    }
}

impl Default for AnalyticsSettings {
    fn default() -> Self {
        Self {
            retention_days: Self::default_retention_days(),
            forward: ForwardSettings::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LogSettings {
    pub format: LogFormat,
    /// A `tracing` filter such as `info` or `helpnow=debug,info`; `RUST_LOG` wins when set.
    pub filter: String,
}

impl Settings {
    /// Loads the settings the way the binary does: `./config`, `APP_ENV`, and the process environment.
    pub fn load() -> Result<Self, ConfigError> {
        let config_dir = std::env::var("APP_CONFIG_DIR").unwrap_or_else(|_| "config".to_owned());
        let env_vars: HashMap<String, String> = std::env::vars().collect();
        Self::load_from(Path::new(&config_dir), AppEnv::from_env()?, env_vars)
    }

    /// Loads from an explicit folder, environment name and variable set (tests pass their own).
    pub fn load_from(
        config_dir: &Path,
        env: AppEnv,
        env_vars: HashMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let base = config_dir.join("base.toml");
        if !base.is_file() {
            return Err(ConfigError::Load(format!(
                "{} is missing (run from the project folder, or set APP_CONFIG_DIR)",
                base.display()
            )));
        }
        let builder = config::Config::builder()
            .add_source(config::File::from(base))
            .add_source(
                config::File::from(config_dir.join(format!("{}.toml", env.as_str())))
                    .required(false),
            )
            .add_source(
                config::Environment::with_prefix("APP")
                    .prefix_separator("__")
                    .separator("__")
                    .source(Some(env_vars)),
            );
        let load = |builder: config::ConfigBuilder<config::builder::DefaultState>| {
            builder
                .build()
                .map_err(|err| ConfigError::Load(err.to_string()))
        };
        let mut layered = load(builder.clone())?;
        // Unset, the public URL is where this server listens, so a server started on another
        // port (or address) still accepts its own pages' origin and writes links back to itself.
        // (A port that is not one is left for the deserializing below to name.)
        if layered.get_string("server.public_url").is_err()
            && let (Ok(host), Ok(port)) = (
                layered.get_string("server.host"),
                layered.get::<u16>("server.port"),
            )
        {
            let default = listening_url(&host, port);
            layered = load(
                builder
                    .set_default("server.public_url", default)
                    .map_err(|err| ConfigError::Load(err.to_string()))?,
            )?;
        }

        refuse_removed_keys(&layered)?;
        let settings: Settings = serde_path_to_error::deserialize(layered).map_err(|err| {
            let key = err.path().to_string();
            let problem = err.into_inner().to_string();
            // The inner message may repeat the key; what matters is that the key is named first.
            ConfigError::invalid(&key, problem)
        })?;
        settings.validate()?;
        if env == AppEnv::Production {
            settings.validate_for_production()?;
        }
        Ok(settings)
    }

    /// Checks that go beyond types: providers that need keys have them, URLs have usable schemes.
    fn validate(&self) -> Result<(), ConfigError> {
        self.analytics.forward.validate()?;
        let scheme = self.database.url.split("://").next().unwrap_or_default();
        if !self.database.url.contains("://") && self.database.url != "memory" {
            return Err(ConfigError::invalid(
                "database.url",
                format!(
                    "'{}' has no scheme; use surrealkv://path, mem:// or ws://host:port",
                    self.database.url
                ),
            ));
        }
        if !matches!(scheme, "surrealkv" | "mem" | "memory" | "ws" | "wss") {
            return Err(ConfigError::invalid(
                "database.url",
                format!(
                    "the scheme '{scheme}' is not supported; use surrealkv://, mem://, ws:// or wss://"
                ),
            ));
        }
        if self.database.namespace.trim().is_empty() {
            return Err(ConfigError::invalid(
                "database.namespace",
                "must not be empty",
            ));
        }
        if self.database.database.trim().is_empty() {
            return Err(ConfigError::invalid(
                "database.database",
                "must not be empty",
            ));
        }
        if self.database.username.is_some() != self.database.password.is_some() {
            return Err(ConfigError::invalid(
                "database.password",
                "database.username and database.password go together",
            ));
        }
        if !matches!(self.server.public_url.scheme(), "http" | "https") {
            return Err(ConfigError::invalid(
                "server.public_url",
                "must be an http:// or https:// address",
            ));
        }
        if !(0..=19).contains(&self.server.background_nice) {
            return Err(ConfigError::invalid(
                "server.background_nice",
                "must be a nice value from 0 to 19",
            ));
        }
        for origin in &self.server.allowed_origins {
            let valid = url::Url::parse(origin)
                .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.has_host());
            if !valid {
                return Err(ConfigError::invalid(
                    "server.allowed_origins",
                    format!("'{origin}' is not an origin such as https://helpnow.example"),
                ));
            }
        }
        let realtime = &self.realtime;
        for (key, value) in [
            ("realtime.ping_interval_ms", realtime.ping_interval_ms),
            ("realtime.ping_timeout_ms", realtime.ping_timeout_ms),
            ("realtime.connect_timeout_ms", realtime.connect_timeout_ms),
        ] {
            if value == 0 {
                return Err(ConfigError::invalid(key, "must be more than 0"));
            }
        }
        if realtime.max_payload_bytes < 1024 {
            return Err(ConfigError::invalid(
                "realtime.max_payload_bytes",
                "must be at least 1024",
            ));
        }
        if realtime.messages_per_second > 0 && realtime.message_burst < realtime.messages_per_second
        {
            return Err(ConfigError::invalid(
                "realtime.message_burst",
                "must be at least realtime.messages_per_second",
            ));
        }
        if self.product.name.trim().is_empty() {
            return Err(ConfigError::invalid("product.name", "must not be empty"));
        }
        if self.product.assistant_name.trim().is_empty() {
            return Err(ConfigError::invalid(
                "product.assistant_name",
                "must not be empty",
            ));
        }
        if self.payments.provider == PaymentProviderKind::Stripe {
            require_secret(
                &self.stripe.secret_key,
                "stripe.secret_key",
                "payments.provider = \"stripe\"",
            )?;
            require_secret(
                &self.stripe.webhook_secret,
                "stripe.webhook_secret",
                "payments.provider = \"stripe\"",
            )?;
            require_text(
                &self.stripe.subscription_price_id,
                "stripe.subscription_price_id",
                "payments.provider = \"stripe\"",
            )?;
            require_text(
                &self.stripe.refundable_fee_price_id,
                "stripe.refundable_fee_price_id",
                "payments.provider = \"stripe\"",
            )?;
        }
        if self.ai.provider == AiProviderKind::Openai {
            require_secret(&self.ai.api_key, "ai.api_key", "ai.provider = \"openai\"")?;
            require_text(&self.ai.base_url, "ai.base_url", "ai.provider = \"openai\"")?;
        }
        if !(0.0..=2.0).contains(&self.ai.temperature) {
            return Err(ConfigError::invalid(
                "ai.temperature",
                "must be between 0 and 2",
            ));
        }
        if let Err(err) = tracing_subscriber::EnvFilter::try_new(&self.log.filter) {
            return Err(ConfigError::invalid("log.filter", err.to_string()));
        }
        if self.mail.provider == MailProviderKind::Smtp {
            require_secret(
                &self.mail.smtp_url,
                "mail.smtp_url",
                "mail.provider = \"smtp\"",
            )?;
        }
        Ok(())
    }

    /// What is fine on a developer's machine but not in front of customers: the demo checkout
    /// gives trials away without a payment, and the outbox only logs mail (one-time links
    /// included) instead of sending it.
    fn validate_for_production(&self) -> Result<(), ConfigError> {
        if self.payments.provider == PaymentProviderKind::Demo {
            return Err(ConfigError::invalid(
                "payments.provider",
                "the demo checkout starts trials without a payment; use \"stripe\" in production",
            ));
        }
        if self.mail.provider == MailProviderKind::Outbox {
            return Err(ConfigError::invalid(
                "mail.provider",
                "the outbox only logs mail, reset links included; use \"smtp\" in production",
            ));
        }
        if self.security.debug_tools {
            return Err(ConfigError::invalid(
                "security.debug_tools",
                "the debug tools show sessions, users and webhook logs; they are off in production",
            ));
        }
        if self.server.public_url.scheme() != "https" {
            return Err(ConfigError::invalid(
                "server.public_url",
                "must be https in production: session cookies and one-time links travel over it",
            ));
        }
        if let Some(url) = &self.events.redis_url
            && !has_password(url.expose_secret())
        {
            return Err(ConfigError::invalid(
                "events.redis_url",
                "must carry the password of the Redis user the processes share in production \
                 (redis://helpnow:PASSWORD@host:6379, rediss:// with TLS; config/redis.conf): \
                 whoever reaches a Redis without one acts as a process (signs members out, \
                 clears the account limits)",
            ));
        }
        for (key, value) in [
            ("stripe.api_base", self.stripe.api_base.as_deref()),
            ("ai.base_url", self.ai.base_url.as_deref()),
        ] {
            if let Some(value) = value
                && !is_https_or_loopback(value)
            {
                return Err(ConfigError::invalid(
                    key,
                    "must be https in production (a loopback address aside): it carries a secret key",
                ));
            }
        }
        Ok(())
    }

    /// Said loudly at start-up when no `APP_ENV` was given: the local defaults are for a
    /// developer's machine (demo checkout, mail in the outbox, debug tools on).
    pub fn local_defaults_warning(env_was_set: bool) -> Option<&'static str> {
        (!env_was_set).then_some(
            "APP_ENV is not set: running with the local defaults (demo checkout, mail kept in the \
             outbox, debug tools on). Set APP_ENV=production in front of customers.",
        )
    }

    /// The address the server listens on, as `host:port`.
    pub fn listen_address(&self) -> String {
        format!("{}:{}", self.server.host, self.server.port)
    }
}

/// Keys that were removed, with what replaced them. Unknown keys are otherwise skipped without a
/// word, and a removed key that meant something (the header believed, or never) must not turn
/// silently into its replacement's default.
const REMOVED_KEYS: &[(&str, &str)] = &[(
    "server.trust_forwarded_for",
    "was removed (issue 46): X-Forwarded-For is now read exactly when the connection comes from \
     one of `server.trusted_proxies` (APP__SERVER__TRUSTED_PROXIES; 127.0.0.0/8 and ::1 by \
     default). Delete this key; behind a load balancer elsewhere list its address or network \
     there, and to never read the header set `server.trusted_proxies = []`",
)];

fn refuse_removed_keys(layered: &config::Config) -> Result<(), ConfigError> {
    for (key, replaced) in REMOVED_KEYS {
        if layered.get::<config::Value>(key).is_ok() {
            return Err(ConfigError::invalid(key, *replaced));
        }
    }
    Ok(())
}

/// A list from a file (`["a", "b"]`) or from the environment (`a,b`). Environment values are
/// kept as the strings they are (no guessing at numbers), so lists are split here.
fn list_or_commas<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrText {
        List(Vec<String>),
        Text(String),
    }
    Ok(match ListOrText::deserialize(deserializer)? {
        ListOrText::List(items) => items,
        ListOrText::Text(text) => text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

/// `server.trusted_proxies`: addresses or networks, as a list or with commas; a bad entry stops
/// start-up naming the key.
fn proxy_networks<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<crate::client::ProxyNetwork>, D::Error> {
    list_or_commas(deserializer)?
        .iter()
        .map(|entry| entry.parse().map_err(serde::de::Error::custom))
        .collect()
}

fn require_secret(
    value: &Option<SecretString>,
    key: &str,
    because: &str,
) -> Result<(), ConfigError> {
    match value {
        Some(secret) if !secret.expose_secret().trim().is_empty() => Ok(()),
        _ => Err(ConfigError::invalid(
            key,
            format!("is required when {because}"),
        )),
    }
}

fn require_text(value: &Option<String>, key: &str, because: &str) -> Result<(), ConfigError> {
    match value {
        Some(text) if !text.trim().is_empty() => Ok(()),
        _ => Err(ConfigError::invalid(
            key,
            format!("is required when {because}"),
        )),
    }
}

/// A database URL safe to print: user name and password removed.
pub struct RedactedUrl<'a>(pub &'a str);

impl fmt::Display for RedactedUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Textual, so the URL prints exactly as configured apart from the removed `user:pass@`.
        let Some((scheme, rest)) = self.0.split_once("://") else {
            return f.write_str(self.0);
        };
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        match rest[..authority_end].rfind('@') {
            Some(at) => write!(f, "{scheme}://{}", &rest[at + 1..]),
            None => f.write_str(self.0),
        }
    }
}

/// Whether a URL carries a password (`scheme://user:password@host`); not a URL, none.
fn has_password(value: &str) -> bool {
    url::Url::parse(value)
        .is_ok_and(|url| url.password().is_some_and(|password| !password.is_empty()))
}

/// An https URL, or any URL on a loopback address (a local mock or proxy).
fn is_https_or_loopback(value: &str) -> bool {
    let Ok(url) = url::Url::parse(value) else {
        return false;
    };
    if url.scheme() == "https" {
        return true;
    }
    match url.host() {
        Some(url::Host::Domain(domain)) => domain == "localhost",
        Some(url::Host::Ipv4(address)) => address.is_loopback(),
        Some(url::Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    }
}

/// `http://host:port` for a server listening on `host` and `port`; an unspecified address
/// (`0.0.0.0`, `::`) is reached locally at 127.0.0.1.
fn listening_url(host: &str, port: u16) -> String {
    let host = match host.parse::<std::net::IpAddr>() {
        Ok(address) if address.is_unspecified() => "127.0.0.1".to_owned(),
        Ok(std::net::IpAddr::V6(address)) => format!("[{address}]"),
        _ => host.to_owned(),
    };
    format!("http://{host}:{port}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project_config_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("config")
    }

    fn load(env: AppEnv, vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let vars = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::load_from(&project_config_dir(), env, vars)
    }

    #[test]
    fn defaults_need_no_keys_and_use_the_embedded_parts() {
        let settings = load(AppEnv::Local, &[]).expect("the defaults load");
        assert_eq!(settings.server.host, "127.0.0.1");
        assert_eq!(settings.server.port, 8080);
        assert_eq!(settings.database.url, "surrealkv://data/helpnow");
        assert_eq!(settings.payments.provider, PaymentProviderKind::Demo);
        assert_eq!(settings.ai.provider, AiProviderKind::Offline);
        assert_eq!(settings.mail.provider, MailProviderKind::Outbox);
        assert_eq!(settings.product.name, "HelpNow");
        assert_eq!(settings.product.assistant_name, "Emma");
        assert!(settings.security.debug_tools, "debug tools are on locally");
        assert!((settings.ai.temperature - 0.7).abs() < f32::EPSILON);
    }

    #[test]
    fn the_public_url_is_where_the_server_listens_unless_it_is_set() {
        let url = |vars: &[(&str, &str)]| {
            load(AppEnv::Local, vars)
                .expect("loads")
                .server
                .public_url
                .to_string()
        };
        assert_eq!(url(&[]), "http://127.0.0.1:8080/");
        assert_eq!(
            url(&[("APP__SERVER__PORT", "9000")]),
            "http://127.0.0.1:9000/"
        );
        assert_eq!(
            url(&[
                ("APP__SERVER__HOST", "0.0.0.0"),
                ("APP__SERVER__PORT", "9001")
            ]),
            "http://127.0.0.1:9001/"
        );
        assert_eq!(
            url(&[("APP__SERVER__HOST", "::1"), ("APP__SERVER__PORT", "9002")]),
            "http://[::1]:9002/"
        );
        assert_eq!(
            url(&[("APP__SERVER__HOST", "helpnow.lan")]),
            "http://helpnow.lan:8080/"
        );
        assert_eq!(
            url(&[
                ("APP__SERVER__PORT", "9000"),
                ("APP__SERVER__PUBLIC_URL", "https://helpnow.example")
            ]),
            "https://helpnow.example/"
        );
        let unset: Vec<_> = PRODUCTION_KEYS
            .iter()
            .copied()
            .filter(|(key, _)| *key != "APP__SERVER__PUBLIC_URL")
            .collect();
        let error = load(AppEnv::Production, &unset).expect_err("production needs its address");
        assert!(error.to_string().contains("server.public_url"), "{error}");
    }

    const PRODUCTION_KEYS: &[(&str, &str)] = &[
        ("APP__PAYMENTS__PROVIDER", "stripe"),
        ("APP__STRIPE__SECRET_KEY", "sk_live_x"),
        ("APP__STRIPE__WEBHOOK_SECRET", "whsec_x"),
        ("APP__STRIPE__SUBSCRIPTION_PRICE_ID", "price_month"),
        ("APP__STRIPE__REFUNDABLE_FEE_PRICE_ID", "price_fee"),
        ("APP__MAIL__PROVIDER", "smtp"),
        ("APP__MAIL__SMTP_URL", "smtps://user:pass@mail.example:465"),
        ("APP__SERVER__PUBLIC_URL", "https://helpnow.example"),
    ];

    #[test]
    fn production_turns_debug_tools_off_and_logs_json() {
        let settings =
            load(AppEnv::Production, PRODUCTION_KEYS).expect("production loads with its keys");
        assert!(!settings.security.debug_tools);
        assert_eq!(settings.log.format, LogFormat::Json);
    }

    #[test]
    fn production_refuses_the_demo_checkout_and_the_outbox() {
        let error = load(AppEnv::Production, &[]).expect_err("the demo checkout in production");
        assert!(error.to_string().contains("`payments.provider`"), "{error}");
        let without_smtp: Vec<_> = PRODUCTION_KEYS
            .iter()
            .copied()
            .filter(|(key, _)| !key.starts_with("APP__MAIL"))
            .collect();
        let error = load(AppEnv::Production, &without_smtp).expect_err("the outbox in production");
        assert!(error.to_string().contains("`mail.provider`"), "{error}");
    }

    #[test]
    fn production_refuses_debug_tools_plain_http_and_secret_keys_over_http() {
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut vars: Vec<(&str, &str)> = PRODUCTION_KEYS.to_vec();
            vars.extend_from_slice(extra);
            load(AppEnv::Production, &vars)
        };
        for (extra, key) in [
            (
                ("APP__SECURITY__DEBUG_TOOLS", "true"),
                "`security.debug_tools`",
            ),
            (
                ("APP__SERVER__PUBLIC_URL", "http://helpnow.example"),
                "`server.public_url`",
            ),
            (
                ("APP__STRIPE__API_BASE", "http://stripe.example"),
                "`stripe.api_base`",
            ),
        ] {
            let error = with(&[extra]).expect_err(key);
            assert!(error.to_string().contains(key), "{error}");
        }
        let error = with(&[
            ("APP__AI__PROVIDER", "openai"),
            ("APP__AI__API_KEY", "sk-x"),
            ("APP__AI__BASE_URL", "http://ai.example/v1"),
        ])
        .expect_err("ai over http");
        assert!(error.to_string().contains("`ai.base_url`"), "{error}");
        // A loopback address is fine (a local mock or a sidecar proxy).
        with(&[("APP__STRIPE__API_BASE", "http://127.0.0.1:12111")]).expect("loopback");
        with(&[("APP__STRIPE__API_BASE", "https://api.stripe.com")]).expect("https");
        assert!(Settings::local_defaults_warning(false).is_some());
        assert!(Settings::local_defaults_warning(true).is_none());
    }

    #[test]
    fn production_refuses_a_redis_url_without_credentials() {
        let with_redis = |url: &'static str| {
            let mut vars: Vec<(&str, &str)> = PRODUCTION_KEYS.to_vec();
            vars.push(("APP__EVENTS__REDIS_URL", url));
            load(AppEnv::Production, &vars)
        };
        for url in [
            "redis://events.internal:6379",
            "redis://helpnow@events.internal:6379",
            "redis://helpnow:@events.internal:6379",
            "events.internal:6379",
        ] {
            let error = with_redis(url).expect_err(url).to_string();
            assert!(
                error.starts_with("configuration key `events.redis_url`:")
                    && !error.contains("events.internal"),
                "{error}"
            );
        }
        with_redis("redis://helpnow:s3cret@events.internal:6379").expect("a user and password");
        with_redis("rediss://:s3cret@events.internal:6380/0").expect("the default user's password");
        load(
            AppEnv::Local,
            &[("APP__EVENTS__REDIS_URL", "redis://127.0.0.1:6379")],
        )
        .expect("locally, a Redis of one's own");
    }

    #[test]
    fn the_store_threads_priority_is_a_nice_value() {
        let settings = load(AppEnv::Local, &[]).expect("the defaults load");
        assert_eq!(settings.server.background_nice, 0, "all at one priority");
        let settings = load(AppEnv::Local, &[("APP__SERVER__BACKGROUND_NICE", "19")])
            .expect("the lowest priority");
        assert_eq!(settings.server.background_nice, 19);
        for value in ["-1", "20"] {
            let error =
                load(AppEnv::Local, &[("APP__SERVER__BACKGROUND_NICE", value)]).expect_err(value);
            assert!(
                error.to_string().contains("server.background_nice")
                    && error.to_string().contains("from 0 to 19"),
                "{error}"
            );
        }
    }

    #[test]
    fn environment_variables_override_files() {
        let settings = load(
            AppEnv::Local,
            &[
                ("APP__SERVER__PORT", "9191"),
                ("APP__PRODUCT__NAME", "FixIt"),
                ("APP__ADMIN__EMAILS", "a@example.com,b@example.com"),
                ("APP__DATABASE__USERNAME", "root"),
                ("APP__DATABASE__PASSWORD", "0123"),
                ("APP__SECURITY__DEBUG_TOOLS", "false"),
                ("APP__AI__TEMPERATURE", "0.2"),
            ],
        )
        .expect("overrides load");
        assert_eq!(
            settings
                .database
                .password
                .as_ref()
                .map(|p| p.expose_secret().to_owned()),
            Some("0123".to_owned()),
            "a secret that looks like a number stays exactly as written"
        );
        assert!(!settings.security.debug_tools);
        assert!((settings.ai.temperature - 0.2).abs() < f32::EPSILON);
        assert_eq!(settings.server.port, 9191);
        assert_eq!(settings.product.name, "FixIt");
        assert_eq!(
            settings.admin.emails,
            vec!["a@example.com", "b@example.com"]
        );
    }

    #[test]
    fn a_bad_value_names_its_key() {
        let err = load(AppEnv::Local, &[("APP__SERVER__PORT", "eighty")])
            .expect_err("a port must be a number");
        assert!(err.to_string().contains("server.port"), "{err}");

        let err = load(AppEnv::Local, &[("APP__PAYMENTS__PROVIDER", "paypal")])
            .expect_err("unknown provider");
        assert!(err.to_string().contains("payments.provider"), "{err}");

        let err = load(AppEnv::Local, &[("APP__DATABASE__URL", "postgres://x")])
            .expect_err("unknown scheme");
        assert!(err.to_string().contains("database.url"), "{err}");

        let err =
            load(AppEnv::Local, &[("APP__SERVER__PUBLIC_URL", "not a url")]).expect_err("bad url");
        assert!(err.to_string().contains("server.public_url"), "{err}");

        let err = load(AppEnv::Local, &[("APP__LOG__FILTER", "info,=nonsense[")])
            .expect_err("a bad log filter");
        assert!(err.to_string().contains("log.filter"), "{err}");
    }

    #[test]
    fn forwarded_for_is_read_from_loopback_unless_another_list_is_given() {
        let loopback_peer = "127.0.0.1".parse().expect("ip");
        let settings = load(AppEnv::Local, &[]).expect("the defaults load");
        let forwarding = settings.server.forwarding();
        assert!(forwarding.proxies.iter().any(|p| p.contains(loopback_peer)));
        assert!(
            forwarding
                .proxies
                .iter()
                .any(|p| p.contains("::1".parse().expect("ip")))
        );
        let settings = load(
            AppEnv::Local,
            &[("APP__SERVER__TRUSTED_PROXIES", "10.0.0.5, 192.0.2.0/24")],
        )
        .expect("a list with commas loads");
        let forwarding = settings.server.forwarding();
        assert_eq!(forwarding.proxies.len(), 2);
        assert!(
            !forwarding.proxies.iter().any(|p| p.contains(loopback_peer)),
            "a list replaces the loopback default"
        );
        let settings = load(AppEnv::Local, &[("APP__SERVER__TRUSTED_PROXIES", "")])
            .expect("an empty list loads");
        assert!(
            settings.server.forwarding().proxies.is_empty(),
            "empty: never read"
        );
        let error = load(
            AppEnv::Local,
            &[("APP__SERVER__TRUSTED_PROXIES", "10.0.0.5,10.0.0/8")],
        )
        .expect_err("not a network");
        assert!(
            error.to_string().contains("server.trusted_proxies")
                && error.to_string().contains("\"10.0.0/8\""),
            "{error}"
        );
    }

    #[test]
    fn the_removed_forwarding_switch_stops_start_up_naming_its_replacement() {
        for value in ["true", "false"] {
            let error = load(
                AppEnv::Local,
                &[("APP__SERVER__TRUST_FORWARDED_FOR", value)],
            )
            .expect_err("the old switch from the environment");
            let message = error.to_string();
            assert!(
                message.starts_with("configuration key `server.trust_forwarded_for`:")
                    && message.contains("`server.trusted_proxies`"),
                "{message}"
            );
        }
        // The same from a settings file.
        let folder = tempfile::tempdir().expect("temp dir");
        for file in ["base.toml", "production.toml"] {
            std::fs::copy(project_config_dir().join(file), folder.path().join(file))
                .expect("copied");
        }
        let production = folder.path().join("production.toml");
        let mut text = std::fs::read_to_string(&production).expect("read");
        text = text.replace("[server]\n", "[server]\ntrust_forwarded_for = true\n");
        std::fs::write(&production, text).expect("written");
        let vars = PRODUCTION_KEYS
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let error = Settings::load_from(folder.path(), AppEnv::Production, vars)
            .expect_err("the old switch in a file");
        assert!(
            error.to_string().contains("`server.trust_forwarded_for`")
                && error.to_string().contains("`server.trusted_proxies`"),
            "{error}"
        );
    }

    #[test]
    fn a_provider_without_its_keys_is_refused_by_key() {
        let err = load(AppEnv::Local, &[("APP__PAYMENTS__PROVIDER", "stripe")])
            .expect_err("stripe needs keys");
        assert!(err.to_string().contains("stripe.secret_key"), "{err}");

        let err = load(AppEnv::Local, &[("APP__AI__PROVIDER", "openai")])
            .expect_err("openai needs a key");
        assert!(err.to_string().contains("ai.api_key"), "{err}");

        let err =
            load(AppEnv::Local, &[("APP__MAIL__PROVIDER", "smtp")]).expect_err("smtp needs a url");
        assert!(err.to_string().contains("mail.smtp_url"), "{err}");
    }

    #[test]
    fn secrets_never_show_in_debug_output() {
        let settings = load(
            AppEnv::Local,
            &[
                ("APP__AI__PROVIDER", "openai"),
                ("APP__AI__BASE_URL", "http://127.0.0.1:1"),
                ("APP__AI__API_KEY", "sk-very-secret-value"),
            ],
        )
        .expect("loads");
        let printed = format!("{settings:?}");
        assert!(!printed.contains("sk-very-secret-value"), "{printed}");
    }

    #[test]
    fn printed_database_urls_carry_no_credentials() {
        assert_eq!(
            RedactedUrl("ws://root:hunter2@db.internal:8000").to_string(),
            "ws://db.internal:8000"
        );
        assert_eq!(
            RedactedUrl("surrealkv://data/helpnow").to_string(),
            "surrealkv://data/helpnow"
        );
        assert_eq!(RedactedUrl("mem://").to_string(), "mem://");
        assert_eq!(
            RedactedUrl("wss://admin@db:8000/rpc?x=1").to_string(),
            "wss://db:8000/rpc?x=1"
        );
        assert_eq!(
            RedactedUrl("ws://db:8000/a@b").to_string(),
            "ws://db:8000/a@b"
        );
    }

    #[test]
    fn an_unknown_app_env_is_refused() {
        let err = "staging".parse::<AppEnv>().expect_err("unknown env");
        assert!(err.to_string().contains("APP_ENV"));
    }
}
