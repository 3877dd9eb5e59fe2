//! What the members' chat asks the AI: the chat itself, the step-by-step solution for the issue a
//! member came with from a funnel, and help with a task.

use super::FunnelBrief;
use super::ports::TaskBrief;
use crate::ports::AiMessage;

/// How every answer should read for someone who is not technical.
const PLAIN_WORDS: &str = "Use plain, friendly words for someone who is not technical; explain \
any technical term you cannot avoid. Where there is something to do, give clear numbered steps, \
one action per step, and say what they should see after it. Use Markdown for lists, bold and \
links. Never ask for passwords, codes or card numbers, and warn them if anyone else does.";

/// The member chat's system prompt.
pub fn chat_system_prompt(assistant: &str, product: &str) -> String {
    format!(
        "You are {assistant}, the friendly tech expert of {product}. You help people with \
computer, phone, email, internet and online-account questions at any hour. {PLAIN_WORDS} Keep \
answers short unless they ask for detail, and end by asking whether it worked or if they need \
more help."
    )
}

/// The request for the solution after the funnel greeting: the member said yes (or a short
/// reply), so the assistant walks them through the issue they came with.
pub fn funnel_solution_messages(
    assistant: &str,
    product: &str,
    funnel: &FunnelBrief,
    reply: &str,
) -> Vec<AiMessage> {
    let mut request = format!("I need help with: {}", funnel.issue);
    if let Some(raw) = funnel
        .raw_input
        .as_deref()
        .filter(|raw| *raw != funnel.issue)
    {
        request.push_str(&format!("\nIn my own words: {raw}"));
    }
    for said in &funnel.user_messages {
        request.push_str(&format!("\nI also said: {said}"));
    }
    request.push_str(&format!("\nMy reply just now: {reply}"));
    vec![
        AiMessage::system(format!(
            "{} They came to us about the issue below and just asked you to walk them through \
fixing it. Give a complete step-by-step solution: a one-sentence summary of the likely cause, \
then numbered steps from the simplest fix to the more involved ones.",
            chat_system_prompt(assistant, product)
        )),
        AiMessage::user(request),
    ]
}

/// What the member asks when they click 'Get AI assistance' on a task (shown as their message).
pub fn task_request(task: &TaskBrief) -> String {
    let mut text = format!("Please help me with my task \"{}\".", task.name);
    if !task.items.is_empty() {
        text.push_str("\n\nItems:");
        for item in &task.items {
            let done = if item.completed { " (done)" } else { "" };
            text.push_str(&format!("\n- {}{done}", item.text));
        }
    }
    text
}

/// The task-help request: a structured reply that goes through the open items.
pub fn task_help_messages(assistant: &str, product: &str, request: &str) -> Vec<AiMessage> {
    vec![
        AiMessage::system(format!(
            "{} The member asks for help with a task from their to-do list. Reply with a short \
structured plan: a heading per open item with numbered steps under it, skip the items marked \
done, and finish with one tip that saves time.",
            chat_system_prompt(assistant, product)
        )),
        AiMessage::user(request.to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::member::ports::TaskItemBrief;

    #[test]
    fn the_solution_request_carries_the_funnel_issue_and_the_reply() {
        let funnel = FunnelBrief {
            issue: "Outlook keeps asking for my password".into(),
            raw_input: Some("outlook password popup every 5 minutes".into()),
            user_messages: vec!["I tried restarting".into()],
        };
        let messages = funnel_solution_messages("Emma", "HelpNow", &funnel, "yes please");
        let request = &messages[1].content;
        assert!(
            request.contains("Outlook keeps asking for my password"),
            "{request}"
        );
        assert!(request.contains("every 5 minutes"), "{request}");
        assert!(request.contains("I tried restarting"), "{request}");
        assert!(request.ends_with("yes please"), "{request}");
        assert!(messages[0].content.contains("step-by-step"));
    }

    #[test]
    fn the_task_request_lists_items_and_marks_the_done_ones() {
        let task = TaskBrief {
            name: "Set up new phone".into(),
            items: vec![
                TaskItemBrief {
                    text: "Copy contacts".into(),
                    completed: true,
                },
                TaskItemBrief {
                    text: "Install WhatsApp".into(),
                    completed: false,
                },
            ],
        };
        assert_eq!(
            task_request(&task),
            "Please help me with my task \"Set up new phone\".\n\nItems:\n- Copy contacts (done)\n- Install WhatsApp"
        );
    }
}
