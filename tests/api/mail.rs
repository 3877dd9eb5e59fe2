//! Mail: the outbox, delivery to a real SMTP server (mailin-embedded on 127.0.0.1), and the retry
//! of mail the server could not take. What arrived is decoded the way a mail client would, so
//! line wrapping and transfer encodings cannot hide a damaged link.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use helpnow::config::MailProviderKind;
use helpnow::mail::{MAX_ATTEMPTS, MailError, MailKind, Mailer, OutgoingMail};
use helpnow::store::Db;
use helpnow::store::outbox;
use mailin_embedded::{Handler, Response, Server, SslConfig, response};
use secrecy::SecretString;

use crate::helpers::test_settings;

/// One mail as the SMTP server received it.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) envelope_from: String,
    pub(crate) envelope_to: Vec<String>,
    pub(crate) data: Vec<u8>,
}

/// Per-connection session state (mailin clones the handler for each connection) plus the shared
/// list of mail that completed `DATA`.
#[derive(Clone, Default)]
struct Recorder {
    inbox: Arc<Mutex<Vec<Received>>>,
    envelope_from: String,
    envelope_to: Vec<String>,
    data: Vec<u8>,
}

impl Handler for Recorder {
    fn data_start(&mut self, _domain: &str, from: &str, _is8bit: bool, to: &[String]) -> Response {
        self.envelope_from = from.to_owned();
        self.envelope_to = to.to_vec();
        self.data.clear();
        response::OK
    }

    fn data(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.data.extend_from_slice(buf);
        Ok(())
    }

    fn data_end(&mut self) -> Response {
        self.inbox.lock().expect("inbox lock").push(Received {
            envelope_from: std::mem::take(&mut self.envelope_from),
            envelope_to: std::mem::take(&mut self.envelope_to),
            data: std::mem::take(&mut self.data),
        });
        response::OK
    }
}

/// A real SMTP server on its own thread. It serves until the test process ends (mailin-embedded
/// has no shutdown), which costs one idle thread per test. The Stripe route tests use it too.
pub(crate) struct SmtpServer {
    port: u16,
    inbox: Arc<Mutex<Vec<Received>>>,
}

impl SmtpServer {
    pub(crate) fn start() -> Self {
        Self::start_on(TcpListener::bind("127.0.0.1:0").expect("a free port"))
    }

    fn start_on(listener: TcpListener) -> Self {
        let port = listener.local_addr().expect("local address").port();
        let recorder = Recorder::default();
        let inbox = Arc::clone(&recorder.inbox);
        let mut server = Server::new(recorder);
        server
            .with_name("smtp.test")
            .with_ssl(SslConfig::None)
            .expect("no TLS")
            .with_tcp_listener(listener);
        std::thread::spawn(move || {
            // It only returns on a listener failure, which the test then sees as mail not arriving.
            if let Err(error) = server.serve() {
                eprintln!("the test SMTP server stopped: {error}");
            }
        });
        SmtpServer { port, inbox }
    }

    pub(crate) fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.inbox.lock().expect("inbox lock").clone()
    }

    /// The server records a mail before it answers `DATA`, so this is quick; the deadline only
    /// keeps a broken run from hanging.
    async fn wait_for_mail(&self) -> Received {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(mail) = self.received().into_iter().next() {
                return mail;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no mail reached the SMTP server"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A port nothing listens on: bound once to find it free, then released.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("local address").port()
}

async fn mailer(provider: MailProviderKind, smtp_url: Option<String>) -> (Mailer, Db) {
    let mut settings = test_settings();
    settings.database.url = "mem://".to_owned();
    let db = helpnow::store::connect(&settings.database)
        .await
        .expect("an in-memory database");
    settings.mail.provider = provider;
    settings.mail.smtp_url = smtp_url.map(SecretString::from);
    settings.mail.from = "HelpNow <no-reply@helpnow.example>".to_owned();
    let mailer = Mailer::from_settings(&settings.mail, db.clone()).expect("a mailer");
    (mailer, db)
}

/// A long link must survive line wrapping; non-ASCII text must survive the transfer encoding.
fn reset_mail() -> OutgoingMail {
    let token = "Zx9-".repeat(30);
    OutgoingMail {
        to: "ann@example.com".to_owned(),
        subject: "Réinitialisez votre mot de passe".to_owned(),
        text: format!(
            "Bonjour Zoë,\n\nChoose a new password here (the link works once, for one hour):\n\n\
             https://helpnow.example/login?reset={token}&utm_source=mail&utm_campaign=password_reset\n\n\
             .A line that starts with a dot.\n\n— The HelpNow team ✓\n"
        ),
        kind: MailKind::PasswordReset,
    }
}

async fn stored(db: &Db, id: &str) -> outbox::OutboxEntry {
    outbox::find(db, id)
        .await
        .expect("the outbox is readable")
        .expect("the mail is in the outbox")
}

#[tokio::test]
async fn a_mail_sent_over_smtp_arrives_intact_and_is_marked_sent() {
    let server = SmtpServer::start();
    let (mailer, db) = mailer(MailProviderKind::Smtp, Some(server.url())).await;
    let mail = reset_mail();

    let id = mailer.send(mail.clone()).await.expect("sent");

    let received = server.wait_for_mail().await;
    assert_eq!(received.envelope_from, "no-reply@helpnow.example");
    assert_eq!(received.envelope_to, vec!["ann@example.com".to_owned()]);
    let message = ParsedMail::parse(&received.data);
    assert_eq!(message.header("To").as_deref(), Some("ann@example.com"));
    assert_eq!(message.header("Subject"), Some(mail.subject.clone()));
    assert_eq!(
        message.header("From").map(|from| from.replace('"', "")),
        Some("HelpNow <no-reply@helpnow.example>".to_owned())
    );
    let content_type = message.header("Content-Type").expect("a content type");
    assert!(
        content_type.to_lowercase().starts_with("text/plain")
            && content_type.to_lowercase().contains("charset=utf-8"),
        "{content_type}"
    );
    let message_id = message.header("Message-ID").expect("a Message-ID");
    assert!(
        message_id.starts_with('<') && message_id.ends_with("@helpnow.example>"),
        "{message_id}"
    );
    assert_eq!(message.text(), mail.text.trim_end_matches('\n'));

    let row = stored(&db, &id).await;
    assert!(row.sent_at.is_some(), "the outbox row is marked sent");
    assert_eq!(row.attempts, 1);
    assert_eq!(row.kind, "password_reset");
    // Sent, the copy kept here has the text but not the link's secret.
    let token = "Zx9-".repeat(30);
    assert!(!row.body.contains(&token), "{}", row.body);
    assert!(
        row.body
            .contains("login?reset=removed-once-sent&utm_source=mail"),
        "{}",
        row.body
    );
    assert_eq!(row.last_error, None);
    assert_eq!(server.received().len(), 1, "delivered once");
}

#[tokio::test]
async fn mail_the_smtp_server_cannot_take_is_queued_and_a_retry_delivers_it() {
    let port = closed_port();
    let (mailer, db) = mailer(
        MailProviderKind::Smtp,
        Some(format!("smtp://127.0.0.1:{port}")),
    )
    .await;
    let mail = reset_mail();

    let id = mailer
        .send(mail.clone())
        .await
        .expect("a mail the server cannot take is queued, not refused");
    let row = stored(&db, &id).await;
    assert_eq!(row.sent_at, None);
    assert_eq!(row.attempts, 1);
    assert!(row.last_error.is_some(), "the failure is recorded");

    let server =
        SmtpServer::start_on(TcpListener::bind(("127.0.0.1", port)).expect("the port again"));
    assert_eq!(mailer.retry_unsent().await.expect("a retry pass"), 1);

    let received = server.wait_for_mail().await;
    assert_eq!(received.envelope_to, vec!["ann@example.com".to_owned()]);
    assert_eq!(
        ParsedMail::parse(&received.data).text(),
        mail.text.trim_end_matches('\n')
    );
    let row = stored(&db, &id).await;
    assert!(row.sent_at.is_some(), "marked sent after the retry");
    assert_eq!(row.attempts, 2);
    assert_eq!(row.last_error, None);

    assert_eq!(
        mailer.retry_unsent().await.expect("a retry pass"),
        0,
        "sent mail is not sent again"
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn the_retry_worker_delivers_queued_mail_by_itself() {
    let port = closed_port();
    let (mailer, db) = mailer(
        MailProviderKind::Smtp,
        Some(format!("smtp://127.0.0.1:{port}")),
    )
    .await;
    let id = mailer.send(reset_mail()).await.expect("queued");
    let server =
        SmtpServer::start_on(TcpListener::bind(("127.0.0.1", port)).expect("the port again"));

    let worker = mailer.spawn_retry_worker(Duration::from_millis(20));
    server.wait_for_mail().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while stored(&db, &id).await.sent_at.is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the worker marks the mail sent"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    worker.abort();
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn retries_stop_after_the_last_attempt() {
    let (mailer, db) = mailer(
        MailProviderKind::Smtp,
        Some(format!("smtp://127.0.0.1:{}", closed_port())),
    )
    .await;
    let id = mailer.send(reset_mail()).await.expect("queued");

    for _ in 1..MAX_ATTEMPTS {
        assert_eq!(mailer.retry_unsent().await.expect("a retry pass"), 0);
    }
    assert_eq!(stored(&db, &id).await.attempts, MAX_ATTEMPTS);

    assert_eq!(mailer.retry_unsent().await.expect("a retry pass"), 0);
    let row = stored(&db, &id).await;
    assert_eq!(row.attempts, MAX_ATTEMPTS, "no attempt after the last one");
    assert_eq!(
        row.sent_at, None,
        "it stays in the outbox for a person to see"
    );
}

#[tokio::test]
async fn the_outbox_provider_stores_mail_and_counts_it_as_sent() {
    let (mailer, db) = mailer(MailProviderKind::Outbox, None).await;
    let mail = reset_mail();

    let id = mailer.send(mail.clone()).await.expect("kept");

    assert!(id.starts_with("mail_outbox:"), "{id}");
    let row = stored(&db, &id).await;
    assert_eq!(row.recipient, mail.to);
    assert_eq!(row.subject, mail.subject);
    assert_eq!(row.body, mail.text);
    assert_eq!(row.kind, "password_reset");
    assert!(row.sent_at.is_some(), "the outbox is the delivery");
    assert_eq!(mailer.retry_unsent().await.expect("a retry pass"), 0);
}

#[tokio::test]
async fn a_mail_that_cannot_be_addressed_is_refused_before_it_is_stored() {
    let (mailer, db) = mailer(MailProviderKind::Outbox, None).await;

    let mut mail = reset_mail();
    mail.to = "not an address".to_owned();
    let err = mailer.send(mail).await.expect_err("refused");
    assert!(matches!(err, MailError::InvalidRecipient { .. }), "{err}");

    let mut mail = reset_mail();
    mail.subject = "Hi\r\nBcc: everyone@example.com".to_owned();
    let err = mailer.send(mail).await.expect_err("refused");
    assert!(matches!(err, MailError::MultilineSubject), "{err}");

    let mut response = db
        .query("RETURN count(SELECT VALUE id FROM mail_outbox)")
        .await
        .expect("a count");
    let count: Option<u64> = response.take(0).expect("a number");
    assert_eq!(count.unwrap_or(0), 0);
}

#[tokio::test]
async fn bad_mail_settings_name_their_key() {
    let settings = test_settings();
    let db = helpnow::store::connect(&settings.database)
        .await
        .expect("an in-memory database");

    let mut mail = settings.mail.clone();
    mail.from = "HelpNow".to_owned();
    let err = Mailer::from_settings(&mail, db.clone()).expect_err("no address in from");
    assert!(err.to_string().contains("mail.from"), "{err}");

    let mut mail = settings.mail.clone();
    mail.provider = MailProviderKind::Smtp;
    mail.smtp_url = Some(SecretString::from("gopher://user:hunter2@mail.example"));
    let err = Mailer::from_settings(&mail, db).expect_err("not an SMTP URL");
    assert!(err.to_string().contains("mail.smtp_url"), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

/// Just enough of RFC 5322, MIME and RFC 2047 to read a single-part text mail like a mail client.
pub(crate) struct ParsedMail {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl ParsedMail {
    pub(crate) fn parse(data: &[u8]) -> Self {
        let split = data
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("headers end with an empty line");
        let head = std::str::from_utf8(&data[..split]).expect("headers are ASCII");
        assert!(head.is_ascii(), "headers are 7-bit: {head}");
        let mut headers: Vec<(String, String)> = Vec::new();
        for line in head.split("\r\n") {
            if line.starts_with([' ', '\t']) {
                // A folded header continues the previous one.
                let (_, value) = headers.last_mut().expect("a header to continue");
                value.push_str(line);
            } else {
                let (name, value) = line.split_once(':').expect("name: value");
                headers.push((name.to_owned(), value.trim().to_owned()));
            }
        }
        ParsedMail {
            headers,
            body: data[split + 4..].to_vec(),
        }
    }

    /// The decoded value of the header (names compare case-insensitively, like mail clients).
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, value)| decode_encoded_words(value))
    }

    /// The body as text, after the transfer encoding, with line ends as the sender wrote them.
    /// Trailing line ends are dropped, as mail clients do: lettre ends the body with a line end
    /// and then sends the `<CRLF>.<CRLF>` terminator, so a mail arrives with one or two empty
    /// lines more at the end than it had.
    pub(crate) fn text(&self) -> String {
        let encoding = self
            .header("Content-Transfer-Encoding")
            .unwrap_or_else(|| "7bit".to_owned())
            .to_lowercase();
        let bytes = match encoding.as_str() {
            "quoted-printable" => decode_quoted_printable(&self.body),
            "base64" => {
                let compact: Vec<u8> = self
                    .body
                    .iter()
                    .copied()
                    .filter(|b| !b.is_ascii_whitespace())
                    .collect();
                base64::engine::general_purpose::STANDARD
                    .decode(compact)
                    .expect("valid base64")
            }
            "7bit" | "8bit" => self.body.clone(),
            other => panic!("unexpected transfer encoding {other}"),
        };
        String::from_utf8(bytes)
            .expect("UTF-8 text")
            .replace("\r\n", "\n")
            .trim_end_matches('\n')
            .to_owned()
    }
}

fn decode_quoted_printable(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'=' if body[i + 1..].starts_with(b"\r\n") => i += 3,
            b'=' if body[i + 1..].starts_with(b"\n") => i += 2,
            b'=' => {
                let hex = std::str::from_utf8(&body[i + 1..i + 3]).expect("hex digits");
                out.push(u8::from_str_radix(hex, 16).expect("a hex byte"));
                i += 3;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// Decodes `=?charset?B|Q?text?=` words (UTF-8 only); whitespace between two encoded words is dropped.
fn decode_encoded_words(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    let mut after_word = false;
    while let Some(start) = rest.find("=?") {
        let between = &rest[..start];
        if !(after_word && between.trim().is_empty()) {
            out.push_str(between);
        }
        let word = &rest[start + 2..];
        let mut parts = word.splitn(3, '?');
        let charset = parts.next().expect("a charset");
        let encoding = parts.next().expect("an encoding");
        let tail = parts.next().expect("encoded text");
        let end = tail.find("?=").expect("the end of an encoded word");
        assert!(charset.eq_ignore_ascii_case("utf-8"), "{charset}");
        let text = &tail[..end];
        let bytes = if encoding.eq_ignore_ascii_case("b") {
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .expect("valid base64")
        } else {
            decode_quoted_printable(text.replace('_', " ").as_bytes())
        };
        out.push_str(&String::from_utf8(bytes).expect("UTF-8"));
        rest = &tail[end + 2..];
        after_word = true;
    }
    out.push_str(rest);
    out
}
