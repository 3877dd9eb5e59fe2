//! A member's task list (spec sections 3 and 5): `TaskName`, `ItemText`, `TaskItems` (the items a
//! new task starts with) and the ids a client names a task or item by. The routes and the store
//! only ever see these types, so a stored task always has a name and at least one item.

use std::fmt;

/// The longest task name, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// The longest item text, in characters.
pub const MAX_ITEM_CHARS: usize = 500;
/// The most items one task holds.
pub const MAX_ITEMS: usize = 100;
/// The most tasks one member keeps.
pub const MAX_TASKS: usize = 500;
/// Item ids are this many random characters.
const ITEM_ID_LEN: usize = 12;
/// Record keys SurrealDB generates are 20 characters; anything much longer is not one of ours.
const MAX_ID_LEN: usize = 64;

/// Why a task, or an item for it, was refused; each has a stable code and the text a person reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("Please give the task a name.")]
    NameRequired,
    #[error("Please keep the task name to 200 characters or fewer.")]
    NameTooLong,
    #[error("Please add at least one item.")]
    ItemsRequired,
    #[error("Please type the item first.")]
    ItemRequired,
    #[error("Please keep each item to 500 characters or fewer.")]
    ItemTooLong,
    #[error("A task can hold up to 100 items.")]
    TooManyItems,
}

impl TaskError {
    /// The stable code of the API's error body.
    pub fn code(self) -> &'static str {
        match self {
            TaskError::NameRequired => "name_required",
            TaskError::NameTooLong => "name_too_long",
            TaskError::ItemsRequired => "items_required",
            TaskError::ItemRequired => "item_required",
            TaskError::ItemTooLong => "item_too_long",
            TaskError::TooManyItems => "too_many_items",
        }
    }
}

/// A trimmed, non-blank task name of at most `MAX_NAME_CHARS` characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskName(String);

impl TaskName {
    pub fn parse(raw: &str) -> Result<Self, TaskError> {
        let name = raw.trim();
        if name.is_empty() {
            return Err(TaskError::NameRequired);
        }
        if name.chars().count() > MAX_NAME_CHARS {
            return Err(TaskError::NameTooLong);
        }
        Ok(Self(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A trimmed, non-blank item text of at most `MAX_ITEM_CHARS` characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemText(String);

impl ItemText {
    /// A blank text is `ItemRequired` ("Please type the item first.").
    pub fn parse(raw: &str) -> Result<Self, TaskError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(TaskError::ItemRequired);
        }
        if text.chars().count() > MAX_ITEM_CHARS {
            return Err(TaskError::ItemTooLong);
        }
        Ok(Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ItemText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The items a new task starts with: blank rows (the form always has an empty last one) are
/// dropped; at least one and at most `MAX_ITEMS` remain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskItems(Vec<ItemText>);

impl TaskItems {
    pub fn parse<S: AsRef<str>>(raw: &[S]) -> Result<Self, TaskError> {
        let items = raw
            .iter()
            .map(AsRef::as_ref)
            .filter(|text| !text.trim().is_empty())
            .map(ItemText::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if items.is_empty() {
            return Err(TaskError::ItemsRequired);
        }
        if items.len() > MAX_ITEMS {
            return Err(TaskError::TooManyItems);
        }
        Ok(Self(items))
    }

    pub fn as_slice(&self) -> &[ItemText] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn is_id_shaped(raw: &str) -> bool {
    !raw.is_empty() && raw.len() <= MAX_ID_LEN && raw.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A task id as a client sends it (the record key): ASCII letters and digits only, so it can only
/// ever name a `task` record. Anything else is simply not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskId(String);

impl TaskId {
    pub fn parse(raw: &str) -> Option<Self> {
        is_id_shaped(raw).then(|| Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An item id: short random letters and digits, unique within its task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemId(String);

impl ItemId {
    pub fn parse(raw: &str) -> Option<Self> {
        is_id_shaped(raw).then(|| Self(raw.to_owned()))
    }

    /// A fresh random id (12 characters of 62: 71 bits, no collision within a task).
    pub fn generate() -> Self {
        Self(crate::ids::alphanumeric(ITEM_ID_LEN))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed() {
        let name = TaskName::parse("  Set up the printer ").expect("valid");
        assert_eq!(name.as_str(), "Set up the printer");
    }

    #[test]
    fn a_blank_name_asks_for_one_in_plain_words() {
        for raw in ["", "   ", "\n\t"] {
            assert_eq!(
                TaskName::parse(raw),
                Err(TaskError::NameRequired),
                "{raw:?}"
            );
        }
        assert_eq!(
            TaskError::NameRequired.to_string(),
            "Please give the task a name."
        );
        assert_eq!(TaskError::NameRequired.code(), "name_required");
    }

    #[test]
    fn names_are_counted_in_characters_not_bytes() {
        assert!(TaskName::parse(&"é".repeat(MAX_NAME_CHARS)).is_ok());
        assert_eq!(
            TaskName::parse(&"a".repeat(MAX_NAME_CHARS + 1)),
            Err(TaskError::NameTooLong)
        );
    }

    #[test]
    fn an_added_item_must_not_be_blank() {
        assert_eq!(ItemText::parse("  "), Err(TaskError::ItemRequired));
        assert_eq!(
            TaskError::ItemRequired.to_string(),
            "Please type the item first."
        );
        assert_eq!(
            ItemText::parse(" Buy ink ").expect("valid").as_str(),
            "Buy ink"
        );
        assert!(ItemText::parse(&"x".repeat(MAX_ITEM_CHARS)).is_ok());
        assert_eq!(
            ItemText::parse(&"x".repeat(MAX_ITEM_CHARS + 1)),
            Err(TaskError::ItemTooLong)
        );
    }

    #[test]
    fn blank_rows_are_dropped_and_one_item_is_needed() {
        let items = TaskItems::parse(&["Buy ink", "  ", "", " Plug it in "]).expect("valid");
        let texts: Vec<&str> = items.as_slice().iter().map(ItemText::as_str).collect();
        assert_eq!(texts, ["Buy ink", "Plug it in"]);
        assert_eq!(items.len(), 2);

        assert_eq!(
            TaskItems::parse(&["", "   "]),
            Err(TaskError::ItemsRequired)
        );
        assert_eq!(TaskItems::parse::<&str>(&[]), Err(TaskError::ItemsRequired));
        assert_eq!(
            TaskError::ItemsRequired.to_string(),
            "Please add at least one item."
        );
    }

    #[test]
    fn a_task_holds_at_most_the_item_limit() {
        let full = vec!["item"; MAX_ITEMS];
        assert_eq!(TaskItems::parse(&full).map(|i| i.len()), Ok(MAX_ITEMS));
        let over = vec!["item"; MAX_ITEMS + 1];
        assert_eq!(TaskItems::parse(&over), Err(TaskError::TooManyItems));
        let long = ["x".repeat(MAX_ITEM_CHARS + 1)];
        assert_eq!(TaskItems::parse(&long), Err(TaskError::ItemTooLong));
    }

    #[test]
    fn ids_are_letters_and_digits_only() {
        assert!(TaskId::parse("k3j2h4g5f6d7s8a9q0w1").is_some());
        for raw in [
            "",
            "task:abc",
            "abc def",
            "abc'; DELETE task; --",
            "⟨abc⟩",
            "../abc",
            &"a".repeat(MAX_ID_LEN + 1),
        ] {
            assert_eq!(TaskId::parse(raw), None, "{raw:?}");
            assert_eq!(ItemId::parse(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn generated_item_ids_are_short_random_and_parse() {
        let one = ItemId::generate();
        let two = ItemId::generate();
        assert_ne!(one, two);
        assert_eq!(one.as_str().len(), ITEM_ID_LEN);
        assert_eq!(ItemId::parse(one.as_str()), Some(one));
    }
}
