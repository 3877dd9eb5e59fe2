//! Simulated experiments (issue 48), without a server: how often the stopping rule names a winner,
//! which, and after how many days, when the operator's page checks it every day.
//!
//! Each run is one experiment of two arms, A (the control) and B, with equal weights: every day
//! each arm gets `--daily` visitors, each converting with its arm's rate; after every day the rule
//! is applied (compare_conversion + decide) and the run stops at the first winner or after
//! `--days`. With equal rates (an A/A test) every winner is a false positive: the rule promises
//! at most 1 - chance of them per look, and looking every day inflates that.
//!
//! `cargo run --release --example experiment_sim -- [--runs N] [--seed S] [--daily V] [--days D]
//! [--rate-a P] [--rate-b P] [--min-exposures M] [--min-days D0] [--chance C] [--max-loss L]`
//! (defaults: 200 runs, seed 1, 200 visitors a day per arm, 30 days, rates 0.05 and the same,
//! 1000 exposures per arm, 7 days, chance 0.95, loss 0.002). The figures are reproducible: the
//! visitors are drawn from one StdRng seeded with `--seed`.

use helpnow::experiments::stats::{Conversion, Decision, Rule, compare_conversion, decide};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What to simulate.
struct Options {
    /// Experiments to simulate.
    runs: u32,
    /// The random generator's seed.
    seed: u64,
    /// Visitors each arm gets a day.
    daily: u64,
    /// The longest an experiment runs, in days.
    days: u32,
    /// The control's conversion rate (0 to 1).
    rate_a: f64,
    /// The variant's conversion rate (0 to 1).
    rate_b: f64,
    /// The stopping rule.
    rule: Rule,
}

const USAGE: &str = "usage: experiment_sim [--runs N] [--seed S] [--daily V] [--days D] [--rate-a P] \
     [--rate-b P] [--min-exposures M] [--min-days D0] [--chance C] [--max-loss L]";

/// Reads the options from the command line.
fn options() -> Result<Options, String> {
    let mut options = Options {
        runs: 200,
        seed: 1,
        daily: 200,
        days: 30,
        rate_a: 0.05,
        rate_b: 0.05,
        rule: Rule {
            min_exposures: 1000,
            min_days: 7,
            chance: 0.95,
            max_loss: 0.002,
        },
    };
    let mut rate_b = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--runs" => options.runs = value.parse().map_err(|e| bad(&e))?,
            "--seed" => options.seed = value.parse().map_err(|e| bad(&e))?,
            "--daily" => options.daily = value.parse().map_err(|e| bad(&e))?,
            "--days" => options.days = value.parse().map_err(|e| bad(&e))?,
            "--rate-a" => options.rate_a = value.parse().map_err(|e| bad(&e))?,
            "--rate-b" => rate_b = Some(value.parse().map_err(|e| bad(&e))?),
            "--min-exposures" => options.rule.min_exposures = value.parse().map_err(|e| bad(&e))?,
            "--min-days" => options.rule.min_days = value.parse().map_err(|e| bad(&e))?,
            "--chance" => options.rule.chance = value.parse().map_err(|e| bad(&e))?,
            "--max-loss" => options.rule.max_loss = value.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    options.rate_b = rate_b.unwrap_or(options.rate_a);
    for (name, rate) in [("--rate-a", options.rate_a), ("--rate-b", options.rate_b)] {
        if !(0.0..=1.0).contains(&rate) {
            return Err(format!("{name} is a rate from 0 to 1"));
        }
    }
    Ok(options)
}

/// One experiment: the winning arm (0 = A, 1 = B) and the day the rule named it, or `None` if it
/// named none within the days.
fn run(options: &Options, rng: &mut StdRng) -> Option<(usize, u32)> {
    let mut arms = [Conversion::default(); 2];
    let rates = [options.rate_a, options.rate_b];
    for day in 1..=options.days {
        for (arm, &rate) in arms.iter_mut().zip(&rates) {
            arm.visitors += options.daily;
            arm.conversions += (0..options.daily)
                .map(|_| u64::from(rng.random_bool(rate)))
                .sum::<u64>();
        }
        let comparison = compare_conversion(arms[0], arms[1]);
        let exposures = [arms[0].visitors, arms[1].visitors];
        if let Decision::Winner { arm } = decide(&options.rule, day, &exposures, &[comparison]) {
            return Some((arm, day));
        }
    }
    None
}

/// A share of the runs, 0 to 1.
fn share(count: u32, runs: u32) -> f64 {
    if runs == 0 {
        0.0
    } else {
        f64::from(count) / f64::from(runs)
    }
}

/// The mean of some days, or `None` without any.
fn mean(days: &[u32]) -> Option<f64> {
    let count = u32::try_from(days.len()).ok().filter(|&n| n > 0)?;
    Some(days.iter().map(|&d| f64::from(d)).sum::<f64>() / f64::from(count))
}

fn main() {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let mut rng = StdRng::seed_from_u64(options.seed);
    let mut days_to = [Vec::new(), Vec::new()];
    for _ in 0..options.runs {
        if let Some((arm, day)) = run(&options, &mut rng) {
            days_to[arm].push(day);
        }
    }
    let count = |days: &[u32]| u32::try_from(days.len()).unwrap_or(u32::MAX);
    let (declared_a, declared_b) = (count(&days_to[0]), count(&days_to[1]));
    let decided: Vec<u32> = days_to.concat();
    let undecided = options.runs - count(&decided);
    let rule = options.rule;
    // The first day the rule may name a winner, and how many daily looks follow up to the last.
    let first_day = u64::from(rule.min_days)
        .max(rule.min_exposures.div_ceil(options.daily.max(1)))
        .max(1);
    let looks = (u64::from(options.days) + 1).saturating_sub(first_day);
    let aa = options.rate_a == options.rate_b;

    println!(
        "experiment_sim: {} runs, seed {}, {} visitors a day per arm, at most {} days",
        options.runs, options.seed, options.daily, options.days
    );
    println!(
        "rates: A (control) {:.2} %, B {:.2} %{}",
        100.0 * options.rate_a,
        100.0 * options.rate_b,
        if aa {
            " (an A/A test: any winner is a false positive)"
        } else {
            ""
        }
    );
    println!(
        "rule: >= {} exposures per arm, >= {} days, chance to beat >= {}, expected loss < {}; \
         checked after every day ({looks} looks from day {first_day})",
        rule.min_exposures, rule.min_days, rule.chance, rule.max_loss
    );
    println!();
    println!(
        "{:<14}{:>8}{:>9}{:>11}",
        "outcome", "runs", "share", "mean day"
    );
    let row = |name: &str, days: &[u32]| {
        let runs = count(days);
        let day = mean(days).map_or_else(|| "-".to_owned(), |d| format!("{d:.1}"));
        println!(
            "{name:<14}{runs:>8}{:>8.1}%{day:>11}",
            100.0 * share(runs, options.runs)
        );
    };
    row("declared B", &days_to[1]);
    row("declared A", &days_to[0]);
    row("any winner", &decided);
    println!(
        "{:<14}{undecided:>8}{:>8.1}%{:>11}",
        "undecided",
        100.0 * share(undecided, options.runs),
        "-"
    );
    println!();
    let promise = 1.0 - rule.chance;
    println!(
        "The rule's promise: at most {:.1} % false winners in one direction per look (1 - chance); \
         peeking daily, as the operator's page does, inflates it{}.",
        100.0 * promise,
        if aa {
            format!(
                ": here {:.1} % of A/A runs declared B and {:.1} % declared some winner",
                100.0 * share(declared_b, options.runs),
                100.0 * share(declared_a + declared_b, options.runs)
            )
        } else {
            String::new()
        }
    );
    let false_positive = |rate: f64| if aa { Some(rate) } else { None };
    println!(
        "{}",
        serde_json::json!({
            "runs": options.runs,
            "seed": options.seed,
            "rateA": options.rate_a,
            "rateB": options.rate_b,
            "declaredB": declared_b,
            "declaredA": declared_a,
            "undecided": undecided,
            "falsePositiveRateB": false_positive(share(declared_b, options.runs)),
            "falsePositiveRateAny": false_positive(share(declared_a + declared_b, options.runs)),
            // Rounded: 1 - 0.95 is 0.050000000000000044 in binary.
            "promisePerLook": (promise * 1e12).round() / 1e12,
            "looks": looks,
            "meanDaysToDecision": mean(&decided),
        })
    );
}
