//! The help library's ranking: Okapi BM25F over three fields of each guide (title, keywords and
//! body, the first two weighing more), after the light normalisation that real typing needs.
//!
//! A question and a guide go through the same [`terms`]: lower case, apostrophes dropped ("can't"
//! is "cant"), split into words, a few two-word spellings joined ("wi fi", "log in", "screen
//! shot"), a small synonym table ("pics" is "photo", "laptop" is "computer"), stop words dropped
//! ("my", "i", "cant", "how", "do"), and plural and verb endings cut ("printers", "printing" and
//! "printed" all meet as "print"). A question's word of five letters or more that no guide uses
//! counts as the guide word one typing slip away ("gmial" is "gmail", "pritner" is "printer").
//!
//! Hand-written rather than a search engine library: a few dozen guides fit in memory many
//! times over, and tantivy would add a search engine's worth of crates (and build minutes on a
//! small CI machine) for nothing this needs.

use std::collections::HashMap;

/// BM25's term-frequency saturation: a word's third mention adds little over its second.
const K1: f64 = 1.2;

/// The fields of a guide: how much a match in it weighs, and how much its length tempers a
/// match (BM25's `b`: a long body mentioning a word once says less than a short title).
#[derive(Debug, Clone, Copy)]
struct Field {
    weight: f64,
    b: f64,
}

const TITLE: Field = Field {
    weight: 3.0,
    b: 0.3,
};
const KEYWORDS: Field = Field {
    weight: 2.0,
    b: 0.5,
};
const BODY: Field = Field {
    weight: 0.4,
    b: 0.75,
};
const FIELDS: [Field; 3] = [TITLE, KEYWORDS, BODY];

/// A word a question carries that no guide uses is read as a guide's word one slip away only
/// when both are this long, so short words ("bred", "cat", "scarf" and "scar") are not forced
/// onto guide words.
const TYPO_MIN_CHARS: usize = 5;
/// From this length, two slips.
const TWO_TYPOS_MIN_CHARS: usize = 9;
/// A corrected word is less certain than a typed one.
const TYPO_WEIGHT: f64 = 0.8;

/// Words that say nothing about which guide fits: pronouns, question words, helpers, and the
/// "can't", "won't" and "not" of every problem.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "anymore",
    "anything",
    "are",
    "arent",
    "as",
    "at",
    "be",
    "been",
    "being",
    "best",
    "better",
    "but",
    "by",
    "can",
    "cannot",
    "cant",
    "could",
    "couldnt",
    "did",
    "didnt",
    "do",
    "does",
    "doesnt",
    "doing",
    "done",
    "dont",
    "each",
    "even",
    "ever",
    "every",
    "everything",
    "for",
    "from",
    "get",
    "gets",
    "getting",
    "got",
    "had",
    "has",
    "hasnt",
    "have",
    "havent",
    "he",
    "hello",
    "help",
    "her",
    "here",
    "hers",
    "hi",
    "him",
    "his",
    "how",
    "i",
    "id",
    "if",
    "ill",
    "im",
    "in",
    "into",
    "is",
    "isnt",
    "it",
    "its",
    "ive",
    "just",
    "know",
    "let",
    "lets",
    "like",
    "me",
    "might",
    "mine",
    "more",
    "much",
    "must",
    "my",
    "myself",
    "need",
    "needs",
    "no",
    "not",
    "now",
    "of",
    "on",
    "onto",
    "or",
    "our",
    "out",
    "please",
    "plz",
    "pls",
    "really",
    "she",
    "should",
    "so",
    "some",
    "someone",
    "something",
    "still",
    "than",
    "thank",
    "thanks",
    "that",
    "thats",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "this",
    "those",
    "to",
    "too",
    "trying",
    "u",
    "unable",
    "up",
    "us",
    "very",
    "want",
    "wanted",
    "wants",
    "was",
    "wasnt",
    "way",
    "we",
    "were",
    "what",
    "whats",
    "when",
    "where",
    "which",
    "who",
    "why",
    "will",
    "with",
    "wont",
    "would",
    "wouldnt",
    "ya",
    "yes",
    "you",
    "your",
    "youre",
];

/// Two words typed apart that mean one thing, joined before anything else.
const JOINED: &[(&str, &str, &str)] = &[
    ("wi", "fi", "wifi"),
    ("e", "mail", "email"),
    ("e", "mails", "email"),
    ("g", "mail", "gmail"),
    ("i", "cloud", "icloud"),
    ("sign", "in", "signin"),
    ("sign", "into", "signin"),
    ("signed", "in", "signin"),
    ("log", "in", "signin"),
    ("log", "into", "signin"),
    ("logged", "in", "signin"),
    ("log", "on", "signin"),
    ("screen", "shot", "screenshot"),
    ("screen", "shots", "screenshot"),
    ("face", "time", "facetime"),
    ("face", "book", "facebook"),
    ("whats", "app", "whatsapp"),
    ("you", "tube", "youtube"),
    ("back", "up", "backup"),
    ("backed", "up", "backup"),
    ("pop", "up", "popup"),
    ("pop", "ups", "popup"),
    ("set", "up", "setup"),
    ("lap", "top", "computer"),
    ("pass", "word", "password"),
    ("fire", "stick", "firestick"),
    ("on", "line", "online"),
    ("play", "store", "playstore"),
    ("app", "store", "appstore"),
    ("turn", "on", "turnon"),
    ("switch", "on", "turnon"),
    ("power", "on", "turnon"),
];

/// A word and the word it stands for. Plurals are listed: the table is read before endings
/// are cut.
const SYNONYMS: &[(&str, &str)] = &[
    // Photos.
    ("pic", "photo"),
    ("pics", "photo"),
    ("pix", "photo"),
    ("picture", "photo"),
    ("pictures", "photo"),
    ("photos", "photo"),
    ("foto", "photo"),
    ("fotos", "photo"),
    ("image", "photo"),
    ("images", "photo"),
    ("photograph", "photo"),
    ("photographs", "photo"),
    // Mail.
    ("mail", "email"),
    ("mails", "email"),
    ("emails", "email"),
    ("emailing", "email"),
    ("emailed", "email"),
    // Wi-Fi.
    ("wify", "wifi"),
    ("wiffi", "wifi"),
    ("wiifi", "wifi"),
    // Signing in.
    ("login", "signin"),
    ("logon", "signin"),
    ("signon", "signin"),
    ("logging", "signin"),
    // Passwords.
    ("passwords", "password"),
    ("pasword", "password"),
    ("passwrd", "password"),
    ("passward", "password"),
    ("pword", "password"),
    ("pw", "password"),
    ("pwd", "password"),
    // Devices.
    ("laptop", "computer"),
    ("laptops", "computer"),
    ("pc", "computer"),
    ("pcs", "computer"),
    ("desktop", "computer"),
    ("computers", "computer"),
    ("compter", "computer"),
    ("computor", "computer"),
    ("cellphone", "phone"),
    ("cell", "phone"),
    ("mobile", "phone"),
    ("smartphone", "phone"),
    ("phones", "phone"),
    ("television", "tv"),
    ("telly", "tv"),
    ("tele", "tv"),
    ("tvs", "tv"),
    ("ipad", "ipad"),
    // Family.
    ("grandkids", "grandchild"),
    ("grandkid", "grandchild"),
    ("grandchildren", "grandchild"),
    ("grandson", "grandchild"),
    ("grandsons", "grandchild"),
    ("granddaughter", "grandchild"),
    ("granddaughters", "grandchild"),
    ("grandaughter", "grandchild"),
    ("grandbaby", "grandchild"),
    ("grandbabies", "grandchild"),
    // Apps.
    ("apps", "app"),
    ("application", "app"),
    ("applications", "app"),
    ("programme", "program"),
    ("programs", "program"),
    ("programmes", "program"),
    // Names typed short or apart.
    ("fb", "facebook"),
    ("insta", "instagram"),
    ("whatsap", "whatsapp"),
    ("watsapp", "whatsapp"),
    ("utube", "youtube"),
    ("popups", "popup"),
    ("screenshots", "screenshot"),
    ("backups", "backup"),
    ("firestick", "firestick"),
    ("setup", "setup"),
    // Receiving ("not getting my emails"; "get" alone says nothing).
    ("getting", "receive"),
    ("receiving", "receive"),
    ("received", "receive"),
    ("receives", "receive"),
    ("recieve", "receive"),
    ("recieving", "receive"),
    ("arrive", "receive"),
    ("arriving", "receive"),
    ("arrived", "receive"),
    // Removing.
    ("remove", "delete"),
    ("removing", "delete"),
    ("erase", "delete"),
    ("erasing", "delete"),
    ("deleting", "delete"),
    ("deleted", "delete"),
    ("deletes", "delete"),
];

/// What a text means to the ranking: its words, normalised as the module says, in order.
pub fn terms(text: &str) -> Vec<String> {
    let lowered: String = text
        .to_lowercase()
        .chars()
        .filter(|c| !matches!(c, '\'' | '’' | '‘' | '`'))
        .collect();
    let words: Vec<&str> = lowered
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    let mut terms = Vec::with_capacity(words.len());
    let mut index = 0;
    while index < words.len() {
        let joined = words.get(index + 1).and_then(|next| {
            JOINED
                .iter()
                .find(|(first, second, _)| *first == words[index] && second == next)
                .map(|(_, _, joined)| *joined)
        });
        let word = match joined {
            Some(joined) => {
                index += 2;
                joined
            }
            None => {
                index += 1;
                words[index - 1]
            }
        };
        let word = SYNONYMS
            .iter()
            .find(|(from, _)| *from == word)
            .map_or(word, |(_, to)| *to);
        if STOP_WORDS.contains(&word) {
            continue;
        }
        terms.push(stem(word));
    }
    terms
}

/// Plural and verb endings cut, so "batteries" and "battery", "printing" and "print", "freezes",
/// "freezing" and "freeze" meet. Not a full stemmer: the same cut on both sides is all it needs.
fn stem(word: &str) -> String {
    if word.chars().count() <= 3 || word.chars().any(|c| !c.is_ascii_alphabetic()) {
        return word.to_owned();
    }
    let mut stem = word.to_owned();
    if let Some(base) = stem.strip_suffix("ies").filter(|base| base.len() >= 2) {
        stem = format!("{base}y");
    } else if stem.ends_with("sses") {
        stem.truncate(stem.len() - 2);
    } else if stem.ends_with('s') && !["ss", "us", "is"].iter().any(|end| stem.ends_with(end)) {
        stem.pop();
    }
    for ending in ["ing", "ed"] {
        if let Some(base) = stem.strip_suffix(ending).filter(|base| base.len() >= 3) {
            stem = base.to_owned();
            let bytes = stem.as_bytes();
            let doubled = bytes.len() >= 2
                && bytes[bytes.len() - 1] == bytes[bytes.len() - 2]
                && !b"lsz".contains(&bytes[bytes.len() - 1]);
            if doubled {
                stem.pop();
            }
            break;
        }
    }
    if stem.len() > 3 && stem.ends_with('e') {
        stem.pop();
    }
    stem
}

/// The edit distance of two words, a swap of neighbours counting as one edit (optimal string
/// alignment), giving up once it is past `limit`.
fn distance(a: &str, b: &str, limit: usize) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let mut previous2 = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        let mut row_min = current[0];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut value = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                value = value.min(previous2[j - 2] + 1);
            }
            current[j] = value;
            row_min = row_min.min(value);
        }
        if row_min > limit {
            return limit + 1;
        }
        std::mem::swap(&mut previous2, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// One document to index: its title, keywords and body.
pub struct Document<'a> {
    pub title: &'a str,
    pub keywords: &'a [String],
    pub body: &'a str,
}

/// The BM25F index of the guides.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// For each term, the documents holding it and how often, per field.
    postings: HashMap<String, Vec<(usize, [u32; 3])>>,
    /// Each document's length in terms, per field.
    lengths: Vec<[u32; 3]>,
    /// The average length of each field.
    average: [f64; 3],
}

impl Index {
    pub fn new(documents: &[Document<'_>]) -> Self {
        let mut postings: HashMap<String, Vec<(usize, [u32; 3])>> = HashMap::new();
        let mut lengths = Vec::with_capacity(documents.len());
        for (id, document) in documents.iter().enumerate() {
            let fields = [
                terms(document.title),
                terms(&document.keywords.join(" , ")),
                terms(document.body),
            ];
            let mut counts: HashMap<&str, [u32; 3]> = HashMap::new();
            for (field, words) in fields.iter().enumerate() {
                for word in words {
                    counts.entry(word.as_str()).or_default()[field] += 1;
                }
            }
            for (word, count) in counts {
                postings
                    .entry(word.to_owned())
                    .or_default()
                    .push((id, count));
            }
            lengths.push(fields.map(|words| words.len() as u32));
        }
        let total = documents.len().max(1) as f64;
        let average = [0, 1, 2].map(|field| {
            let sum: f64 = lengths.iter().map(|length| f64::from(length[field])).sum();
            (sum / total).max(1.0)
        });
        Self {
            postings,
            lengths,
            average,
        }
    }

    /// Every document's score for `query`, by document number; zero where nothing matches.
    /// Scores are in units of the rarest word's weight (a word only one document holds), so that
    /// one threshold means the same in a library of five guides and of five hundred: a question
    /// whose only rare word matches a guide's title and keywords scores a little under 1.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let mut scores = vec![0.0; self.lengths.len()];
        let documents = self.lengths.len() as f64;
        let mut seen: Vec<String> = Vec::new();
        for word in terms(query) {
            let Some((term, weight)) = self.resolve(&word) else {
                continue;
            };
            if seen.contains(&term) {
                continue;
            }
            let postings = &self.postings[&term];
            // How many guides are about the word: those naming it in their title or keywords,
            // and a quarter of those that only mention it in passing, so that "app", which many
            // steps mention, still picks out the guide about apps.
            let frequency: f64 = postings
                .iter()
                .map(|(_, counts)| if counts[0] + counts[1] > 0 { 1.0 } else { 0.25 })
                .sum();
            let idf = (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln();
            for (document, counts) in postings {
                let lengths = self.lengths[*document];
                let tf: f64 = FIELDS
                    .iter()
                    .enumerate()
                    .map(|(field, Field { weight, b })| {
                        let norm = 1.0 - b + b * f64::from(lengths[field]) / self.average[field];
                        weight * f64::from(counts[field]) / norm
                    })
                    .sum();
                scores[*document] += weight * idf * tf / (K1 + tf);
            }
            seen.push(term);
        }
        let unit = (1.0 + (documents - 0.5) / 1.5).ln();
        scores.iter().map(|score| score / unit).collect()
    }

    /// The indexed term a question's word stands for, and how sure that is: the word itself, or
    /// for a longer word no document holds, the most common term a slip or two away that starts
    /// with the same letter (a first letter is rarely the slip).
    fn resolve(&self, word: &str) -> Option<(String, f64)> {
        if self.postings.contains_key(word) {
            return Some((word.to_owned(), 1.0));
        }
        let length = word.chars().count();
        if length < TYPO_MIN_CHARS {
            return None;
        }
        let limit = if length >= TWO_TYPOS_MIN_CHARS { 2 } else { 1 };
        let first = word.chars().next()?;
        self.postings
            .iter()
            .filter(|(term, _)| term.starts_with(first) && term.chars().count() >= TYPO_MIN_CHARS)
            .filter_map(|(term, postings)| {
                let edits = distance(word, term, limit);
                (edits <= limit).then_some((edits, postings.len(), term))
            })
            .min_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(b.2)))
            .map(|(_, _, term)| (term.clone(), TYPO_WEIGHT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_drop_stop_words_join_spellings_and_cut_endings() {
        assert_eq!(terms("How do I attach my PICS?"), ["attach", "photo"]);
        assert_eq!(terms("i cant log in to my Wi-Fi"), ["signin", "wifi"]);
        assert_eq!(
            terms("printers printing printed"),
            ["printer", "print", "print"]
        );
        assert_eq!(terms("batteries battery"), ["battery", "battery"]);
        assert_eq!(
            terms("freezes freezing freeze"),
            ["freez", "freez", "freez"]
        );
        assert_eq!(terms("stopped stopping"), ["stop", "stop"]);
        assert_eq!(terms("it won't turn on"), ["turnon"]);
        assert_eq!(terms("windows 11 virus"), ["window", "11", "virus"]);
        assert!(terms("hello, thank you").is_empty());
    }

    #[test]
    fn the_distance_counts_a_swap_as_one_edit() {
        assert_eq!(distance("gmial", "gmail", 2), 1);
        assert_eq!(distance("pritner", "printer", 2), 1);
        assert_eq!(distance("blutooth", "bluetooth", 2), 1);
        assert_eq!(distance("email", "email", 2), 0);
        assert!(distance("bread", "printer", 2) > 2);
    }

    fn index() -> Index {
        let gmail = ["gmail".to_owned(), "password".to_owned()];
        let printer = ["printer".to_owned(), "offline".to_owned()];
        let both = ["password".to_owned(), "printer".to_owned()];
        Index::new(&[
            Document {
                title: "Can't sign in to Gmail",
                keywords: &gmail,
                body: "Reset the password.",
            },
            Document {
                title: "Printer says offline",
                keywords: &printer,
                body: "Turn the printer off and on.",
            },
            Document {
                title: "Printer passwords",
                keywords: &both,
                body: "Some printers have a password.",
            },
        ])
    }

    #[test]
    fn rarer_and_title_words_weigh_more() {
        let scores = index().scores("forgot my gmail password");
        assert!(scores[0] > scores[2] && scores[2] > 0.0, "{scores:?}");
        assert_eq!(scores[1], 0.0);
        let scores = index().scores("printer offline");
        assert!(scores[1] > scores[2], "{scores:?}");
    }

    #[test]
    fn a_long_enough_typo_meets_the_word_one_slip_away() {
        let scores = index().scores("gmial");
        assert!(scores[0] > 0.0, "{scores:?}");
        let scores = index().scores("pritner");
        assert!(scores[1] > 0.0, "{scores:?}");
        // Short words and other first letters are not corrected.
        assert!(index().scores("gmal").iter().all(|s| *s == 0.0));
        assert!(index().scores("frinter").iter().all(|s| *s == 0.0));
    }
}
