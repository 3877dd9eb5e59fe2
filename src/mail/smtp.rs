//! Delivery through an SMTP server with lettre (tokio, rustls).
//!
//! `mail.smtp_url` follows lettre's URL rules: `smtp://host:port` talks plain SMTP (meant for a relay
//! on the same machine), `smtp://host:port?tls=required` upgrades with STARTTLS and refuses servers
//! without it (`?tls=opportunistic` upgrades when offered), and `smtps://host:port` is TLS from the
//! first byte. `user:pass@` in the URL signs in; percent-encode special characters in the password.

use std::net::IpAddr;
use std::time::Duration;

use lettre::message::{Mailbox, SinglePart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::MailError;
use crate::store::outbox::{MailContent, key_of};

/// Bounds each SMTP command, so a server that accepts the connection and then stalls is noticed.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Bounds one whole delivery (connect, TLS, sign-in, transfer): `send` is awaited by requests.
pub(super) const DELIVERY_TIMEOUT: Duration = Duration::from_secs(20);

pub(super) struct SmtpDelivery {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

/// Why one delivery attempt failed; stored as the row's `last_error`.
#[derive(Debug, thiserror::Error)]
pub(super) enum DeliveryError {
    #[error("the stored recipient '{recipient}' is not an address: {source}")]
    Recipient {
        recipient: String,
        source: lettre::address::AddressError,
    },
    #[error("cannot build the message: {0}")]
    Message(#[from] lettre::error::Error),
    #[error("smtp: {0}")]
    Smtp(#[from] lettre::transport::smtp::Error),
    #[error("no answer from the SMTP server within {} seconds", DELIVERY_TIMEOUT.as_secs())]
    TimedOut,
}

impl SmtpDelivery {
    pub(super) fn new(smtp_url: &str, from: Mailbox) -> Result<Self, MailError> {
        refuse_clear_text_password(smtp_url)?;
        // lettre's URL errors never repeat the URL, so the password cannot leak through them.
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url)
            .map_err(|error| MailError::config("mail.smtp_url", error.to_string()))?
            .timeout(Some(COMMAND_TIMEOUT))
            .build();
        Ok(SmtpDelivery { transport, from })
    }

    pub(super) async fn deliver(
        &self,
        outbox_id: &str,
        mail: &MailContent,
    ) -> Result<(), DeliveryError> {
        let message = self.message(outbox_id, mail)?;
        match tokio::time::timeout(DELIVERY_TIMEOUT, self.transport.send(message)).await {
            Ok(Ok(_response)) => Ok(()),
            Ok(Err(error)) => Err(DeliveryError::Smtp(error)),
            Err(_elapsed) => Err(DeliveryError::TimedOut),
        }
    }

    fn message(&self, outbox_id: &str, mail: &MailContent) -> Result<Message, DeliveryError> {
        let to: Mailbox = mail
            .recipient
            .parse()
            .map_err(|source| DeliveryError::Recipient {
                recipient: mail.recipient.clone(),
                source,
            })?;
        // `SinglePart::plain`: text/plain; charset=utf-8, with 7bit, quoted-printable or base64
        // chosen per body, so long lines and non-ASCII text arrive intact.
        Ok(Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject.clone())
            .message_id(Some(message_id(outbox_id, &self.from)))
            .singlepart(SinglePart::plain(mail.body.clone()))?)
    }
}

/// The same Message-ID on every attempt of one outbox row: when an attempt timed out after the
/// server had in fact accepted the mail, the retry is recognisable as the same message.
fn message_id(outbox_id: &str, from: &Mailbox) -> String {
    let local: String = key_of(outbox_id)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    format!("<{local}.outbox@{}>", from.email.domain())
}

/// Plain `smtp://` with a password to another machine would send the password unencrypted over
/// the network; that is a configuration mistake, so start-up stops and names the key.
fn refuse_clear_text_password(smtp_url: &str) -> Result<(), MailError> {
    let url = url::Url::parse(smtp_url).map_err(|error| {
        MailError::config(
            "mail.smtp_url",
            format!("is not a URL such as smtps://user:pass@smtp.example.com:465 ({error})"),
        )
    })?;
    let upgrades_to_tls = url.query_pairs().any(|(key, _)| key == "tls");
    let clear_text = url.scheme() == "smtp" && !upgrades_to_tls;
    if clear_text && url.password().is_some() && !is_loopback(&url) {
        return Err(MailError::config(
            "mail.smtp_url",
            "would send the SMTP password unencrypted; use smtps://, or add ?tls=required for STARTTLS",
        ));
    }
    Ok(())
}

fn is_loopback(url: &url::Url) -> bool {
    // `smtp` is not a scheme the URL standard knows, so even an IP address arrives as host text.
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Subjects become a header line; a line break in one would start a header of its own.
pub(super) fn subject_is_one_line(subject: &str) -> bool {
    !subject.contains(['\r', '\n'])
}

/// The `From` header value, checked once at start-up.
pub(super) fn parse_from(from: &str) -> Result<Mailbox, MailError> {
    from.parse::<Mailbox>().map_err(|error| {
        MailError::config(
            "mail.from",
            format!(
                "'{from}' is not a mailbox such as \"HelpNow <no-reply@helpnow.example>\" ({error})"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(body: &str) -> MailContent {
        MailContent {
            recipient: "Ann <ann@example.com>".to_owned(),
            subject: "Réinitialiser".to_owned(),
            body: body.to_owned(),
            kind: "password_reset".to_owned(),
        }
    }

    fn delivery() -> SmtpDelivery {
        SmtpDelivery::new(
            "smtp://127.0.0.1:2525",
            parse_from("HelpNow <no-reply@helpnow.example>").expect("from"),
        )
        .expect("delivery")
    }

    #[test]
    fn a_message_is_utf8_plain_text_with_a_stable_message_id() {
        let message = delivery()
            .message("mail_outbox:abc123", &content("Grüße\n"))
            .expect("message");
        let headers = message.headers();
        assert_eq!(
            headers.get_raw("Message-ID"),
            Some("<abc123.outbox@helpnow.example>")
        );
        let formatted = String::from_utf8(message.formatted()).expect("ASCII");
        assert!(
            formatted.contains("\r\nContent-Type: text/plain; charset=utf-8\r\n"),
            "{formatted}"
        );
        assert_eq!(
            message.envelope().to().first().map(ToString::to_string),
            Some("ann@example.com".to_owned())
        );
    }

    #[test]
    fn a_clear_text_password_to_another_machine_is_refused() {
        let from = parse_from("a@example.com").expect("from");
        for refused in [
            "smtp://user:secret@smtp.example.com:587",
            "smtp://user:secret@10.0.0.5:25",
        ] {
            let err = SmtpDelivery::new(refused, from.clone())
                .err()
                .expect("refused");
            let text = err.to_string();
            assert!(text.contains("mail.smtp_url"), "{refused}: {text}");
            assert!(!text.contains("secret"), "{refused}: {text}");
        }

        for allowed in [
            "smtp://user:secret@smtp.example.com:587?tls=required",
            "smtps://user:secret@smtp.example.com",
            "smtp://user:secret@127.0.0.1:25",
            "smtp://user:secret@[::1]:25",
            "smtp://user:secret@localhost:25",
            "smtp://smtp.example.com:25",
        ] {
            assert!(
                SmtpDelivery::new(allowed, from.clone()).is_ok(),
                "{allowed} is accepted"
            );
        }
    }

    #[test]
    fn a_bad_url_names_the_key_without_showing_it() {
        let from = parse_from("a@example.com").expect("from");
        for bad in [
            "not a url",
            "http://user:secret@example.com",
            "smtp://user:secret@",
        ] {
            let err = SmtpDelivery::new(bad, from.clone()).err().expect("refused");
            let text = err.to_string();
            assert!(text.contains("mail.smtp_url"), "{bad}: {text}");
            assert!(!text.contains("secret"), "{bad}: {text}");
        }
    }

    #[test]
    fn a_bad_from_names_the_key() {
        let err = parse_from("HelpNow").expect_err("no address");
        assert!(err.to_string().contains("mail.from"), "{err}");
    }

    #[test]
    fn subjects_stay_on_one_line() {
        assert!(subject_is_one_line("Reset your password"));
        assert!(!subject_is_one_line("Hi\r\nBcc: everyone@example.com"));
    }
}
