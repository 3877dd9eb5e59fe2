//! `helpnow-loadtest`: see `helpnow::loadtest` and docs/benchmarks.md. The summary goes to
//! standard output; with `--json` the last line printed is the report as one JSON object. Exits 1
//! when errors pass `--max-error-rate`, 2 on a bad command line or an unreachable server. With
//! `--verify-acks FILE` it runs no load: it reads back the messages a run recorded with
//! `--record-acks FILE`, and exits 1 when one is missing or could not be checked.
//! `helpnow-loadtest faults ...` is the fault run (`helpnow::loadtest::faults`, docs/reliability.md):
//! exits 0 with no violation, 1 with any, 2 when it could not run or checked too little.

use std::path::Path;
use std::process::ExitCode;

use helpnow::loadtest::{self, Invocation, Options};

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("faults") {
        return faults();
    }
    let invocation = match Invocation::parse(std::env::args().skip(1)) {
        Ok(invocation) => invocation,
        // The usage and what was wrong (exit 2), or the help (exit 0).
        Err(error) => error.exit(),
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(exit) => return exit,
    };
    match invocation {
        Invocation::Run(options) => run(&runtime, &options),
        Invocation::VerifyAcks { url, file, json } => verify(&runtime, &url, &file, json),
    }
}

fn run(runtime: &tokio::runtime::Runtime, options: &Options) -> ExitCode {
    match runtime.block_on(loadtest::run(options)) {
        Ok(outcome) => {
            print!("{}", outcome.report.summary(&outcome.stats));
            if options.json {
                println!("{}", outcome.report.to_json(&outcome.stats));
            }
            if outcome.passed {
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "errors passed the threshold (--max-error-rate {})",
                    options.max_error_rate
                );
                ExitCode::from(1)
            }
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}

fn verify(runtime: &tokio::runtime::Runtime, url: &url::Url, file: &Path, json: bool) -> ExitCode {
    match runtime.block_on(loadtest::acks::verify(url, file)) {
        Ok(verdict) => {
            print!("{}", verdict.summary());
            if json {
                println!("{}", verdict.to_json());
            }
            if verdict.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}

fn faults() -> ExitCode {
    use clap::Parser;
    let options = match loadtest::faults::Options::try_parse_from(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(error) => error.exit(),
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(exit) => return exit,
    };
    match runtime.block_on(loadtest::faults::run(&options)) {
        Ok(outcome) => {
            print!("{}", outcome.verdict.table());
            println!("files: {}", loadtest::faults::files(&options.out));
            if options.json {
                println!(
                    "{}",
                    serde_json::to_string(&outcome.verdict).unwrap_or_default()
                );
            }
            if !outcome.verdict.violations.is_empty() {
                eprintln!("{} violations", outcome.verdict.violations.len());
                ExitCode::from(1)
            } else if let Some(why) = outcome.too_little {
                eprintln!("too little was checked: {why}");
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            eprintln!("cannot start the runtime: {error}");
            ExitCode::from(2)
        })
}
