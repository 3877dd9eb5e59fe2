//! The offline helper measured on `config/help-library-eval.tsv`: everyday questions as members
//! type them, each with the guide it must get (or `none`). Prints the hit rate and every miss,
//! and fails below [`REQUIRED_HIT_RATE`].
//!
//! `cargo test --features helpnow/surreal-server --lib ai::eval -- --nocapture` shows the report.

use std::path::{Path, PathBuf};

use super::library::{HelpLibrary, MIN_SCORE};

/// The share of the set the ranking must get right.
const REQUIRED_HIT_RATE: f64 = 0.95;

fn project_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The set's questions and their guides, in file order.
fn cases() -> Vec<(String, String)> {
    let path = project_file("config/help-library-eval.tsv");
    let text = std::fs::read_to_string(&path).expect("the evaluation set is readable");
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|(number, line)| {
            let (question, slug) = line.split_once('\t').unwrap_or_else(|| {
                panic!("line {}: a question, a tab, then the guide", number + 1)
            });
            (question.trim().to_owned(), slug.trim().to_owned())
        })
        .collect()
}

#[test]
fn the_offline_helper_finds_the_right_guide_for_everyday_questions() {
    let library =
        HelpLibrary::load(&project_file("config/help-library")).expect("the library loads");
    let cases = cases();
    assert!(cases.len() >= 100, "{} questions", cases.len());
    let mut misses = Vec::new();
    // The margins around the threshold: the highest score a question without a guide reached,
    // and the lowest with which a question got its right guide.
    let mut highest_off_topic = (0.0_f64, String::new());
    let mut lowest_hit = (f64::INFINITY, String::new());
    for (question, expected) in &cases {
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
            misses.push(format!(
                "  {question:?}: got {got}, expected {expected} (top: {})",
                top.join(", ")
            ));
        }
    }
    let hits = cases.len() - misses.len();
    let rate = hits as f64 / cases.len() as f64;
    println!(
        "offline helper: {hits} of {} everyday questions get the right guide ({:.1} %)",
        cases.len(),
        rate * 100.0
    );
    println!(
        "threshold {MIN_SCORE}: highest off-topic score {:.2} ({:?}), lowest hit {:.2} ({:?})",
        highest_off_topic.0, highest_off_topic.1, lowest_hit.0, lowest_hit.1
    );
    for miss in &misses {
        println!("{miss}");
    }
    assert!(
        rate >= REQUIRED_HIT_RATE,
        "hit rate {:.1} % is below {:.0} %; misses:\n{}",
        rate * 100.0,
        REQUIRED_HIT_RATE * 100.0,
        misses.join("\n")
    );
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
