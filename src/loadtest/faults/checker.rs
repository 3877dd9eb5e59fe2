//! The fault run's checker: the clients' history ([`super::history`]), the faults injected and
//! the store as the run left it, judged against the rules. Each kind of violation is a
//! name in the table; `check` finds every one and keeps an example of each.
//!
//! - `lost_ack`: a message acknowledged (stored, says the protocol) is not in the store.
//! - `stored_twice`: a message is stored more than once (acknowledged or not).
//! - `out_of_order`: a conversation's messages are stored in another order than they were sent.
//! - `never_sent`: a stored visitor or member message no client sent, or one the server refused.
//! - `two_replies`: two replies in a row: to one visitor message, or to one member message.
//! - `unanswered`: a visitor message without its reply, sent long enough before the run ended.
//! - `shown_late`: a reply stored while a page of its conversation stayed connected, not shown
//!   there within 10 s (no fault on meanwhile): an event lost between processes, unnoticed.
//! - `shown_twice`, `shown_wrong`: what a page shows (its events applied by the web app's rules:
//!   the `conversation` event replaces the list, `message` appends, an acknowledged send appends
//!   the visitor's text; a member's `chat:done` is the reply) is not what the store holds: a
//!   message shown twice, or one shown in another order or never stored.
//! - `checkout_twice`: a conversation opened more than one checkout; `checkout_early` and
//!   `checkout_late`: its automatic checkout opened more than 1 s before or 2 s after the
//!   deadline it stored (late is allowed while a fault was on).
//! - `signout_open`: a socket of a signed-out member still open 5 s after the sign-out was done
//!   (or after the faults then on healed); `signout_reconnect`: a socket joined with the session
//!   after its sign-out.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use super::history::{Entry, Line};

/// A fault as the nemesis injected it: from `start` to `heal` (milliseconds since the run began).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Fault {
    pub kind: String,
    pub target: String,
    pub start: u64,
    pub heal: u64,
}

/// A funnel conversation as stored.
#[derive(Debug, Clone, Serialize, Default)]
pub struct StoredConversation {
    pub id: String,
    pub visitor: String,
    /// (role, text), in place order.
    pub messages: Vec<(String, String)>,
    /// When each was stored, in milliseconds since the run began.
    pub at: Vec<i64>,
    /// Milliseconds since the run began (negative: before).
    pub deadline: Option<i64>,
    pub started: Option<i64>,
}

/// A member's chat message as stored.
#[derive(Debug, Clone, Serialize)]
pub struct StoredMessage {
    pub id: String,
    pub chat: String,
    pub role: String,
    pub content: String,
    pub at: i64,
}

/// What the store holds at the end of the run.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Stored {
    pub conversations: Vec<StoredConversation>,
    /// The visitor of each checkout session opened.
    pub checkouts: Vec<String>,
    pub messages: Vec<StoredMessage>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Violation {
    pub kind: &'static str,
    /// The client, conversation or chat.
    pub subject: String,
    pub evidence: String,
}

/// What was checked.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Operations {
    pub sends: u64,
    pub acknowledged: u64,
    pub refused: u64,
    pub unanswered_sends: u64,
    pub shown: u64,
    pub connections: u64,
    pub conversations: u64,
    pub chats: u64,
    pub checkouts: u64,
    pub sign_outs: u64,
    /// Sends made while a fault was on.
    pub sends_during_faults: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Verdict {
    pub faults: BTreeMap<String, u64>,
    pub operations: Operations,
    pub violations: Vec<Violation>,
}

/// The kinds, in the table's order.
pub const KINDS: &[&str] = &[
    "lost_ack",
    "stored_twice",
    "out_of_order",
    "never_sent",
    "two_replies",
    "unanswered",
    "shown_late",
    "shown_twice",
    "shown_wrong",
    "checkout_twice",
    "checkout_early",
    "checkout_late",
    "signout_open",
    "signout_reconnect",
];

/// A visitor message sent this long before the run's end must have its reply.
const REPLY_OWED_AFTER: u64 = 30_000;
/// A sign-out closes every socket of its session within this.
const SIGN_OUT_CLOSES_WITHIN: u64 = 5_000;
/// A reply stored reaches a page connected to its conversation within this.
const SHOWN_WITHIN: u64 = 10_000;

impl Verdict {
    pub fn count(&self, kind: &str) -> usize {
        self.violations.iter().filter(|v| v.kind == kind).count()
    }

    /// The table the run prints.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(kind, count)| format!("{kind} {count}"))
            .collect();
        out.push_str(&format!(
            "faults injected: {} ({})\n",
            self.faults.values().sum::<u64>(),
            faults.join(", ")
        ));
        let o = &self.operations;
        out.push_str(&format!(
            "operations: {} sends ({} while a fault was on), {} acknowledged, {} refused, {} unanswered; {} events shown; {} connections; {} conversations, {} chats, {} checkouts, {} sign-outs\n",
            o.sends, o.sends_during_faults, o.acknowledged, o.refused, o.unanswered_sends, o.shown, o.connections, o.conversations, o.chats, o.checkouts, o.sign_outs
        ));
        out.push_str("| violation | count | example |\n|---|---|---|\n");
        for kind in KINDS {
            let example = self
                .violations
                .iter()
                .find(|v| v.kind == *kind)
                .map(|v| format!("{}: {}", v.subject, v.evidence))
                .unwrap_or_default();
            out.push_str(&format!(
                "| {kind} | {} | {} |\n",
                self.count(kind),
                example.replace('|', "/")
            ));
        }
        out
    }
}

/// Whether a fault was on at any moment of `[from, to]`.
fn fault_during(faults: &[Fault], from: u64, to: u64) -> bool {
    faults.iter().any(|f| f.start <= to && f.heal >= from)
}

/// One client's lines, in order.
fn by_client(history: &[Line]) -> BTreeMap<&str, Vec<&Line>> {
    let mut clients: BTreeMap<&str, Vec<&Line>> = BTreeMap::new();
    for line in history {
        clients.entry(line.client.as_str()).or_default().push(line);
    }
    clients
}

/// A send as the client saw it end.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Acked {
        message: Option<String>,
    },
    Refused,
    /// No answer, or `unavailable`: the server could not confirm the save in time (its store
    /// call timed out), and the write may still have landed. Stored once or not at all.
    Unanswered,
}

/// The refusal that means "not confirmed" rather than "not stored" (see [`Outcome::Unanswered`]).
const UNCONFIRMED: &str = "unavailable";

#[derive(Debug, Clone)]
struct Sent {
    t: u64,
    text: String,
    outcome: Outcome,
}

/// The sends of one client, each with its outcome. An acknowledgement's id counts per
/// connection, so a send is found by the connection it went on.
fn sends_of(lines: &[&Line]) -> Vec<Sent> {
    let mut sends: Vec<Sent> = Vec::new();
    let mut open: HashMap<u64, usize> = HashMap::new();
    for line in lines {
        match &line.entry {
            Entry::Connect { .. } => open.clear(),
            Entry::Send { op, text, .. } => {
                open.insert(*op, sends.len());
                sends.push(Sent {
                    t: line.t,
                    text: text.clone(),
                    outcome: Outcome::Unanswered,
                });
            }
            Entry::Ack {
                op,
                ok,
                message,
                code,
                ..
            } => {
                if let Some(index) = open.remove(op) {
                    sends[index].outcome = if *ok {
                        Outcome::Acked {
                            message: message.clone(),
                        }
                    } else if code.as_deref() == Some(UNCONFIRMED) {
                        Outcome::Unanswered
                    } else {
                        Outcome::Refused
                    };
                }
            }
            _ => {}
        }
    }
    sends
}

/// Whether `shown` is `stored` with some entries left out (each stored entry shown at most
/// once, in order).
fn is_subsequence(shown: &[(String, String)], stored: &[(String, String)]) -> bool {
    let mut rest = stored.iter();
    shown
        .iter()
        .all(|item| rest.any(|candidate| candidate == item))
}

/// Checks everything; `ends` is when the run ended (ms since it began).
pub fn check(history: &[Line], faults: &[Fault], stored: &Stored, ends: u64) -> Verdict {
    let mut verdict = Verdict::default();
    for fault in faults {
        *verdict.faults.entry(fault.kind.clone()).or_default() += 1;
    }
    let clients = by_client(history);
    for lines in clients.values() {
        for line in lines {
            match &line.entry {
                Entry::Send { .. } => {
                    verdict.operations.sends += 1;
                    if fault_during(faults, line.t, line.t) {
                        verdict.operations.sends_during_faults += 1;
                    }
                }
                Entry::Ack { ok: true, .. } => verdict.operations.acknowledged += 1,
                Entry::Ack { ok: false, .. } => verdict.operations.refused += 1,
                Entry::Timeout { .. } => verdict.operations.unanswered_sends += 1,
                Entry::Shown { .. } => verdict.operations.shown += 1,
                Entry::Connect { .. } => verdict.operations.connections += 1,
                Entry::SignOut { done: true, .. } => verdict.operations.sign_outs += 1,
                _ => {}
            }
        }
    }
    check_funnels(&clients, faults, stored, ends, &mut verdict);
    check_members(&clients, faults, stored, &mut verdict);
    verdict
}

fn check_funnels(
    clients: &BTreeMap<&str, Vec<&Line>>,
    faults: &[Fault],
    stored: &Stored,
    ends: u64,
    verdict: &mut Verdict,
) {
    let by_visitor: HashMap<&str, &StoredConversation> = stored
        .conversations
        .iter()
        .map(|c| (c.visitor.as_str(), c))
        .collect();
    let mut checkouts: HashMap<&str, u64> = HashMap::new();
    for visitor in &stored.checkouts {
        *checkouts.entry(visitor.as_str()).or_default() += 1;
    }
    for (client, lines) in clients {
        let Some(Entry::Visitor { visitor, tab, .. }) = lines.first().map(|l| &l.entry) else {
            continue;
        };
        // A second tab sends nothing: only what it shows is checked.
        if *tab {
            if let Some(conversation) = by_visitor.get(visitor.as_str()) {
                check_funnel_page(client, lines, conversation, verdict);
                check_funnel_liveness(client, lines, conversation, faults, ends, verdict);
            }
            continue;
        }
        let sends = sends_of(lines);
        let Some(conversation) = by_visitor.get(visitor.as_str()) else {
            if let Some(sent) = sends
                .iter()
                .find(|s| matches!(s.outcome, Outcome::Acked { .. }))
            {
                violation(
                    verdict,
                    "lost_ack",
                    client,
                    format!(
                        "'{}' acknowledged at {} ms; no conversation stored",
                        sent.text, sent.t
                    ),
                );
            }
            continue;
        };
        verdict.operations.conversations += 1;
        let stored_user: Vec<&str> = conversation
            .messages
            .iter()
            .filter(|(role, _)| role == "user")
            .map(|(_, text)| text.as_str())
            .collect();
        let count = |text: &str| stored_user.iter().filter(|t| **t == text).count();
        // Rule 1: acknowledged once; never twice; nothing stored that was not sent.
        let mut seen = Vec::new();
        for sent in &sends {
            if seen.contains(&sent.text) {
                continue;
            }
            seen.push(sent.text.clone());
            let times = count(&sent.text);
            let acked = sends
                .iter()
                .any(|s| s.text == sent.text && matches!(s.outcome, Outcome::Acked { .. }));
            if acked && times == 0 {
                violation(
                    verdict,
                    "lost_ack",
                    client,
                    format!(
                        "'{}' acknowledged, not stored in {}",
                        sent.text, conversation.id
                    ),
                );
            }
            if times > 1 {
                violation(
                    verdict,
                    "stored_twice",
                    client,
                    format!(
                        "'{}' stored {times} times in {}",
                        sent.text, conversation.id
                    ),
                );
            }
        }
        for text in &stored_user {
            if !sends
                .iter()
                .any(|s| s.text == *text && s.outcome != Outcome::Refused)
            {
                violation(
                    verdict,
                    "never_sent",
                    client,
                    format!(
                        "'{text}' stored in {} but not sent (or refused)",
                        conversation.id
                    ),
                );
            }
        }
        // In the order first sent.
        let order: Vec<&str> = stored_user
            .iter()
            .filter_map(|text| seen.iter().position(|s| s == text).map(|_| *text))
            .collect();
        let mut positions = order
            .iter()
            .filter_map(|t| seen.iter().position(|s| s == t));
        if let Some(first) = positions.next() {
            let mut last = first;
            for position in positions {
                if position < last {
                    violation(
                        verdict,
                        "out_of_order",
                        client,
                        format!("{} holds {stored_user:?}", conversation.id),
                    );
                    break;
                }
                last = position;
            }
        }
        // Rule 2: the greeting, then each visitor message and its one reply.
        let roles: Vec<&str> = conversation
            .messages
            .iter()
            .map(|(r, _)| r.as_str())
            .collect();
        for (place, pair) in roles.windows(2).enumerate() {
            match pair {
                ["assistant", "assistant"] => violation(
                    verdict,
                    "two_replies",
                    client,
                    format!(
                        "{} places {} and {} are both replies",
                        conversation.id,
                        place,
                        place + 1
                    ),
                ),
                ["user", "user"] => violation(
                    verdict,
                    "unanswered",
                    client,
                    format!(
                        "{} place {place}: a visitor message followed by another",
                        conversation.id
                    ),
                ),
                _ => {}
            }
        }
        if roles.last() == Some(&"user") {
            let last_text = stored_user.last().copied().unwrap_or_default();
            let sent_at = sends
                .iter()
                .filter(|s| s.text == last_text)
                .map(|s| s.t)
                .min();
            if sent_at.is_some_and(|t| t + REPLY_OWED_AFTER < ends) {
                violation(
                    verdict,
                    "unanswered",
                    client,
                    format!(
                        "'{last_text}' in {} has no reply {} s after it was sent",
                        conversation.id,
                        (ends - sent_at.unwrap_or(0)) / 1000
                    ),
                );
            }
        }
        // Rule 3: the page as the web app builds it.
        check_funnel_page(client, lines, conversation, verdict);
        check_funnel_liveness(client, lines, conversation, faults, ends, verdict);
        // Rule 4: one checkout, near its deadline.
        let opened = checkouts.get(visitor.as_str()).copied().unwrap_or(0);
        verdict.operations.checkouts += opened;
        if opened > 1 {
            violation(
                verdict,
                "checkout_twice",
                client,
                format!("{opened} checkouts opened for {}", conversation.id),
            );
        }
        if let (Some(deadline), Some(started)) = (conversation.deadline, conversation.started) {
            if started < deadline - 1_000 {
                violation(
                    verdict,
                    "checkout_early",
                    client,
                    format!(
                        "{} opened {} ms before its deadline",
                        conversation.id,
                        deadline - started
                    ),
                );
            }
            let from = u64::try_from(deadline.max(0))
                .unwrap_or(0)
                .saturating_sub(1_000);
            let to = u64::try_from(started.max(0)).unwrap_or(0);
            if started > deadline + 2_000 && !fault_during(faults, from, to) {
                violation(
                    verdict,
                    "checkout_late",
                    client,
                    format!(
                        "{} opened {} ms after its deadline, no fault on",
                        conversation.id,
                        started - deadline
                    ),
                );
            }
        }
    }
}

/// The times a client was connected: (joined, left), `ends` for a connection still open.
fn connections(lines: &[&Line], ends: u64) -> Vec<(u64, u64)> {
    let mut spans = Vec::new();
    let mut open: Option<u64> = None;
    for line in lines {
        match &line.entry {
            Entry::Connect { .. } => {
                if let Some(since) = open.replace(line.t) {
                    spans.push((since, line.t));
                }
            }
            Entry::Disconnect { .. } => {
                if let Some(since) = open.take() {
                    spans.push((since, line.t));
                }
            }
            _ => {}
        }
    }
    if let Some(since) = open {
        spans.push((since, ends));
    }
    spans
}

/// Each reply stored while the visitor's page stayed connected is shown there within
/// [`SHOWN_WITHIN`], unless a fault was on meanwhile.
fn check_funnel_liveness(
    client: &str,
    lines: &[&Line],
    conversation: &StoredConversation,
    faults: &[Fault],
    ends: u64,
    verdict: &mut Verdict,
) {
    let spans = connections(lines, ends);
    for (place, ((role, text), at)) in conversation
        .messages
        .iter()
        .zip(&conversation.at)
        .enumerate()
    {
        let Ok(at) = u64::try_from(*at) else {
            continue;
        };
        let due = at + SHOWN_WITHIN;
        if role != "assistant" || place == 0 || fault_during(faults, at, due) {
            continue;
        }
        if !spans
            .iter()
            .any(|(joined, left)| *joined <= at && *left >= due)
        {
            continue;
        }
        let shown = lines.iter().any(|line| {
            line.t >= at.saturating_sub(1_000)
                && line.t <= due
                && match &line.entry {
                    Entry::Shown { event, data } if event == "message" => {
                        role_and_text(data).is_some_and(|(r, t)| r == *role && t == *text)
                    }
                    Entry::Shown { event, data } if event == "conversation" => data
                        .get("messages")
                        .and_then(Value::as_array)
                        .is_some_and(|m| {
                            m.iter()
                                .filter_map(role_and_text)
                                .any(|(r, t)| r == *role && t == *text)
                        }),
                    _ => false,
                }
        });
        if !shown {
            violation(
                verdict,
                "shown_late",
                client,
                format!(
                    "{} place {place}, stored at {at} ms, not shown by {due} ms on a connection open throughout",
                    conversation.id
                ),
            );
        }
    }
}

/// Replays a visitor's events as the page applies them; after each, what it shows must be the
/// stored conversation with some messages not yet shown, none twice, none out of order.
fn check_funnel_page(
    client: &str,
    lines: &[&Line],
    conversation: &StoredConversation,
    verdict: &mut Verdict,
) {
    let mut shown: Vec<(String, String)> = Vec::new();
    let mut sent: HashMap<u64, String> = HashMap::new();
    for line in lines {
        match &line.entry {
            Entry::Connect { .. } => sent.clear(),
            Entry::Send { op, text, .. } => {
                sent.insert(*op, text.clone());
            }
            Entry::Ack { op, ok: true, .. } => {
                if let Some(text) = sent.remove(op) {
                    shown.push(("user".into(), text));
                }
            }
            Entry::Shown { event, data } => match event.as_str() {
                "conversation" => {
                    shown = data
                        .get("messages")
                        .and_then(Value::as_array)
                        .map(|m| m.iter().filter_map(role_and_text).collect())
                        .unwrap_or_default();
                }
                "message" => {
                    if let Some(message) = role_and_text(data) {
                        shown.push(message);
                    }
                }
                _ => continue,
            },
            _ => continue,
        }
        if !is_subsequence(&shown, &conversation.messages) {
            let twice = shown.iter().any(|item| {
                let times = shown.iter().filter(|s| *s == item).count();
                times > 1 && times > conversation.messages.iter().filter(|s| *s == item).count()
            });
            let kind = if twice { "shown_twice" } else { "shown_wrong" };
            violation(
                verdict,
                kind,
                client,
                format!(
                    "at {} ms the page shows {:?}; {} holds {:?}",
                    line.t,
                    texts(&shown),
                    conversation.id,
                    texts(&conversation.messages)
                ),
            );
            return;
        }
    }
}

fn texts(messages: &[(String, String)]) -> Vec<String> {
    messages
        .iter()
        .map(|(role, text)| {
            format!(
                "{}:{}",
                &role[..1],
                text.chars().take(24).collect::<String>()
            )
        })
        .collect()
}

fn role_and_text(message: &Value) -> Option<(String, String)> {
    Some((
        message.get("role")?.as_str()?.to_owned(),
        message.get("text")?.as_str()?.to_owned(),
    ))
}

fn check_members(
    clients: &BTreeMap<&str, Vec<&Line>>,
    faults: &[Fault],
    stored: &Stored,
    verdict: &mut Verdict,
) {
    let by_id: HashMap<&str, &StoredMessage> =
        stored.messages.iter().map(|m| (m.id.as_str(), m)).collect();
    let mut sent_texts: HashMap<&str, Vec<&Outcome>> = HashMap::new();
    let mut all_sends: Vec<(String, Sent)> = Vec::new();
    let mut devices: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (client, lines) in clients {
        let Some(Entry::Device { member }) = lines.first().map(|l| &l.entry) else {
            continue;
        };
        devices.entry(member.clone()).or_default().push(client);
        for sent in sends_of(lines) {
            all_sends.push(((*client).to_owned(), sent));
        }
    }
    for (_, sent) in &all_sends {
        sent_texts
            .entry(sent.text.as_str())
            .or_default()
            .push(&sent.outcome);
    }
    // Rule 1: acknowledged and stored once (a message's id is its key: stored means once).
    for (client, sent) in &all_sends {
        if let Outcome::Acked { message } = &sent.outcome {
            match message.as_deref().and_then(|id| by_id.get(id)) {
                Some(message) if message.content == sent.text && message.role == "user" => {}
                Some(message) => violation(
                    verdict,
                    "lost_ack",
                    client,
                    format!(
                        "'{}' acknowledged as {}, which holds '{}'",
                        sent.text, message.id, message.content
                    ),
                ),
                None => violation(
                    verdict,
                    "lost_ack",
                    client,
                    format!("'{}' acknowledged as {:?}, not stored", sent.text, message),
                ),
            }
        }
    }
    let mut chats: BTreeMap<&str, Vec<&StoredMessage>> = BTreeMap::new();
    for message in &stored.messages {
        chats
            .entry(message.chat.as_str())
            .or_default()
            .push(message);
    }
    verdict.operations.chats = chats.len() as u64;
    for (chat, messages) in &mut chats {
        messages.sort_by(|a, b| a.at.cmp(&b.at).then(a.id.cmp(&b.id)));
        let mut counted: HashMap<&str, usize> = HashMap::new();
        for message in messages.iter().filter(|m| m.role == "user") {
            *counted.entry(message.content.as_str()).or_default() += 1;
            match sent_texts.get(message.content.as_str()) {
                None => violation(
                    verdict,
                    "never_sent",
                    chat,
                    format!("'{}' stored, never sent", message.content),
                ),
                Some(outcomes) if outcomes.iter().all(|o| **o == Outcome::Refused) => violation(
                    verdict,
                    "never_sent",
                    chat,
                    format!("'{}' stored, though refused", message.content),
                ),
                _ => {}
            }
        }
        for (text, times) in counted {
            if times > 1 {
                violation(
                    verdict,
                    "stored_twice",
                    chat,
                    format!("'{text}' stored {times} times"),
                );
            }
        }
        // Rule 5: never two replies to one message.
        for pair in messages.windows(2) {
            if pair[0].role == "assistant" && pair[1].role == "assistant" {
                violation(
                    verdict,
                    "two_replies",
                    chat,
                    format!(
                        "replies {} and {} follow one message",
                        pair[0].id, pair[1].id
                    ),
                );
            }
        }
    }
    for (client, lines) in clients {
        let Some(Entry::Device { .. }) = lines.first().map(|l| &l.entry) else {
            continue;
        };
        // In the order sent, per device.
        let order: Vec<i64> = sends_of(lines)
            .iter()
            .filter_map(|s| match &s.outcome {
                Outcome::Acked { message } => message
                    .as_deref()
                    .and_then(|id| by_id.get(id))
                    .map(|m| m.at),
                _ => None,
            })
            .collect();
        if order.windows(2).any(|w| w[1] < w[0]) {
            violation(
                verdict,
                "out_of_order",
                client,
                "acknowledged messages stored in another order than sent".into(),
            );
        }
        // Rule 3 for members: a reply shown is the reply stored.
        for line in lines {
            if let Entry::Shown { event, data } = &line.entry
                && event == "chat:done"
            {
                let id = data.get("messageId").and_then(Value::as_str).unwrap_or("");
                let text = data.get("text").and_then(Value::as_str).unwrap_or("");
                let stopped = data.get("stopped") == Some(&Value::Bool(true));
                match by_id.get(id) {
                    Some(m) if m.role == "assistant" && m.content == text => {}
                    None if stopped && text.is_empty() => {}
                    found => violation(
                        verdict,
                        "shown_wrong",
                        client,
                        format!(
                            "at {} ms chat:done {id} '{}' ; stored: {:?}",
                            line.t,
                            text.chars().take(30).collect::<String>(),
                            found.map(|m| m.content.chars().take(30).collect::<String>())
                        ),
                    ),
                }
            }
        }
    }
    // Rule 6: a sign-out closes every socket of the session.
    for lines in clients.values() {
        for line in lines {
            let Entry::SignOut { member, done: true } = &line.entry else {
                continue;
            };
            let done = line.t;
            let healed = faults
                .iter()
                .filter(|f| f.start <= done + SIGN_OUT_CLOSES_WITHIN && f.heal >= done)
                .map(|f| f.heal)
                .max()
                .unwrap_or(done)
                .max(done);
            let deadline = healed + SIGN_OUT_CLOSES_WITHIN;
            for device in devices.get(member).into_iter().flatten() {
                let Some(device_lines) = clients.get(device) else {
                    continue;
                };
                let mut connected_since: Option<u64> = None;
                for l in device_lines {
                    match &l.entry {
                        Entry::Connect { .. } => {
                            if l.t > done {
                                violation(
                                    verdict,
                                    "signout_reconnect",
                                    device,
                                    format!("joined at {} ms, signed out at {done} ms", l.t),
                                );
                            }
                            connected_since = Some(l.t);
                        }
                        Entry::Disconnect { .. } => {
                            if connected_since.is_some() && l.t > deadline && l.t > done {
                                violation(
                                    verdict,
                                    "signout_open",
                                    device,
                                    format!(
                                        "closed at {} ms; signed out at {done} ms, faults healed at {healed} ms",
                                        l.t
                                    ),
                                );
                            }
                            connected_since = None;
                        }
                        _ => {}
                    }
                }
                if connected_since.is_some() {
                    violation(
                        verdict,
                        "signout_open",
                        device,
                        format!("still open at the end; signed out at {done} ms"),
                    );
                }
            }
        }
    }
}

fn violation(verdict: &mut Verdict, kind: &'static str, subject: &str, evidence: String) {
    verdict.violations.push(Violation {
        kind,
        subject: subject.to_owned(),
        evidence,
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(t: u64, client: &str, entry: Entry) -> Line {
        Line {
            t,
            client: client.to_owned(),
            entry,
        }
    }

    fn connect() -> Entry {
        Entry::Connect { server: None }
    }

    fn shown(event: &str, data: Value) -> Entry {
        Entry::Shown {
            event: event.to_owned(),
            data,
        }
    }

    fn send(op: u64, text: &str) -> Entry {
        Entry::Send {
            op,
            text: text.to_owned(),
            chat: None,
        }
    }

    fn ack(op: u64) -> Entry {
        Entry::Ack {
            op,
            ok: true,
            code: None,
            chat: None,
            message: None,
        }
    }

    fn pairs(messages: &[(&str, &str)]) -> Vec<(String, String)> {
        messages
            .iter()
            .map(|(role, text)| ((*role).to_owned(), (*text).to_owned()))
            .collect()
    }

    /// A visitor who said "A" and got "R1": the history, and the store that matches it.
    fn visit() -> (Vec<Line>, Stored) {
        let history = vec![
            at(
                0,
                "v1",
                Entry::Visitor {
                    visitor: "x".into(),
                    funnel: "chat".into(),
                    tab: false,
                },
            ),
            at(1, "v1", connect()),
            at(
                2,
                "v1",
                shown(
                    "conversation",
                    json!({ "id": "c1", "messages": [{ "role": "assistant", "text": "G" }] }),
                ),
            ),
            at(10, "v1", send(0, "A")),
            at(20, "v1", ack(0)),
            at(
                30,
                "v1",
                shown("message", json!({ "role": "assistant", "text": "R1" })),
            ),
        ];
        let stored = Stored {
            conversations: vec![StoredConversation {
                id: "c1".into(),
                visitor: "x".into(),
                messages: pairs(&[("assistant", "G"), ("user", "A"), ("assistant", "R1")]),
                at: vec![0, 10, 30],
                deadline: None,
                started: None,
            }],
            ..Stored::default()
        };
        (history, stored)
    }

    fn kinds(verdict: &Verdict) -> Vec<&'static str> {
        verdict.violations.iter().map(|v| v.kind).collect()
    }

    #[test]
    fn a_clean_history_has_no_violation() {
        let (history, stored) = visit();
        let verdict = check(&history, &[], &stored, 60_000);
        assert_eq!(kinds(&verdict), Vec::<&str>::new());
        assert_eq!(verdict.operations.acknowledged, 1);
        assert_eq!(verdict.operations.conversations, 1);
    }

    #[test]
    fn each_funnel_violation_is_found() {
        let (history, stored) = visit();
        let with = |messages: &[(&str, &str)]| {
            let mut stored = stored.clone();
            stored.conversations[0].messages = pairs(messages);
            stored
        };
        let lost = with(&[("assistant", "G")]);
        assert_eq!(
            kinds(&check(&history, &[], &lost, 60_000)),
            ["lost_ack", "shown_wrong"]
        );
        let twice = with(&[
            ("assistant", "G"),
            ("user", "A"),
            ("assistant", "R1"),
            ("user", "A"),
            ("assistant", "R1"),
        ]);
        assert_eq!(
            kinds(&check(&history, &[], &twice, 60_000)),
            ["stored_twice"]
        );
        let stranger = with(&[
            ("assistant", "G"),
            ("user", "A"),
            ("assistant", "R1"),
            ("user", "B"),
            ("assistant", "R2"),
        ]);
        assert_eq!(
            kinds(&check(&history, &[], &stranger, 60_000)),
            ["never_sent"]
        );
        let two = with(&[
            ("assistant", "G"),
            ("user", "A"),
            ("assistant", "R1"),
            ("assistant", "R1b"),
        ]);
        assert_eq!(kinds(&check(&history, &[], &two, 60_000)), ["two_replies"]);
        let unanswered = with(&[("assistant", "G"), ("user", "A")]);
        // The page showed a reply the store does not hold, too.
        assert_eq!(
            kinds(&check(&history, &[], &unanswered, 60_000)),
            ["unanswered", "shown_wrong"]
        );
        // Sent 30 s before the end or later: the reply may still be on its way.
        let late = check(&history, &[], &unanswered, 20_000);
        assert_eq!(kinds(&late), ["shown_wrong"]);
    }

    #[test]
    fn a_message_shown_twice_or_out_of_order_is_found() {
        let (mut history, stored) = visit();
        history.push(at(
            40,
            "v1",
            shown("message", json!({ "role": "assistant", "text": "R1" })),
        ));
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            ["shown_twice"]
        );
        // A conversation event replaces the list: no double from a reconnection.
        let (mut history, stored) = visit();
        history.push(at(40, "v1", connect()));
        history.push(at(41, "v1", shown("conversation", json!({ "id": "c1", "messages": [{ "role": "assistant", "text": "G" }, { "role": "user", "text": "A" }, { "role": "assistant", "text": "R1" }] }))));
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn a_reply_not_shown_on_a_page_that_stayed_connected_is_late() {
        let (mut history, stored) = visit();
        // The reply never came; the page stayed connected until the end.
        history.pop();
        let verdict = check(&history, &[], &stored, 60_000);
        assert_eq!(kinds(&verdict), ["shown_late"]);
        // Unless a fault was on meanwhile, or the page left.
        let fault = Fault {
            kind: "pause".into(),
            target: "p1".into(),
            start: 5_000,
            heal: 8_000,
        };
        assert_eq!(
            kinds(&check(&history, &[fault], &stored, 60_000)),
            Vec::<&str>::new()
        );
        history.push(at(
            5_000,
            "v1",
            Entry::Disconnect {
                reason: "no reply".into(),
            },
        ));
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn a_send_not_confirmed_may_be_stored_once_but_not_twice() {
        let (mut history, mut stored) = visit();
        history[4] = at(
            20,
            "v1",
            Entry::Ack {
                op: 0,
                ok: false,
                code: Some("unavailable".into()),
                chat: None,
                message: None,
            },
        );
        history.truncate(5);
        history.push(at(
            25,
            "v1",
            Entry::Disconnect {
                reason: "left".into(),
            },
        ));
        stored.conversations[0].messages = pairs(&[("assistant", "G")]);
        assert_eq!(
            kinds(&check(&history, &[], &stored, 20_000)),
            Vec::<&str>::new()
        );
        stored.conversations[0].messages = pairs(&[("assistant", "G"), ("user", "A")]);
        assert_eq!(
            kinds(&check(&history, &[], &stored, 20_000)),
            Vec::<&str>::new()
        );
        stored.conversations[0].messages = pairs(&[
            ("assistant", "G"),
            ("user", "A"),
            ("assistant", "R"),
            ("user", "A"),
        ]);
        assert_eq!(
            kinds(&check(&history, &[], &stored, 20_000)),
            ["stored_twice"]
        );
        // A refusal that means "not stored" (busy) must not be stored.
        history[4] = at(
            20,
            "v1",
            Entry::Ack {
                op: 0,
                ok: false,
                code: Some("busy".into()),
                chat: None,
                message: None,
            },
        );
        stored.conversations[0].messages = pairs(&[("assistant", "G"), ("user", "A")]);
        assert_eq!(
            kinds(&check(&history, &[], &stored, 20_000)),
            ["never_sent"]
        );
    }

    #[test]
    fn checkouts_are_counted_and_timed_against_their_deadline() {
        let (history, mut stored) = visit();
        stored.checkouts = vec!["x".into(), "x".into()];
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            ["checkout_twice"]
        );
        stored.checkouts = vec!["x".into()];
        stored.conversations[0].deadline = Some(20_000);
        stored.conversations[0].started = Some(18_000);
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            ["checkout_early"]
        );
        stored.conversations[0].started = Some(25_000);
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            ["checkout_late"]
        );
        // Late while a fault was on is allowed.
        let fault = Fault {
            kind: "pause".into(),
            target: "p1".into(),
            start: 15_000,
            heal: 24_000,
        };
        assert_eq!(
            kinds(&check(&history, &[fault], &stored, 60_000)),
            Vec::<&str>::new()
        );
        stored.conversations[0].started = Some(21_500);
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            Vec::<&str>::new()
        );
    }

    fn member_ack(op: u64, message: &str) -> Entry {
        Entry::Ack {
            op,
            ok: true,
            code: None,
            chat: Some("k".into()),
            message: Some(message.to_owned()),
        }
    }

    fn stored_message(id: &str, role: &str, content: &str, at: i64) -> StoredMessage {
        StoredMessage {
            id: id.into(),
            chat: "k".into(),
            role: role.into(),
            content: content.into(),
            at,
        }
    }

    #[test]
    fn each_member_violation_is_found() {
        let history = vec![
            at(
                0,
                "m0a",
                Entry::Device {
                    member: "m0".into(),
                },
            ),
            at(1, "m0a", connect()),
            at(10, "m0a", send(0, "Q1")),
            at(11, "m0a", member_ack(0, "u1")),
            at(
                30,
                "m0a",
                shown(
                    "chat:done",
                    json!({ "chatId": "k", "messageId": "a1", "text": "R1" }),
                ),
            ),
        ];
        let mut stored = Stored {
            messages: vec![
                stored_message("u1", "user", "Q1", 10),
                stored_message("a1", "assistant", "R1", 20),
            ],
            ..Stored::default()
        };
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            Vec::<&str>::new()
        );
        stored
            .messages
            .push(stored_message("a2", "assistant", "R2", 25));
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            ["two_replies"]
        );
        stored.messages.truncate(1);
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            ["shown_wrong"]
        );
        stored.messages.clear();
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            ["lost_ack", "shown_wrong"]
        );
    }

    #[test]
    fn a_sign_out_must_close_the_sockets_of_the_session_within_5_s_of_healing() {
        let signed_out = |closed: u64| {
            vec![
                at(
                    0,
                    "m1a",
                    Entry::Device {
                        member: "m1".into(),
                    },
                ),
                at(1, "m1a", connect()),
                at(
                    1_000,
                    "m1",
                    Entry::SignOut {
                        member: "m1".into(),
                        done: true,
                    },
                ),
                at(
                    closed,
                    "m1a",
                    Entry::Disconnect {
                        reason: "closed".into(),
                    },
                ),
            ]
        };
        let stored = Stored::default();
        assert_eq!(
            kinds(&check(&signed_out(5_500), &[], &stored, 60_000)),
            Vec::<&str>::new()
        );
        assert_eq!(
            kinds(&check(&signed_out(6_500), &[], &stored, 60_000)),
            ["signout_open"]
        );
        let fault = Fault {
            kind: "cut_from_redis".into(),
            target: "p1".into(),
            start: 500,
            heal: 3_000,
        };
        assert_eq!(
            kinds(&check(&signed_out(7_500), &[fault], &stored, 60_000)),
            Vec::<&str>::new()
        );
        let mut history = signed_out(1_500);
        history.push(at(3_000, "m1a", connect()));
        history.push(at(
            4_000,
            "m1a",
            Entry::Disconnect {
                reason: "the run ended".into(),
            },
        ));
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            ["signout_reconnect"]
        );
        let mut history = signed_out(1_500);
        history.truncate(3);
        assert_eq!(
            kinds(&check(&history, &[], &stored, 60_000)),
            ["signout_open"]
        );
    }
}
