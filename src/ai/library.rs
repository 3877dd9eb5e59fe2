//! The offline help library (`config/help-library/*.md`): curated step-by-step answers to the
//! problems non-technical people bring, chosen by ranking when no AI service answers.
//!
//! Each file is a small front matter (`title:`, `keywords:` between `---` lines), then the answer
//! in Markdown: a short summary, numbered steps, and what to try next. The guides are ranked by
//! BM25 over their title, keywords and body ([`super::ranking`]); the best one answers when it
//! scores at least [`MIN_SCORE`], and below that no guide fits. `config/help-library-eval.tsv`
//! holds everyday questions with the guide each must get; the `ai::eval` test measures the
//! ranking on it.

use std::path::Path;

use super::ranking::{Document, Index};

/// The lowest score at which the best guide answers; below it, no guide fits the question. In
/// units of a rare word's weight ([`Index::scores`]); tuned on the evaluation set, whose
/// off-topic questions must get no guide.
pub const MIN_SCORE: f64 = 0.5;

/// What the answer says when no guide fits: kindly, and how to ask so that one does.
pub const NO_GUIDE: &str =
    "I'm sorry, I couldn't find a guide in our help library for that question.";

/// Said first when the library stands in for a failing AI service: there the members' chat shows
/// no offline notice, so the answer itself says why it is a stored guide.
pub const STAND_IN_NOTE: &str =
    "Our live assistant can't answer just now, so here is what our help library says.";

/// The guides named in the no-guide answer, when the library has them: the everyday ones.
const SUGGESTED: &[&str] = &[
    "attach-photo-to-email",
    "printer-offline-not-printing",
    "wifi-not-connecting-computer",
    "gmail-sign-in-password",
    "phishing-emails-and-texts",
    "video-call-family",
];

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
    /// The ranking over `articles`, by their position.
    index: Index,
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

/// A guide's body as the ranking reads it: without the quoted titles of the guides it points to
/// ("see our guide \"Camera or microphone not working in Zoom\""), whose words are about those
/// guides, not this one.
fn without_references(body: &str, titles: &[&str]) -> String {
    titles.iter().fold(body.to_owned(), |body, title| {
        body.replace(&format!("\"{title}\""), "")
    })
}

impl HelpLibrary {
    pub fn new(mut articles: Vec<HelpArticle>) -> Self {
        articles.sort_by(|a, b| a.slug.cmp(&b.slug));
        let titles: Vec<&str> = articles.iter().map(|a| a.title.as_str()).collect();
        let bodies: Vec<String> = articles
            .iter()
            .map(|article| without_references(&article.body, &titles))
            .collect();
        let documents: Vec<Document<'_>> = articles
            .iter()
            .zip(&bodies)
            .map(|(article, body)| Document {
                title: &article.title,
                keywords: &article.keywords,
                body,
            })
            .collect();
        let index = Index::new(&documents);
        Self { articles, index }
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

    /// The offline reply to `question`: the best-matching guide, starting with its title; without
    /// one, a kind word on how to ask so that one matches.
    pub fn answer(&self, question: &str) -> String {
        match self.best_match(question) {
            Some(article) => format!(
                "**{title}**\n\n{body}",
                title = article.title,
                body = article.body,
            ),
            None => self.no_guide_answer(),
        }
    }

    /// What `helpnow-ask` prints: the chosen guide's file name without `.md` (or `none`) on the
    /// first line, then the answer the chat would give.
    pub fn ask(&self, question: &str) -> String {
        let slug = self
            .best_match(question)
            .map_or("none", |article| article.slug.as_str());
        format!("{slug}\n{}", self.answer(question))
    }

    fn no_guide_answer(&self) -> String {
        let mut suggested: Vec<&HelpArticle> = SUGGESTED
            .iter()
            .filter_map(|slug| self.articles.iter().find(|a| a.slug == *slug))
            .collect();
        if suggested.is_empty() {
            suggested = self.articles.iter().take(6).collect();
        }
        let examples: Vec<String> = suggested
            .iter()
            .map(|article| format!("- {}", article.title))
            .collect();
        let mut text = format!(
            "{NO_GUIDE} Could you tell me a little more? It helps to say which device or app you \
             are using (for example an iPhone, a Windows laptop or Gmail) and what you see or \
             want to do, such as \"my printer says offline\" or \"how do I attach a photo in \
             Gmail\"."
        );
        if !examples.is_empty() {
            text.push_str("\n\nSome of the guides I can help with:\n");
            text.push_str(&examples.join("\n"));
        }
        text
    }

    /// The guides that match `question` at all, best first, with their scores.
    pub fn ranked(&self, question: &str) -> Vec<(f64, &HelpArticle)> {
        let mut ranked: Vec<(f64, &HelpArticle)> = self
            .index
            .scores(question)
            .into_iter()
            .zip(&self.articles)
            .filter(|(score, _)| *score > 0.0)
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.slug.cmp(&b.1.slug)));
        ranked
    }

    /// The guide that best fits `question`, if one scores at least [`MIN_SCORE`].
    pub fn best_match(&self, question: &str) -> Option<&HelpArticle> {
        self.ranked(question)
            .into_iter()
            .next()
            .filter(|(score, _)| *score >= MIN_SCORE)
            .map(|(_, article)| article)
    }
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
    fn the_answer_starts_with_the_guide_and_no_guide_is_said_kindly() {
        let library = library();
        let answer = library.answer("my printer is offline");
        assert!(answer.starts_with("**printer**\n\n"), "{answer}");
        assert!(answer.contains("1. Do this."), "{answer}");
        assert!(!answer.to_lowercase().contains("assistant"), "{answer}");
        let none = library.answer("how do I bake bread");
        assert!(none.starts_with(NO_GUIDE), "{none}");
        assert!(none.contains("which device or app"), "{none}");
        assert!(none.contains("- gmail"), "{none}");
    }

    #[test]
    fn ask_names_the_guide_then_gives_the_answer() {
        let library = library();
        let printed = library.ask("my pritner is offline");
        let (first, rest) = printed.split_once('\n').expect("two parts");
        assert_eq!(first, "printer");
        assert_eq!(rest, library.answer("my pritner is offline"));
        let printed = library.ask("recipe for chicken soup");
        let (first, rest) = printed.split_once('\n').expect("two parts");
        assert_eq!(first, "none");
        assert!(rest.starts_with(NO_GUIDE), "{rest}");
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
    fn a_pointer_to_another_guide_does_not_rank_this_one() {
        let mut zoom = article("zoom", "zoom, camera, microphone");
        zoom.title = "Camera not working in Zoom".to_owned();
        let mut family = article("family", "video call, family");
        family
            .body
            .push_str("\nIf that fails, see \"Camera not working in Zoom\".\n");
        let library = HelpLibrary::new(vec![zoom, family]);
        let ranked: Vec<&str> = library
            .ranked("camera not working")
            .into_iter()
            .map(|(_, a)| a.slug.as_str())
            .collect();
        assert_eq!(ranked, ["zoom"]);
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
