//! `FunnelActor`: the live copy of one funnel conversation. It owns the conversation's stage, junk
//! count, typing delay and auto-checkout timer; every change is saved before anyone is told of it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use actix::prelude::*;
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, join};
use rand::Rng;
use serde_json::{Value, json};

use super::Deps;
use super::messages::{
    CheckoutAck, ClientEvent, Drain, Join, JoinError, NewConversation, Refusal, SendAck,
};
use super::model::{Conversation, ConversationKey, FunnelMessage, Speaker};
use super::ports::{ConversationChange, FlowStep, FunnelCheckoutRequest, Holder, StepReached};
use super::prompts;
use crate::live::LiveActors;
use crate::ports::{ActorClient, AiError, AiPurpose, AiRequest, StoreError};
use crate::reply::Reply;
use crate::rules::FunnelKind;
use crate::rules::experiments::{ArmRef, Visit};
use crate::rules::flows::{FlowRef, FlowScript};
use crate::rules::headline::funnel_headline;
use crate::rules::junk::is_junk;
use crate::rules::scripts::{ScriptContext, render};

/// Where a visitor goes when no checkout could be opened (the spec's silent fallback).
pub const CHECKOUT_FALLBACK_URL: &str = "/?success=demo";

/// A reply that is not usable: the spec's "the AI reply text contains 'error'", or nothing, or
/// far more than the two sentences asked for.
const MAX_AI_REPLY_CHARS: usize = 800;

/// How long an opened checkout is offered again instead of a new one (its one-time link works
/// for an hour).
const CHECKOUT_REUSE: Duration = Duration::from_secs(30 * 60);

/// How often a reply whose save failed is tried again before the visitor is told.
const REPLY_SAVE_ATTEMPTS: u32 = 3;

/// The funnel actors' name in the server's metrics.
const ACTOR_KIND: &str = "funnel";

pub struct FunnelActor {
    deps: Arc<Deps>,
    key: ConversationKey,
    live: Weak<LiveActors<ConversationKey, FunnelActor>>,
    /// None until the first join loaded or created it.
    conversation: Option<Conversation>,
    /// The script of the conversation's flow version (set with the conversation).
    script: Option<Arc<FlowScript>>,
    clients: Vec<Arc<dyn ActorClient>>,
    /// A visitor's message is being saved.
    saving_message: bool,
    /// A reply is being written (typing is shown).
    reply_pending: bool,
    checkout_timer: Option<SpawnHandle>,
    /// The auto-checkout came due while nobody was connected: it opens on the next join.
    checkout_due: bool,
    checkout_in_flight: bool,
    auto_checkout_pending: bool,
    checkout_waiters: Vec<Reply<CheckoutAck>>,
    /// The last checkout opened, reused for a while: every new one is a call to the payment
    /// provider, and a visitor pressing the button again wants the same checkout.
    recent_checkout: Option<(String, tokio::time::Instant)>,
    idle_timer: Option<SpawnHandle>,
    /// This process holds the conversation's claim (released when the actor stops).
    claimed: bool,
    /// This actor's name in its claim.
    claim_token: u64,
    /// Saves begun and not yet answered by the store.
    saves_in_flight: usize,
    /// The process is stopping (`Drain`): the actor stops once its saves are answered.
    draining: bool,
}

impl FunnelActor {
    pub(super) fn new(
        deps: Arc<Deps>,
        key: ConversationKey,
        live: Weak<LiveActors<ConversationKey, FunnelActor>>,
    ) -> Self {
        Self {
            deps,
            key,
            live,
            conversation: None,
            script: None,
            clients: Vec::new(),
            saving_message: false,
            reply_pending: false,
            checkout_timer: None,
            checkout_due: false,
            checkout_in_flight: false,
            auto_checkout_pending: false,
            checkout_waiters: Vec::new(),
            recent_checkout: None,
            idle_timer: None,
            claimed: false,
            claim_token: rand::random(),
            saves_in_flight: 0,
            draining: false,
        }
    }

    fn script_context(&self) -> ScriptContext<'_> {
        ScriptContext {
            assistant: &self.deps.settings.assistant_name,
            product: &self.deps.settings.product_name,
            keyword: self
                .conversation
                .as_ref()
                .and_then(|c| c.attribution.keyword.as_deref()),
        }
    }

    fn new_conversation(
        deps: &Deps,
        key: &ConversationKey,
        start: NewConversation,
        (flow, arm): (FlowRef, Option<ArmRef>),
        script: &FlowScript,
    ) -> Conversation {
        let now = deps.clock.now();
        let keyword = start.attribution.keyword.as_deref();
        let context = ScriptContext {
            assistant: &deps.settings.assistant_name,
            product: &deps.settings.product_name,
            keyword,
        };
        let greeting = render(&script.greeting, &context);
        Conversation {
            id: key.conversation_id(),
            key: key.clone(),
            version: 1,
            // A new conversation's first holder is the one that creates it.
            epoch: 1,
            headline: funnel_headline(key.funnel, keyword),
            flow,
            arm,
            attribution: start.attribution,
            stage: 0,
            junk_count: 0,
            is_final: false,
            first_message_tracked: false,
            messages: vec![FunnelMessage {
                role: Speaker::Assistant,
                text: greeting,
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

    fn broadcast(&self, event: &'static str, data: &Value) {
        for client in &self.clients {
            client.emit(event, data.clone());
        }
    }

    fn broadcast_except(&self, client_id: &str, event: &'static str, data: &Value) {
        for client in self.clients.iter().filter(|c| c.id() != client_id) {
            client.emit(event, data.clone());
        }
    }

    fn track(&self, event: ConversationEvent) {
        let Some(conversation) = &self.conversation else {
            return;
        };
        let name = event.name(self.key.funnel);
        let mut properties = json!({
            "conversationId": conversation.id,
            "funnel": self.key.funnel,
            "campaignid": conversation.attribution.campaignid,
            "keyword": conversation.attribution.keyword,
            "stage": conversation.stage,
        });
        if let (Some(arm), Some(fields)) = (&conversation.arm, properties.as_object_mut()) {
            fields.insert("experiment".into(), arm.experiment.clone().into());
            fields.insert("arm".into(), arm.arm.clone().into());
        }
        self.deps
            .analytics
            .record(name, &self.key.visitor_id, properties);
    }

    /// Counts the step the conversation's last change reached, for the drop-off by flow version.
    fn reached(&self, step: FlowStep, after: Option<chrono::DateTime<chrono::Utc>>) {
        if let Some(conversation) = &self.conversation {
            let now = self.deps.clock.now();
            let after = after.and_then(|at| (now - at).to_std().ok());
            tally_step(&self.deps, conversation, step, after);
        }
    }

    fn is_working(&self) -> bool {
        self.saving_message || self.reply_pending || self.checkout_in_flight
    }

    /// Saves `change` of `next` (its version already bumped where the change needs it) and
    /// makes it the live state, then runs `then`. A lost race with another process reloads the
    /// conversation for everyone; a save refused because another actor took the conversation
    /// over hands it over ([`Self::fenced`]) before `then` runs.
    fn save_then(
        &mut self,
        next: Conversation,
        change: ConversationChange,
        ctx: &mut Context<Self>,
        then: impl FnOnce(&mut Self, Result<(), StoreError>, &mut Context<Self>) + 'static,
    ) {
        let save = self.deps.store.save(&next, change);
        self.saves_in_flight += 1;
        ctx.spawn(save.into_actor(self).map(move |result, act, ctx| {
            act.saves_in_flight -= 1;
            match &result {
                Ok(()) => act.conversation = Some(next),
                Err(StoreError::Conflict) => act.reload(ctx),
                Err(StoreError::Fenced) => act.fenced(ctx),
                Err(StoreError::Failed(error)) => {
                    tracing::warn!(conversation = %next.id, %error, "a funnel conversation could not be saved");
                }
            }
            then(act, result, ctx);
            act.stop_if_drained(ctx);
        }));
    }

    /// Another process changed the conversation: take the stored one and show it to everyone.
    /// A plain read, which fences no one: found at another epoch than this actor's, the
    /// conversation was taken over, and this actor hands it over instead.
    fn reload(&mut self, ctx: &mut Context<Self>) {
        let load = self.deps.store.load(&self.key);
        ctx.wait(load.into_actor(self).map(|loaded, act, ctx| match loaded {
            Ok(Some(conversation))
                if act
                    .conversation
                    .as_ref()
                    .is_some_and(|ours| ours.epoch != conversation.epoch) =>
            {
                act.fenced(ctx);
            }
            Ok(Some(conversation)) => {
                // Started over by another process, perhaps on another flow version.
                if act.conversation.as_ref().is_none_or(|c| c.flow != conversation.flow) {
                    act.script = act
                        .deps
                        .flows
                        .catalog()
                        .script_or_published(&conversation.flow)
                        .or(act.script.take());
                }
                act.conversation = Some(conversation);
                act.reply_pending = false;
                act.emit_conversation_to_all();
                act.resume(ctx);
            }
            Ok(None) | Err(_) => {
                // Nothing is known to be pending any more: say so, and try again shortly, so the
                // conversation never stays stuck "typing".
                tracing::warn!(visitor = %act.key.visitor_id, "a funnel conversation could not be reloaded");
                act.reply_pending = false;
                act.saving_message = false;
                act.broadcast("typing", &json!({ "active": false }));
                act.broadcast("notice", &reply_delayed_notice());
                ctx.run_later(act.deps.settings.reply_retry_after, |act, ctx| act.reload(ctx));
            }
        }));
    }

    fn emit_conversation_to_all(&self) {
        if let Some(conversation) = &self.conversation {
            self.broadcast("conversation", &conversation.view(self.reply_pending));
        }
    }

    /// After a load: a reply still owed is written, and a pending auto-checkout is re-armed.
    fn resume(&mut self, ctx: &mut Context<Self>) {
        self.start_reply(ctx);
        self.arm_checkout_timer(ctx);
    }

    fn attach(&mut self, client: Arc<dyn ActorClient>, ctx: &mut Context<Self>) {
        if let Some(timer) = self.idle_timer.take() {
            ctx.cancel_future(timer);
        }
        self.clients.retain(|c| c.id() != client.id());
        if let Some(conversation) = &self.conversation {
            client.emit("conversation", conversation.view(self.reply_pending));
            // A second tab, or a reload, sees the same countdown as the first.
            if self.checkout_timer.is_some()
                && let Some(deadline) = conversation.checkout_deadline
            {
                client.emit(
                    "countdown",
                    countdown_view(deadline - self.deps.clock.now()),
                );
            }
        }
        self.clients.push(client);
        if self.checkout_due {
            self.checkout_due = false;
            self.postpone_checkout(ctx);
        }
    }

    /// The auto-checkout came due while nobody was connected. Whoever comes back first sees the
    /// conversation for the spec's 15 s before it opens, rather than being sent off at once.
    fn postpone_checkout(&mut self, ctx: &mut Context<Self>) {
        let Some(conversation) = &self.conversation else {
            return;
        };
        let now = self.deps.clock.now();
        let mut next = conversation.clone();
        let after = self
            .script
            .as_ref()
            .map_or(Duration::from_secs(15), |script| {
                script.auto_checkout_after()
            });
        next.checkout_deadline = Some(now + chrono_duration(after));
        next.version += 1;
        next.updated_at = now;
        self.save_then(
            next,
            ConversationChange::CheckoutChanged,
            ctx,
            |act, result, ctx| {
                if result.is_ok() {
                    act.arm_checkout_timer(ctx);
                }
            },
        );
    }

    fn on_send(
        &mut self,
        client_id: String,
        text: String,
        reply: Reply<SendAck>,
        ctx: &mut Context<Self>,
    ) {
        let Some(conversation) = &self.conversation else {
            return reply.send(SendAck::Refused(Refusal::Unavailable));
        };
        let text = text.trim();
        let refusal = if text.is_empty() {
            Some(Refusal::Empty)
        } else if conversation.is_final {
            Some(Refusal::Final)
        } else if self.saving_message || self.reply_pending || conversation.awaits_reply() {
            Some(Refusal::Busy)
        } else if text.chars().count() > self.deps.settings.max_message_chars {
            Some(Refusal::TooLong)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            return reply.send(SendAck::Refused(refusal));
        }

        let junk = is_junk(text);
        let now = self.deps.clock.now();
        let mut next = conversation.clone();
        next.messages.push(FunnelMessage {
            role: Speaker::User,
            text: text.to_owned(),
            is_final: false,
            junk,
            source: None,
            at: now,
        });
        if junk {
            next.junk_count += 1;
        }
        let first = !next.first_message_tracked;
        next.first_message_tracked = true;
        next.updated_at = now;

        self.saving_message = true;
        let added = ConversationChange::MessageAdded;
        self.save_then(next, added, ctx, move |act, result, ctx| {
            act.saving_message = false;
            if result.is_err() {
                return reply.send(SendAck::Refused(Refusal::Unavailable));
            }
            reply.send(SendAck::Stored);
            act.deps.telemetry.message_stored(ACTOR_KIND);
            if let Some(conversation) = &act.conversation
                && let Some(message) = conversation.messages.last()
            {
                let view = json!(message.view());
                act.broadcast_except(&client_id, "message", &view);
                let number = conversation.user_messages().count();
                let before = conversation.messages.iter().rev().nth(1).map(|m| m.at);
                if let Some(step) = FlowStep::message(number) {
                    act.reached(step, before);
                }
            }
            if first {
                act.track(ConversationEvent::FirstMessage);
            }
            act.start_reply(ctx);
        });
    }

    fn typing_delay(&self) -> Duration {
        let (min, max) = self
            .script
            .as_ref()
            .map_or((Duration::ZERO, Duration::ZERO), |script| {
                script.typing_delay_range()
            });
        let (min, max) = (min.as_millis(), max.as_millis());
        let millis = rand::rng().random_range(min..=max);
        Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX))
    }

    /// Shows typing and writes the reply the conversation owes, if it owes one.
    fn start_reply(&mut self, ctx: &mut Context<Self>) {
        let Some(conversation) = &self.conversation else {
            return;
        };
        if self.reply_pending || !conversation.awaits_reply() {
            return;
        }
        self.reply_pending = true;
        let delay = self.typing_delay();
        // `delayMs`: how long typing is meant to show, so a client can tell how late the reply is.
        self.broadcast(
            "typing",
            &json!({ "active": true, "delayMs": delay.as_millis() as u64 }),
        );

        let stage = conversation.stage;
        // The spec: after the second junk message AI mode is off; the final step is scripted.
        let ai: BoxFuture<'static, Option<Result<String, AiError>>> =
            if stage < 2 && conversation.junk_count <= 1 {
                let settings = &self.deps.settings;
                let request = AiRequest {
                    purpose: AiPurpose::FunnelFollowUp,
                    messages: prompts::follow_up_messages(
                        conversation,
                        &settings.assistant_name,
                        &settings.product_name,
                    ),
                    timeout: settings.ai_timeout,
                };
                let call = self.deps.ai.complete(request);
                let limit = settings.ai_timeout;
                async move {
                    Some(
                        tokio::time::timeout(limit, call)
                            .await
                            .unwrap_or(Err(AiError::Timeout)),
                    )
                }
                .boxed()
            } else {
                futures_util::future::ready(None).boxed()
            };
        let due = tokio::time::Instant::now() + delay;
        let telemetry = self.deps.telemetry.clone();
        let delay = tokio::time::sleep_until(due).map(move |()| {
            telemetry.timer_fired("typing", due.elapsed());
        });
        let work = join(delay, ai).map(|((), ai)| ai);
        ctx.spawn(
            work.into_actor(self)
                .map(move |ai, act, ctx| act.finish_reply(stage, ai, ctx)),
        );
    }

    fn finish_reply(
        &mut self,
        stage: u8,
        ai: Option<Result<String, AiError>>,
        ctx: &mut Context<Self>,
    ) {
        let Some(conversation) = &self.conversation else {
            self.reply_pending = false;
            return;
        };
        if !conversation.awaits_reply() || conversation.stage != stage {
            // Reloaded meanwhile: the stored conversation decides.
            self.reply_pending = false;
            self.broadcast("typing", &json!({ "active": false }));
            return;
        }
        let Some(flow) = self.script.clone() else {
            self.reply_pending = false;
            return;
        };
        let context = self.script_context();
        let (text, source, is_final) = if stage >= 2 {
            let text = render(flow.final_message(self.key.funnel), &context);
            (text, "final", true)
        } else {
            match ai.map(usable_ai_reply) {
                Some(Ok(text)) => (text, "ai", false),
                outcome => {
                    if let Some(Err(reason)) = outcome {
                        tracing::info!(conversation = %conversation.id, %reason, "funnel reply from the script");
                    }
                    // A message that says nothing gets a reply that asks again, not thanks.
                    let unclear = conversation
                        .messages
                        .iter()
                        .rev()
                        .find(|m| m.role == Speaker::User)
                        .is_some_and(|m| m.junk);
                    let script = match (stage, unclear) {
                        (0, false) => &flow.follow_up,
                        (0, true) => &flow.unclear_follow_up,
                        (_, false) => &flow.troubleshooting,
                        (_, true) => &flow.unclear_troubleshooting,
                    };
                    (render(script, &context), "script", false)
                }
            }
        };

        let now = self.deps.clock.now();
        let mut next = conversation.clone();
        next.messages.push(FunnelMessage {
            role: Speaker::Assistant,
            text,
            is_final,
            junk: false,
            source: Some(source.into()),
            at: now,
        });
        next.stage = (stage + 1).min(2);
        if is_final {
            next.is_final = true;
            next.checkout_deadline = Some(now + chrono_duration(flow.auto_checkout_after()));
        }
        next.updated_at = now;
        self.save_reply(next, 1, ctx);
    }

    fn save_reply(&mut self, next: Conversation, attempt: u32, ctx: &mut Context<Self>) {
        let retry = next.clone();
        let added = ConversationChange::MessageAdded;
        self.save_then(next, added, ctx, move |act, result, ctx| match result {
            Ok(()) => {
                act.reply_pending = false;
                act.deps.telemetry.message_stored(ACTOR_KIND);
                act.broadcast("typing", &json!({ "active": false }));
                let Some(conversation) = &act.conversation else {
                    return;
                };
                let Some(message) = conversation.messages.last() else {
                    return;
                };
                let is_final = message.is_final;
                act.broadcast("message", &json!(message.view()));
                let before = conversation.messages.iter().rev().nth(1).map(|m| m.at);
                if let Some(step) = FlowStep::reply(conversation.stage, is_final) {
                    act.reached(step, before);
                }
                if is_final {
                    act.track(ConversationEvent::FinalMessage);
                    act.arm_checkout_timer(ctx);
                }
            }
            // `save_then` reloaded the conversation, which resumes the reply if still owed.
            Err(StoreError::Conflict) => {}
            // Another actor holds the conversation now: it writes the reply still owed.
            Err(StoreError::Fenced) => {}
            Err(StoreError::Failed(_)) if attempt < REPLY_SAVE_ATTEMPTS => {
                ctx.run_later(Duration::from_secs(1), move |act, ctx| {
                    act.save_reply(retry, attempt + 1, ctx);
                });
            }
            // The reply stays written (no second AI call): only its save is tried again, later.
            // It is still pending, so sends wait and the actor does not stop meanwhile.
            Err(StoreError::Failed(_)) => {
                act.broadcast("typing", &json!({ "active": false }));
                act.broadcast("notice", &reply_delayed_notice());
                ctx.run_later(act.deps.settings.reply_retry_after, move |act, ctx| {
                    act.save_reply(retry, 1, ctx);
                });
            }
        });
    }

    fn arm_checkout_timer(&mut self, ctx: &mut Context<Self>) {
        if let Some(timer) = self.checkout_timer.take() {
            ctx.cancel_future(timer);
        }
        let Some(deadline) = self.conversation.as_ref().and_then(|c| c.checkout_deadline) else {
            return;
        };
        if deadline <= self.deps.clock.now() {
            // Passed while this conversation was not live (a restart, or nobody connected).
            return self.postpone_checkout(ctx);
        }
        let left = deadline - self.deps.clock.now();
        let wait = left.to_std().unwrap_or(Duration::ZERO);
        // The page shows it ('Taking you to the secure checkout in 15 s'): no surprise.
        self.broadcast("countdown", &countdown_view(left));
        let due = tokio::time::Instant::now() + wait;
        self.checkout_timer = Some(ctx.run_later(wait, move |act, ctx| {
            act.deps
                .telemetry
                .timer_fired("auto_checkout", due.elapsed());
            act.checkout_timer = None;
            if act.clients.is_empty() {
                act.checkout_due = true;
            } else {
                let address = act.clients.first().and_then(|c| c.address());
                act.open_checkout(None, address, ctx);
            }
        }));
    }

    fn on_checkout(&mut self, client_id: &str, reply: Reply<CheckoutAck>, ctx: &mut Context<Self>) {
        if !self.conversation.as_ref().is_some_and(|c| c.is_final) {
            return reply.send(CheckoutAck::NotReady);
        }
        if let Some(timer) = self.checkout_timer.take() {
            ctx.cancel_future(timer);
        }
        let address = self
            .clients
            .iter()
            .find(|c| c.id() == client_id)
            .and_then(|c| c.address());
        self.open_checkout(Some(reply), address, ctx);
    }

    /// Opens a checkout for the button (`requester`) or the auto-checkout (none), once at a time.
    fn open_checkout(
        &mut self,
        requester: Option<Reply<CheckoutAck>>,
        client_address: Option<std::net::IpAddr>,
        ctx: &mut Context<Self>,
    ) {
        match requester {
            Some(reply) => self.checkout_waiters.push(reply),
            None => self.auto_checkout_pending = true,
        }
        if self.checkout_in_flight {
            return;
        }
        if let Some((url, _)) = self
            .recent_checkout
            .as_ref()
            .filter(|(_, opened)| opened.elapsed() < CHECKOUT_REUSE)
        {
            let url = url.clone();
            self.deliver_checkout(&url);
            return;
        }
        self.save_checkout_intent(client_address, false, ctx);
    }

    /// A checkout is a record of its own and a session at the payment provider, which the
    /// conversation's fence does not reach. So the conversation first saves that a checkout
    /// opens (`checkout_started_at`, no deadline any more, a new version), and the checkout is
    /// opened only once that save landed at this actor's epoch: a holder that another actor has
    /// taken over opens nothing, and a reload (here or on another process) never fires the
    /// auto-checkout again. `retried`: after a conflict, once.
    fn save_checkout_intent(
        &mut self,
        client_address: Option<std::net::IpAddr>,
        retried: bool,
        ctx: &mut Context<Self>,
    ) {
        let Some(conversation) = &self.conversation else {
            return;
        };
        self.checkout_in_flight = true;
        // The conversation's first checkout is a step of its flow: by the button or by itself.
        let first = conversation.checkout_started_at.is_none().then(|| {
            let step = if self.checkout_waiters.is_empty() {
                FlowStep::CheckoutAuto
            } else {
                FlowStep::CheckoutButton
            };
            let final_at = conversation
                .messages
                .iter()
                .find(|m| m.is_final)
                .map(|m| m.at);
            (step, final_at)
        });
        let now = self.deps.clock.now();
        let mut next = conversation.clone();
        next.checkout_deadline = None;
        next.checkout_started_at = Some(now);
        next.version += 1;
        next.updated_at = now;
        let change = ConversationChange::CheckoutChanged;
        self.save_then(next, change, ctx, move |act, result, ctx| match result {
            Ok(()) => act.start_checkout(first, client_address, ctx),
            // Handed over (`save_then`): the clients connect again, to the holder, and nothing
            // opens here.
            Err(StoreError::Fenced) => act.checkout_in_flight = false,
            // This actor's own save of the conversation (a deadline moved as a visitor came
            // back) landed first. The reload re-arms the auto-checkout if it is still due; a
            // button press is tried again once on the reloaded conversation.
            Err(StoreError::Conflict) => {
                act.auto_checkout_pending = false;
                if act.checkout_waiters.is_empty() {
                    act.checkout_in_flight = false;
                } else if retried {
                    act.checkout_in_flight = false;
                    act.deliver_checkout(CHECKOUT_FALLBACK_URL);
                } else {
                    // Scheduled now, it runs once the reload (`ctx.wait`) is done.
                    ctx.run_later(Duration::ZERO, move |act, ctx| {
                        if act.conversation.as_ref().is_some_and(|c| c.is_final) {
                            act.save_checkout_intent(client_address, true, ctx);
                        } else {
                            act.checkout_in_flight = false;
                            for waiter in act.checkout_waiters.drain(..) {
                                waiter.send(CheckoutAck::NotReady);
                            }
                        }
                    });
                }
            }
            // Not saved, so not opened: the visitor gets the fallback, as when the payment
            // provider fails.
            Err(StoreError::Failed(_)) => {
                act.checkout_in_flight = false;
                act.deliver_checkout(CHECKOUT_FALLBACK_URL);
            }
        });
    }

    /// Opens the checkout whose intent was saved, and gives its URL to the button presses
    /// waiting and, for the auto-checkout, to every client. A checkout that could not be opened
    /// leaves its intent saved (the auto-checkout fired, and fires no more) and gives the
    /// fallback.
    fn start_checkout(
        &mut self,
        first: Option<(FlowStep, Option<chrono::DateTime<chrono::Utc>>)>,
        client_address: Option<std::net::IpAddr>,
        ctx: &mut Context<Self>,
    ) {
        let Some(conversation) = &self.conversation else {
            self.checkout_in_flight = false;
            return;
        };
        let request = FunnelCheckoutRequest {
            conversation_id: conversation.id.clone(),
            visitor_id: self.key.visitor_id.clone(),
            funnel: self.key.funnel,
            headline: conversation.headline.clone(),
            attribution: conversation.attribution.clone(),
            arm: conversation.arm.clone(),
            record: conversation.record(),
            client_address,
        };
        let start = self.deps.checkout.start(request);
        ctx.spawn(start.into_actor(self).map(move |result, act, ctx| {
            act.checkout_in_flight = false;
            let url = match result {
                Ok(url) => {
                    act.track(ConversationEvent::CheckoutInitiated);
                    if let Some((step, final_at)) = first {
                        act.reached(step, final_at);
                    }
                    act.recent_checkout = Some((url.clone(), tokio::time::Instant::now()));
                    url
                }
                Err(error) => {
                    tracing::warn!(visitor = %act.key.visitor_id, %error, "a funnel checkout could not be opened");
                    CHECKOUT_FALLBACK_URL.to_owned()
                }
            };
            act.deliver_checkout(&url);
            act.stop_if_drained(ctx);
        }));
    }

    /// Answers the button presses waiting for a checkout, and sends the auto-checkout's.
    fn deliver_checkout(&mut self, url: &str) {
        for waiter in self.checkout_waiters.drain(..) {
            waiter.send(CheckoutAck::Url(url.to_owned()));
        }
        if std::mem::take(&mut self.auto_checkout_pending) {
            self.broadcast("checkout", &json!({ "url": url }));
        }
    }

    fn on_left(&mut self, client_id: &str, ctx: &mut Context<Self>) {
        self.clients.retain(|c| c.id() != client_id);
        if self.clients.is_empty() {
            self.arm_idle_timer(ctx);
        }
    }

    /// Claims the conversation again every so often while the actor lives (with several
    /// processes): a claim found taken by another process (it lapsed: this process's sign of
    /// life was not seen for a while) ends this actor.
    fn renew_claim_regularly(&mut self, ctx: &mut Context<Self>) {
        let Some(every) = self.deps.claims.renew_every() else {
            return;
        };
        ctx.run_interval(every, |act, ctx| {
            let renew = act
                .deps
                .claims
                .claim(&act.key.conversation_id(), act.claim_token);
            ctx.spawn(renew.into_actor(act).map(|holder, act, ctx| {
                if let Holder::Elsewhere(process) = holder {
                    act.give_up(&process, ctx);
                }
            }));
        });
    }

    /// Another process holds the conversation's claim now: this actor hands the conversation
    /// over, leaving that claim alone.
    fn give_up(&mut self, holder: &str, ctx: &mut Context<Self>) {
        tracing::warn!(visitor = %self.key.visitor_id, holder, "a funnel conversation is held by another process now; handing it over");
        self.claimed = false;
        self.hand_over(ctx);
    }

    /// The store refused a save, or a reload found the conversation at another epoch: another
    /// actor took the conversation over since this one loaded it (this process was paused, or
    /// cut off from the claims, past its claim). This one hands it over; its claim, if it still
    /// has it, is released as it stops (only its own: the release checks).
    fn fenced(&mut self, ctx: &mut Context<Self>) {
        tracing::warn!(visitor = %self.key.visitor_id, "a funnel conversation was taken over by another holder while this one served it; handing it over");
        self.deps.telemetry.fenced(ACTOR_KIND);
        self.hand_over(ctx);
    }

    /// Its clients connect again (and are served by the holder), and this actor stops without
    /// saving anything more. What it had stored stays; a reply it owed is written by the
    /// holder.
    fn hand_over(&mut self, ctx: &mut Context<Self>) {
        for client in self.clients.drain(..) {
            client.reconnect();
        }
        ctx.stop();
    }

    /// A draining actor stops once no save or checkout it began is unanswered: its clients
    /// connect again (to another process, the balancer having taken this one out), and its
    /// claim is given up as it stops.
    fn stop_if_drained(&mut self, ctx: &mut Context<Self>) {
        if !self.draining || self.saves_in_flight > 0 || self.checkout_in_flight {
            return;
        }
        for client in self.clients.drain(..) {
            client.reconnect();
        }
        ctx.stop();
    }

    /// Nobody is connected: the actor stops after a while and frees its memory; the store keeps
    /// the conversation and the next join rebuilds it.
    fn arm_idle_timer(&mut self, ctx: &mut Context<Self>) {
        if let Some(timer) = self.idle_timer.take() {
            ctx.cancel_future(timer);
        }
        self.idle_timer = Some(
            ctx.run_later(self.deps.settings.idle_stop_after, |act, ctx| {
                act.idle_timer = None;
                if !act.clients.is_empty() {
                    return;
                }
                if act.is_working() {
                    act.arm_idle_timer(ctx);
                } else {
                    ctx.stop();
                }
            }),
        );
    }
}

impl Actor for FunnelActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.deps.telemetry.actor_started(ACTOR_KIND);
        self.arm_idle_timer(ctx);
    }

    fn stopped(&mut self, ctx: &mut Self::Context) {
        self.deps.telemetry.actor_stopped(ACTOR_KIND);
        if self.claimed {
            self.deps
                .claims
                .release(&self.key.conversation_id(), self.claim_token);
        }
        if let Some(live) = self.live.upgrade() {
            live.forget(&self.key, &ctx.address());
        }
    }
}

impl Handler<Drain> for FunnelActor {
    type Result = ();

    fn handle(&mut self, _: Drain, ctx: &mut Self::Context) {
        self.draining = true;
        self.stop_if_drained(ctx);
    }
}

impl Handler<Join> for FunnelActor {
    type Result = AtomicResponse<Self, Result<(), JoinError>>;

    fn handle(&mut self, join: Join, ctx: &mut Self::Context) -> Self::Result {
        if self.conversation.is_some() {
            self.attach(join.client, ctx);
            return AtomicResponse::new(Box::pin(actix::fut::ready(Ok(()))));
        }
        // The first join starts the conversation from this handshake, or loads the one the
        // visitor has (`load_or_start`). Other messages wait meanwhile (store calls, never an
        // AI call).
        let deps = self.deps.clone();
        let key = self.key.clone();
        let start = join.start;
        let client = join.client;
        let token = self.claim_token;
        let load = async move {
            match deps.claims.claim(&key.conversation_id(), token).await {
                Holder::Here => {}
                Holder::Elsewhere(process) => return Err(Loaded::Elsewhere(process)),
            }
            load_or_start(&deps, &key, start)
                .await
                .map_err(Loaded::Failed)
        };
        AtomicResponse::new(Box::pin(load.into_actor(self).map(
            move |loaded: Result<(Conversation, Arc<FlowScript>), Loaded>, act, ctx| match loaded {
                Ok((conversation, script)) => {
                    act.claimed = true;
                    act.renew_claim_regularly(ctx);
                    if act.conversation.is_none() {
                        act.conversation = Some(conversation);
                        act.script = Some(script);
                    }
                    act.attach(client, ctx);
                    act.resume(ctx);
                    Ok(())
                }
                Err(Loaded::Elsewhere(process)) => {
                    // Held by a process that lives: this actor has nothing to serve.
                    ctx.stop();
                    Err(JoinError::Elsewhere(process))
                }
                Err(Loaded::Failed(error)) => {
                    act.claimed = true;
                    tracing::warn!(visitor = %act.key.visitor_id, %error, "a funnel conversation could not be loaded");
                    Err(JoinError::Unavailable)
                }
            },
        )))
    }
}

/// Why a first join found no conversation to serve here.
enum Loaded {
    Elsewhere(String),
    Failed(StoreError),
}

/// The flow a new conversation follows, its script and its experiment's arm: the flow `start`
/// names (a preview, in no experiment), or the visitor's arm's flow version in a running
/// experiment, else the routing's choice (docs/dashboard.md, "Experiments"). A preview the
/// catalog does not hold yet (made a moment ago on another process) is looked for again after a
/// reload.
async fn new_flow(
    deps: &Deps,
    key: &ConversationKey,
    start: &NewConversation,
) -> Result<((FlowRef, Option<ArmRef>), Arc<FlowScript>), StoreError> {
    if let Some(flow) = &start.flow {
        if let Some(script) = deps.flows.catalog().script(flow) {
            return Ok(((flow.clone(), None), script));
        }
        deps.flows.refresh().await;
        return deps
            .flows
            .catalog()
            .script(flow)
            .map(|script| ((flow.clone(), None), script))
            .ok_or_else(|| StoreError::Failed(format!("no preview {:?}", flow.preview)));
    }
    let attribution = &start.attribution;
    deps.flows
        .catalog()
        .choose_for(&Visit {
            funnel: key.funnel,
            campaignid: attribution.campaignid.as_deref(),
            keyword: attribution.keyword.as_deref(),
            visitor: &key.visitor_id,
        })
        .map(|(flow, script, arm)| ((flow, arm), script))
        .ok_or_else(|| StoreError::Failed("no flow is published".into()))
}

/// The script of a stored conversation's flow version: from the catalog, or from the store's
/// after a reload (a version published a moment ago on another process), else the flow's
/// published version (a version the store no longer has: never deleted, so only by hand).
async fn script_of(
    deps: &Deps,
    conversation: &Conversation,
) -> Result<Arc<FlowScript>, StoreError> {
    if let Some(script) = deps.flows.catalog().script(&conversation.flow) {
        return Ok(script);
    }
    deps.flows.refresh().await;
    let catalog = deps.flows.catalog();
    if let Some(script) = catalog.script(&conversation.flow) {
        return Ok(script);
    }
    tracing::warn!(conversation = %conversation.id, flow = ?conversation.flow, "a conversation's flow version is unknown; it follows the published one");
    catalog
        .script_or_published(&conversation.flow)
        .ok_or_else(|| StoreError::Failed("no flow is published".into()))
}

/// Counts a step of `conversation` (a preview counts nowhere).
fn tally_step(deps: &Deps, conversation: &Conversation, step: FlowStep, after: Option<Duration>) {
    if conversation.flow.preview.is_some() {
        return;
    }
    deps.tally.reached(StepReached {
        conversation_id: conversation.id.clone(),
        day: conversation.created_at.date_naive(),
        funnel: conversation.key.funnel,
        flow: conversation.flow.name.clone(),
        version: conversation.flow.version,
        campaignid: conversation.attribution.campaignid.clone(),
        keyword: conversation.attribution.keyword.clone(),
        step,
        after,
    });
}

/// The stored conversation of `key`, or a new one started from `start` (and stored), with the
/// script of its flow version.
///
/// Most first joins are a new visitor's, so the start is tried before any read: one store call.
/// A visitor who already has a conversation in this funnel makes it a conflict with nothing
/// written, and theirs is taken over (read at a new epoch).
async fn load_or_start(
    deps: &Deps,
    key: &ConversationKey,
    start: NewConversation,
) -> Result<(Conversation, Arc<FlowScript>), StoreError> {
    let (flow, script) = new_flow(deps, key, &start).await?;
    let mut fresh = FunnelActor::new_conversation(deps, key, start, flow, &script);
    match deps.store.save(&fresh, ConversationChange::Started).await {
        Ok(()) => {
            tally_step(deps, &fresh, FlowStep::Joined, None);
            return Ok((fresh, script));
        }
        Err(StoreError::Conflict) => {}
        Err(error) => return Err(error),
    }
    let lifetime = chrono_duration(deps.settings.conversation_lifetime);
    // This actor is the conversation's new holder: it loads it as one, which fences whoever
    // held it before.
    match deps.store.take_over(key).await? {
        Some(conversation) if deps.clock.now() - conversation.updated_at < lifetime => {
            let script = script_of(deps, &conversation).await?;
            return Ok((conversation, script));
        }
        // The spec keeps funnel data for an hour: a visitor back later (perhaps from
        // another ad) starts over, in the same record, at the epoch just taken.
        Some(expired) => {
            fresh.id = expired.id;
            fresh.version = expired.version + 1;
            fresh.epoch = expired.epoch;
        }
        // None stored after all (erased since the start was refused, or the refusal was a
        // conflict with another writer that outlasted the store's retries): a new one.
        None => {}
    }
    match deps.store.save(&fresh, ConversationChange::Started).await {
        Ok(()) => {
            tally_step(deps, &fresh, FlowStep::Joined, None);
            Ok((fresh, script))
        }
        // Another process started it, or took it over, at the same moment: take theirs, as
        // its holder (two holders at one epoch would not fence each other).
        Err(StoreError::Conflict | StoreError::Fenced) => {
            let conversation = deps
                .store
                .take_over(key)
                .await?
                .ok_or_else(|| StoreError::Failed("the conversation vanished".into()))?;
            let script = script_of(deps, &conversation).await?;
            Ok((conversation, script))
        }
        Err(error) => Err(error),
    }
}

impl Handler<ClientEvent> for FunnelActor {
    type Result = ();

    fn handle(&mut self, event: ClientEvent, ctx: &mut Self::Context) {
        match event {
            ClientEvent::Send {
                client_id,
                text,
                reply,
            } => self.on_send(client_id, text, reply, ctx),
            ClientEvent::Checkout { client_id, reply } => self.on_checkout(&client_id, reply, ctx),
            ClientEvent::Left { client_id } => self.on_left(&client_id, ctx),
        }
    }
}

/// The spec's analytics events of a chat funnel conversation.
#[derive(Debug, Clone, Copy)]
enum ConversationEvent {
    FirstMessage,
    FinalMessage,
    CheckoutInitiated,
}

impl ConversationEvent {
    fn name(self, funnel: FunnelKind) -> &'static str {
        let refundable = funnel == FunnelKind::Refundable;
        match (self, refundable) {
            (ConversationEvent::FirstMessage, false) => "chatbot_first_message",
            (ConversationEvent::FinalMessage, false) => "chatbot_final_message",
            (ConversationEvent::CheckoutInitiated, false) => "chatbot_checkout_initiated",
            (ConversationEvent::FirstMessage, true) => "refundable_fee_first_message",
            (ConversationEvent::FinalMessage, true) => "refundable_fee_final_message",
            (ConversationEvent::CheckoutInitiated, true) => "refundable_fee_checkout_initiated",
        }
    }
}

fn reply_delayed_notice() -> Value {
    json!({
        "code": "reply_delayed",
        "text": "Sorry, your assistant is having trouble replying. Please wait a moment, it will try again.",
    })
}

/// The AI's reply if it is one to show.
fn usable_ai_reply(reply: Result<String, AiError>) -> Result<String, AiError> {
    let text = reply?;
    let text = text.trim();
    if text.is_empty() || text.chars().count() > MAX_AI_REPLY_CHARS {
        return Err(AiError::UnexpectedResponse(
            "an empty or overlong reply".into(),
        ));
    }
    if text.to_lowercase().contains("error") {
        return Err(AiError::UnexpectedResponse(
            "the reply mentions an error".into(),
        ));
    }
    Ok(text.to_owned())
}

fn chrono_duration(duration: Duration) -> chrono::TimeDelta {
    chrono::TimeDelta::from_std(duration).unwrap_or(chrono::TimeDelta::MAX)
}

/// The `countdown` event: how long until the automatic checkout opens, relative, so a client's
/// clock does not matter.
fn countdown_view(left: chrono::TimeDelta) -> Value {
    json!({ "checkoutInMs": left.num_milliseconds().max(0) })
}
