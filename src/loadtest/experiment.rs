//! The experiment scenario (issue 48): the visitors an ad sends to a campaign in an A/B
//! experiment. Each virtual client brings one new visitor after another (a fresh visitor id
//! each) until the run ends, or until `--visitors` have come in all:
//!
//! 1. The ad's page, `GET /chat-help?campaignid=ID` with the `vid` cookie, redirects not
//!    followed: a 302 to `/Chat-Help-2` is an arm that offers the refundable-fee funnel, a 302 to
//!    `/get-help` one that offers the help form (not filled in: counted as `help_form`, and the
//!    client goes on to its next visitor); any other answer (the page, or a 503 from a server
//!    without the built web app) is the chat funnel.
//! 2. That funnel's socket, joined as the `funnel` scenario joins it, with `campaignid` in its
//!    auth. The `conversation` event names the visitor's arm (`experiment.arm`; none: counted as
//!    `outside`), and the server counts the arm's exposure as the conversation starts.
//! 3. The three messages, `--think` apart, to the final one; then, with the probability
//!    `--convert` gives the arm (an arm not listed, or none: 0), the checkout: the `checkout`
//!    event's link (which answers 303 to the demo checkout) and the demo payment with the test
//!    card, as the member scenario pays, by `exp-<visitor>@loadtest.example.com`. The server
//!    counts the paid trial as the arm's conversion. A visitor who does not pay leaves.
//!
//! Timed: the page (`page_ms`), the checkout event to its link (`checkout_ms`), and the link and
//! payment (`payment_ms`), besides the `funnel` scenario's joins, acknowledgements and replies.
//! The report's `experiment` section has, per arm, its visitors (each exposed once), those who
//! reached the final message, those who paid, the target rate and the paid share of visitors
//! (paid by visitors, as the server's conversion rate is conversions by exposures); and how many
//! visitors the page sent to the refundable-fee funnel, to the help form, and were in no
//! experiment. `--visitors` ends the run when the last visitor is done: every visitor then
//! reaches the end (a run ended by `--duration` leaves the last ones halfway).
//!
//! The server needs the demo checkout (`payments.provider = "demo"`, the default) and the
//! per-address limit on funnel joins off (`APP__REALTIME__FUNNEL_JOINS_PER_MINUTE=0`), as for the
//! funnel scenarios. Each visitor's page, socket and payment come from its client's source
//! address (127.0.0.1-200 for a server on loopback), and the server lets one address open 20
//! checkouts, then one every 6 s (`CHECKOUT_PER_ADDRESS` in src/auth/throttle.rs, not a
//! setting). With `--connections` up to 200 each client has an address of its own: its first 20
//! payers go through, and after them one every 6 s; a checkout past that is refused (the server
//! hands out its fallback link, counted as `checkout_failed`).

use std::net::IpAddr;
use std::time::Duration;

use rand::Rng;
use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::acks::AckLog;
use super::client::{Client, ClientError, Target, ack_of};
use super::member::{SetupError, Signup, pay_demo_checkout};
use super::stats::Stats;
use super::{Finished, Joined, Options, PATIENCE, Visit, jittered, join_as, messages, visitor_id};

/// The least pause after a failed visit.
const AFTER_A_FAILURE: Duration = Duration::from_millis(100);

/// Where one virtual client's visitors come from: the server, the client's source address, and
/// the HTTP client bound to that address.
pub(super) struct Origin<'a> {
    pub target: &'a Target,
    pub local: IpAddr,
    pub http: &'a reqwest::Client,
    pub base: &'a url::Url,
}

/// Why a visit ended early: counted by its kind, and the client goes on to its next visitor.
enum VisitError {
    /// The funnel's socket (the `funnel` scenario's kinds: `connect`, `refused`, `timeout`, ...).
    Socket(ClientError),
    /// An HTTP step (`page`, `handoff`, `payment`, or one with the status it answered).
    Http(SetupError),
    /// An answer the scenario does not expect, by its kind.
    Unexpected(&'static str),
}

impl VisitError {
    fn kind(&self) -> String {
        match self {
            VisitError::Socket(error) => error.kind().to_owned(),
            VisitError::Http(error) => error.step_kind(),
            VisitError::Unexpected(kind) => (*kind).to_owned(),
        }
    }
}

impl From<ClientError> for VisitError {
    fn from(error: ClientError) -> Self {
        VisitError::Socket(error)
    }
}

impl From<SetupError> for VisitError {
    fn from(error: SetupError) -> Self {
        VisitError::Http(error)
    }
}

/// One virtual client: visitors one after another until the run ends or the run's visitors
/// have all come.
pub(super) async fn run(
    origin: &Origin<'_>,
    options: &Options,
    stats: &Stats,
    started: Instant,
    ends: Instant,
    acks: Option<&AckLog>,
) {
    while Instant::now() < ends && stats.visits.take(options.visitors) {
        if let Err(error) = visit(origin, options, stats, started, ends, acks).await {
            stats.error(error.kind());
            // A failed visit is not followed by the next in a tight loop, even at `--think 0`.
            tokio::time::sleep(options.think.max(AFTER_A_FAILURE)).await;
        }
    }
}

/// Where the ad's page sends a visitor.
enum Landing {
    /// A chat funnel: `chat` or `refundable`.
    Funnel(&'static str),
    /// The help form, which the scenario does not fill in.
    HelpForm,
}

/// One new visitor: the page, the chat, and the checkout paid or not.
async fn visit(
    origin: &Origin<'_>,
    options: &Options,
    stats: &Stats,
    started: Instant,
    ends: Instant,
    acks: Option<&AckLog>,
) -> Result<(), VisitError> {
    let visitor = visitor_id();
    let campaign = options.campaign.as_deref();
    let funnel = match landing(origin, campaign, &visitor, stats).await? {
        Landing::Funnel(funnel) => funnel,
        Landing::HelpForm => {
            Stats::count(&stats.visits.help_form);
            return Ok(());
        }
    };
    let email = format!("exp-{visitor}@loadtest.example.com");
    let visit = Visit {
        funnel,
        visitor,
        campaign,
    };
    let Joined {
        mut client,
        conversation,
        view,
    } = join_as(origin.target, origin.local, stats, started, visit).await?;
    let arm = view
        .get("experiment")
        .and_then(|experiment| experiment.get("arm"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    match &arm {
        Some(arm) => stats.visits.arm(arm, |counts| counts.visitors += 1),
        None => Stats::count(&stats.visits.outside),
    }
    let record = acks.map(|log| (log, &conversation));
    match messages(&mut client, stats, ends, || jittered(options.think), record).await? {
        Finished::Conversation => {}
        Finished::Run => {
            client.close().await;
            return Ok(());
        }
    }
    let Some(arm) = arm else {
        // In no arm: nobody outside the experiment pays.
        client.close().await;
        return Ok(());
    };
    stats.visits.arm(&arm, |counts| counts.finished += 1);
    let rate = options.convert.get(&arm).copied().unwrap_or(0.0);
    if rand::rng().random::<f64>() >= rate {
        client.close().await;
        return Ok(());
    }
    let asked = Instant::now();
    let link = open_checkout(&mut client).await;
    client.close().await;
    let link = link?;
    stats.sample("checkout_ms", asked.elapsed());
    let paying = Instant::now();
    pay(origin, &link, email).await?;
    stats.sample("payment_ms", paying.elapsed());
    stats.visits.arm(&arm, |counts| counts.paid += 1);
    Ok(())
}

/// The ad's page for `visitor`, and where it sends them.
async fn landing(
    origin: &Origin<'_>,
    campaign: Option<&str>,
    visitor: &str,
    stats: &Stats,
) -> Result<Landing, VisitError> {
    let mut url = origin
        .base
        .join("/chat-help")
        .map_err(|_| VisitError::Unexpected("page_url"))?;
    if let Some(campaign) = campaign {
        url.query_pairs_mut().append_pair("campaignid", campaign);
    }
    let began = Instant::now();
    let response = origin
        .http
        .get(url)
        // The visitor cookie's name on a plain-http server, and on one behind https.
        .header(COOKIE, format!("vid={visitor}; __Host-vid={visitor}"))
        .send()
        .await
        .map_err(|error| SetupError::Http {
            step: "page",
            error,
        })?;
    let status = response.status();
    let location = location_path(origin.base, &response);
    // Read to its end, so the connection can carry the visitor's next request.
    let _ = response.bytes().await;
    stats.sample("page_ms", began.elapsed());
    if status != StatusCode::FOUND {
        return Ok(Landing::Funnel("chat"));
    }
    match location.as_deref() {
        Some("/Chat-Help-2") => {
            Stats::count(&stats.visits.refundable);
            Ok(Landing::Funnel("refundable"))
        }
        Some("/get-help") => Ok(Landing::HelpForm),
        _ => Err(VisitError::Unexpected("page_redirect")),
    }
}

/// The path of a response's `Location` (relative to `base` when it is relative).
fn location_path(base: &url::Url, response: &reqwest::Response) -> Option<String> {
    let location = response.headers().get(LOCATION)?.to_str().ok()?;
    Some(base.join(location).ok()?.path().to_owned())
}

/// Presses the checkout button after the final message: the link the `checkout` event's
/// acknowledgement gives.
async fn open_checkout(client: &mut Client) -> Result<String, VisitError> {
    let id = client.emit_with_ack("checkout", json!({})).await?;
    let answer = tokio::time::timeout(PATIENCE, async {
        loop {
            let packet = client.next_packet().await?;
            if let Some(answer) = ack_of(&packet, id) {
                return Ok::<_, ClientError>(answer.clone());
            }
        }
    })
    .await
    .map_err(|_| ClientError::Timeout("the checkout"))??;
    answer
        .get("url")
        .and_then(Value::as_str)
        .map(str::to_owned)
        // `{error}`: the conversation has no final message.
        .ok_or(VisitError::Unexpected("checkout_refused"))
}

/// Follows the checkout's link to the demo checkout (a 303 to `/demo-checkout/{session}`) and
/// pays it as `email`.
async fn pay(origin: &Origin<'_>, link: &str, email: String) -> Result<(), VisitError> {
    let url = origin
        .base
        .join(link)
        .map_err(|_| VisitError::Unexpected("checkout_link"))?;
    let response = origin
        .http
        .get(url)
        .send()
        .await
        .map_err(|error| SetupError::Http {
            step: "handoff",
            error,
        })?;
    // Anything but the redirect: the link was the fallback the server gives when it could not
    // open the checkout (its log says why), or it expired.
    if response.status() != StatusCode::SEE_OTHER {
        return Err(VisitError::Unexpected("checkout_failed"));
    }
    let location = location_path(origin.base, &response).unwrap_or_default();
    let session = location
        .strip_prefix("/demo-checkout/")
        .filter(|session| !session.is_empty())
        .ok_or(VisitError::Unexpected("checkout_not_demo"))?;
    let payer = Signup {
        base: origin.base,
        http: origin.http,
        email,
    };
    pay_demo_checkout(&payer, session, None).await?;
    Ok(())
}
