//! What the chat funnels ask the AI. Before the scripted final step the assistant only listens
//! and asks: the prompts forbid any sales language, which belongs to the final message alone.

use super::model::{Conversation, Speaker};
use crate::ports::AiMessage;

/// Said in every funnel prompt.
const NO_SALES: &str = "Do not offer a solution yet. Never mention prices, money, trials, \
subscriptions, payments, plans, offers, discounts, upgrades, experts for hire, or anything that \
sounds like sales or marketing. Plain, warm words for someone who is not technical; no lists, no \
links, no emoji. At most two short sentences.";

/// The system prompt for the reply at `stage` (0: empathy and one question; 1: what was tried).
pub fn follow_up_system_prompt(
    stage: u8,
    assistant: &str,
    product: &str,
    keyword: Option<&str>,
) -> String {
    let topic = keyword
        .map(|keyword| format!(" They came looking for help with \"{keyword}\"."))
        .unwrap_or_default();
    let task = if stage == 0 {
        "Reply to their first message: first show real empathy for their situation, then ask one \
simple question that helps you understand the problem better."
    } else {
        "They have answered your question. Thank them briefly, then ask what troubleshooting \
they have already tried to fix it (for example restarting, checking settings or resetting a \
password)."
    };
    format!(
        "You are {assistant}, a friendly personal chat assistant at {product}, chatting with a \
person who has a computer, phone or online problem.{topic} {task} {NO_SALES}"
    )
}

/// The chat-completion messages for the reply at the conversation's current stage: the system
/// prompt, then the conversation so far (the greeting included, so the AI knows what it said).
pub fn follow_up_messages(
    conversation: &Conversation,
    assistant: &str,
    product: &str,
) -> Vec<AiMessage> {
    let mut messages = vec![AiMessage::system(follow_up_system_prompt(
        conversation.stage,
        assistant,
        product,
        conversation.attribution.keyword.as_deref(),
    ))];
    messages.extend(conversation.messages.iter().map(|m| match m.role {
        Speaker::User => AiMessage::user(m.text.clone()),
        Speaker::Assistant => AiMessage::assistant(m.text.clone()),
    }));
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_stages_forbid_sales_language_and_name_the_assistant() {
        for stage in [0, 1] {
            let prompt = follow_up_system_prompt(stage, "Emma", "HelpNow", Some("outlook email"));
            assert!(prompt.contains("Never mention prices"), "{prompt}");
            assert!(prompt.contains("Emma"), "{prompt}");
            assert!(prompt.contains("outlook email"), "{prompt}");
        }
        assert!(follow_up_system_prompt(0, "Emma", "HelpNow", None).contains("empathy"));
        assert!(follow_up_system_prompt(1, "Emma", "HelpNow", None).contains("troubleshooting"));
    }
}
