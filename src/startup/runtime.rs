//! The process's main runtime, and who goes first when the CPU is full.
//!
//! Two kinds of threads do the server's work. actix-server's workers (each with a runtime of its
//! own) hold the HTTP requests and the WebSockets, with their actors: the streamed replies' pieces,
//! the typing and checkout timers, the frames. The main runtime's threads run the store's queries
//! (the embedded SurrealDB works on the runtime that opened it) and the background jobs. With the
//! CPU full, every thread gets its share of it from the kernel's scheduler alike.
//! `server.background_nice` shrinks the main runtime's threads' share when others want the CPU
//! (at 19 its weight is 15 against 1,024 at 0; they are never starved, and get whatever is left
//! over): a member's streamed reply no longer waits behind the store's batches, but every
//! acknowledgement (a stored message) waits longer. Measured on two cores shared with the load
//! generator (docs/benchmarks.md, "The store's threads behind the real-time path"): at 19, 1,000
//! member streams' forwarding p99 went from 0.8-1.0 s to 17-44 ms and 19,000 funnel
//! conversations' ack p99 on SurrealKV from 23-29 ms to 33-70 ms. So it is off (0) by default.

use std::io;

/// The main runtime: tokio's multi-threaded one. With `nice` above 0 its threads (workers and
/// blocking ones) lower their own priority to `nice` as they start, when they are not already as
/// low (the value is absolute, as setpriority(2) takes it); 0 leaves them as they are. Threads
/// they start inherit their nice value: actix-server's workers are started when the server's
/// future is first polled, so it must be polled on the thread that blocks on this runtime (as
/// `main` does), never in a task spawned on it. Linux only (elsewhere the value is ignored).
pub fn main_runtime(nice: i32) -> io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if nice > 0 {
        builder.on_thread_start(move || lower_this_thread(nice));
    }
    builder.build()
}

/// Lowers the calling thread's scheduling priority to `nice` (Linux keeps a nice value per
/// thread). Never raises it: a thread already as low or lower stays so, and raising would need
/// privileges.
fn lower_this_thread(nice: i32) {
    if let Err(error) = set_thread_nice(nice) {
        // On stderr too: the runtime's workers start before the logger is set up.
        eprintln!("helpnow: cannot lower a runtime thread's priority to {nice}: {error}");
        tracing::warn!(%error, nice, "cannot lower a runtime thread's priority");
    }
}

#[cfg(target_os = "linux")]
fn set_thread_nice(nice: i32) -> io::Result<()> {
    if nice > this_thread_nice()? {
        rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice)?;
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn set_thread_nice(_nice: i32) -> io::Result<()> {
    Ok(())
}

/// The calling thread's nice value.
#[cfg(target_os = "linux")]
fn this_thread_nice() -> io::Result<i32> {
    Ok(rustix::process::getpriority_process(Some(
        rustix::thread::gettid(),
    ))?)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn nice() -> i32 {
        this_thread_nice().expect("a thread's nice value")
    }

    #[test]
    fn the_main_runtime_runs_its_tasks_lower_and_leaves_the_builder_as_it_was() {
        let before = nice();
        // The kernel keeps nice values at most 19.
        let lowered = (before + 3).min(19);
        // A thread of its own, so that the test's thread keeps its priority whatever happens.
        let (outside, inside, blocking) = std::thread::spawn(move || {
            let runtime = main_runtime(lowered).expect("a runtime");
            let inside = runtime
                .block_on(runtime.spawn(async { nice() }))
                .expect("a worker's task");
            let blocking = runtime
                .block_on(runtime.spawn_blocking(nice))
                .expect("a blocking task");
            (nice(), inside, blocking)
        })
        .join()
        .expect("the test's thread");
        assert_eq!(outside, before, "the thread that built the runtime");
        assert_eq!(inside, lowered, "a worker");
        assert_eq!(blocking, lowered, "a blocking thread");
    }

    #[test]
    fn a_thread_already_lower_stays_lower() {
        let (start, after) = std::thread::spawn(|| {
            let start = nice();
            lower_this_thread(start + 5);
            lower_this_thread(start + 2);
            (start, nice())
        })
        .join()
        .expect("the test's thread");
        assert_eq!(after, (start + 5).min(19));
    }
}
