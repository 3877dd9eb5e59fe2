//! The actors' analytics port: their events go to the analytics table with the batch's other
//! writes (`store::batch`), under the visitor (funnels) or the member's account (members). A name
//! outside the spec's list is refused and logged; a failure is logged, never shown to anyone.

use helpnow_actors::ports::Analytics;

use crate::domain::analytics::EventName;
use crate::domain::journey::{self, Step};
use crate::store::analytics::NewAnalyticsEvent;
use crate::store::batch::{Batcher, Statement};
use crate::store::journeys::{JourneyRecorder, JourneyStep};

/// Whom the events of an actor kind are about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subject {
    /// A funnel's visitor (the visitor id).
    Visitor,
    /// A member (the user id).
    Member,
}

pub struct BatchedAnalytics {
    batcher: Batcher,
    subject: Subject,
    /// Where a funnel's steps go for the dashboard (none for members).
    journeys: Option<JourneyRecorder>,
}

impl BatchedAnalytics {
    /// The funnel actors' events, recorded with the visitor.
    pub fn visitors(batcher: Batcher, journeys: JourneyRecorder) -> Self {
        Self {
            batcher,
            subject: Subject::Visitor,
            journeys: Some(journeys),
        }
    }

    /// The member actors' events, recorded under the member's account.
    pub fn members(batcher: Batcher) -> Self {
        Self {
            batcher,
            subject: Subject::Member,
            journeys: None,
        }
    }
}

impl Analytics for BatchedAnalytics {
    fn record(&self, event: &'static str, subject: &str, properties: serde_json::Value) {
        let Ok(name) = EventName::parse(event) else {
            tracing::warn!(event, "an actor named an unknown analytics event");
            return;
        };
        // The conversation's experiment arm, which a journey it begins keeps (issue 48).
        let arm = match (properties.get("experiment"), properties.get("arm")) {
            (Some(serde_json::Value::String(experiment)), Some(serde_json::Value::String(arm))) => {
                Some(helpnow_actors::rules::experiments::ArmRef {
                    experiment: experiment.clone(),
                    arm: arm.clone(),
                })
            }
            _ => None,
        };
        let statement = match self.subject {
            Subject::Visitor => Statement::Analytics(NewAnalyticsEvent {
                name: name.as_str().to_owned(),
                // The conversation's attribution is the visitor's first touch as it began: given
                // here, the busy funnel path spares the database looking it up per event.
                first_touch: Some(journey::campaign(|field| {
                    properties.get(field).and_then(serde_json::Value::as_str)
                })),
                properties,
                visitor: Some(subject.to_owned()),
                path: None,
                user: None,
            }),
            Subject::Member => Statement::MemberEvent {
                name: name.as_str().to_owned(),
                user: subject.to_owned(),
                properties,
            },
        };
        // A funnel's step also counts on the visitor's journey (the dashboard's figures).
        if let (Some(journeys), Subject::Visitor) = (&self.journeys, self.subject)
            && let Some((funnel, step)) = Step::of_funnel_event(name.as_str())
        {
            journeys.record(JourneyStep::new(subject, funnel, step).arm(arm.as_ref()));
        }
        let batcher = self.batcher.clone();
        tokio::spawn(async move {
            if let Err(error) = batcher.submit(statement).await {
                tracing::warn!(%error, event = %name, "an analytics event could not be stored");
            }
        });
    }
}
