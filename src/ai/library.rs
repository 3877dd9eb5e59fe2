//! The offline help library (`config/help-library/*.md`): curated step-by-step answers to the
//! problems non-technical people bring, chosen by keyword retrieval when no AI service answers.
//!
//! Each file is a small front matter (`title:`, `keywords:` between `---` lines), then the answer
//! in Markdown: a short summary, numbered steps, and what to try next. A keyword's weight is its
//! rarity across the library (inverse document frequency), so "gmail password" finds the Gmail
//! guide rather than any guide that mentions passwords; a phrase weighs more than a word (by the
//! square root of its length), and a word inside a matched phrase is not counted again.

use std::collections::HashMap;
use std::path::Path;

/// Said first in every offline answer: the member must know they are reading a stored guide.
pub const OFFLINE_NOTE: &str = "Our live assistant is offline right now.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpArticle {
    /// The file name without `.md`.
    pub slug: String,
    pub title: String,
    /// Lower-case words and phrases, normalised like a question is.
    pub keywords: Vec<String>,
    /// The answer: Markdown after the front matter.
    pub body: String,
}

#[derive(Debug, Clone, Default)]
pub struct HelpLibrary {
    articles: Vec<HelpArticle>,
    /// For each keyword, how rare it is across the library.
    weights: HashMap<String, f64>,
}

#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {problem}")]
    Invalid { path: String, problem: String },
}

/// Lower case, letters and digits only, one space between words: how questions and keywords
/// are compared ("Wi-Fi" and "wi fi" meet as "wi fi").
fn normalise(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses one article; the error says what is missing.
pub fn parse_article(slug: &str, text: &str) -> Result<HelpArticle, String> {
    let text = text.trim_start_matches('\u{feff}');
    let rest = text
        .strip_prefix("---")
        .ok_or("it does not start with a front matter (---)")?;
    let (front, body) = rest
        .split_once("\n---")
        .ok_or("its front matter has no closing ---")?;
    let mut title = None;
    let mut keywords = Vec::new();
    for line in front.lines() {
        if let Some(value) = line.strip_prefix("title:") {
            title = Some(value.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("keywords:") {
            keywords = value
                .split(',')
                .map(normalise)
                .filter(|k| !k.is_empty())
                .collect();
        }
    }
    let title = title.filter(|t| !t.is_empty()).ok_or("it has no title")?;
    if keywords.is_empty() {
        return Err("it has no keywords".to_owned());
    }
    let body = body.trim().to_owned();
    if !body
        .lines()
        .any(|line| line.trim_start().starts_with("1. "))
    {
        return Err("its answer has no numbered steps".to_owned());
    }
    Ok(HelpArticle {
        slug: slug.to_owned(),
        title,
        keywords,
        body,
    })
}

impl HelpLibrary {
    pub fn new(mut articles: Vec<HelpArticle>) -> Self {
        articles.sort_by(|a, b| a.slug.cmp(&b.slug));
        let mut counts: HashMap<String, usize> = HashMap::new();
        for article in &articles {
            let mut seen: Vec<&String> = article.keywords.iter().collect();
            seen.sort();
            seen.dedup();
            for keyword in seen {
                *counts.entry(keyword.clone()).or_default() += 1;
            }
        }
        let total = articles.len().max(1) as f64;
        let weights = counts
            .into_iter()
            .map(|(keyword, count)| {
                let rarity = (total / count as f64).ln() + 1.0;
                let length = keyword.split(' ').count() as f64;
                (keyword, rarity * length.sqrt())
            })
            .collect();
        Self { articles, weights }
    }

    /// Every `*.md` file of `dir`, in name order. A file that does not parse stops start-up.
    pub fn load(dir: &Path) -> Result<Self, LibraryError> {
        let read = |source| LibraryError::Read {
            path: dir.display().to_string(),
            source,
        };
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .map_err(read)?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
            .collect();
        paths.sort();
        let mut articles = Vec::with_capacity(paths.len());
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(|source| LibraryError::Read {
                path: path.display().to_string(),
                source,
            })?;
            let slug = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            let article = parse_article(slug, &text).map_err(|problem| LibraryError::Invalid {
                path: path.display().to_string(),
                problem,
            })?;
            articles.push(article);
        }
        Ok(Self::new(articles))
    }

    pub fn len(&self) -> usize {
        self.articles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.articles.is_empty()
    }

    pub fn articles(&self) -> &[HelpArticle] {
        &self.articles
    }

    /// The offline reply to `question`: the best-matching guide, saying plainly that the live
    /// assistant is offline; without a match, how to ask so that one matches.
    pub fn answer(&self, question: &str) -> String {
        match self.best_match(question) {
            Some(article) => format!(
                "{OFFLINE_NOTE} Here is the guide from our help library that matches your question.\n\n\
                 **{title}**\n\n{body}",
                title = article.title,
                body = article.body,
            ),
            None => {
                let examples: Vec<String> = self
                    .articles
                    .iter()
                    .take(6)
                    .map(|article| format!("- {}", article.title))
                    .collect();
                format!(
                    "{OFFLINE_NOTE} I could not find a guide in our help library that matches your \
                     question. Try naming the device or the app and what goes wrong, for example \
                     \"Gmail password\" or \"printer offline\".\n\nSome of the guides:\n{}",
                    examples.join("\n")
                )
            }
        }
    }

    /// The article whose keywords best match `question`, if any matches at all.
    pub fn best_match(&self, question: &str) -> Option<&HelpArticle> {
        // Spaces around both sides make phrase matching whole-word only.
        let question = format!(" {} ", normalise(question));
        let singular = format!(" {} ", singulars(&question));
        let mut best: Option<(f64, &HelpArticle)> = None;
        for article in &self.articles {
            let matched: Vec<&String> = article
                .keywords
                .iter()
                .filter(|keyword| {
                    let needle = format!(" {keyword} ");
                    question.contains(&needle) || singular.contains(&needle)
                })
                .collect();
            // A word inside a matched phrase ("connect" in "won t connect") counts once, with it.
            let score: f64 = matched
                .iter()
                .filter(|keyword| {
                    let needle = format!(" {keyword} ");
                    !matched
                        .iter()
                        .any(|other| other != *keyword && format!(" {other} ").contains(&needle))
                })
                .map(|keyword| self.weights.get(*keyword).copied().unwrap_or(1.0))
                .sum();
            if score > 0.0 && best.is_none_or(|(top, _)| score > top) {
                best = Some((score, article));
            }
        }
        best.map(|(_, article)| article)
    }
}

/// The question with plural `-s` dropped from longer words, so "printers" meets "printer".
fn singulars(normalised: &str) -> String {
    normalised
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(|word| {
            if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
                &word[..word.len() - 1]
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn article(slug: &str, keywords: &str) -> HelpArticle {
        parse_article(
            slug,
            &format!("---\ntitle: {slug}\nkeywords: {keywords}\n---\nWhy.\n\n1. Do this.\n2. Then that.\n"),
        )
        .expect("parses")
    }

    fn library() -> HelpLibrary {
        HelpLibrary::new(vec![
            article(
                "gmail",
                "gmail, google account, sign in, password, forgot password",
            ),
            article("outlook", "outlook, hotmail, sign in, password"),
            article("printer", "printer, printing, offline, not printing"),
            article("wifi", "wifi, wi fi, wireless, internet, not connecting"),
        ])
    }

    #[test]
    fn a_rare_keyword_outweighs_a_common_one() {
        let library = library();
        let found = |q: &str| library.best_match(q).map(|a| a.slug.as_str());
        assert_eq!(found("I forgot my Gmail password"), Some("gmail"));
        assert_eq!(
            found("can't sign in to hotmail, wrong password"),
            Some("outlook")
        );
        assert_eq!(found("My printers show OFFLINE"), Some("printer"));
        assert_eq!(found("Wi-Fi is not connecting"), Some("wifi"));
        assert_eq!(found("how do I bake bread"), None);
    }

    #[test]
    fn the_answer_says_the_assistant_is_offline_and_gives_the_steps() {
        let library = library();
        let answer = library.answer("my printer is offline");
        assert!(answer.starts_with(OFFLINE_NOTE), "{answer}");
        assert!(answer.contains("**printer**"), "{answer}");
        assert!(answer.contains("1. Do this."), "{answer}");
        let none = library.answer("how do I bake bread");
        assert!(none.starts_with(OFFLINE_NOTE), "{none}");
        assert!(none.contains("- gmail"), "{none}");
    }

    #[test]
    fn keywords_match_whole_words_only() {
        let library = library();
        // "printing" must not match inside "fingerprinting", nor "wifi" inside "wifis..." words.
        assert_eq!(
            library
                .best_match("fingerprinting my laptop")
                .map(|a| a.slug.as_str()),
            None
        );
    }

    #[test]
    fn a_broken_article_names_what_is_missing() {
        assert!(
            parse_article("x", "no front matter")
                .expect_err("refused")
                .contains("front matter")
        );
        assert!(
            parse_article("x", "---\nkeywords: a\n---\n1. step")
                .expect_err("refused")
                .contains("title")
        );
        assert!(
            parse_article("x", "---\ntitle: T\n---\n1. step")
                .expect_err("refused")
                .contains("keywords")
        );
        assert!(
            parse_article("x", "---\ntitle: T\nkeywords: a\n---\nno steps")
                .expect_err("refused")
                .contains("numbered")
        );
    }
}
