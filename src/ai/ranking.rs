//! The help library's ranking: Okapi BM25F over three fields of each guide (title, keywords and
//! body, the first two weighing more), after the light normalisation that real typing needs.
//!
//! A question and a guide go through the same [`words`]: lower case, apostrophes dropped ("can't"
//! is "cant"), split into words, a few two-word spellings joined ("wi fi", "log in", "screen
//! shot"), a small synonym table ("pics" is "photo", "laptop" is "computer"), stop words dropped
//! ("my", "i", "cant", "how", "do"), and plural and verb endings cut ("printers", "printing" and
//! "printed" all meet as "print"). Common misspellings have a table ("emial", "intrenet"); beyond
//! it, a question's word of five letters or more that no guide uses counts as the guide word, as
//! typed, one typing slip away ("gmaill" is "gmail", "speakr" is "speaker").
//!
//! On top of BM25F, a guide's keyword of several words said in order in the question adds to its
//! score, and the score is scaled by the share of the question's words the guide holds, so that
//! one shared word ("last" in "who won the football last night") does not pick a guide.
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
/// What a guide's keyword of several words said in order adds, per further word, in units of
/// a rare word's weight ([`Index::scores`]).
const PHRASE_WEIGHT: f64 = 0.25;
/// A guide's score is scaled by the share of the question's words it holds, to this power: a
/// question that matches a guide by one word out of four ("who won the football last night")
/// is not about it, while a question with one unknown word ("my phone goes flat by
/// lunchtime") still is.
const COVERAGE_EXPONENT: f64 = 0.75;
/// A word only in a guide's body covers this much of a question; in its title or keywords, all.
const BODY_MATCH_SHARE: f64 = 0.5;

/// Words that say nothing about which guide fits: pronouns, question words, helpers, words of
/// judgement and time ("bad", "today"), and the "can't", "won't" and "not" of every problem.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "after",
    "again",
    "all",
    "also",
    "always",
    "am",
    "an",
    "and",
    "any",
    "anybody",
    "anymore",
    "anyone",
    "anything",
    "are",
    "arent",
    "as",
    "at",
    "bad",
    "be",
    "been",
    "being",
    "best",
    "better",
    "but",
    "by",
    "came",
    "can",
    "cannot",
    "cant",
    "come",
    "comes",
    "coming",
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
    "go",
    "goes",
    "going",
    "gone",
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
    "lot",
    "lots",
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
    "ok",
    "okay",
    "on",
    "onto",
    "or",
    "our",
    "out",
    "please",
    "pls",
    "plz",
    "really",
    "she",
    "should",
    "so",
    "some",
    "someone",
    "something",
    "sometimes",
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
    "today",
    "tonight",
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
    "went",
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
    "yesterday",
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
    ("signing", "in", "signin"),
    ("i", "phone", "iphone"),
    ("i", "pad", "ipad"),
    ("mac", "book", "macbook"),
    ("apple", "id", "appleid"),
    ("micro", "phone", "microphone"),
    ("web", "cam", "webcam"),
    ("down", "load", "download"),
    ("up", "date", "update"),
    ("zoom", "in", "zoomin"),
    ("zoom", "out", "zoomin"),
    ("cant", "remember", "forgot"),
    ("dont", "remember", "forgot"),
    ("turn", "on", "turnon"),
    ("switch", "on", "turnon"),
    ("power", "on", "turnon"),
    // Not receiving: "get" and "come" alone say nothing, and "not" is a stop word.
    ("not", "getting", "receive"),
    ("not", "get", "receive"),
    ("not", "got", "receive"),
    ("didnt", "get", "receive"),
    ("dont", "get", "receive"),
    ("doesnt", "get", "receive"),
    ("never", "get", "receive"),
    ("never", "got", "receive"),
    ("never", "gets", "receive"),
    ("havent", "got", "receive"),
    ("stopped", "getting", "receive"),
    ("never", "came", "receive"),
    ("never", "come", "receive"),
    ("never", "comes", "receive"),
    ("not", "coming", "receive"),
    ("isnt", "coming", "receive"),
    ("arent", "coming", "receive"),
    ("stopped", "coming", "receive"),
    ("never", "arrived", "receive"),
];

/// Common misspellings that the one-slip reading cannot reach (short words, a wrong first
/// letter, two slips in a short word), and the most common ones for certainty. Read like
/// [`SYNONYMS`], on guides and questions alike.
const MISSPELLINGS: &[(&str, &str)] = &[
    ("emial", "email"),
    ("emal", "email"),
    ("emai", "email"),
    ("emaill", "email"),
    ("gmial", "gmail"),
    ("gmai", "gmail"),
    ("gmal", "gmail"),
    ("gamil", "gmail"),
    ("hotmial", "hotmail"),
    ("hotmal", "hotmail"),
    ("yaho", "yahoo"),
    ("yahooo", "yahoo"),
    ("yahho", "yahoo"),
    ("outlok", "outlook"),
    ("icoud", "icloud"),
    ("iclod", "icloud"),
    ("intrenet", "internet"),
    ("interent", "internet"),
    ("internt", "internet"),
    ("intenet", "internet"),
    ("inernet", "internet"),
    ("interet", "internet"),
    ("wify", "wifi"),
    ("wiffi", "wifi"),
    ("wiifi", "wifi"),
    ("wfi", "wifi"),
    ("wifii", "wifi"),
    ("pasword", "password"),
    ("passwrd", "password"),
    ("passward", "password"),
    ("paswrd", "password"),
    ("passowrd", "password"),
    ("pssword", "password"),
    ("printr", "printer"),
    ("prnter", "printer"),
    ("priner", "printer"),
    ("pinter", "printer"),
    ("pritner", "printer"),
    ("computor", "computer"),
    ("compter", "computer"),
    ("comptuer", "computer"),
    ("facbook", "facebook"),
    ("facebok", "facebook"),
    ("fbook", "facebook"),
    ("whatapp", "whatsapp"),
    ("whatsap", "whatsapp"),
    ("watsapp", "whatsapp"),
    ("whatsup", "whatsapp"),
    ("watsap", "whatsapp"),
    ("ipone", "iphone"),
    ("iphon", "iphone"),
    ("andriod", "android"),
    ("andorid", "android"),
    ("samsumg", "samsung"),
    ("blutooth", "bluetooth"),
    ("bluetoth", "bluetooth"),
    ("batery", "battery"),
    ("battary", "battery"),
    ("battrey", "battery"),
    ("vidio", "video"),
    ("vedio", "video"),
    ("viedo", "video"),
    ("contcat", "contact"),
    ("dowload", "download"),
    ("donwload", "download"),
    ("downlaod", "download"),
    ("instal", "install"),
    ("updte", "update"),
    ("upate", "update"),
    ("udpate", "update"),
    ("screenshoot", "screenshot"),
    ("attatch", "attach"),
    ("atach", "attach"),
    ("attch", "attach"),
    ("attachement", "attachment"),
    ("unsubcribe", "unsubscribe"),
    ("unsuscribe", "unsubscribe"),
    ("phising", "phishing"),
    ("hacket", "hacked"),
    ("haked", "hacked"),
    ("scaning", "scanning"),
    ("bakup", "backup"),
    ("zomm", "zoom"),
    ("messanger", "messenger"),
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
    ("utube", "youtube"),
    ("popups", "popup"),
    ("screenshots", "screenshot"),
    ("backups", "backup"),
    ("firestick", "firestick"),
    ("setup", "setup"),
    // Receiving ("not getting" is joined above; "get" alone says nothing).
    ("receiving", "receive"),
    ("received", "receive"),
    ("receives", "receive"),
    ("recieve", "receive"),
    ("recieving", "receive"),
    ("arrive", "receive"),
    ("arriving", "receive"),
    ("arrived", "receive"),
    // Sound.
    ("audio", "sound"),
    ("sounds", "sound"),
    // Calling.
    ("rang", "call"),
    ("phoned", "call"),
    // Slowness.
    ("slower", "slow"),
    ("slowly", "slow"),
    ("slowest", "slow"),
    ("vid", "video"),
    ("vids", "video"),
    ("forgotten", "forgot"),
    ("forget", "forgot"),
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
#[cfg(test)]
fn terms(text: &str) -> Vec<String> {
    words(text).into_iter().map(|word| word.term).collect()
}

/// A word of a text as typed (after joining, the synonym table and stop words) and its term
/// (the word with its ending cut). A typo is looked up by the typed word, which is closer to
/// how the guides spell theirs than its cut term ("updte" is one slip from "update", but its
/// term "updt" is two from "updat").
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    typed: String,
    term: String,
}

fn words(text: &str) -> Vec<Word> {
    let lowered: String = text
        .to_lowercase()
        .chars()
        .filter(|c| !matches!(c, '\'' | '’' | '‘' | '`'))
        .collect();
    let raw: Vec<&str> = lowered
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    let mut words = Vec::with_capacity(raw.len());
    let mut index = 0;
    while index < raw.len() {
        let joined = raw.get(index + 1).and_then(|next| {
            JOINED
                .iter()
                .find(|(first, second, _)| *first == raw[index] && second == next)
                .map(|(_, _, joined)| *joined)
        });
        let word = match joined {
            Some(joined) => {
                index += 2;
                joined
            }
            None => {
                index += 1;
                raw[index - 1]
            }
        };
        let word = MISSPELLINGS
            .iter()
            .chain(SYNONYMS)
            .find(|(from, _)| *from == word)
            .map_or(word, |(_, to)| *to);
        if STOP_WORDS.contains(&word) {
            continue;
        }
        words.push(Word {
            typed: word.to_owned(),
            term: stem(word),
        });
    }
    words
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
    /// Every word the documents use as typed, long enough for a typo to be read as it, with its
    /// term.
    vocabulary: HashMap<String, String>,
    /// Each document's keywords of two terms or more ("printer offline", "zoom call"), as terms.
    phrases: Vec<Vec<Vec<String>>>,
}

impl Index {
    pub fn new(documents: &[Document<'_>]) -> Self {
        let mut postings: HashMap<String, Vec<(usize, [u32; 3])>> = HashMap::new();
        let mut lengths = Vec::with_capacity(documents.len());
        let mut vocabulary = HashMap::new();
        let mut phrases = Vec::with_capacity(documents.len());
        for (id, document) in documents.iter().enumerate() {
            let keywords: Vec<Vec<Word>> = document.keywords.iter().map(|k| words(k)).collect();
            phrases.push(
                keywords
                    .iter()
                    .filter(|keyword| keyword.len() >= 2)
                    .map(|keyword| keyword.iter().map(|word| word.term.clone()).collect())
                    .collect(),
            );
            let fields = [
                words(document.title),
                keywords.into_iter().flatten().collect(),
                words(document.body),
            ];
            let mut counts: HashMap<&str, [u32; 3]> = HashMap::new();
            for (field, words) in fields.iter().enumerate() {
                for word in words {
                    counts.entry(word.term.as_str()).or_default()[field] += 1;
                    if word.typed.chars().count() >= TYPO_MIN_CHARS {
                        vocabulary
                            .entry(word.typed.clone())
                            .or_insert_with(|| word.term.clone());
                    }
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
            vocabulary,
            phrases,
        }
    }

    /// Every document's score for `query`, by document number; zero where nothing matches.
    /// Scores are in units of the rarest word's weight (a word only one document holds), so that
    /// one threshold means the same in a library of five guides and of five hundred: a question
    /// whose only rare word matches a guide's title and keywords scores a little under 1.
    ///
    /// A guide whose keyword of several words the question says in order ("my emails keep
    /// going in spam" for "emails in spam") gets [`PHRASE_WEIGHT`] more per further word of its
    /// longest such keyword: the words together say more than each alone. Last, the score is
    /// scaled by how much of the question the guide covers ([`COVERAGE_EXPONENT`]).
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let mut scores = vec![0.0; self.lengths.len()];
        let documents = self.lengths.len() as f64;
        let query = words(query);
        let resolved: Vec<(String, f64)> =
            query.iter().filter_map(|word| self.resolve(word)).collect();
        // How many different words the question says, known to the guides or not.
        let mut said: Vec<&str> = query.iter().map(|word| word.term.as_str()).collect();
        said.sort_unstable();
        said.dedup();
        // How much of the question each document covers: one for a word in its title or
        // keywords, [`BODY_MATCH_SHARE`] for a word only in its body.
        let mut matched = vec![0.0_f64; self.lengths.len()];
        let mut seen: Vec<&str> = Vec::new();
        for (term, weight) in &resolved {
            if seen.contains(&term.as_str()) {
                continue;
            }
            seen.push(term);
            let postings = &self.postings[term];
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
                matched[*document] += if counts[0] + counts[1] > 0 {
                    1.0
                } else {
                    BODY_MATCH_SHARE
                };
            }
        }
        let unit = (1.0 + (documents - 0.5) / 1.5).ln();
        let terms: Vec<&str> = resolved.iter().map(|(term, _)| term.as_str()).collect();
        scores
            .iter()
            .zip(&self.phrases)
            .zip(&matched)
            .map(|((score, phrases), matched)| {
                if *matched == 0.0 {
                    return 0.0;
                }
                let longest = phrases
                    .iter()
                    .filter(|phrase| said_in_order(&terms, phrase))
                    .map(Vec::len)
                    .max()
                    .unwrap_or(1);
                let coverage =
                    (*matched / (said.len() as f64).max(*matched)).powf(COVERAGE_EXPONENT);
                (score / unit + PHRASE_WEIGHT * (longest - 1) as f64) * coverage
            })
            .collect()
    }

    /// The indexed term a question's word stands for, and how sure that is: the word's own
    /// term, or for a longer word no document uses, the term of the word a slip or two away
    /// that starts with the same letter (a first letter is rarely the slip). Among equally near
    /// words, a longer one wins (a letter left out is the commonest slip: "printr" is
    /// "printer", not "print"), then the most common.
    fn resolve(&self, word: &Word) -> Option<(String, f64)> {
        if self.postings.contains_key(&word.term) {
            return Some((word.term.clone(), 1.0));
        }
        let length = word.typed.chars().count();
        if length < TYPO_MIN_CHARS {
            return None;
        }
        let limit = if length >= TWO_TYPOS_MIN_CHARS { 2 } else { 1 };
        let first = word.typed.chars().next()?;
        self.vocabulary
            .iter()
            .filter(|(typed, _)| typed.starts_with(first))
            .filter_map(|(typed, term)| {
                let edits = distance(&word.typed, typed, limit);
                let shorter = typed.chars().count() < length;
                (edits <= limit).then(|| (edits, shorter, self.postings[term].len(), typed, term))
            })
            .min_by(|a, b| {
                (a.0.cmp(&b.0))
                    .then(a.1.cmp(&b.1))
                    .then(b.2.cmp(&a.2))
                    .then(a.3.cmp(b.3))
            })
            .map(|(_, _, _, _, term)| (term.clone(), TYPO_WEIGHT))
    }
}

/// Whether `query` says the terms of `phrase` in order, with at most one other term between
/// two of them ("emails keep going to spam" says "going to spam").
fn said_in_order(query: &[&str], phrase: &[String]) -> bool {
    (0..query.len()).any(|start| {
        let mut position = start;
        for (index, term) in phrase.iter().enumerate() {
            let window = if index == 0 { 1 } else { 2 };
            match (position..(position + window).min(query.len())).find(|&at| query[at] == term) {
                Some(at) => position = at + 1,
                None => return false,
            }
        }
        true
    })
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
        assert_eq!(terms("not getting my emial"), ["receiv", "email"]);
        assert_eq!(terms("it never came"), ["receiv"]);
        assert_eq!(terms("my apple id"), ["appleid"]);
        assert_eq!(terms("zoom in on zoom"), ["zoomin", "zoom"]);
        assert_eq!(terms("i cant remember my pasword"), ["forgot", "password"]);
        assert_eq!(terms("no audio, getting slower"), ["sound", "slow"]);
    }

    #[test]
    fn a_phrase_is_said_in_order_with_at_most_one_word_between() {
        let phrase = ["email".to_owned(), "spam".to_owned()];
        assert!(said_in_order(&["email", "spam"], &phrase));
        assert!(said_in_order(&["email", "keep", "spam"], &phrase));
        assert!(!said_in_order(&["email", "keep", "land", "spam"], &phrase));
        assert!(!said_in_order(&["spam", "email"], &phrase));
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
        assert!(index().scores("gmil").iter().all(|s| *s == 0.0));
        assert!(index().scores("frinter").iter().all(|s| *s == 0.0));
    }

    fn two_guides(first: &str, second: &str) -> Index {
        let none: [String; 0] = [];
        Index::new(&[
            Document {
                title: first,
                keywords: &none,
                body: "",
            },
            Document {
                title: second,
                keywords: &none,
                body: "",
            },
        ])
    }

    #[test]
    fn a_typo_is_read_as_the_longer_of_two_equally_near_words_as_typed() {
        // "speakr" is one slip from both; a letter left out is the likelier slip.
        let scores = two_guides("Speak to it", "Speaker broken").scores("speakr");
        assert!(scores[1] > scores[0], "{scores:?}");
        // "hacekd" is one swap from the typed "hacked", two edits from its term "hack".
        let scores = two_guides("Account hacked", "Printer offline").scores("hacekd");
        assert!(scores[0] > 0.0, "{scores:?}");
    }

    #[test]
    fn a_guide_matching_one_word_of_many_scores_less() {
        let index = two_guides("Gmail password", "Printer offline");
        let alone = index.scores("gmail")[0];
        let among = index.scores("gmail football cricket rugby")[0];
        assert!(among < alone * 0.5, "{among} {alone}");
    }

    #[test]
    fn a_keyword_said_as_a_phrase_weighs_more_than_its_words_apart() {
        let spam = ["emails in spam".to_owned()];
        let none: [String; 0] = [];
        let index = Index::new(&[
            Document {
                title: "Missing emails",
                keywords: &spam,
                body: "",
            },
            Document {
                title: "Spam emails",
                keywords: &none,
                body: "",
            },
        ]);
        let scores = index.scores("my emails keep going to spam");
        assert!(scores[0] > scores[1], "{scores:?}");
    }
}
