//! A Google Ads report, as the operator downloads it from the Google Ads UI, read into the costs
//! per day and campaign (or per day, campaign and keyword) the dashboard sets against revenue
//! (issue 52). Pure: bytes in, rows or the one error that names the line and column out.
//!
//! # The format
//!
//! What the UI's download (Reports, or a table's download button) writes, as found in public
//! parsers and fixtures of it (the `search` tool's code corpus, 2026):
//!
//! - Two lines before the header: the report's name ("Campaign report", "Search keyword
//!   report") and its date range, `"November 1, 2026 - November 30, 2026"`, quoted in a comma
//!   file because of its commas, the months sometimes short (`Aug 29, 2026 - Sep 27, 2026`).
//!   Fixtures of a Google Ads export builder (`"April 13, 2026 - April 13, 2026"` above
//!   `Device,Campaign ID,Campaign,Ad group ID,Ad group,Currency code,Cost,Impr.,...`, written
//!   `utf-8-sig`), a parser of the UI's search keyword report ("2 metadata lines before the
//!   header ... row 2's date-range line"), and a Google Ads skill's notes ("row 1 = title, row 2
//!   = date range, row 3 = headers").
//! - A header of the UI's own column names, in the order the operator chose: `Day`, `Campaign
//!   ID`, `Campaign`, `Clicks`, `Impr.`, `Cost`, `Currency code`, ...; a keyword report names
//!   the keyword `Keyword` (the 2026 UI) or `Search keyword` (before), its match type `Match
//!   type` or `Search keyword match type`, and may call clicks `Interactions`.
//! - Numbers as the UI shows them: thousands separators (`"1,234.56"`, `"12,345"`, quoted in a
//!   comma file), `--` for a value that is not there; costs with two decimals, in the account's
//!   currency, which the `Currency code` column names.
//! - `Total: Account`, `Total: Search`, `Total: Filtered campaigns` ... rows at the end, the
//!   label in the first column and no campaign.
//! - Encodings: `.csv` is UTF-8, often with a byte-order mark; "Excel .csv" is UTF-16 LE with a
//!   BOM and tab-separated (parsers of it: "That file is UTF-16LE, tab-delimited"; a test
//!   `test_excel_csv_is_utf16_tab_separated`). The `Day` column is `2026-09-01`, and in some
//!   downloads `Sep 2, 2026`. Keywords carry their match type's marks in some reports
//!   (`[exact]`, `"phrase"`, `+broad +modifier`).
//! - A download segmented by day can hold each campaign's own row without a day above its days.
//!
//! # What is read
//!
//! The columns needed: day, campaign ID, clicks, cost and currency (by the names above, in any
//! order, any case; others are ignored). A row: a day (`YYYY-MM-DD`, or the UI's `Nov 3, 2026`,
//! `November 3, 2026`, `Tuesday, November 3, 2026`), a campaign ID of digits, clicks a whole
//! number, a cost of at most two decimals (to cents exactly, no floats), in USD (the currency the
//! revenue is counted in). Total rows and rows without a day are skipped. A second row for the
//! same day and campaign (and, in a keyword report, the same keyword, ad group and match type) is
//! refused: summing it could count a cost twice. A keyword's rows of different ad groups or match
//! types are summed under the keyword as journeys know it ([`keyword_key`] of the keyword without
//! its marks). The file covers the days of its date-range line, else its first to its last day;
//! a row outside that line's days is refused.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::NaiveDate;

/// The currency the revenue is counted in: costs must be in it.
pub const CURRENCY: &str = "USD";

/// The largest cost one row may hold, in cents ($10 billion): past it a number is a mistake.
const MAX_CENTS: i64 = 1_000_000_000_000;

/// The most clicks one row may hold.
const MAX_CLICKS: u64 = 1_000_000_000_000;

/// Whether a report's costs are per campaign or per keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    Campaign,
    Keyword,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Campaign => "campaign",
            Level::Keyword => "keyword",
        }
    }
}

/// One day's clicks and cost of a campaign (or of one of its keywords).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostRow {
    pub day: NaiveDate,
    /// The campaign ID, digits.
    pub campaign: String,
    /// The keyword as journeys are matched by ([`keyword_key`]); empty for a campaign's row.
    pub keyword: String,
    pub clicks: u64,
    pub cost_cents: i64,
}

/// A report read whole: its level, the days it covers, and one row per day, campaign (and
/// keyword), in that order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostFile {
    pub level: Level,
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub rows: Vec<CostRow>,
}

impl CostFile {
    /// What the file's rows cost in all, in cents.
    pub fn cost_cents(&self) -> i64 {
        self.rows.iter().map(|row| row.cost_cents).sum()
    }

    /// How many campaigns it holds costs of.
    pub fn campaigns(&self) -> usize {
        self.rows
            .iter()
            .map(|row| row.campaign.as_str())
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// How many keywords (campaign and keyword pairs) it holds costs of.
    pub fn keywords(&self) -> usize {
        self.rows
            .iter()
            .filter(|row| !row.keyword.is_empty())
            .map(|row| (row.campaign.as_str(), row.keyword.as_str()))
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// How many days it covers (each of them is replaced when it is loaded).
    pub fn days(&self) -> i64 {
        (self.to - self.from).num_days() + 1
    }
}

/// Why a file cannot be loaded: its message names the line (`row`, 1 = the file's first line)
/// and the column (as the file names it) when there are such.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CostFileError {
    pub row: Option<u64>,
    pub column: Option<String>,
    pub message: String,
}

impl CostFileError {
    fn file(message: impl Into<String>) -> Self {
        Self {
            row: None,
            column: None,
            message: message.into(),
        }
    }

    fn row(row: u64, message: impl std::fmt::Display) -> Self {
        Self {
            row: Some(row),
            column: None,
            message: format!("Row {row}: {message}"),
        }
    }

    fn cell(row: u64, column: &str, message: impl std::fmt::Display) -> Self {
        Self {
            row: Some(row),
            column: Some(column.to_owned()),
            message: format!("Row {row}, column {column}: {message}"),
        }
    }
}

/// A keyword as costs and journeys are matched by: trimmed and lower-cased.
pub fn keyword_key(keyword: &str) -> String {
    keyword.trim().to_lowercase()
}

/// A keyword cell without its match type's marks: `[printer repair]`, `"printer repair"` and
/// `+printer +repair` are all `printer repair`.
pub fn keyword_text(cell: &str) -> String {
    let cell = cell.trim();
    let unwrapped = cell
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .or_else(|| {
            cell.strip_prefix('"')
                .and_then(|rest| rest.strip_suffix('"'))
        })
        .unwrap_or(cell);
    unwrapped
        .split_whitespace()
        .map(|word| word.strip_prefix('+').unwrap_or(word))
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The columns read, each by the names the export gives it (lower case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Day,
    CampaignId,
    Clicks,
    Cost,
    Currency,
    Keyword,
    MatchType,
    AdGroup,
    AdGroupId,
}

impl Column {
    const REQUIRED: [Column; 5] = [
        Column::Day,
        Column::CampaignId,
        Column::Clicks,
        Column::Cost,
        Column::Currency,
    ];

    /// The export's names for it, the preferred first.
    fn names(self) -> &'static [&'static str] {
        match self {
            Column::Day => &["day", "date"],
            Column::CampaignId => &["campaign id"],
            Column::Clicks => &["clicks", "interactions"],
            Column::Cost => &["cost"],
            Column::Currency => &["currency code", "currency"],
            Column::Keyword => &["keyword", "search keyword"],
            Column::MatchType => &["match type", "search keyword match type"],
            Column::AdGroup => &["ad group"],
            Column::AdGroupId => &["ad group id"],
        }
    }

    /// Its name in the export, for a message about a file without it.
    fn label(self) -> &'static str {
        match self {
            Column::Day => "Day",
            Column::CampaignId => "Campaign ID",
            Column::Clicks => "Clicks",
            Column::Cost => "Cost",
            Column::Currency => "Currency code",
            Column::Keyword => "Keyword",
            Column::MatchType => "Match type",
            Column::AdGroup => "Ad group",
            Column::AdGroupId => "Ad group ID",
        }
    }
}

/// Names a header holds besides the columns read (to tell the header from the lines above it).
const OTHER_NAMES: [&str; 7] = [
    "campaign",
    "impr.",
    "impressions",
    "ctr",
    "avg. cpc",
    "conversions",
    "campaign status",
];

/// The header: where each column read is (the first of its names found, by preference).
struct Header {
    names: Vec<String>,
    at: HashMap<usize, usize>,
}

impl Header {
    /// `record` as a header, when at least two of its cells are names the export uses.
    fn of(record: &csv::StringRecord) -> Option<Header> {
        let names: Vec<String> = record.iter().map(|name| name.trim().to_owned()).collect();
        let lower: Vec<String> = names.iter().map(|name| name.to_lowercase()).collect();
        let known = lower
            .iter()
            .filter(|name| {
                OTHER_NAMES.contains(&name.as_str())
                    || Column::REQUIRED
                        .iter()
                        .chain(&[Column::Keyword])
                        .any(|column| column.names().contains(&name.as_str()))
            })
            .count();
        if known < 2 {
            return None;
        }
        let mut at = HashMap::new();
        for (index, column) in ALL_COLUMNS.iter().enumerate() {
            let found = column
                .names()
                .iter()
                .find_map(|name| lower.iter().position(|cell| cell == name));
            if let Some(position) = found {
                at.insert(index, position);
            }
        }
        Some(Header { names, at })
    }

    fn position(&self, column: Column) -> Option<usize> {
        let index = ALL_COLUMNS.iter().position(|c| *c == column)?;
        self.at.get(&index).copied()
    }

    fn has(&self, column: Column) -> bool {
        self.position(column).is_some()
    }

    /// The column's name as the file writes it.
    fn name(&self, column: Column) -> &str {
        self.position(column)
            .and_then(|position| self.names.get(position))
            .map_or(column.label(), String::as_str)
    }

    /// The cell of `column` in `record`, trimmed ('' when the row is short).
    fn cell<'r>(&self, record: &'r csv::StringRecord, column: Column) -> &'r str {
        self.position(column)
            .and_then(|position| record.get(position))
            .map_or("", str::trim)
    }
}

const ALL_COLUMNS: [Column; 9] = [
    Column::Day,
    Column::CampaignId,
    Column::Clicks,
    Column::Cost,
    Column::Currency,
    Column::Keyword,
    Column::MatchType,
    Column::AdGroup,
    Column::AdGroupId,
];

/// The file's text: UTF-16 (with its byte-order mark, or LE without one) or UTF-8 (its mark
/// dropped).
fn decode(bytes: &[u8]) -> Result<String, CostFileError> {
    let not_text = || {
        CostFileError::file(
            "The file is not a CSV file. Download the report from Google Ads as CSV and upload that file.",
        )
    };
    let utf16 = |bytes: &[u8], little: bool| -> Result<String, CostFileError> {
        if !bytes.len().is_multiple_of(2) {
            return Err(not_text());
        }
        let units = bytes.chunks_exact(2).map(|pair| {
            if little {
                u16::from_le_bytes([pair[0], pair[1]])
            } else {
                u16::from_be_bytes([pair[0], pair[1]])
            }
        });
        char::decode_utf16(units)
            .collect::<Result<String, _>>()
            .map_err(|_| not_text())
    };
    let text = if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        utf16(rest, true)?
    } else if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        utf16(rest, false)?
    } else if bytes.len() >= 4 && bytes[0] != 0 && bytes[1] == 0 && bytes[3] == 0 {
        utf16(bytes, true)?
    } else {
        let bytes = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(bytes);
        String::from_utf8(bytes.to_vec()).map_err(|_| not_text())?
    };
    // One kind of line end: the CSV reader counts the lines after a CR LF one short.
    let text = text
        .strip_prefix('\u{feff}')
        .unwrap_or(&text)
        .replace("\r\n", "\n")
        .replace('\r', "\n");
    if text.contains('\0') {
        return Err(not_text());
    }
    Ok(text)
}

/// Tabs when the file's first lines hold them (the "Excel .csv" and `.tsv` downloads), else
/// commas.
fn delimiter(text: &str) -> u8 {
    let tabbed = text
        .lines()
        .take(20)
        .any(|line| line.matches('\t').count() >= 2);
    if tabbed { b'\t' } else { b',' }
}

/// A day as the export writes it: `2026-11-03`, `Nov 3, 2026`, `November 3, 2026` or
/// `Tuesday, November 3, 2026`.
fn parse_day(text: &str) -> Option<NaiveDate> {
    let text = text.trim();
    ["%Y-%m-%d", "%B %d, %Y", "%A, %B %d, %Y"]
        .iter()
        .find_map(|format| NaiveDate::parse_from_str(text, format).ok())
}

/// The date-range line's days: `November 1, 2026 - November 30, 2026` (either dash).
fn parse_range(line: &str) -> Option<(NaiveDate, NaiveDate)> {
    let line = line.trim().trim_matches('"').trim();
    let (from, to) = [" - ", " – ", " — "]
        .iter()
        .find_map(|dash| line.split_once(dash))?;
    let (from, to) = (parse_day(from)?, parse_day(to)?);
    (from <= to).then_some((from, to))
}

/// A whole number as the export writes it: digits, in groups of three with commas or not.
fn parse_whole(text: &str) -> Option<u64> {
    if text.contains(',') {
        let mut groups = text.split(',');
        let first = groups.next()?;
        let well_grouped = (1..=3).contains(&first.len())
            && first.bytes().all(|b| b.is_ascii_digit())
            && groups.all(|group| group.len() == 3 && group.bytes().all(|b| b.is_ascii_digit()));
        if !well_grouped {
            return None;
        }
        text.replace(',', "").parse().ok()
    } else if !text.is_empty() && text.len() <= 18 && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse().ok()
    } else {
        None
    }
}

/// A cost in cents: `1,234.56`, `12.5`, `7`; `--` is nothing (0).
fn parse_cents(text: &str) -> Option<i64> {
    if text == "--" {
        return Some(0);
    }
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (text, ""),
    };
    let dollars = i64::try_from(parse_whole(whole)?).ok()?;
    let cents = match fraction.len() {
        0 if !text.contains('.') => 0,
        1 | 2 if fraction.bytes().all(|b| b.is_ascii_digit()) => {
            let value: i64 = fraction.parse().ok()?;
            if fraction.len() == 1 {
                value * 10
            } else {
                value
            }
        }
        _ => return None,
    };
    let total = dollars.checked_mul(100)?.checked_add(cents)?;
    (total <= MAX_CENTS).then_some(total)
}

/// Clicks: a whole number; `--` is none.
fn parse_clicks(text: &str) -> Option<u64> {
    if text == "--" {
        return Some(0);
    }
    parse_whole(text).filter(|clicks| *clicks <= MAX_CLICKS)
}

/// Whether a row is one of the totals at the report's end: its label (`Total: Account`, ...)
/// and no campaign.
fn is_total(record: &csv::StringRecord, campaign: &str) -> bool {
    let labelled = record.iter().enumerate().any(|(index, cell)| {
        let cell = cell.trim().to_lowercase();
        cell.starts_with("total:") || (index == 0 && cell == "total")
    });
    labelled && (campaign.is_empty() || campaign == "--")
}

fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// Reads a Google Ads campaign (or keyword) report.
pub fn parse(bytes: &[u8]) -> Result<CostFile, CostFileError> {
    let text = decode(bytes)?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter(&text))
        .from_reader(text.as_bytes());
    let delimiter = char::from(delimiter(&text)).to_string();

    let mut header: Option<Header> = None;
    let mut range: Option<(NaiveDate, NaiveDate)> = None;
    let mut anything = false;
    // The rows as read, with their line, before they are summed per key.
    let mut read: Vec<(u64, CostRow)> = Vec::new();
    // Each row's identity (day, campaign, and for a keyword its text, ad group and match type),
    // with the line that first held it.
    let mut seen: HashMap<Vec<String>, u64> = HashMap::new();

    for record in reader.records() {
        let record = record.map_err(|error| {
            let line = error.position().map_or(0, csv::Position::line);
            CostFileError::row(line, "the line cannot be read as CSV.")
        })?;
        let line = record.position().map_or(0, csv::Position::line);
        if record.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        anything = true;
        let Some(header) = header.as_ref() else {
            if let Some(found) = Header::of(&record) {
                let missing: Vec<Column> = Column::REQUIRED
                    .into_iter()
                    .filter(|column| !found.has(*column))
                    .collect();
                if let Some(first) = missing.first() {
                    let names: Vec<&str> = missing.iter().map(|c| c.label()).collect();
                    let message = match names.as_slice() {
                        [one] => format!("the file has no column {one}."),
                        [rest @ .., last] => {
                            format!("the file has no columns {} and {last}.", rest.join(", "))
                        }
                        [] => unreachable!("missing is not empty"),
                    };
                    return Err(CostFileError {
                        column: Some(first.label().to_owned()),
                        ..CostFileError::row(line, message)
                    });
                }
                header = Some(found);
            } else if range.is_none() {
                // A line above the header: the report's name, or its date range.
                range = parse_range(&record.iter().collect::<Vec<_>>().join(&delimiter));
            }
            continue;
        };

        let campaign = header.cell(&record, Column::CampaignId);
        if is_total(&record, campaign) {
            continue;
        }
        let day_cell = header.cell(&record, Column::Day);
        if day_cell.is_empty() || day_cell == "--" {
            // A campaign's own row above its days, in a download segmented by day.
            continue;
        }
        let day = parse_day(day_cell).ok_or_else(|| {
            CostFileError::cell(
                line,
                header.name(Column::Day),
                format!("{} is not a day (YYYY-MM-DD).", quoted(day_cell)),
            )
        })?;
        if let Some((from, to)) = range
            && (day < from || day > to)
        {
            return Err(CostFileError::cell(
                line,
                header.name(Column::Day),
                format!("{day} is outside the report's dates, {from} to {to}."),
            ));
        }
        if campaign.is_empty()
            || campaign.len() > 20
            || !campaign.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(CostFileError::cell(
                line,
                header.name(Column::CampaignId),
                format!("{} is not a campaign ID (its digits).", quoted(campaign)),
            ));
        }
        let clicks_cell = header.cell(&record, Column::Clicks);
        let clicks = parse_clicks(clicks_cell).ok_or_else(|| {
            CostFileError::cell(
                line,
                header.name(Column::Clicks),
                format!("{} is not a number of clicks.", quoted(clicks_cell)),
            )
        })?;
        let cost_cell = header.cell(&record, Column::Cost);
        let cost_cents = parse_cents(cost_cell).ok_or_else(|| {
            CostFileError::cell(
                line,
                header.name(Column::Cost),
                format!("{} is not an amount.", quoted(cost_cell)),
            )
        })?;
        let currency = header.cell(&record, Column::Currency);
        if !currency.eq_ignore_ascii_case(CURRENCY) {
            let found = if currency.is_empty() {
                "nothing".to_owned()
            } else {
                currency.to_owned()
            };
            return Err(CostFileError::cell(
                line,
                header.name(Column::Currency),
                format!(
                    "costs must be in {CURRENCY}, the currency the revenue is counted in (found {found})."
                ),
            ));
        }
        let mut identity = vec![day.to_string(), campaign.to_owned()];
        let keyword = if header.has(Column::Keyword) {
            let cell = header.cell(&record, Column::Keyword);
            let key = keyword_key(&keyword_text(cell));
            if key.is_empty() || cell == "--" {
                return Err(CostFileError::cell(
                    line,
                    header.name(Column::Keyword),
                    "the keyword is missing.",
                ));
            }
            identity.extend([
                cell.to_lowercase(),
                header.cell(&record, Column::MatchType).to_lowercase(),
                header.cell(&record, Column::AdGroupId).to_owned(),
                header.cell(&record, Column::AdGroup).to_lowercase(),
            ]);
            key
        } else {
            String::new()
        };
        if let Some(first) = seen.get(&identity) {
            let what = if keyword.is_empty() {
                format!("the same day and campaign ({day}, {campaign})")
            } else {
                format!("the same day, campaign and keyword ({day}, {campaign}, {keyword})")
            };
            return Err(CostFileError {
                row: Some(line),
                column: None,
                message: format!(
                    "Rows {first} and {line} hold {what}. Download the report with one row per day and campaign{}.",
                    if keyword.is_empty() {
                        ""
                    } else {
                        " and keyword"
                    }
                ),
            });
        }
        seen.insert(identity, line);
        read.push((
            line,
            CostRow {
                day,
                campaign: campaign.to_owned(),
                keyword,
                clicks,
                cost_cents,
            },
        ));
    }

    let Some(header) = header else {
        return Err(if anything {
            CostFileError::file(
                "The file has no header with the columns Day, Campaign ID, Clicks, Cost and Currency code. Download the campaign report from Google Ads with these columns.",
            )
        } else {
            CostFileError::file("The file holds no costs.")
        });
    };
    if read.is_empty() {
        return Err(CostFileError::file("The file holds no costs."));
    }
    let level = if header.has(Column::Keyword) {
        Level::Keyword
    } else {
        Level::Campaign
    };
    let mut sums: BTreeMap<(NaiveDate, String, String), (u64, i64)> = BTreeMap::new();
    for (_, row) in &read {
        let sum = sums
            .entry((row.day, row.campaign.clone(), row.keyword.clone()))
            .or_default();
        sum.0 = sum.0.saturating_add(row.clicks);
        sum.1 = sum.1.saturating_add(row.cost_cents);
    }
    let (from, to) = range.unwrap_or_else(|| {
        let first = sums.keys().next().map(|key| key.0);
        let last = sums.keys().next_back().map(|key| key.0);
        match (first, last) {
            (Some(first), Some(last)) => (first, last),
            _ => unreachable!("there are rows"),
        }
    });
    let rows = sums
        .into_iter()
        .map(|((day, campaign, keyword), (clicks, cost_cents))| CostRow {
            day,
            campaign,
            keyword,
            clicks,
            cost_cents,
        })
        .collect();
    Ok(CostFile {
        level,
        from,
        to,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> NaiveDate {
        NaiveDate::parse_from_str(text, "%Y-%m-%d").expect("a day")
    }

    fn row(d: &str, campaign: &str, keyword: &str, clicks: u64, cost_cents: i64) -> CostRow {
        CostRow {
            day: day(d),
            campaign: campaign.to_owned(),
            keyword: keyword.to_owned(),
            clicks,
            cost_cents,
        }
    }

    fn error(text: &str) -> CostFileError {
        parse(text.as_bytes()).expect_err("the file is refused")
    }

    /// A campaign report as the UI's CSV download writes it.
    const CAMPAIGN_REPORT: &str = "\u{feff}Campaign report\r\n\
\"November 1, 2026 - November 30, 2026\"\r\n\
Day,Campaign ID,Campaign,Clicks,Impr.,Currency code,Cost\r\n\
2026-11-01,1234567890,\"Printers, US\",\"1,024\",\"12,345\",USD,\"1,234.56\"\r\n\
2026-11-01,2222222222,Email help,3,--,USD,0.5\r\n\
2026-11-02,1234567890,\"Printers, US\",7,90,USD,12\r\n\
Total: Account,--,--,\"1,034\",\"12,435\",USD,\"1,247.06\"\r\n\
Total: Search,--,--,\"1,034\",\"12,435\",USD,\"1,247.06\"\r\n";

    #[test]
    fn a_campaign_report_as_downloaded_reads_to_cents_per_day_and_campaign() {
        let file = parse(CAMPAIGN_REPORT.as_bytes()).expect("reads");
        assert_eq!(file.level, Level::Campaign);
        assert_eq!((file.from, file.to), (day("2026-11-01"), day("2026-11-30")));
        assert_eq!(
            file.rows,
            [
                row("2026-11-01", "1234567890", "", 1024, 123_456),
                row("2026-11-01", "2222222222", "", 3, 50),
                row("2026-11-02", "1234567890", "", 7, 1200),
            ]
        );
        assert_eq!(file.cost_cents(), 124_706);
        assert_eq!((file.campaigns(), file.days()), (2, 30));
    }

    #[test]
    fn excel_csv_is_utf16_and_tab_separated() {
        let text = "Campaign report\n\
Nov 1, 2026 - Nov 3, 2026\n\
Campaign ID\tDay\tCost\tClicks\tCurrency code\n\
99\tNov 2, 2026\t1,000.10\t5\tUSD\n\
Total: Account\t\t1,000.10\t5\tUSD\n";
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        let file = parse(&bytes).expect("reads");
        assert_eq!((file.from, file.to), (day("2026-11-01"), day("2026-11-03")));
        assert_eq!(file.rows, [row("2026-11-02", "99", "", 5, 100_010)]);
    }

    #[test]
    fn without_a_date_range_the_file_covers_its_first_to_its_last_day() {
        let file = parse(
            b"Day,Campaign ID,Clicks,Cost,Currency code\n2026-11-05,1,1,1.00,USD\n2026-11-03,1,1,1.00,usd\n",
        )
        .expect("reads");
        assert_eq!((file.from, file.to), (day("2026-11-03"), day("2026-11-05")));
        assert_eq!(file.days(), 3);
    }

    #[test]
    fn a_bad_cell_is_named_by_its_line_and_column() {
        let bad = CAMPAIGN_REPORT.replace("7,90,USD,12", "7,90,USD,\"12,3x\"");
        let refused = error(&bad);
        assert_eq!(
            refused.message,
            "Row 6, column Cost: \"12,3x\" is not an amount."
        );
        assert_eq!(
            (refused.row, refused.column.as_deref()),
            (Some(6), Some("Cost"))
        );
        for (cell, message) in [
            ("12.345", "Row 6, column Cost: \"12.345\" is not an amount."),
            ("-3.00", "Row 6, column Cost: \"-3.00\" is not an amount."),
            (
                "1,23.00",
                "Row 6, column Cost: \"1,23.00\" is not an amount.",
            ),
            ("", "Row 6, column Cost: \"\" is not an amount."),
        ] {
            let bad = CAMPAIGN_REPORT.replace("7,90,USD,12", &format!("7,90,USD,\"{cell}\""));
            assert_eq!(error(&bad).message, message);
        }
        let bad = CAMPAIGN_REPORT.replace("2026-11-02,", "2026-11-31,");
        assert_eq!(
            error(&bad).message,
            "Row 6, column Day: \"2026-11-31\" is not a day (YYYY-MM-DD)."
        );
        let bad = CAMPAIGN_REPORT.replace("2026-11-02,", "2026-12-02,");
        assert_eq!(
            error(&bad).message,
            "Row 6, column Day: 2026-12-02 is outside the report's dates, 2026-11-01 to 2026-11-30."
        );
        let bad = CAMPAIGN_REPORT.replace("2026-11-02,1234567890", "2026-11-02,c-12");
        assert_eq!(
            error(&bad).message,
            "Row 6, column Campaign ID: \"c-12\" is not a campaign ID (its digits)."
        );
        let bad = CAMPAIGN_REPORT.replace("7,90", "7.5,90");
        assert_eq!(
            error(&bad).message,
            "Row 6, column Clicks: \"7.5\" is not a number of clicks."
        );
    }

    #[test]
    fn costs_must_be_in_dollars() {
        let bad = CAMPAIGN_REPORT.replace("7,90,USD", "7,90,EUR");
        let refused = error(&bad);
        assert_eq!(
            refused.message,
            "Row 6, column Currency code: costs must be in USD, the currency the revenue is counted in (found EUR)."
        );
        assert_eq!(refused.column.as_deref(), Some("Currency code"));
    }

    #[test]
    fn a_missing_column_is_named_on_the_header_line() {
        let refused = error(
            "Campaign report\n\"November 1, 2026 - November 30, 2026\"\nDay,Campaign ID,Clicks,Currency code\n",
        );
        assert_eq!(refused.message, "Row 3: the file has no column Cost.");
        assert_eq!(
            (refused.row, refused.column.as_deref()),
            (Some(3), Some("Cost"))
        );
        assert_eq!(
            error("Day,Campaign,Clicks\n2026-11-01,x,1\n").message,
            "Row 1: the file has no columns Campaign ID, Cost and Currency code."
        );
        assert!(
            error("just some text\nand more\n")
                .message
                .starts_with("The file has no header with the columns Day, Campaign ID")
        );
    }

    #[test]
    fn a_file_without_rows_holds_no_costs() {
        for text in [
            "",
            "\u{feff}",
            "Campaign report\n\"November 1, 2026 - November 30, 2026\"\nDay,Campaign ID,Clicks,Cost,Currency code\nTotal: Account,--,0,0.00,USD\n",
        ] {
            assert_eq!(error(text).message, "The file holds no costs.");
        }
        assert!(
            parse(&[0x50, 0x4B, 0x03, 0x04, 0xFF, 0x00, 0x00, 0x9C])
                .expect_err("a spreadsheet is no CSV")
                .message
                .starts_with("The file is not a CSV file.")
        );
    }

    #[test]
    fn a_second_row_for_the_same_day_and_campaign_is_refused() {
        let bad = CAMPAIGN_REPORT.replace(
            "2026-11-02,1234567890,\"Printers, US\",7,90,USD,12",
            "2026-11-01,1234567890,\"Printers, US\",7,90,USD,12",
        );
        let refused = error(&bad);
        assert_eq!(
            refused.message,
            "Rows 4 and 6 hold the same day and campaign (2026-11-01, 1234567890). Download the report with one row per day and campaign."
        );
        assert_eq!(refused.row, Some(6));
    }

    #[test]
    fn a_keyword_report_gives_keyword_rows_without_match_marks() {
        let text = "Search keyword report\n\
\"November 1, 2026 - November 2, 2026\"\n\
Keyword status,Keyword,Match type,Campaign,Campaign ID,Ad group,Day,Currency code,Interactions,Cost\n\
Enabled,[Printer Repair],Exact match,Printers,55,Repair,2026-11-01,USD,2,3.00\n\
Enabled,\"\"\"printer repair\"\"\",Phrase match,Printers,55,Repair,2026-11-01,USD,1,1.50\n\
Enabled,+fix +printer,Broad match,Printers,55,Fix,2026-11-02,USD,\"1,000\",\"2,000.00\"\n\
Total: Account,,,,,,,USD,\"1,003\",\"2,004.50\"\n";
        let file = parse(text.as_bytes()).expect("reads");
        assert_eq!(file.level, Level::Keyword);
        assert_eq!(
            file.rows,
            [
                row("2026-11-01", "55", "printer repair", 3, 450),
                row("2026-11-02", "55", "fix printer", 1000, 200_000),
            ]
        );
        assert_eq!((file.campaigns(), file.keywords()), (1, 2));
        let twice = text.replace(
            "+fix +printer,Broad match,Printers,55,Fix,2026-11-02",
            "[Printer Repair],Exact match,Printers,55,Repair,2026-11-01",
        );
        assert_eq!(
            error(&twice).message,
            "Rows 4 and 6 hold the same day, campaign and keyword (2026-11-01, 55, printer repair). Download the report with one row per day and campaign and keyword."
        );
    }

    #[test]
    fn rows_without_a_day_are_a_campaigns_own_total_and_skipped() {
        let file = parse(
            b"Campaign ID,Day,Clicks,Cost,Currency code\n7,,9,9.00,USD\n7,2026-11-01,4,4.00,USD\n7,2026-11-02,5,5.00,USD\n",
        )
        .expect("reads");
        assert_eq!(file.cost_cents(), 900);
        assert_eq!(file.rows.len(), 2);
    }

    #[test]
    fn days_and_ranges_read_in_the_exports_forms() {
        for text in [
            "2026-11-03",
            "Nov 3, 2026",
            "November 3, 2026",
            "Tuesday, November 3, 2026",
        ] {
            assert_eq!(parse_day(text), Some(day("2026-11-03")), "{text}");
        }
        assert_eq!(parse_day("11/03/2026"), None);
        assert_eq!(
            parse_range("\"Aug 29, 2026 - Sep 27, 2026\""),
            Some((day("2026-08-29"), day("2026-09-27")))
        );
        assert_eq!(parse_range("Campaign report"), None);
        assert_eq!(parse_range("All time"), None);
    }

    #[test]
    fn amounts_are_exact_cents() {
        for (text, cents) in [
            ("0", Some(0)),
            ("0.01", Some(1)),
            ("0.1", Some(10)),
            ("1,234,567.89", Some(123_456_789)),
            ("--", Some(0)),
            ("1.", None),
            (".5", None),
            ("1,2345.00", None),
            ("1 234.00", None),
            ("$5", None),
            ("99999999999999999", None),
        ] {
            assert_eq!(parse_cents(text), cents, "{text}");
        }
        assert_eq!(parse_clicks("12,345"), Some(12_345));
        assert_eq!(parse_clicks("12,34"), None);
    }

    #[test]
    fn keywords_lose_their_match_marks() {
        assert_eq!(keyword_text("[printer repair]"), "printer repair");
        assert_eq!(keyword_text("\"printer repair\""), "printer repair");
        assert_eq!(keyword_text("+printer +repair"), "printer repair");
        assert_eq!(keyword_text("  printer   repair "), "printer repair");
        assert_eq!(
            keyword_key(&keyword_text("[Printer Repair]")),
            "printer repair"
        );
    }
}
