//! Bugs put in on purpose, to show that the fault run's checker catches each kind of violation
//! (docs/reliability.md, "The checker is tested"). They exist only in a build with the
//! `fault-mutations` feature, which `scripts/faults --mutation NAME` makes; there the environment
//! variable `HELPNOW_MUTATE` names those switched on (`name[,name]`). In every other build
//! [`on`] is `false` at compile time and the code behind it is gone.
//!
//! The names, each a one-line `if` at the place it breaks:
//! - `double_publish`: each pipeline of events between processes is published twice, as one sent
//!   again after Redis answered late is, and the receivers act on an event whose number they
//!   heard already instead of dropping it (`src/cluster.rs`, `publish_in_order` and `deliver`):
//!   every event arrives twice, so a relayed funnel tab shows each message twice, the bug the
//!   numbers fixed (the doubling alone would be hidden by them);
//! - `drop_inbox`: one event in twenty arriving from another process, on any channel, is dropped
//!   after its number was taken as heard (`deliver`), so no gap is seen and nothing is read
//!   again: plain lossy pub/sub, as before the numbers;
//! - `no_fence`: a funnel conversation's saves ignore its epoch;
//! - `no_revision_check`: a member chat's appends ignore its revision, and a chat another
//!   process is answering is not refused;
//! - `drop_signed_out`: a sign-out from another process closes nothing, and after a gap in the
//!   events between processes the sockets' sessions are not checked against the store
//!   (`src/startup/mod.rs`): signed-out sockets on the other processes stay open.

/// The names a build knows; `HELPNOW_MUTATE` with any other is refused at start.
pub const NAMES: &[&str] = &[
    "double_publish",
    "drop_inbox",
    "no_fence",
    "no_revision_check",
    "drop_signed_out",
];

/// Whether the mutation `name` is switched on in this process.
#[cfg(feature = "fault-mutations")]
pub fn on(name: &str) -> bool {
    active().iter().any(|active| active == name)
}

/// Whether the mutation `name` is switched on in this process: never, in this build.
#[cfg(not(feature = "fault-mutations"))]
#[inline(always)]
pub const fn on(_name: &str) -> bool {
    false
}

#[cfg(feature = "fault-mutations")]
fn active() -> &'static [String] {
    static ACTIVE: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    ACTIVE.get_or_init(|| {
        std::env::var("HELPNOW_MUTATE")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .collect()
    })
}

/// Checks `HELPNOW_MUTATE` at start: unknown names, or any name in a build without the feature,
/// are an error (a mutation run on an ordinary build would pass without breaking anything).
pub fn check_environment() -> Result<(), String> {
    let Ok(value) = std::env::var("HELPNOW_MUTATE") else {
        return Ok(());
    };
    let names: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    if !cfg!(feature = "fault-mutations") {
        return Err(format!(
            "HELPNOW_MUTATE={value} needs a build with the fault-mutations feature (scripts/faults --mutation makes one)"
        ));
    }
    match names.iter().find(|name| !NAMES.contains(name)) {
        Some(unknown) => Err(format!(
            "HELPNOW_MUTATE names {unknown}, which is not one of {}",
            NAMES.join(", ")
        )),
        None => Ok(()),
    }
}
