//! `helpnow-seed-analytics --events 1000000 --days 90`: fills the database the server is configured
//! for (the same settings: `./config` or `APP_CONFIG_DIR`, `APP_ENV`, `APP__...` variables) with
//! realistic synthetic visitors and their analytics events, written as the product writes them,
//! for the operator dashboard's benchmark (docs/benchmarks.md). Run it with the server stopped
//! (an embedded database has one process), then start the server and time `/api/admin/dashboard`.

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use helpnow::config::Settings;
use helpnow::loadtest::seed::{SeedPlan, seed};
use rand::SeedableRng;

#[derive(Parser)]
#[command(about = "Synthetic analytics events for the operator dashboard's benchmark")]
struct Args {
    /// Stop once this many events are written.
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    /// Visitors arrive over this many days, up to now.
    #[arg(long, default_value_t = 90)]
    days: i64,
    /// How many ad campaigns (each with 4 to 23 keywords).
    #[arg(long, default_value_t = 25)]
    campaigns: usize,
    /// The random seed: the same seed writes the same visitors.
    #[arg(long, default_value_t = 19)]
    seed: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let settings = match Settings::load() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("helpnow-seed-analytics: {error}");
            return ExitCode::FAILURE;
        }
    };
    let db = match helpnow::store::connect(&settings.database).await {
        Ok(db) => db,
        Err(error) => {
            eprintln!("helpnow-seed-analytics: cannot open the database: {error}");
            return ExitCode::FAILURE;
        }
    };
    let plan = SeedPlan {
        events: args.events,
        days: args.days,
        campaigns: args.campaigns,
        now: chrono::Utc::now(),
    };
    let started = Instant::now();
    let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed);
    match seed(&db, &plan, &mut rng).await {
        Ok(tally) => {
            println!(
                "{} events, {} visitors' journeys, {} steps into {} in {:.1} s",
                tally.events,
                tally.journeys,
                tally.steps,
                settings.database.url,
                started.elapsed().as_secs_f64()
            );
            for (funnel, figures) in &tally.funnels {
                println!(
                    "  {funnel}: {} visitors, {} trials, {} paid, net ${:.2}",
                    figures.visitors,
                    figures.trial,
                    figures.paid,
                    figures.net_cents as f64 / 100.0
                );
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("helpnow-seed-analytics: {error}");
            ExitCode::FAILURE
        }
    }
}
