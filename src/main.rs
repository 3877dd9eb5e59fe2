use helpnow::config::Settings;
use helpnow::startup::Application;
use helpnow::telemetry;

/// mimalloc instead of the system allocator: allocation was a fifth of the server's CPU under load
/// (docs/benchmarks.md), and glibc's per-thread arenas kept freed memory. The feature
/// `system-allocator` leaves it out, for heap profilers (heaptrack) that see only malloc.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let settings = match Settings::load() {
        Ok(settings) => settings,
        Err(error) => {
            // No logger yet: the message goes straight to stderr.
            eprintln!("helpnow: cannot start: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // The store's queries and the background jobs run on this runtime's threads, at
    // `server.background_nice` (by default the HTTP and WebSocket workers' own priority; see
    // src/startup/runtime.rs).
    let runtime = match helpnow::startup::runtime::main_runtime(settings.server.background_nice) {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("helpnow: cannot start: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // The server's future is polled here, on this thread: actix-server starts its workers from
    // it, and they keep this thread's priority (a task on the runtime would hand them its own).
    runtime.block_on(serve(settings))
}

async fn serve(settings: Settings) -> std::process::ExitCode {
    telemetry::init(&settings.log);
    if let Some(warning) = Settings::local_defaults_warning(std::env::var_os("APP_ENV").is_some()) {
        tracing::warn!("{warning}");
        eprintln!("helpnow: {warning}");
    }

    let application = match Application::build(settings).await {
        Ok(application) => application,
        Err(error) => {
            tracing::error!(%error, "cannot start");
            eprintln!("helpnow: cannot start: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match application.run_until_stopped().await {
        Ok(()) => {
            tracing::info!("HelpNow stopped");
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!(%error, "the server failed");
            std::process::ExitCode::FAILURE
        }
    }
}
