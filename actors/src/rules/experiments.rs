//! Experiments (issue 48): a funnel's visitors, or some campaigns' or keywords', split between
//! two to four arms, each a published flow version and/or an offer (the funnel its visitors
//! meet). Assignment needs no lookup: a hash of the experiment's id and the visitor's id picks
//! the arm, so every process puts a visitor in the same arm, every time they come back.
//!
//! Only what a process needs to assign and serve lives here; the goal, the guardrails, the
//! stopping rule and the statistics are the server's (`helpnow::experiments`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::FunnelKind;

/// The fewest and most arms an experiment has.
pub const MIN_ARMS: usize = 2;
pub const MAX_ARMS: usize = 4;
/// An arm's weight: a whole number from 1 to this.
pub const MAX_WEIGHT: u32 = 100;
/// The arms' keys, in order: the first is the control.
pub const ARM_KEYS: [&str; MAX_ARMS] = ["a", "b", "c", "d"];

/// Which visitors an experiment takes: those who land on `funnel`'s page and, when any are
/// given, came from one of `campaigns` or with a keyword that holds one of `keywords` (its words
/// together, as keyword routes match). None given: every visitor of the funnel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scope {
    pub funnel: FunnelKind,
    #[serde(default)]
    pub campaigns: Vec<String>,
    #[serde(default)]
    pub keywords: Vec<String>,
}

impl Scope {
    /// Whether a visitor who came from `campaignid` with `keyword` is one of the scope's
    /// (whatever funnel they are in).
    pub fn takes(&self, campaignid: Option<&str>, keyword: Option<&str>) -> bool {
        if self.campaigns.is_empty() && self.keywords.is_empty() {
            return true;
        }
        let campaign = campaignid.map(str::trim).filter(|id| !id.is_empty());
        if campaign.is_some_and(|id| self.campaigns.iter().any(|c| c == id)) {
            return true;
        }
        let Some(keyword) = keyword.map(str::trim).filter(|k| !k.is_empty()) else {
            return false;
        };
        let words = super::text::words_of(keyword);
        self.keywords
            .iter()
            .any(|phrase| super::text::holds_phrase(&words, phrase).is_some())
    }
}

/// A published flow version an arm's conversations follow.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmFlow {
    pub name: String,
    pub version: u32,
}

/// One arm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Arm {
    /// `a` (the control), `b`, `c`, `d`: the server sets it by the arm's place.
    #[serde(default)]
    pub key: String,
    /// The operator's name for it ("Shorter greeting").
    pub name: String,
    /// The flow version its conversations follow; none: the routing's choice, as without the
    /// experiment.
    #[serde(default)]
    pub flow: Option<ArmFlow>,
    /// The funnel its visitors meet; none: the scope's funnel.
    #[serde(default)]
    pub offer: Option<FunnelKind>,
    /// Its share of the visitors is its weight over the sum of the weights.
    pub weight: u32,
}

/// An experiment's status. Only a running experiment takes visitors in; a paused one takes no
/// new ones (those in keep their arm in their conversation), a stopped one is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Draft,
    Running,
    Paused,
    Stopped,
    Archived,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Stopped => "stopped",
            Status::Archived => "archived",
        }
    }
}

/// What a process needs of a running experiment to assign its visitors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    pub id: String,
    pub scope: Scope,
    pub arms: Vec<Arm>,
}

/// A visitor in a funnel, as an experiment takes them: the funnel (the page they opened, or the
/// chat they joined), the ad's campaign and keyword they came from, and their id.
#[derive(Debug, Clone, Copy)]
pub struct Visit<'a> {
    pub funnel: FunnelKind,
    pub campaignid: Option<&'a str>,
    pub keyword: Option<&'a str>,
    pub visitor: &'a str,
}

/// A visitor's arm of an experiment, as a conversation, a checkout and an event keep it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ArmRef {
    pub experiment: String,
    pub arm: String,
}

/// A number from 0 to 2^64 - 1 that follows from the experiment and the visitor alone: the first
/// eight bytes of SHA-256 over `experiment:visitor`. Uniform, so the arms' shares follow their
/// weights; independent between experiments, so one experiment's arms do not line up with
/// another's.
pub fn bucket(experiment: &str, visitor: &str) -> u64 {
    let digest = Sha256::digest(format!("{experiment}:{visitor}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

impl Split {
    /// The visitor's arm: the hash's place among the arms' weights.
    pub fn arm_of(&self, visitor: &str) -> Option<&Arm> {
        let total: u64 = self.arms.iter().map(|arm| u64::from(arm.weight)).sum();
        if total == 0 {
            return None;
        }
        let mut point = bucket(&self.id, visitor) % total;
        for arm in &self.arms {
            let weight = u64::from(arm.weight);
            if point < weight {
                return Some(arm);
            }
            point -= weight;
        }
        None
    }

    /// The funnel an arm's visitors meet.
    pub fn funnel_of(&self, arm: &Arm) -> FunnelKind {
        arm.offer.unwrap_or(self.scope.funnel)
    }

    /// The arm of a visitor who landed on the visit's funnel's page, if the experiment takes
    /// them.
    pub fn landing(&self, visit: &Visit<'_>) -> Option<&Arm> {
        (self.scope.funnel == visit.funnel && self.scope.takes(visit.campaignid, visit.keyword))
            .then(|| self.arm_of(visit.visitor))
            .flatten()
    }

    /// The arm of a visitor in the visit's funnel (where their page or their arm's offer took
    /// them), if the experiment has them there.
    pub fn member(&self, visit: &Visit<'_>) -> Option<&Arm> {
        if !self.scope.takes(visit.campaignid, visit.keyword) {
            return None;
        }
        self.arm_of(visit.visitor)
            .filter(|arm| self.funnel_of(arm) == visit.funnel)
    }

    pub fn arm_ref(&self, arm: &Arm) -> ArmRef {
        ArmRef {
            experiment: self.id.clone(),
            arm: arm.key.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(weights: &[u32]) -> Split {
        Split {
            id: "x1".into(),
            scope: Scope {
                funnel: FunnelKind::Chat,
                campaigns: vec!["111".into()],
                keywords: vec!["printer help".into()],
            },
            arms: weights
                .iter()
                .zip(ARM_KEYS)
                .map(|(weight, key)| Arm {
                    key: key.into(),
                    name: key.to_uppercase(),
                    flow: None,
                    offer: (key == "b").then_some(FunnelKind::Refundable),
                    weight: *weight,
                })
                .collect(),
        }
    }

    #[test]
    fn a_visitor_gets_the_same_arm_every_time_and_arms_follow_their_weights() {
        let split = split(&[1, 3]);
        let mut counts = [0u32; 2];
        for n in 0..10_000 {
            let visitor = format!("visitor-{n:08}-abcdef");
            let arm = split.arm_of(&visitor).expect("an arm");
            assert_eq!(split.arm_of(&visitor), Some(arm), "the same arm again");
            counts[usize::from(arm.key == "b")] += 1;
        }
        // 2,500 expected; 3 standard deviations of a binomial(10,000, 1/4) are 130.
        assert!((2_370..=2_630).contains(&counts[0]), "{counts:?}");
    }

    #[test]
    fn the_scope_takes_its_campaigns_and_keywords_and_an_offer_moves_the_arm() {
        let split = split(&[1, 1]);
        assert!(split.scope.takes(Some(" 111 "), None));
        assert!(split.scope.takes(None, Some("HP printer help now")));
        assert!(!split.scope.takes(None, Some("printer")));
        assert!(!split.scope.takes(Some("222"), None));
        let visitor = (0..)
            .map(|n| format!("visitor-{n:08}-abcdef"))
            .find(|v| split.arm_of(v).is_some_and(|arm| arm.key == "b"))
            .expect("a visitor in b");
        let visit = |funnel| Visit {
            funnel,
            campaignid: Some("111"),
            keyword: None,
            visitor: &visitor,
        };
        let landing = split.landing(&visit(FunnelKind::Chat));
        assert_eq!(landing.map(|arm| arm.key.as_str()), Some("b"));
        assert!(split.landing(&visit(FunnelKind::Refundable)).is_none());
        assert!(split.member(&visit(FunnelKind::Chat)).is_none());
        assert_eq!(
            split
                .member(&visit(FunnelKind::Refundable))
                .map(|arm| arm.key.as_str()),
            Some("b")
        );
    }
}
