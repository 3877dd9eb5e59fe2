//! Pure functions from the product spec: junk detection, title case, headlines, summary and intro
//! cleaning, the choice of a funnel's scripted flow, and the members' chat titles and greeting.

use serde::{Deserialize, Serialize};

pub mod chat;
pub mod experiments;
pub mod flows;
pub mod headline;
pub mod junk;
pub mod scripts;
pub mod summary;
pub mod text;

/// The three funnels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FunnelKind {
    /// `/chat-help` and `/email-help`.
    Chat,
    /// `/Chat-Help-2`, the refundable-fee chat funnel.
    Refundable,
    /// `/get-help` and `/funnel`, the three-step help form.
    Help,
}

impl FunnelKind {
    pub const ALL: [FunnelKind; 3] = [FunnelKind::Chat, FunnelKind::Refundable, FunnelKind::Help];

    pub fn as_str(self) -> &'static str {
        match self {
            FunnelKind::Chat => "chat",
            FunnelKind::Refundable => "refundable",
            FunnelKind::Help => "help",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "chat" => Some(FunnelKind::Chat),
            "refundable" => Some(FunnelKind::Refundable),
            "help" => Some(FunnelKind::Help),
            _ => None,
        }
    }
}
