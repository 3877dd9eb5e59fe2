//! The drop-off's counts (issue 47): the steps funnel conversations reach, by flow version,
//! counted in memory and added to the store's roll-ups (`store::flow_tally`) by a task.
//!
//! A funnel actor's report ([`FlowTally::reached`]) only locks a mutex and adds one to a map of
//! the counts since the last write: no store call, no allocation but the map's entry for a
//! cohort not seen since. About every second ([`WRITE_EVERY`]) a task takes the map and adds it
//! to this process's rows in one transaction (its writer id, chosen here, ends their keys, so no
//! other process writes them and nothing conflicts); [`FlowTallies::flush`] does the same at once
//! (tests), [`FlowTallies::stop`] last thing at a graceful stop. A write that fails puts its
//! counts back for the next one. Counts not written when the process dies (`kill -9`) are lost:
//! at most a second's.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::NaiveDate;
use helpnow_actors::funnel::ports::{FlowStep, FlowTally, StepReached};
use helpnow_actors::rules::FunnelKind;

use crate::store::Db;
use crate::store::ad_costs::keyword_key;
use crate::store::flow_tally::{self, Cohort, Counts, WAIT_BUCKETS, wait_bucket};
use crate::sync::lock;

/// How often the counts are written.
pub const WRITE_EVERY: Duration = Duration::from_secs(1);

/// A cohort as the actors report it (the keyword as the ad carried it: matched at the write).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    day: NaiveDate,
    funnel: FunnelKind,
    flow: String,
    version: u32,
    campaign: Option<String>,
    keyword: Option<String>,
}

/// The place of a counted step in a row's `n` (the order of `FlowStep`).
pub fn counted_index(step: FlowStep) -> usize {
    match step {
        FlowStep::Joined => 0,
        FlowStep::FirstMessage => 1,
        FlowStep::FirstReply => 2,
        FlowStep::SecondMessage => 3,
        FlowStep::SecondReply => 4,
        FlowStep::ThirdMessage => 5,
        FlowStep::FinalMessage => 6,
        FlowStep::CheckoutButton => 7,
        FlowStep::CheckoutAuto => 8,
    }
}

/// The step whose wait a step's `after` is (the one before it), as its place among the wait
/// steps: the final message's for either checkout; none for joining.
pub fn wait_index(step: FlowStep) -> Option<usize> {
    match step {
        FlowStep::Joined => None,
        FlowStep::CheckoutButton | FlowStep::CheckoutAuto => Some(6),
        other => Some(counted_index(other) - 1),
    }
}

/// Counts the steps funnel conversations reach and writes them in batches.
pub struct FlowTallies {
    db: Db,
    /// This process's writer id: the last part of its rows' keys.
    writer: String,
    counts: Mutex<HashMap<Key, Counts>>,
    /// One write at a time (the task's or a flush): two would write the same rows at once.
    writing: tokio::sync::Mutex<()>,
    stopping: tokio::sync::Notify,
}

impl FlowTallies {
    /// Starts the task that writes the counts. It ends when the tallies are stopped or dropped.
    pub fn start(db: Db) -> Arc<Self> {
        let tallies = Arc::new(Self {
            db,
            writer: crate::ids::alphanumeric(12),
            counts: Mutex::default(),
            writing: tokio::sync::Mutex::new(()),
            stopping: tokio::sync::Notify::new(),
        });
        let weak = Arc::downgrade(&tallies);
        tokio::spawn(async move {
            loop {
                let Some(tallies) = weak.upgrade() else {
                    return;
                };
                tokio::select! {
                    () = tokio::time::sleep(WRITE_EVERY) => {}
                    () = tallies.stopping.notified() => return,
                }
                let started = tokio::time::Instant::now();
                tallies.flush().await;
                drop(tallies);
                // A slow store gets as long again to rest: writing takes at most half the time.
                tokio::time::sleep(started.elapsed()).await;
            }
        });
        tallies
    }

    /// Writes every count still in memory (a graceful stop, tests).
    pub async fn flush(&self) {
        let _writing = self.writing.lock().await;
        let taken = std::mem::take(&mut *lock(&self.counts));
        if taken.is_empty() {
            return;
        }
        if let Err(error) = flow_tally::add(&self.db, &self.writer, &cohorts(&taken)).await {
            tracing::warn!(%error, cohorts = taken.len(), "the drop-off counts could not be written; they are tried again");
            let mut counts = lock(&self.counts);
            for (key, add) in taken {
                counts.entry(key).or_default().add(&add);
            }
        }
    }

    /// Ends the writing task and writes what is left: the last thing before the store closes.
    /// Steps reported after it are not written.
    pub async fn stop(&self) {
        self.stopping.notify_one();
        self.flush().await;
    }
}

/// The counts by the cohorts the store keeps: the keyword as the dashboard matches it (trimmed,
/// lower case), so 'Printer ' and 'printer' add up.
fn cohorts(counts: &HashMap<Key, Counts>) -> BTreeMap<Cohort, Counts> {
    let mut cohorts: BTreeMap<Cohort, Counts> = BTreeMap::new();
    for (key, add) in counts {
        let cohort = Cohort {
            day: key.day.format("%Y-%m-%d").to_string(),
            funnel: key.funnel.as_str().to_owned(),
            flow: key.flow.clone(),
            version: key.version,
            campaign: key.campaign.clone().unwrap_or_default(),
            keyword: key.keyword.as_deref().map(keyword_key).unwrap_or_default(),
        };
        cohorts.entry(cohort).or_default().add(add);
    }
    cohorts
}

impl FlowTally for FlowTallies {
    fn reached(&self, step: StepReached) {
        let index = counted_index(step.step);
        let wait = wait_index(step.step).zip(step.after).map(|(at, after)| {
            let ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
            at * WAIT_BUCKETS + wait_bucket(ms)
        });
        let key = Key {
            day: step.day,
            funnel: step.funnel,
            flow: step.flow,
            version: step.version,
            campaign: step.campaignid,
            keyword: step.keyword,
        };
        let mut counts = lock(&self.counts);
        let counts = counts.entry(key).or_default();
        counts.n[index] += 1;
        if let Some(cell) = wait {
            counts.w[cell] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::journey::DayRange;
    use crate::store::flow_tally::{Scope, tallies};
    use crate::store::migrate::migrated_memory_db;

    fn step(
        conversation: &str,
        step: FlowStep,
        keyword: Option<&str>,
        after_ms: Option<u64>,
    ) -> StepReached {
        StepReached {
            conversation_id: conversation.to_owned(),
            day: NaiveDate::from_ymd_opt(2026, 11, 2).expect("a day"),
            funnel: FunnelKind::Chat,
            flow: "email".to_owned(),
            version: 3,
            campaignid: Some("c1".to_owned()),
            keyword: keyword.map(str::to_owned),
            step,
            after: after_ms.map(Duration::from_millis),
        }
    }

    #[test]
    fn each_step_has_its_place_and_its_wait_is_the_step_before_s() {
        let steps = [
            FlowStep::Joined,
            FlowStep::FirstMessage,
            FlowStep::FirstReply,
            FlowStep::SecondMessage,
            FlowStep::SecondReply,
            FlowStep::ThirdMessage,
            FlowStep::FinalMessage,
            FlowStep::CheckoutButton,
            FlowStep::CheckoutAuto,
        ];
        let places: Vec<usize> = steps.into_iter().map(counted_index).collect();
        assert_eq!(places, (0..flow_tally::COUNTED_STEPS).collect::<Vec<_>>());
        let waits: Vec<Option<usize>> = steps.into_iter().map(wait_index).collect();
        assert_eq!(
            waits,
            [
                None,
                Some(0),
                Some(1),
                Some(2),
                Some(3),
                Some(4),
                Some(5),
                Some(6),
                Some(6)
            ]
        );
    }

    #[tokio::test]
    async fn reached_steps_are_written_on_a_flush_by_the_keyword_as_matched_and_once() {
        let db = migrated_memory_db().await;
        let tallies = FlowTallies::start(db.clone());
        tallies.reached(step("a", FlowStep::Joined, Some("Printer "), None));
        tallies.reached(step("b", FlowStep::Joined, Some("printer"), None));
        tallies.reached(step(
            "a",
            FlowStep::FirstMessage,
            Some("Printer "),
            Some(1_200),
        ));
        tallies.reached(step(
            "a",
            FlowStep::CheckoutAuto,
            Some("Printer "),
            Some(15_100),
        ));
        tallies.reached(step("c", FlowStep::Joined, None, None));
        tallies.flush().await;
        tallies.flush().await;

        let day = DayRange::parse("2026-11-02", "2026-11-02").expect("a day");
        let rows = tallies_of(&db, &day, Scope::All).await;
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].n, [3, 1, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(rows[0].w[wait_bucket(1_200)], 1);
        assert_eq!(rows[0].w[6 * WAIT_BUCKETS + wait_bucket(15_100)], 1);
        assert_eq!((rows[0].flow.as_str(), rows[0].version), ("email", 3));
        let printer = tallies_of(&db, &day, Scope::Keyword("printer")).await;
        assert_eq!(printer.len(), 1, "{printer:?}");
        assert_eq!(printer[0].n[0], 2);
        assert_eq!(
            tallies_of(&db, &day, Scope::Campaign("c1")).await[0].n[0],
            3
        );

        // The task writes by itself within a second or two.
        tallies.reached(step("d", FlowStep::Joined, None, None));
        let mut joined = 0;
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            joined = tallies_of(&db, &day, Scope::All).await[0].n[0];
            if joined == 4 {
                break;
            }
        }
        assert_eq!(joined, 4);
        tallies.stop().await;
    }

    async fn tallies_of(db: &Db, range: &DayRange, scope: Scope<'_>) -> Vec<flow_tally::TallyRow> {
        tallies(db, range, scope).await.expect("read")
    }
}
