//! The chat funnels' scripted flows (`config/funnels.toml`) and the spec's choice among them: by
//! campaign id first, then by the whole keyword or one of its words naming a flow, then (chat
//! funnel only) a flow built from the keyword, else the default flow.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::FunnelKind;

/// The flow every conversation falls back to.
pub const DEFAULT_FLOW: &str = "default";
/// The name recorded for the chat funnel's flow built from the keyword.
pub const KEYWORD_FLOW: &str = "keyword";

const PLACEHOLDERS: &[&str] = &["{assistant}", "{product}", "{keyword}"];

/// One scripted flow: the greeting and the two replies that stand in for the AI.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    pub greeting: String,
    /// Stage 0: the empathetic follow-up.
    pub follow_up: String,
    /// Stage 1: what has been tried so far.
    pub troubleshooting: String,
}

/// The final message of each chat funnel (it carries the 'Get started >>' button).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalMessages {
    pub chat: String,
    pub refundable: String,
}

/// Everything `config/funnels.toml` holds.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunnelScripts {
    /// Ad campaign id -> flow name.
    #[serde(default)]
    pub campaigns: BTreeMap<String, String>,
    pub flows: BTreeMap<String, Flow>,
    pub keyword_flow: Flow,
    /// The replies to a message that says nothing ('jjj', '??'), used instead of a flow's when a
    /// script answers one: a script must not thank the visitor for it.
    pub unclear: Unclear,
    pub final_message: FinalMessages,
}

/// The scripted replies to a junk message, by stage.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unclear {
    pub follow_up: String,
    pub troubleshooting: String,
}

/// What the texts are filled in with.
#[derive(Debug, Clone, Copy)]
pub struct ScriptContext<'a> {
    pub assistant: &'a str,
    pub product: &'a str,
    pub keyword: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptsError {
    #[error("there is no [flows.default]")]
    NoDefaultFlow,
    #[error("campaign {campaign} names the flow \"{flow}\", which does not exist")]
    UnknownCampaignFlow { campaign: String, flow: String },
    #[error("{place} uses {{keyword}}, but a flow chosen without a keyword would show it empty")]
    KeywordOutsideKeywordFlow { place: String },
    #[error("{place} has an unknown placeholder in \"{text}\"")]
    UnknownPlaceholder { place: String, text: String },
    #[error("{place} is empty")]
    Empty { place: String },
}

impl FunnelScripts {
    /// Checks what serde cannot: the default flow exists, campaigns name real flows, every text
    /// is non-empty and uses only known placeholders, and `{keyword}` appears only where a keyword
    /// is sure to exist.
    pub fn validate(&self) -> Result<(), ScriptsError> {
        if !self.flows.contains_key(DEFAULT_FLOW) {
            return Err(ScriptsError::NoDefaultFlow);
        }
        for (campaign, flow) in &self.campaigns {
            if !self.flows.contains_key(flow) {
                return Err(ScriptsError::UnknownCampaignFlow {
                    campaign: campaign.clone(),
                    flow: flow.clone(),
                });
            }
        }
        let mut texts: Vec<(String, &str, bool)> = Vec::new();
        for (name, flow) in &self.flows {
            for (field, text) in flow.texts() {
                texts.push((format!("flows.{name}.{field}"), text, false));
            }
        }
        for (field, text) in self.keyword_flow.texts() {
            texts.push((format!("keyword_flow.{field}"), text, true));
        }
        texts.push(("unclear.follow_up".into(), &self.unclear.follow_up, false));
        texts.push((
            "unclear.troubleshooting".into(),
            &self.unclear.troubleshooting,
            false,
        ));
        texts.push(("final_message.chat".into(), &self.final_message.chat, false));
        texts.push((
            "final_message.refundable".into(),
            &self.final_message.refundable,
            false,
        ));
        for (place, text, keyword_allowed) in texts {
            if text.trim().is_empty() {
                return Err(ScriptsError::Empty { place });
            }
            if !keyword_allowed && text.contains("{keyword}") {
                return Err(ScriptsError::KeywordOutsideKeywordFlow { place });
            }
            if has_unknown_placeholder(text) {
                return Err(ScriptsError::UnknownPlaceholder {
                    place,
                    text: text.to_owned(),
                });
            }
        }
        Ok(())
    }

    /// The name of the flow a new conversation follows.
    pub fn choose_flow(
        &self,
        funnel: FunnelKind,
        campaignid: Option<&str>,
        keyword: Option<&str>,
    ) -> String {
        if let Some(flow) = campaignid
            .map(str::trim)
            .and_then(|id| self.campaigns.get(id))
        {
            return flow.clone();
        }
        let keyword = keyword.map(str::trim).filter(|k| !k.is_empty());
        if let Some(keyword) = keyword {
            let keyword = keyword.to_lowercase();
            let named = |name: &str| name != DEFAULT_FLOW && self.flows.contains_key(name);
            if named(&keyword) {
                return keyword;
            }
            if let Some(word) = keyword
                .split(|c: char| !c.is_alphanumeric())
                .find(|word| named(word))
            {
                return word.to_owned();
            }
            // A keyword that names no topic ('help', 'tech support') makes no flow of its own.
            if funnel == FunnelKind::Chat && keyword_topic(&keyword).is_some() {
                return KEYWORD_FLOW.to_owned();
            }
        }
        DEFAULT_FLOW.to_owned()
    }

    /// The flow by the name `choose_flow` gave (an unknown name, say from an older
    /// configuration, falls back to the default flow).
    pub fn flow(&self, name: &str) -> &Flow {
        if name == KEYWORD_FLOW {
            return &self.keyword_flow;
        }
        self.flows
            .get(name)
            .or_else(|| self.flows.get(DEFAULT_FLOW))
            .unwrap_or(&self.keyword_flow)
    }

    pub fn final_message(&self, funnel: FunnelKind) -> &str {
        match funnel {
            FunnelKind::Refundable => &self.final_message.refundable,
            FunnelKind::Chat | FunnelKind::Help => &self.final_message.chat,
        }
    }
}

impl Flow {
    fn texts(&self) -> [(&'static str, &str); 3] {
        [
            ("greeting", &self.greeting),
            ("follow_up", &self.follow_up),
            ("troubleshooting", &self.troubleshooting),
        ]
    }
}

/// Words of an ad keyword that say what is wanted or what goes wrong rather than what it is
/// about ('printer offline help' is about a printer): taken off to make a topic that reads
/// naturally in 'people with {keyword} problems' and 'trouble with your {keyword}'.
const NOT_TOPIC: &[&str] = &[
    "a",
    "an",
    "the",
    "my",
    "your",
    "to",
    "for",
    "with",
    "on",
    "in",
    "of",
    "and",
    "or",
    "is",
    "how",
    "do",
    "i",
    "can",
    "cant",
    "can't",
    "what",
    "why",
    "won't",
    "wont",
    "not",
    "no",
    "doesn't",
    "doesnt",
    "help",
    "helps",
    "helper",
    "support",
    "assistance",
    "assist",
    "service",
    "services",
    "customer",
    "contact",
    "number",
    "phone-number",
    "fix",
    "fixing",
    "fixed",
    "repair",
    "repairs",
    "problem",
    "problems",
    "issue",
    "issues",
    "trouble",
    "troubleshooting",
    "error",
    "errors",
    "working",
    "work",
    "works",
    "broken",
    "online",
    "tech",
    "technical",
    "expert",
    "experts",
    "live",
    "chat",
    "free",
    "now",
    "today",
    "near",
    "me",
    "instant",
    "quick",
    "fast",
    "best",
    "offline",
    "slow",
    "frozen",
    "freezing",
    "stuck",
    "hacked",
    "locked",
    "login",
    "log",
    "sign",
    "signin",
    "password",
    "reset",
    "recover",
    "recovery",
    "setup",
    "set",
    "up",
    "install",
    "connect",
    "connecting",
    "printing",
    "sending",
    "receiving",
    "loading",
    "update",
    "updates",
];

/// The topic of an ad keyword, in lower case ('Printer Offline Help' -> 'printer', 'outlook
/// email' -> 'outlook email'); `None` when nothing is left ('tech support', 'help').
pub fn keyword_topic(keyword: &str) -> Option<String> {
    let words: Vec<String> = keyword
        .to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .filter(|word| !word.is_empty() && !NOT_TOPIC.contains(word))
        .map(str::to_owned)
        .collect();
    // More than three words left is a question, not a topic.
    (!words.is_empty() && words.len() <= 3).then(|| words.join(" "))
}

/// Fills in a script's placeholders. The keyword is its topic (`keyword_topic`); without one
/// (a flow that has none should not use it) it reads as "computer".
pub fn render(template: &str, context: &ScriptContext<'_>) -> String {
    let topic = context.keyword.and_then(keyword_topic);
    template
        .replace("{assistant}", context.assistant)
        .replace("{product}", context.product)
        .replace("{keyword}", topic.as_deref().unwrap_or("computer"))
}

fn has_unknown_placeholder(text: &str) -> bool {
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let tail = &rest[start..];
        match PLACEHOLDERS.iter().find(|p| tail.starts_with(**p)) {
            Some(placeholder) => rest = &tail[placeholder.len()..],
            None => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> FunnelScripts {
        let text = include_str!("../../../config/funnels.toml");
        let scripts: FunnelScripts = toml::from_str(text).expect("config/funnels.toml parses");
        scripts.validate().expect("config/funnels.toml is valid");
        scripts
    }

    #[test]
    fn the_shipped_scripts_are_valid_and_know_two_campaigns() {
        let scripts = shipped();
        assert_eq!(scripts.campaigns.len(), 2);
        assert!(scripts.flows.contains_key("email"));
        assert!(scripts.flows.contains_key("computer"));
    }

    #[test]
    fn a_campaign_id_wins_over_the_keyword() {
        let scripts = shipped();
        let (campaign, flow) = scripts.campaigns.iter().next().expect("a campaign");
        assert_eq!(
            scripts.choose_flow(FunnelKind::Refundable, Some(campaign), Some("computer")),
            *flow
        );
    }

    #[test]
    fn a_keyword_or_one_of_its_words_names_a_flow() {
        let scripts = shipped();
        for funnel in [FunnelKind::Chat, FunnelKind::Refundable] {
            assert_eq!(scripts.choose_flow(funnel, None, Some("Email")), "email");
            assert_eq!(
                scripts.choose_flow(funnel, None, Some("outlook email")),
                "email"
            );
            assert_eq!(
                scripts.choose_flow(funnel, Some("999"), Some("slow computer")),
                "computer"
            );
        }
    }

    #[test]
    fn the_chat_funnel_builds_a_flow_from_any_other_keyword() {
        let scripts = shipped();
        assert_eq!(
            scripts.choose_flow(FunnelKind::Chat, None, Some("printer offline")),
            KEYWORD_FLOW
        );
        assert_eq!(
            scripts.choose_flow(FunnelKind::Refundable, None, Some("printer offline")),
            DEFAULT_FLOW
        );
        assert_eq!(
            scripts.choose_flow(FunnelKind::Chat, None, Some("   ")),
            DEFAULT_FLOW
        );
        assert_eq!(
            scripts.choose_flow(FunnelKind::Chat, None, None),
            DEFAULT_FLOW
        );
        assert_eq!(
            scripts.choose_flow(FunnelKind::Chat, None, Some("default")),
            KEYWORD_FLOW,
            "the default flow is not chosen by name"
        );
    }

    #[test]
    fn render_fills_the_placeholders() {
        let scripts = shipped();
        let context = ScriptContext {
            assistant: "Emma",
            product: "HelpNow",
            keyword: Some("printer offline"),
        };
        let greeting = render(&scripts.flow(KEYWORD_FLOW).greeting, &context);
        assert!(greeting.contains("Emma"), "{greeting}");
        assert!(
            greeting.contains("people with printer problems"),
            "{greeting}"
        );
        assert!(!greeting.contains('{'), "{greeting}");
    }

    #[test]
    fn a_keyword_becomes_its_topic() {
        for (keyword, topic) in [
            ("printer", Some("printer")),
            ("Printer Offline Help", Some("printer")),
            ("outlook email", Some("outlook email")),
            ("how to fix my wifi", Some("wifi")),
            ("gmail login problems", Some("gmail")),
            ("facebook hacked", Some("facebook")),
            ("iPhone won't connect", Some("iphone")),
            ("computer slow", Some("computer")),
            ("tech support", None),
            ("help", None),
            ("why does my laptop keep turning off by itself", None),
        ] {
            assert_eq!(keyword_topic(keyword).as_deref(), topic, "{keyword}");
        }
        let scripts = shipped();
        assert_eq!(
            scripts.choose_flow(FunnelKind::Chat, None, Some("tech support")),
            DEFAULT_FLOW,
            "a keyword without a topic makes no flow"
        );
    }

    /// Every text of every flow, rendered as a visitor reads it, for the shipped flows and for
    /// keywords as ads carry them: no placeholder left, no doubled words or spaces, and the
    /// keyword's topic in grammatical places.
    #[test]
    fn every_flow_reads_naturally_for_every_keyword() {
        let scripts = shipped();
        let keywords = [
            None,
            Some("printer"),
            Some("Printer Offline Help"),
            Some("outlook email"),
            Some("wifi not working"),
            Some("gmail login"),
            Some("facebook"),
            Some("email"),
            Some("computer help"),
            Some("tech support"),
        ];
        for funnel in [FunnelKind::Chat, FunnelKind::Refundable] {
            for keyword in keywords {
                let name = scripts.choose_flow(funnel, None, keyword);
                let flow = scripts.flow(&name);
                let context = ScriptContext {
                    assistant: "Emma",
                    product: "HelpNow",
                    keyword,
                };
                let mut texts: Vec<String> = flow
                    .texts()
                    .iter()
                    .map(|(_, text)| render(text, &context))
                    .collect();
                texts.push(render(&scripts.unclear.follow_up, &context));
                texts.push(render(&scripts.unclear.troubleshooting, &context));
                texts.push(render(scripts.final_message(funnel), &context));
                for text in &texts {
                    let lower = text.to_lowercase();
                    assert!(!text.contains('{') && !text.contains('}'), "{text}");
                    assert!(!text.contains("  "), "{text}");
                    let words: Vec<&str> = lower.split_whitespace().collect();
                    assert!(
                        words.windows(2).all(|pair| pair[0] != pair[1]),
                        "a doubled word: {text}"
                    );
                    for bad in [
                        "people with printer every",
                        "with help",
                        "problems problems",
                        "help problems",
                        "trouble with your tech",
                        "your email help",
                    ] {
                        assert!(!lower.contains(bad), "{bad:?} in {text}");
                    }
                }
                if name == KEYWORD_FLOW {
                    let topic = keyword.and_then(keyword_topic).expect("a topic");
                    assert!(
                        texts[0].contains(&format!("people with {topic} problems")),
                        "{}",
                        texts[0]
                    );
                    assert!(
                        texts[1].contains(&format!("trouble with your {topic}")),
                        "{}",
                        texts[1]
                    );
                }
            }
        }
        // A message that says nothing is not thanked.
        for text in [&scripts.unclear.follow_up, &scripts.unclear.troubleshooting] {
            let lower = text.to_lowercase();
            assert!(
                !lower.contains("thank") && !lower.contains("helps"),
                "{text}"
            );
        }
    }

    #[test]
    fn the_final_messages_name_the_button_and_the_price() {
        let scripts = shipped();
        for funnel in [FunnelKind::Chat, FunnelKind::Refundable] {
            let text = scripts.final_message(funnel);
            assert!(text.contains("Get started >>"), "{text}");
            assert!(text.contains("$1"), "{text}");
        }
        assert!(
            scripts
                .final_message(FunnelKind::Refundable)
                .contains("refundable")
        );
    }

    #[test]
    fn validation_names_what_is_wrong() {
        let mut scripts = shipped();
        scripts.campaigns.insert("1".into(), "printers".into());
        assert!(matches!(
            scripts.validate(),
            Err(ScriptsError::UnknownCampaignFlow { .. })
        ));

        let mut scripts = shipped();
        if let Some(flow) = scripts.flows.get_mut("email") {
            flow.greeting = "Hi {name}".into();
        }
        assert!(matches!(
            scripts.validate(),
            Err(ScriptsError::UnknownPlaceholder { .. })
        ));

        let mut scripts = shipped();
        if let Some(flow) = scripts.flows.get_mut("default") {
            flow.follow_up = "About {keyword}".into();
        }
        assert!(matches!(
            scripts.validate(),
            Err(ScriptsError::KeywordOutsideKeywordFlow { .. })
        ));

        let mut scripts = shipped();
        scripts.flows.remove(DEFAULT_FLOW);
        assert_eq!(scripts.validate(), Err(ScriptsError::NoDefaultFlow));
    }
}
