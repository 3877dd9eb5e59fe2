//! Mail: the `Mailer` every part of the server sends through (password resets, welcome and
//! trial-ending notices).
//!
//! Every mail is first stored in the `mail_outbox` table, so nothing is lost when delivery fails or
//! the process stops. Then it is delivered according to `mail.provider`:
//! - `outbox` (the default, needs nothing installed): the stored row and an info log line carrying the
//!   whole text are the delivery; on a developer machine the log line is where a reset link is read.
//! - `smtp`: sent at once through `mail.smtp_url` (see `smtp` for the URL forms). A failed attempt
//!   is logged and recorded on the row, and `send` still succeeds: the mail is queued, and the retry
//!   worker (`spawn_retry_worker`) tries it again, up to `MAX_ATTEMPTS` attempts in all.

mod smtp;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use secrecy::ExposeSecret;
use tokio::task::JoinHandle;

use crate::config::{MailProviderKind, MailSettings};
use crate::store::Db;

use self::smtp::SmtpDelivery;
use crate::store::outbox::{self, MailContent};

/// Attempts after which a mail stays in the outbox undelivered (with its `last_error`) for a person
/// to look at; an address that failed five times over several minutes is not going to work alone.
pub const MAX_ATTEMPTS: u32 = 5;

/// Rows one retry pass takes on, so a long outage does not turn one pass into a flood.
const RETRY_BATCH: usize = 20;

/// How long a sender owns a row it is delivering; longer than any delivery may take, so a row is
/// never sent twice at once, and short enough that a crashed sender's rows are soon due again.
const LEASE: Duration = Duration::from_secs(120);
const _: () = assert!(LEASE.as_secs() > 2 * smtp::DELIVERY_TIMEOUT.as_secs());

/// What a mail is for; stored with it, and in the log lines about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailKind {
    PasswordReset,
    Welcome,
    TrialEnding,
}

impl MailKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MailKind::PasswordReset => "password_reset",
            MailKind::Welcome => "welcome",
            MailKind::TrialEnding => "trial_ending",
        }
    }
}

impl fmt::Display for MailKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A plain-text (UTF-8) mail to one recipient; `From` comes from `mail.from`.
#[derive(Debug, Clone)]
pub struct OutgoingMail {
    /// `ann@example.com` or `Ann <ann@example.com>`.
    pub to: String,
    pub subject: String,
    pub text: String,
    pub kind: MailKind,
}

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// Same wording as `ConfigError::Invalid`: start-up stops with the key at fault.
    #[error("configuration key `{key}`: {problem}")]
    Config { key: &'static str, problem: String },
    #[error("'{address}' is not a mail address: {source}")]
    InvalidRecipient {
        address: String,
        source: lettre::address::AddressError,
    },
    #[error("a mail subject must be one line")]
    MultilineSubject,
    #[error("mail outbox: {0}")]
    Store(#[from] surrealdb::Error),
}

impl MailError {
    fn config(key: &'static str, problem: impl Into<String>) -> Self {
        MailError::Config {
            key,
            problem: problem.into(),
        }
    }
}

/// Sends mail; cheap to clone (one shared transport and database handle).
#[derive(Clone)]
pub struct Mailer {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    delivery: Delivery,
}

enum Delivery {
    Outbox,
    // Boxed: the transport is large and the outbox variant empty.
    Smtp(Box<SmtpDelivery>),
}

impl fmt::Debug for Mailer {
    // By hand: the SMTP transport holds the credentials of `mail.smtp_url`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let provider = match self.inner.delivery {
            Delivery::Outbox => "outbox",
            Delivery::Smtp(_) => "smtp",
        };
        f.debug_struct("Mailer")
            .field("provider", &provider)
            .finish_non_exhaustive()
    }
}

impl Mailer {
    /// Checks `mail.from` and, for SMTP, `mail.smtp_url`; connects to nothing yet, so start-up
    /// does not depend on the mail server being up.
    pub fn from_settings(settings: &MailSettings, db: Db) -> Result<Mailer, MailError> {
        // Checked for the outbox too, so switching to SMTP later cannot meet a bad address.
        let from = smtp::parse_from(&settings.from)?;
        let delivery = match settings.provider {
            MailProviderKind::Outbox => Delivery::Outbox,
            MailProviderKind::Smtp => {
                let url = settings.smtp_url.as_ref().ok_or_else(|| {
                    MailError::config("mail.smtp_url", "is required when mail.provider = \"smtp\"")
                })?;
                Delivery::Smtp(Box::new(SmtpDelivery::new(url.expose_secret(), from)?))
            }
        };
        Ok(Mailer {
            inner: Arc::new(Inner { db, delivery }),
        })
    }

    /// Stores the mail, then delivers it; returns its outbox id (`mail_outbox:<key>`).
    ///
    /// A failed SMTP delivery is not an error: the mail stays queued for the retry worker. Errors
    /// are a recipient that is not an address, a subject of several lines, or a failure to store
    /// the mail; in each case nothing was stored or sent.
    pub async fn send(&self, mail: OutgoingMail) -> Result<String, MailError> {
        if let Err(source) = mail.to.parse::<lettre::message::Mailbox>() {
            return Err(MailError::InvalidRecipient {
                address: mail.to,
                source,
            });
        }
        if !smtp::subject_is_one_line(&mail.subject) {
            return Err(MailError::MultilineSubject);
        }
        let db = &self.inner.db;
        let content = MailContent {
            recipient: mail.to,
            subject: mail.subject,
            body: mail.text,
            kind: mail.kind.as_str().to_owned(),
        };
        // Stored already leased to this call, so the retry worker leaves it alone meanwhile.
        let id = outbox::insert_claimed(db, &content, LEASE).await?;
        if let Err(error) = self.attempt(&id, &content).await {
            // The mail is stored (and may even be delivered), so the caller's action succeeded;
            // once the lease ends the worker sees the row again.
            tracing::error!(outbox_id = %id, %error, "cannot record the outcome of a delivery");
        }
        Ok(id)
    }

    /// One pass of the retry worker: delivers up to a batch of due mail, oldest first, and returns
    /// how many were delivered. Due: unsent, fewer than `MAX_ATTEMPTS` attempts, and not being
    /// delivered by another sender right now.
    pub async fn retry_unsent(&self) -> Result<usize, MailError> {
        let db = &self.inner.db;
        let mut delivered = 0;
        for entry in outbox::due(db, MAX_ATTEMPTS, RETRY_BATCH).await? {
            let (id, mail) = entry.into_parts();
            // Another process may have taken it since the read.
            if !outbox::claim(db, &id, MAX_ATTEMPTS, LEASE).await? {
                continue;
            }
            if self.attempt(&id, &mail).await? {
                delivered += 1;
            }
        }
        Ok(delivered)
    }

    /// Runs `retry_unsent` now and then every `every` until the handle is aborted or the runtime
    /// stops. The first pass at once picks up mail left over from before a restart.
    pub fn spawn_retry_worker(&self, every: Duration) -> JoinHandle<()> {
        let mailer = self.clone();
        // `interval` refuses a zero period; a millisecond keeps a mistaken 0 from panicking.
        let every = every.max(Duration::from_millis(1));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            // After a slow pass, wait a full period rather than running the missed passes at once.
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                match mailer.retry_unsent().await {
                    Ok(0) => {}
                    Ok(delivered) => tracing::info!(delivered, "queued mail delivered"),
                    Err(error) => tracing::warn!(%error, "mail retry pass failed"),
                }
            }
        })
    }

    /// Delivers a stored mail the caller holds the lease on, and records the outcome on its row.
    /// `Ok(false)`: the attempt failed and is recorded; only store errors are errors.
    async fn attempt(&self, id: &str, mail: &MailContent) -> Result<bool, MailError> {
        let db = &self.inner.db;
        match &self.inner.delivery {
            Delivery::Outbox => {
                tracing::info!(
                    outbox_id = %id,
                    to = %mail.recipient,
                    subject = %mail.subject,
                    kind = %mail.kind,
                    body = %mail.body,
                    "mail kept in the outbox (mail.provider = \"outbox\"), not sent"
                );
                // The outbox is the mail here (local runs, the tests): it keeps the links.
                outbox::mark_sent(db, id, None).await?;
                Ok(true)
            }
            Delivery::Smtp(smtp) => match smtp.deliver(id, mail).await {
                Ok(()) => {
                    // Delivered: the copy kept here loses the one-time links' secrets, so a read
                    // of the table signs nobody in.
                    outbox::mark_sent(db, id, Some(without_secrets(&mail.body))).await?;
                    tracing::info!(outbox_id = %id, kind = %mail.kind, "mail sent");
                    Ok(true)
                }
                Err(error) => {
                    let attempts = outbox::mark_failed(db, id, &error.to_string()).await?;
                    if attempts >= MAX_ATTEMPTS {
                        tracing::error!(
                            outbox_id = %id, kind = %mail.kind, attempts, %error,
                            "mail not delivered; giving up (it stays in the outbox)"
                        );
                    } else {
                        tracing::warn!(
                            outbox_id = %id, kind = %mail.kind, attempts, %error,
                            "mail not delivered yet; queued for a retry"
                        );
                    }
                    Ok(false)
                }
            },
        }
    }
}

/// The query parameters of this product's one-time links (sign-in, password reset).
const SECRET_PARAMETERS: [&str; 3] = ["jwt", "reset", "token"];
/// What a one-time link's secret reads as once its mail is sent.
pub const REMOVED_SECRET: &str = "removed-once-sent";

/// A mail body as kept after delivery: the value of every one-time link's secret parameter is
/// replaced, the rest of the text and of the links stays.
pub fn without_secrets(body: &str) -> String {
    let mut kept = String::with_capacity(body.len());
    let mut rest = body;
    'scan: while !rest.is_empty() {
        for name in SECRET_PARAMETERS {
            for lead in ['?', '&'] {
                let pattern = format!("{lead}{name}=");
                if rest.starts_with(&pattern) {
                    kept.push_str(&pattern);
                    let value_len = rest[pattern.len()..]
                        .find(|c: char| c == '&' || c == '#' || c.is_whitespace())
                        .unwrap_or(rest.len() - pattern.len());
                    if value_len > 0 {
                        kept.push_str(REMOVED_SECRET);
                    }
                    rest = &rest[pattern.len() + value_len..];
                    continue 'scan;
                }
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            kept.push(c);
        }
        rest = chars.as_str();
    }
    kept
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_sent_mail_keeps_its_text_but_not_its_links_secrets() {
        let body = "Sign in here:\n\nhttps://x.example/?success=true&jwt=AbC-123_xyz\n\n\
                    Reset: https://x.example/login?reset=Zx9-Zx9-&utm_source=mail\nThanks é";
        let kept = without_secrets(body);
        assert_eq!(
            kept,
            "Sign in here:\n\nhttps://x.example/?success=true&jwt=removed-once-sent\n\n\
             Reset: https://x.example/login?reset=removed-once-sent&utm_source=mail\nThanks é"
        );
        assert_eq!(without_secrets("no links at all"), "no links at all");
    }
    use super::*;

    #[test]
    fn kinds_are_stored_by_stable_names() {
        assert_eq!(MailKind::PasswordReset.as_str(), "password_reset");
        assert_eq!(MailKind::Welcome.as_str(), "welcome");
        assert_eq!(MailKind::TrialEnding.to_string(), "trial_ending");
    }
}
