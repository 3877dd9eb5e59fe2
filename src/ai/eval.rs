//! The offline helper measured on `config/help-library-eval.tsv`: everyday questions as members
//! type them, each with the guide it must get (or `none`). Prints the hit rate and every miss,
//! and fails below [`REQUIRED_HIT_RATE`]. Questions after a `# held-out` line were written before
//! looking at the ranker, so the test also reports them alone (the honest measure) and holds them
//! to the same rate.
//!
//! `cargo test --features helpnow/surreal-server --lib ai::eval -- --nocapture` shows the report.

use std::path::{Path, PathBuf};

use super::library::{HelpLibrary, MIN_SCORE};

/// The share of the set the ranking must get right.
const REQUIRED_HIT_RATE: f64 = 0.95;

fn project_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The line that starts the held-out section: questions written before looking at the ranker.
const HELD_OUT_MARKER: &str = "# held-out";

/// One question of the set.
struct Case {
    question: String,
    expected: String,
    /// After the [`HELD_OUT_MARKER`] line.
    held_out: bool,
}

/// The set's questions and their guides, in file order.
fn cases() -> Vec<Case> {
    let path = project_file("config/help-library-eval.tsv");
    let text = std::fs::read_to_string(&path).expect("the evaluation set is readable");
    parse_cases(&text)
}

fn parse_cases(text: &str) -> Vec<Case> {
    let mut held_out = false;
    let mut cases = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.starts_with(HELD_OUT_MARKER) {
            held_out = true;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (question, slug) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("line {}: a question, a tab, then the guide", number + 1));
        cases.push(Case {
            question: question.trim().to_owned(),
            expected: slug.trim().to_owned(),
            held_out,
        });
    }
    cases
}

/// "h of n (r %)" and the rate.
fn rate_line(hits: usize, total: usize) -> (String, f64) {
    let rate = if total == 0 {
        1.0
    } else {
        hits as f64 / total as f64
    };
    (format!("{hits} of {total} ({:.1} %)", rate * 100.0), rate)
}

#[test]
fn the_offline_helper_finds_the_right_guide_for_everyday_questions() {
    let library =
        HelpLibrary::load(&project_file("config/help-library")).expect("the library loads");
    let cases = cases();
    assert!(cases.len() >= 100, "{} questions", cases.len());
    let held_out_total = cases.iter().filter(|case| case.held_out).count();
    assert!(
        held_out_total >= 100,
        "{held_out_total} held-out questions (after the {HELD_OUT_MARKER:?} line)"
    );
    let mut misses = Vec::new();
    let mut held_out_misses = 0_usize;
    // The margins around the threshold: the highest score a question without a guide reached,
    // and the lowest with which a question got its right guide.
    let mut highest_off_topic = (0.0_f64, String::new());
    let mut lowest_hit = (f64::INFINITY, String::new());
    for Case {
        question,
        expected,
        held_out,
    } in &cases
    {
        let top = library
            .ranked(question)
            .first()
            .map_or(0.0, |(score, _)| *score);
        if expected == "none" && top > highest_off_topic.0 {
            highest_off_topic = (top, question.clone());
        }
        let right = library.best_match(question).map(|a| &a.slug) == Some(expected);
        if right && top < lowest_hit.0 {
            lowest_hit = (top, question.clone());
        }
        assert!(
            expected == "none" || library.articles().iter().any(|a| &a.slug == expected),
            "{question:?} expects {expected:?}, which is not in the library"
        );
        let got = library
            .best_match(question)
            .map_or("none", |article| article.slug.as_str());
        if got != expected {
            let top: Vec<String> = library
                .ranked(question)
                .into_iter()
                .take(3)
                .map(|(score, article)| format!("{} {score:.2}", article.slug))
                .collect();
            if *held_out {
                held_out_misses += 1;
            }
            misses.push(format!(
                "  {}{question:?}: got {got}, expected {expected} (top: {})",
                if *held_out { "[held-out] " } else { "" },
                top.join(", ")
            ));
        }
    }
    let (overall, rate) = rate_line(cases.len() - misses.len(), cases.len());
    let (held_out, held_out_rate) = rate_line(held_out_total - held_out_misses, held_out_total);
    println!("offline helper: {overall} everyday questions get the right guide");
    println!("  held-out part alone (written before looking at the ranker): {held_out}");
    println!(
        "threshold {MIN_SCORE}: highest off-topic score {:.2} ({:?}), lowest hit {:.2} ({:?})",
        highest_off_topic.0, highest_off_topic.1, lowest_hit.0, lowest_hit.1
    );
    for miss in &misses {
        println!("{miss}");
    }
    assert!(
        rate >= REQUIRED_HIT_RATE && held_out_rate >= REQUIRED_HIT_RATE,
        "hit rate {overall} overall, {held_out} held-out: below {:.0} %; misses:\n{}",
        REQUIRED_HIT_RATE * 100.0,
        misses.join("\n")
    );
}

#[test]
fn the_held_out_marker_splits_the_set() {
    let cases = parse_cases("# notes\na\tx\n\n# held-out: written first\nb\tnone\n# more\nc\ty\n");
    let split: Vec<(&str, &str, bool)> = cases
        .iter()
        .map(|c| (c.question.as_str(), c.expected.as_str(), c.held_out))
        .collect();
    assert_eq!(
        split,
        [("a", "x", false), ("b", "none", true), ("c", "y", true)]
    );
    assert_eq!(rate_line(19, 20).0, "19 of 20 (95.0 %)");
}

#[test]
fn every_guide_is_found_by_its_own_title() {
    let library =
        HelpLibrary::load(&project_file("config/help-library")).expect("the library loads");
    for article in library.articles() {
        assert_eq!(
            library.best_match(&article.title).map(|a| a.slug.as_str()),
            Some(article.slug.as_str()),
            "{}",
            article.title
        );
    }
}
