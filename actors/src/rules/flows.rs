//! The funnels' flows as data (issue 47): a flow is a name and numbered, immutable versions, each
//! a [`FlowScript`] holding every text and number a funnel conversation takes from its script;
//! [`Routing`] says which flow a new conversation follows. A [`FlowCatalog`] is what one process
//! holds in memory: the routing, each flow's published version, and every version a live
//! conversation may still follow (a conversation keeps the version it started with).
//!
//! `config/funnels.toml` ([`super::scripts::FunnelScripts`]) becomes version 1 of each flow
//! ([`FlowCatalog::from_scripts`]) and stays the catalog a server starts from.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::FunnelKind;
use super::experiments::{ArmRef, Split, Visit};
use super::scripts::{FunnelScripts, keyword_topic};
use super::text::{holds_phrase, words_of};

/// The flow every conversation falls back to in the file's routing.
pub const DEFAULT_FLOW: &str = super::scripts::DEFAULT_FLOW;
/// The name the file's keyword flow (`[keyword_flow]`) gets as a flow of its own.
pub const KEYWORD_FLOW: &str = super::scripts::KEYWORD_FLOW;

/// The help funnel's intro when the AI's is unusable (product spec: "the default text is used").
pub const DEFAULT_HELP_INTRO: &str = super::summary::DEFAULT_INTRO;

/// The placeholders a text may use, and what each becomes.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    (
        "{assistant}",
        "the assistant's name (product.assistant_name), for example Emma",
    ),
    ("{product}", "the product's name (product.name)"),
    (
        "{keyword}",
        "the topic of the ad's keyword: 'Printer Offline Help' reads 'printer', so write it where a thing fits ('people with {keyword} problems'). Only in a flow that is chosen by keyword",
    ),
];

/// The bounds a version's texts and timings are kept within (docs/operations.md, "Flows").
pub mod bounds {
    /// Every text: at least one character that is not a space, at most this many.
    pub const TEXT_MAX_CHARS: usize = 600;
    /// The shortest and longest a typing delay may be: the spec's 1.5-2.5 s, with room on either
    /// side, and never past the AI's 8 s time-out.
    pub const TYPING_MIN_MS: u32 = 500;
    pub const TYPING_MAX_MS: u32 = 8_000;
    /// The automatic checkout after the final message: the spec's 15 s, from 5 s (time to read
    /// the offer) to 2 minutes.
    pub const AUTO_CHECKOUT_MIN_S: u32 = 5;
    pub const AUTO_CHECKOUT_MAX_S: u32 = 120;
    /// A flow's name: lower-case letters, digits and '-', this long at most.
    pub const NAME_MAX_CHARS: usize = 40;
    /// A keyword route's phrase.
    pub const KEYWORD_MAX_CHARS: usize = 80;
    /// A campaign id.
    pub const CAMPAIGN_MAX_CHARS: usize = 40;
}

/// One version of a flow: every text and number a funnel conversation takes from its script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlowScript {
    /// Opens the chat.
    pub greeting: String,
    /// Stage 0: the empathetic follow-up, when a script stands in for the AI.
    pub follow_up: String,
    /// Stage 1: what has been tried so far, when a script stands in for the AI.
    pub troubleshooting: String,
    /// The reply to a message that says nothing ('jjj', '??') at stage 0: it asks again.
    pub unclear_follow_up: String,
    /// The same at stage 1.
    pub unclear_troubleshooting: String,
    /// The chat funnel's final message (with the 'Get started >>' button).
    pub final_chat: String,
    /// The refundable-fee funnel's final message.
    pub final_refundable: String,
    /// The help funnel's intro above the paywall when the AI's is unusable.
    pub help_intro: String,
    /// The typing indicator shows a random time in this range before each reply.
    pub typing_delay_min_ms: u32,
    pub typing_delay_max_ms: u32,
    /// The checkout opens by itself this long after the final message.
    pub auto_checkout_after_s: u32,
}

/// A problem with one field of a draft or of the routing, in words for the operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldProblem {
    /// The field (`greeting`, `typingDelayMaxMs`, `campaigns.21453478993`, `defaultFlow`).
    pub field: String,
    pub message: String,
}

impl FieldProblem {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A text field of a script: its key (as the API and the editor name it) and its label.
pub const TEXT_FIELDS: [(&str, &str); 8] = [
    ("greeting", "Greeting"),
    ("followUp", "Follow-up (stage 0)"),
    ("troubleshooting", "Troubleshooting question (stage 1)"),
    ("unclearFollowUp", "Reply to an unclear first message"),
    (
        "unclearTroubleshooting",
        "Reply to an unclear second message",
    ),
    ("finalChat", "Final message, chat funnel"),
    ("finalRefundable", "Final message, refundable-fee funnel"),
    ("helpIntro", "Help funnel's intro"),
];

impl FlowScript {
    /// The file's flow `flow` (its greeting and two replies) with what the file holds for every
    /// flow (the unclear replies, the final messages) and the spec's timings.
    pub fn from_file(scripts: &FunnelScripts, flow: &super::scripts::Flow) -> Self {
        Self {
            greeting: flow.greeting.clone(),
            follow_up: flow.follow_up.clone(),
            troubleshooting: flow.troubleshooting.clone(),
            unclear_follow_up: scripts.unclear.follow_up.clone(),
            unclear_troubleshooting: scripts.unclear.troubleshooting.clone(),
            final_chat: scripts.final_message.chat.clone(),
            final_refundable: scripts.final_message.refundable.clone(),
            help_intro: DEFAULT_HELP_INTRO.to_owned(),
            typing_delay_min_ms: 1_500,
            typing_delay_max_ms: 2_500,
            auto_checkout_after_s: 15,
        }
    }

    /// The text fields, by key, in the editor's order.
    pub fn texts(&self) -> [(&'static str, &str); 8] {
        [
            ("greeting", &self.greeting),
            ("followUp", &self.follow_up),
            ("troubleshooting", &self.troubleshooting),
            ("unclearFollowUp", &self.unclear_follow_up),
            ("unclearTroubleshooting", &self.unclear_troubleshooting),
            ("finalChat", &self.final_chat),
            ("finalRefundable", &self.final_refundable),
            ("helpIntro", &self.help_intro),
        ]
    }

    /// The number fields, by key.
    pub fn numbers(&self) -> [(&'static str, u32); 3] {
        [
            ("typingDelayMinMs", self.typing_delay_min_ms),
            ("typingDelayMaxMs", self.typing_delay_max_ms),
            ("autoCheckoutAfterS", self.auto_checkout_after_s),
        ]
    }

    /// Whether any text uses `{keyword}`.
    pub fn uses_keyword(&self) -> bool {
        self.texts()
            .iter()
            .any(|(_, text)| text.contains("{keyword}"))
    }

    /// Every problem of the script, field by field (none: it may be published). `{keyword}` is
    /// checked against the routing apart ([`Routing::check`]), as where a flow is used decides it.
    pub fn check(&self) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        for ((field, text), (_, label)) in self.texts().into_iter().zip(TEXT_FIELDS) {
            let chars = text.chars().count();
            if text.trim().is_empty() {
                problems.push(FieldProblem::new(field, format!("{label} is empty.")));
            } else if chars > bounds::TEXT_MAX_CHARS {
                problems.push(FieldProblem::new(
                    field,
                    format!(
                        "{label} is {chars} characters long; keep it to {} or fewer.",
                        bounds::TEXT_MAX_CHARS
                    ),
                ));
            } else if let Some(unknown) = unknown_placeholder(text) {
                problems.push(FieldProblem::new(
                    field,
                    format!(
                        "{unknown} is not a placeholder. Use {{assistant}}, {{product}} or {{keyword}}, or take out the braces."
                    ),
                ));
            } else if field == "helpIntro" && text.contains("{keyword}") {
                problems.push(FieldProblem::new(
                    field,
                    "The help funnel's intro cannot use {keyword}: it is shown whatever the ad.",
                ));
            }
        }
        let (min, max) = (self.typing_delay_min_ms, self.typing_delay_max_ms);
        if !(bounds::TYPING_MIN_MS..=bounds::TYPING_MAX_MS).contains(&min) {
            problems.push(FieldProblem::new(
                "typingDelayMinMs",
                format!(
                    "The shortest typing delay must be between {} and {} ms.",
                    bounds::TYPING_MIN_MS,
                    bounds::TYPING_MAX_MS
                ),
            ));
        }
        if !(bounds::TYPING_MIN_MS..=bounds::TYPING_MAX_MS).contains(&max) {
            problems.push(FieldProblem::new(
                "typingDelayMaxMs",
                format!(
                    "The longest typing delay must be between {} and {} ms.",
                    bounds::TYPING_MIN_MS,
                    bounds::TYPING_MAX_MS
                ),
            ));
        } else if max < min {
            problems.push(FieldProblem::new(
                "typingDelayMaxMs",
                "The longest typing delay cannot be shorter than the shortest.",
            ));
        }
        let checkout = self.auto_checkout_after_s;
        if !(bounds::AUTO_CHECKOUT_MIN_S..=bounds::AUTO_CHECKOUT_MAX_S).contains(&checkout) {
            problems.push(FieldProblem::new(
                "autoCheckoutAfterS",
                format!(
                    "The automatic checkout must open between {} and {} seconds after the final message.",
                    bounds::AUTO_CHECKOUT_MIN_S,
                    bounds::AUTO_CHECKOUT_MAX_S
                ),
            ));
        }
        problems
    }

    /// The final message of a funnel.
    pub fn final_message(&self, funnel: FunnelKind) -> &str {
        match funnel {
            FunnelKind::Refundable => &self.final_refundable,
            FunnelKind::Chat | FunnelKind::Help => &self.final_chat,
        }
    }

    pub fn typing_delay_range(&self) -> (Duration, Duration) {
        let min = Duration::from_millis(u64::from(self.typing_delay_min_ms));
        let max = Duration::from_millis(u64::from(self.typing_delay_max_ms)).max(min);
        (min, max)
    }

    pub fn auto_checkout_after(&self) -> Duration {
        Duration::from_secs(u64::from(self.auto_checkout_after_s))
    }

    /// What changed from `before` to `self`, field by field (`before`, `after` as written).
    pub fn changes_from(&self, before: Option<&FlowScript>) -> Vec<FieldChange> {
        let mut changes = Vec::new();
        let old_texts = before.map(FlowScript::texts);
        for (index, (field, text)) in self.texts().into_iter().enumerate() {
            let old = old_texts.as_ref().map(|texts| texts[index].1);
            if old != Some(text) {
                changes.push(FieldChange {
                    field: field.to_owned(),
                    before: old.map(str::to_owned),
                    after: text.to_owned(),
                });
            }
        }
        let old_numbers = before.map(FlowScript::numbers);
        for (index, (field, number)) in self.numbers().into_iter().enumerate() {
            let old = old_numbers.as_ref().map(|numbers| numbers[index].1);
            if old != Some(number) {
                changes.push(FieldChange {
                    field: field.to_owned(),
                    before: old.map(|n| n.to_string()),
                    after: number.to_string(),
                });
            }
        }
        changes
    }
}

/// One field's change between two versions (a publish's record, the editor's diff).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    pub field: String,
    pub before: Option<String>,
    pub after: String,
}

/// The first `{...}` of `text` that is not a known placeholder, or a lone brace.
fn unknown_placeholder(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(start) = rest.find(['{', '}']) {
        let tail = &rest[start..];
        if tail.starts_with('}') {
            return Some("}".to_owned());
        }
        match PLACEHOLDERS.iter().find(|(p, _)| tail.starts_with(p)) {
            Some((placeholder, _)) => rest = &tail[placeholder.len()..],
            None => {
                let end = tail.find('}').map_or(1, |end| end + 1);
                let shown: String = tail[..end].chars().take(30).collect();
                return Some(shown);
            }
        }
    }
    None
}

/// Which flow a new conversation follows: by campaign id first, then by keyword (the longest
/// route whose words appear together in the ad's keyword), then (chat funnel only) the keyword
/// flow when the keyword has a topic, else the default flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Routing {
    /// Ad campaign id -> flow.
    #[serde(default)]
    pub campaigns: BTreeMap<String, String>,
    /// A keyword's word or words (lower case) -> flow.
    #[serde(default)]
    pub keywords: BTreeMap<String, String>,
    /// The chat funnel's flow for a keyword that no route names (it may use `{keyword}`).
    #[serde(default)]
    pub keyword_flow: Option<String>,
    pub default_flow: String,
    /// Ad campaign id -> the funnel its visitors meet, wherever the ad sends them (an
    /// experiment's winning offer, issue 48). A page of another funnel sends them on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub offers: BTreeMap<String, FunnelKind>,
}

impl Routing {
    /// The file's routing: its campaigns, each flow by its own name as a keyword (as the file's
    /// "a keyword or one of its words names a flow" did), its keyword flow and default.
    pub fn from_scripts(scripts: &FunnelScripts) -> Self {
        Self {
            campaigns: scripts.campaigns.clone(),
            keywords: scripts
                .flows
                .keys()
                .filter(|name| name.as_str() != DEFAULT_FLOW)
                .map(|name| (name.clone(), name.clone()))
                .collect(),
            keyword_flow: Some(KEYWORD_FLOW.to_owned()),
            default_flow: DEFAULT_FLOW.to_owned(),
            offers: BTreeMap::new(),
        }
    }

    /// The name of the flow a new conversation of `funnel` follows.
    pub fn choose(
        &self,
        funnel: FunnelKind,
        campaignid: Option<&str>,
        keyword: Option<&str>,
    ) -> &str {
        if let Some(flow) = campaignid
            .map(str::trim)
            .and_then(|id| self.campaigns.get(id))
        {
            return flow;
        }
        let keyword = keyword.map(str::trim).filter(|k| !k.is_empty());
        if let Some(keyword) = keyword {
            let words = words_of(keyword);
            let mut best: Option<(usize, &String)> = None;
            for (route, flow) in &self.keywords {
                if let Some(length) = holds_phrase(&words, route)
                    && best.is_none_or(|(longest, _)| length > longest)
                {
                    best = Some((length, flow));
                }
            }
            if let Some((_, flow)) = best {
                return flow;
            }
            // A keyword that names no topic ('help', 'tech support') makes no flow of its own.
            if funnel == FunnelKind::Chat
                && let Some(flow) = &self.keyword_flow
                && keyword_topic(keyword).is_some()
            {
                return flow;
            }
        }
        &self.default_flow
    }

    /// Every problem of the routing against the published flows (`script` of each name), field
    /// by field: every flow named exists, and a flow that uses `{keyword}` is chosen only where a
    /// keyword is sure to exist (a keyword route or the keyword flow).
    pub fn check(&self, script: impl Fn(&str) -> Option<Arc<FlowScript>>) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        let mut flow_problem = |field: String, flow: &str, keyword_allowed: bool| {
            match script(flow)
        {
            None => problems.push(FieldProblem::new(
                field,
                format!("There is no published flow \"{flow}\"."),
            )),
            Some(script) if !keyword_allowed && script.uses_keyword() => {
                problems.push(FieldProblem::new(
                    field,
                    format!(
                        "The flow \"{flow}\" uses {{keyword}}, which a visitor chosen this way may not have: route it by keyword, or as the keyword flow."
                    ),
                ))
            }
            Some(_) => {}
        }
        };
        flow_problem("defaultFlow".to_owned(), &self.default_flow, false);
        if let Some(flow) = &self.keyword_flow {
            flow_problem("keywordFlow".to_owned(), flow, true);
        }
        for (campaign, flow) in &self.campaigns {
            flow_problem(format!("campaigns.{campaign}"), flow, false);
        }
        for (keyword, flow) in &self.keywords {
            flow_problem(format!("keywords.{keyword}"), flow, true);
        }
        let campaigns = self.campaigns.keys().map(|id| ("campaigns", id));
        for (routes, campaign) in campaigns.chain(self.offers.keys().map(|id| ("offers", id))) {
            if !valid_campaign(campaign) {
                problems.push(FieldProblem::new(
                    format!("{routes}.{campaign}"),
                    format!(
                        "A campaign id is letters, digits, '-' or '_', at most {} characters.",
                        bounds::CAMPAIGN_MAX_CHARS
                    ),
                ));
            }
        }
        for keyword in self.keywords.keys() {
            if !valid_keyword_route(keyword) {
                problems.push(FieldProblem::new(
                    format!("keywords.{keyword}"),
                    format!(
                        "A keyword route is one or more words in lower case, at most {} characters.",
                        bounds::KEYWORD_MAX_CHARS
                    ),
                ));
            }
        }
        problems
    }

    /// Every flow the routing names.
    pub fn flows(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.default_flow.as_str())
            .chain(self.keyword_flow.as_deref())
            .chain(self.campaigns.values().map(String::as_str))
            .chain(self.keywords.values().map(String::as_str))
    }
}

/// Whether `id` is a campaign id a route or an experiment may name: letters, digits, '-' and '_',
/// [`bounds::CAMPAIGN_MAX_CHARS`] at most.
pub fn valid_campaign(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= bounds::CAMPAIGN_MAX_CHARS
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Whether `keyword` is a keyword phrase a route or an experiment may name: one or more words,
/// in lower case, trimmed, [`bounds::KEYWORD_MAX_CHARS`] at most.
pub fn valid_keyword_route(keyword: &str) -> bool {
    !words_of(keyword).is_empty()
        && keyword.chars().count() <= bounds::KEYWORD_MAX_CHARS
        && keyword == keyword.trim().to_lowercase()
}

/// Whether `name` is a valid flow name.
pub fn valid_flow_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= bounds::NAME_MAX_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && name.starts_with(|c: char| c.is_ascii_lowercase())
}

/// The flow a conversation follows: the flow's name and version, or a preview of a draft.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FlowRef {
    pub name: String,
    /// The published version (0 for a preview).
    pub version: u32,
    /// A preview's id (`/admin`'s "Try it"): the draft it runs is the preview's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

impl FlowRef {
    pub fn published(name: impl Into<String>, version: u32) -> Self {
        Self {
            name: name.into(),
            version,
            preview: None,
        }
    }
}

/// What one process holds of the flows: the routing, the published version of each flow, every
/// version a conversation may follow, and the previews being tried. Immutable: a publish makes a
/// new catalog, swapped in whole.
#[derive(Debug, Clone, Default)]
pub struct FlowCatalog {
    pub routing: Option<Routing>,
    /// The routing's published version (1: the file's).
    pub routing_version: u32,
    /// Flow -> its published version.
    pub published: BTreeMap<String, u32>,
    /// Flow -> version -> script.
    pub versions: HashMap<String, BTreeMap<u32, Arc<FlowScript>>>,
    /// Preview id -> (the flow it previews, the draft's script).
    pub previews: HashMap<String, (String, Arc<FlowScript>)>,
    /// Bumped by every publish (the store's `flow_state:current.revision`); 0 for the file's.
    pub revision: u64,
    /// The running experiments, oldest first: a visitor two of them would take is the oldest's.
    pub splits: Vec<Arc<Split>>,
}

impl FlowCatalog {
    /// The file's flows, each as its version 1, with the file's routing.
    pub fn from_scripts(scripts: &FunnelScripts) -> Self {
        let mut catalog = FlowCatalog {
            routing: Some(Routing::from_scripts(scripts)),
            routing_version: 1,
            ..FlowCatalog::default()
        };
        for (name, flow) in &scripts.flows {
            catalog.insert(name, 1, FlowScript::from_file(scripts, flow));
            catalog.published.insert(name.clone(), 1);
        }
        catalog.insert(
            KEYWORD_FLOW,
            1,
            FlowScript::from_file(scripts, &scripts.keyword_flow),
        );
        catalog.published.insert(KEYWORD_FLOW.to_owned(), 1);
        catalog
    }

    pub fn insert(&mut self, name: &str, version: u32, script: FlowScript) {
        self.versions
            .entry(name.to_owned())
            .or_default()
            .insert(version, Arc::new(script));
    }

    /// The published script of `name`.
    pub fn published_script(&self, name: &str) -> Option<Arc<FlowScript>> {
        let version = self.published.get(name)?;
        self.versions.get(name)?.get(version).cloned()
    }

    /// The flow (and its published version) a new conversation of `funnel` follows.
    pub fn choose(
        &self,
        funnel: FunnelKind,
        campaignid: Option<&str>,
        keyword: Option<&str>,
    ) -> Option<(FlowRef, Arc<FlowScript>)> {
        let routing = self.routing.as_ref()?;
        let name = routing.choose(funnel, campaignid, keyword);
        let chosen = self
            .published
            .get(name)
            .map(|version| (name, *version))
            .or_else(|| {
                let default = routing.default_flow.as_str();
                self.published
                    .get(default)
                    .map(|version| (default, *version))
            })?;
        let script = self.versions.get(chosen.0)?.get(&chosen.1)?.clone();
        Some((FlowRef::published(chosen.0, chosen.1), script))
    }

    /// The flow a new conversation of the visit follows, and the experiment's arm it is in, if
    /// one has it there: the arm's flow version, else the routing's choice.
    pub fn choose_for(
        &self,
        visit: &Visit<'_>,
    ) -> Option<(FlowRef, Arc<FlowScript>, Option<ArmRef>)> {
        let Visit {
            funnel,
            campaignid,
            keyword,
            ..
        } = *visit;
        let member = self
            .splits
            .iter()
            .find_map(|split| split.member(visit).map(|arm| (split, arm)));
        if let Some((split, arm)) = member {
            let arm_ref = Some(split.arm_ref(arm));
            if let Some(flow) = &arm.flow {
                let flow = FlowRef::published(flow.name.clone(), flow.version);
                if let Some(script) = self.script(&flow) {
                    return Some((flow, script, arm_ref));
                }
            }
            let (flow, script) = self.choose(funnel, campaignid, keyword)?;
            return Some((flow, script, arm_ref));
        }
        let (flow, script) = self.choose(funnel, campaignid, keyword)?;
        Some((flow, script, None))
    }

    /// Where a visitor who opened the visit's funnel's page belongs: the funnel their
    /// experiment's arm or their campaign's offer route has them meet, and the arm (none outside
    /// an experiment).
    pub fn landing(&self, visit: &Visit<'_>) -> (FunnelKind, Option<ArmRef>) {
        for split in &self.splits {
            if let Some(arm) = split.landing(visit) {
                return (split.funnel_of(arm), Some(split.arm_ref(arm)));
            }
        }
        for split in &self.splits {
            if let Some(arm) = split.member(visit) {
                return (visit.funnel, Some(split.arm_ref(arm)));
            }
        }
        let routed = visit
            .campaignid
            .map(str::trim)
            .and_then(|id| self.routing.as_ref()?.offers.get(id).copied());
        (routed.unwrap_or(visit.funnel), None)
    }

    /// The script a conversation follows, if this catalog has it.
    pub fn script(&self, flow: &FlowRef) -> Option<Arc<FlowScript>> {
        match &flow.preview {
            Some(preview) => self.previews.get(preview).map(|(_, script)| script.clone()),
            None => self.versions.get(&flow.name)?.get(&flow.version).cloned(),
        }
    }

    /// [`Self::script`], or (a version this catalog lacks) the flow's published version, else
    /// the default flow's.
    pub fn script_or_published(&self, flow: &FlowRef) -> Option<Arc<FlowScript>> {
        self.script(flow)
            .or_else(|| self.published_script(&flow.name))
            .or_else(|| {
                let default = self.routing.as_ref()?.default_flow.as_str();
                self.published_script(default)
            })
    }
}

/// Where the funnel actors get flows from: the catalog in memory, and a way to bring it up to
/// date from the store when a conversation names a version it lacks (published a moment ago on
/// another process).
pub trait FlowSource: Send + Sync + 'static {
    fn catalog(&self) -> Arc<FlowCatalog>;
    /// Reloads the catalog from the store (nothing for a fixed catalog).
    fn refresh(&self) -> futures_util::future::BoxFuture<'static, ()> {
        Box::pin(futures_util::future::ready(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> FunnelScripts {
        toml::from_str(include_str!("../../../config/funnels.toml")).expect("the file parses")
    }

    #[test]
    fn the_file_becomes_version_1_of_each_flow_with_the_same_choices() {
        let scripts = shipped();
        let catalog = FlowCatalog::from_scripts(&scripts);
        assert_eq!(
            catalog.published.keys().collect::<Vec<_>>(),
            ["computer", "default", "email", "keyword"]
        );
        for funnel in [FunnelKind::Chat, FunnelKind::Refundable] {
            for (campaign, keyword) in [
                (None, None),
                (Some("21453478993"), Some("computer")),
                (Some("999"), Some("slow computer")),
                (None, Some("Email")),
                (None, Some("outlook email")),
                (None, Some("printer offline")),
                (None, Some("tech support")),
                (None, Some("default")),
                (None, Some("   ")),
            ] {
                let (flow, script) = catalog.choose(funnel, campaign, keyword).expect("a flow");
                assert_eq!(
                    flow.name,
                    scripts.choose_flow(funnel, campaign, keyword),
                    "{funnel:?} {campaign:?} {keyword:?}"
                );
                assert_eq!(flow.version, 1);
                assert_eq!(script.greeting, scripts.flow(&flow.name).greeting);
                assert_eq!(script.final_message(funnel), scripts.final_message(funnel));
            }
        }
        for name in catalog.published.keys() {
            let script = catalog.published_script(name).expect("published");
            assert_eq!(script.check(), vec![], "{name}");
        }
        let routing = catalog.routing.as_ref().expect("routing");
        assert_eq!(routing.check(|name| catalog.published_script(name)), vec![]);
    }

    #[test]
    fn the_longest_keyword_route_wins() {
        let mut routing = Routing::from_scripts(&shipped());
        routing
            .keywords
            .insert("outlook email".into(), "computer".into());
        assert_eq!(
            routing.choose(FunnelKind::Chat, None, Some("Outlook Email login")),
            "computer"
        );
        assert_eq!(
            routing.choose(FunnelKind::Chat, None, Some("email outlook")),
            "email"
        );
        assert_eq!(
            routing.choose(FunnelKind::Chat, None, Some("emails")),
            KEYWORD_FLOW
        );
    }

    #[test]
    fn a_draft_gets_a_message_at_each_field_that_is_wrong() {
        let scripts = shipped();
        let mut script = FlowScript::from_file(&scripts, scripts.flow(DEFAULT_FLOW));
        script.greeting = "  ".into();
        script.follow_up = "Hi {name}".into();
        script.troubleshooting = "x".repeat(bounds::TEXT_MAX_CHARS + 1);
        script.unclear_follow_up = "a } alone".into();
        script.help_intro = "About {keyword}".into();
        script.typing_delay_min_ms = 3_000;
        script.typing_delay_max_ms = 2_000;
        script.auto_checkout_after_s = 1;
        let problems = script.check();
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "greeting",
                "followUp",
                "troubleshooting",
                "unclearFollowUp",
                "helpIntro",
                "typingDelayMaxMs",
                "autoCheckoutAfterS"
            ]
        );
        assert_eq!(problems[0].message, "Greeting is empty.");
        assert!(
            problems[1]
                .message
                .starts_with("{name} is not a placeholder")
        );
        assert!(problems[2].message.contains("601 characters"));
    }

    #[test]
    fn a_flow_with_keyword_is_routed_only_where_a_keyword_is_sure() {
        let scripts = shipped();
        let catalog = FlowCatalog::from_scripts(&scripts);
        let mut routing = catalog.routing.clone().expect("routing");
        routing.default_flow = KEYWORD_FLOW.into();
        routing.campaigns.insert("77".into(), "nothing".into());
        routing.keywords.insert("Printer".into(), "email".into());
        let problems = routing.check(|name| catalog.published_script(name));
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["defaultFlow", "campaigns.77", "keywords.Printer"]);
    }

    #[test]
    fn changes_name_each_field_that_differs() {
        let scripts = shipped();
        let before = FlowScript::from_file(&scripts, scripts.flow(DEFAULT_FLOW));
        let mut after = before.clone();
        after.greeting = "Hello".into();
        after.auto_checkout_after_s = 20;
        let changes = after.changes_from(Some(&before));
        assert_eq!(
            changes,
            vec![
                FieldChange {
                    field: "greeting".into(),
                    before: Some(before.greeting.clone()),
                    after: "Hello".into()
                },
                FieldChange {
                    field: "autoCheckoutAfterS".into(),
                    before: Some("15".into()),
                    after: "20".into()
                }
            ]
        );
        assert_eq!(after.changes_from(None).len(), 11);
    }

    #[test]
    fn a_conversation_keeps_a_version_the_catalog_still_holds() {
        let scripts = shipped();
        let mut catalog = FlowCatalog::from_scripts(&scripts);
        let mut newer = catalog
            .published_script(DEFAULT_FLOW)
            .expect("v1")
            .as_ref()
            .clone();
        newer.greeting = "Hello again".into();
        catalog.insert(DEFAULT_FLOW, 2, newer);
        catalog.published.insert(DEFAULT_FLOW.into(), 2);
        let (chosen, script) = catalog
            .choose(FunnelKind::Chat, None, None)
            .expect("a flow");
        assert_eq!(chosen, FlowRef::published(DEFAULT_FLOW, 2));
        assert_eq!(script.greeting, "Hello again");
        let old = catalog
            .script(&FlowRef::published(DEFAULT_FLOW, 1))
            .expect("v1 stays");
        assert_eq!(old.greeting, scripts.flow(DEFAULT_FLOW).greeting);
        let missing = FlowRef::published(DEFAULT_FLOW, 9);
        assert_eq!(catalog.script(&missing), None);
        assert_eq!(
            catalog
                .script_or_published(&missing)
                .expect("published")
                .greeting,
            "Hello again"
        );
    }
}
