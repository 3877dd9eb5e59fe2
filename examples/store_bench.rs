//! The live conversations' store calls alone, without sockets or actors: what each kind of
//! statement costs SurrealDB, in CPU per statement, when thousands of conversations go through the
//! store's group commit at once (docs/benchmarks.md, "The store alone").
//!
//! ```sh
//! cargo run --release --example store_bench -- [surrealkv:///tmp/storebench | mem://] [CONVERSATIONS]
//! ```
//!
//! Each conversation does what a chat funnel conversation of the load generator's `funnel`
//! scenario does to the store: a load that finds nothing and a visit, its creation, then three
//! visitor messages and three replies, each a save, and two analytics events. The phases run one
//! after another over all conversations at once, so each phase's CPU is its statements' own.
//! Then each conversation is read by its id, and read again as a new holder does (the take-over,
//! which moves its epoch on).
//! Then the dashboard's journey recorder counts each conversation's visit, first message and final
//! message, in chunks of 200, one chunk after another.
//! Then as many members do what a member chat's send does to the store (an access read, a read
//! of the chat's last messages, the message, an event, the reply).

use std::time::Instant;

use chrono::Utc;
use helpnow::domain::VisitorId;
use helpnow::domain::billing::CheckoutSource;
use helpnow::domain::journey::Step;
use helpnow::store::batch::{Batcher, Statement};
use helpnow::store::journeys::JourneyStep;
use helpnow::store::{self, analytics::NewAnalyticsEvent, chats, funnels};
use helpnow_actors::funnel::ports::ConversationChange;
use helpnow_actors::funnel::{Attribution, Conversation, ConversationKey, FunnelMessage, Speaker};
use helpnow_actors::rules::FunnelKind;

/// The process's CPU time so far (user and system), in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces) start after its ')'.
    let rest = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn conversation(index: usize) -> Conversation {
    let now = Utc::now();
    Conversation {
        id: format!("bench{index:015}"),
        key: ConversationKey {
            visitor_id: format!("visitor{index:013}"),
            funnel: FunnelKind::Chat,
        },
        version: 1,
        epoch: 1,
        flow: helpnow_actors::rules::flows::FlowRef::published("default", 1),
        arm: None,
        headline: "Get Help With Outlook Email Now".into(),
        attribution: Attribution::default(),
        stage: 0,
        junk_count: 0,
        is_final: false,
        first_message_tracked: false,
        messages: vec![FunnelMessage {
            role: Speaker::Assistant,
            text: "Hi, I'm Emma. What can I help you with today?".into(),
            is_final: false,
            junk: false,
            source: Some("greeting".into()),
            at: now,
        }],
        checkout_deadline: None,
        checkout_started_at: None,
        created_at: now,
        updated_at: now,
    }
}

fn add_message(conversation: &mut Conversation, role: Speaker) {
    let now = Utc::now();
    conversation.messages.push(FunnelMessage {
        role,
        text: "My email stopped working this morning and I cannot send anything at all.".into(),
        is_final: false,
        junk: false,
        source: (role == Speaker::Assistant).then(|| "script".into()),
        at: now,
    });
    if role == Speaker::Assistant {
        conversation.stage = (conversation.stage + 1).min(2);
    }
    conversation.first_message_tracked = true;
    conversation.updated_at = now;
}

/// Runs one statement per conversation, all at once through the batcher, and prints its cost.
async fn phase(batcher: &Batcher, name: &str, statements: Vec<Statement>) {
    let count = statements.len();
    let (transactions_before, _) = batcher.counts();
    let (cpu, wall) = (cpu_seconds(), Instant::now());
    let calls = statements.into_iter().map(|statement| {
        let batcher = batcher.clone();
        tokio::spawn(async move { batcher.submit(statement).await })
    });
    let mut failed = 0;
    for call in futures_util::future::join_all(calls).await {
        if !matches!(call, Ok(Ok(_))) {
            failed += 1;
        }
    }
    let (cpu, wall) = (cpu_seconds() - cpu, wall.elapsed().as_secs_f64());
    let (transactions, _) = batcher.counts();
    println!(
        "{name:<22} {count:>6} statements in {:>4} transactions: {:>6.1} us CPU each, {:>7.0} a second, {failed} failed",
        transactions - transactions_before,
        cpu * 1e6 / count as f64,
        count as f64 / wall,
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "surrealkv:///tmp/storebench/helpnow".into());
    let count: usize = args.next().map(|n| n.parse()).transpose()?.unwrap_or(5_000);
    if let Some(folder) = url.strip_prefix("surrealkv://") {
        let _ = std::fs::remove_dir_all(
            std::path::Path::new(folder)
                .parent()
                .unwrap_or(folder.as_ref()),
        );
    }
    let db = store::connect(&helpnow::config::DatabaseSettings {
        url: url.clone(),
        namespace: "bench".into(),
        database: "bench".into(),
        username: None,
        password: None,
        unanswered_exit_secs: 0,
    })
    .await?;
    // A schema change to measure against the migrations' (STORE_BENCH_SETUP='REMOVE INDEX ...'),
    // run after them.
    if let Ok(setup) = std::env::var("STORE_BENCH_SETUP") {
        db.query(setup).await?.check()?;
    }
    let batcher = Batcher::start(db.clone());
    println!("{url}, {count} conversations");

    let mut conversations: Vec<Conversation> = (0..count).map(conversation).collect();
    let loads = conversations
        .iter()
        .map(|c| funnels::load_statement(&c.key))
        .collect();
    phase(&batcher, "load (none found)", loads).await;
    let visits = conversations
        .iter()
        .map(|c| {
            let visitor =
                VisitorId::parse(&c.key.visitor_id).expect("the bench's visitor ids are valid");
            funnels::visit(&visitor, &c.attribution)
        })
        .collect();
    phase(&batcher, "visit", visits).await;
    let creates: Vec<Statement> = conversations
        .iter()
        .map(|c| funnels::save_statement(c, ConversationChange::Started))
        .collect::<Result<_, _>>()?;
    phase(&batcher, "create", creates.clone()).await;
    // The same starts again, as a returning visitor's join tries its start first: each a
    // conflict of its own.
    phase(&batcher, "create (already there)", creates).await;
    for round in 0..3 {
        for role in [Speaker::User, Speaker::Assistant] {
            conversations.iter_mut().for_each(|c| add_message(c, role));
            let saves = conversations
                .iter()
                .map(|c| funnels::save_statement(c, ConversationChange::MessageAdded))
                .collect::<Result<_, _>>()?;
            let who = if role == Speaker::User {
                "visitor"
            } else {
                "reply"
            };
            let name = format!("message {} {who}", round + 1);
            phase(&batcher, &name, saves).await;
        }
    }
    for event in ["chatbot_first_message", "chatbot_final_message"] {
        let events = conversations
            .iter()
            .map(|c| {
                Statement::Analytics(NewAnalyticsEvent {
                    name: event.into(),
                    properties: serde_json::json!({
                        "conversationId": c.id, "funnel": "chat", "campaignid": null,
                        "keyword": null, "stage": c.stage,
                    }),
                    visitor: Some(c.key.visitor_id.clone()),
                    path: None,
                    user: None,
                    // As the funnel actors' adapter gives it: the conversation's attribution.
                    first_touch: Some(serde_json::json!({})),
                })
            })
            .collect();
        phase(&batcher, event, events).await;
    }
    let loads = conversations
        .iter()
        .map(|c| funnels::load_statement(&c.key))
        .collect();
    phase(&batcher, "load (found)", loads).await;
    // A returning visitor's first join on a process: the conversation read by its new holder,
    // which moves its epoch on (issue 49), against the plain read of the same records.
    let reads = conversations
        .iter()
        .map(|c| Statement::LoadConversation { id: c.id.clone() })
        .collect();
    phase(&batcher, "load by id", reads).await;
    let takes = conversations
        .iter()
        .map(|c| Statement::TakeOver { id: c.id.clone() })
        .collect();
    phase(&batcher, "take over", takes).await;
    journeys(&db, &conversations).await?;
    members(&db, &batcher, count).await?;
    Ok(())
}

/// The dashboard's journey steps of each conversation, as the journey recorder records them: in
/// chunks of 200, one chunk after another, each step kind over all conversations.
async fn journeys(
    db: &store::Db,
    conversations: &[Conversation],
) -> Result<(), Box<dyn std::error::Error>> {
    for step in [Step::Visitors, Step::FirstMessage, Step::FinalMessage] {
        let steps: Vec<JourneyStep> = conversations
            .iter()
            .map(|c| {
                let journey = JourneyStep::new(&c.key.visitor_id, CheckoutSource::ChatFunnel, step);
                // A join gives the conversation's attribution, as the funnel's namespace does.
                if step == Step::Visitors {
                    journey.attribution(serde_json::to_value(&c.attribution).ok())
                } else {
                    journey
                }
            })
            .collect();
        let (cpu, wall) = (cpu_seconds(), Instant::now());
        for chunk in steps.chunks(200) {
            store::journeys::record(db, chunk.to_vec()).await?;
        }
        let (cpu, wall) = (cpu_seconds() - cpu, wall.elapsed().as_secs_f64());
        let name = format!("journey {}", step.as_str());
        println!(
            "{name:<22} {:>6} steps in chunks of 200: {:>6.1} us CPU each, {:>7.0} a second",
            steps.len(),
            cpu * 1e6 / steps.len() as f64,
            steps.len() as f64 / wall,
        );
    }
    Ok(())
}

/// The member chat's store calls: `count` members in a trial, each with a chat of 18 messages,
/// then each send's calls as phases: the access read, the chat's last 20 messages, the member's
/// message, the event, and the reply.
async fn members(
    db: &store::Db,
    batcher: &Batcher,
    count: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let members: Vec<String> = (0..count).map(|n| format!("member{n:013}")).collect();
    // Every other member came by an ad (an acquisition its events carry as their first touch).
    db.query(
        "FOR $id IN $ids { CREATE type::record('user', $id) CONTENT {
             email: $id + '@example.com', trial_started: true,
             trial_start_date: time::now(), trial_end_date: time::now() + 7d,
             acquisition: IF $id IN $by_ad { { campaignid: '2231', keyword: 'printer offline' } }
         } RETURN NONE; }",
    )
    .bind(("ids", members.clone()))
    .bind((
        "by_ad",
        members.iter().step_by(2).cloned().collect::<Vec<_>>(),
    ))
    .await?
    .check()?;
    let mut chats_of = Vec::with_capacity(count);
    for (n, member) in members.iter().enumerate() {
        let first = chats::MessageId::parse(&format!("first{n:013}")).ok_or("an id")?;
        let chat = chats::start_chat(db, member, "Printer", "Hello!", &first, "my printer").await?;
        chats_of.push(chats::ChatId::parse(&chat.id).ok_or("an id")?);
    }
    // Each append expects its chat's revision (as the member actor's do): `revision` before it.
    let append = |round: usize, role: chats::Role, revision: u64| -> Vec<Statement> {
        members
            .iter()
            .zip(&chats_of)
            .enumerate()
            .map(|(n, (member, chat))| {
                let id = format!("m{round:03}{}{n:013}", &role.as_str()[..1]);
                Statement::AppendChatMessage(Box::new(chats::AppendVars::new(
                    member,
                    chat,
                    &chats::MessageId::parse(&id).expect("an id"),
                    role,
                    "It says it is offline, and the light blinks orange every few seconds.",
                    Some(revision),
                )))
            })
            .collect()
    };
    let mut revision = 0;
    for round in 0..8 {
        for role in [chats::Role::User, chats::Role::Assistant] {
            let writes = append(round, role, revision)
                .into_iter()
                .map(|statement| batcher.submit(statement));
            for written in futures_util::future::join_all(writes).await {
                written?;
            }
            revision += 1;
        }
    }
    let access = members
        .iter()
        .map(|member| Statement::AccessFacts {
            user: member.clone(),
        })
        .collect();
    phase(batcher, "member access", access).await;
    let reads = members
        .iter()
        .zip(&chats_of)
        .map(|(member, chat)| Statement::RecentChat(chats::RecentVars::new(member, chat, 20)))
        .collect();
    phase(batcher, "member chat read", reads).await;
    phase(
        batcher,
        "member message",
        append(100, chats::Role::User, revision),
    )
    .await;
    let events = members
        .iter()
        .map(|member| Statement::MemberEvent {
            name: "chat_message_sent".into(),
            user: member.clone(),
            properties: serde_json::json!({ "chatId": "c", "newChat": false }),
        })
        .collect();
    phase(batcher, "member event", events).await;
    phase(
        batcher,
        "member reply",
        append(100, chats::Role::Assistant, revision + 1),
    )
    .await;
    // An append refused for its revision is answered, not failed: check that each was written.
    let behind: Vec<i64> = db
        .query("SELECT VALUE revision FROM chat WHERE revision != $all")
        .bind(("all", revision as i64 + 2))
        .await?
        .check()?
        .take(0)?;
    if !behind.is_empty() {
        return Err(format!("{} chats missed appends", behind.len()).into());
    }
    Ok(())
}
