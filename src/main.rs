use helpnow::config::Settings;
use helpnow::startup::Application;
use helpnow::telemetry;

/// mimalloc instead of the system allocator: allocation was a fifth of the server's CPU under load
/// (docs/benchmarks.md), and glibc's per-thread arenas kept freed memory. The feature
/// `system-allocator` leaves it out, for heap profilers (heaptrack) that see only malloc.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What `helpnow --help` and a command line it does not know print.
const USAGE: &str = "\
usage: helpnow                 serve (the settings: config/*.toml and APP__... variables)
       helpnow backup FILE     write a backup of the store database.url names to FILE
       helpnow restore FILE    restore the backup in FILE onto the empty store database.url names

A backup of the embedded store (surrealkv://) is taken by the running server, through its
control socket beside the store's folder, or from the store itself when no server runs. A restore
needs the server stopped and an empty store, and migrates the backup forward to this version.
See docs/operations.md, \"Backup and restore\".";

/// What the command line asks for.
enum Command {
    Serve,
    Backup(std::path::PathBuf),
    Restore(std::path::PathBuf),
}

fn parse(args: &[std::ffi::OsString]) -> Result<Command, std::process::ExitCode> {
    let words: Vec<Option<&str>> = args.iter().map(|arg| arg.to_str()).collect();
    match words.as_slice() {
        [] => Ok(Command::Serve),
        [Some("backup"), _] => Ok(Command::Backup(args[1].clone().into())),
        [Some("restore"), _] => Ok(Command::Restore(args[1].clone().into())),
        [Some("--help" | "-h" | "help")] => {
            println!("{USAGE}");
            Err(std::process::ExitCode::SUCCESS)
        }
        _ => {
            eprintln!("helpnow: unknown command line\n{USAGE}");
            Err(std::process::ExitCode::from(2))
        }
    }
}

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let command = match parse(&args) {
        Ok(command) => command,
        Err(exit) => return exit,
    };
    if let Err(error) = helpnow_actors::mutation::check_environment() {
        eprintln!("helpnow: cannot start: {error}");
        return std::process::ExitCode::FAILURE;
    }
    let settings = match Settings::load() {
        Ok(settings) => settings,
        Err(error) => {
            // No logger yet: the message goes straight to stderr.
            eprintln!("helpnow: cannot start: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if let Command::Backup(file) | Command::Restore(file) = &command {
        return store_command(&command, &settings, file);
    }
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

/// `helpnow backup FILE` and `helpnow restore FILE` (src/store/backup.rs): what was done on
/// stdout and exit 0, or why not on stderr and exit 1.
fn store_command(
    command: &Command,
    settings: &Settings,
    file: &std::path::Path,
) -> std::process::ExitCode {
    use helpnow::store::backup;
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("helpnow: cannot start: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let database = &settings.database;
    let done = runtime.block_on(async {
        let result = match command {
            Command::Restore(_) => backup::restore_command(database, file)
                .await
                .map(|restored| restored.to_string())
                .map_err(|error| format!("restore refused or failed: {error}")),
            _ => backup::backup_command(database, file)
                .await
                .map(|written| written.to_string())
                .map_err(|error| format!("no backup was written: {error}")),
        };
        // The store's handles are gone: the embedded engine's background tasks close it.
        helpnow::startup::wait_for_background_tasks(std::time::Duration::from_secs(10)).await;
        result
    });
    match done {
        Ok(report) => {
            println!("helpnow: {report}");
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("helpnow: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
