//! Sources: the tables chaja mirrors, as the config file names them.
//!
//! A source is one table of the site's own schema: its key, its creation
//! time, the text columns searched, an optional visibility predicate and
//! the columns kept with each hit as attributes. chaja changes nothing in
//! that table; `chaja install` adds triggers that record every change of a
//! row in chaja's outbox, and the indexer reads the row back (see
//! `db::rows`).
//!
//! ```toml
//! [[source]]
//! name = "question"                 # the hit's "type"
//! table = "question"
//! id = "id"
//! created_at = "created_at"         # DATETIME(6), TIMESTAMP, or epoch s/ms
//! fields = ["title", "body"]        # the first of two or more is the title
//! filter = "deleted_at IS NULL"     # rows that fail it are not searchable
//! attributes = ["member_id", "like_count", "category"]  # returned with hits, `attr.member_id=7`
//! numeric = ["like_count"]          # `attr.like_count.gte=10`, a number column
//! sortable = ["like_count"]         # `sort=attr.like_count.desc` (implies numeric)
//! facets = ["category"]             # `facets=category`: counts by value
//! ```
//!
//! With no `[[source]]` the built-in demo platform's two sources apply
//! (`demo::sources`, chosen by `app`). The index records the sources it was built for: a
//! source renamed or reordered under it is an error that says to reindex,
//! since a document's source is stored as its position in this list.

use std::path::Path;

use serde::Deserialize;

use crate::ConfigError;

/// At most this many sources: a document's source is 4 bits of its `uid`,
/// and per-source totals are a fixed array.
pub const MAX_SOURCES: usize = 16;

/// The config file. Only what is implemented is accepted: an unknown
/// section or key is an error at start, not a setting silently ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub synonyms: crate::synonyms::SynonymsSection,
    #[serde(default, rename = "source")]
    source: Vec<SourceConfig>,
    /// The `[[source]]` entries, checked; `None` when there are none.
    #[serde(skip)]
    pub sources: Option<Sources>,
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("reading {}: {e}", path.display())))?;
        ConfigFile::parse(&text).map_err(|e| ConfigError(format!("{}: {e}", path.display())))
    }

    pub fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        let mut file: ConfigFile = toml::from_str(text).map_err(|e| ConfigError(e.to_string()))?;
        if !file.source.is_empty() {
            file.sources =
                Some(Sources::new(std::mem::take(&mut file.source)).map_err(ConfigError)?);
        }
        Ok(file)
    }

    /// The file at `path`, or an empty one (no sources, no synonyms).
    pub fn load_or_default(path: Option<&Path>) -> Result<ConfigFile, ConfigError> {
        match path {
            Some(path) => ConfigFile::load(path),
            None => ConfigFile::parse(""),
        }
    }
}

/// One `[[source]]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceConfig {
    name: String,
    table: String,
    id: String,
    created_at: String,
    #[serde(default)]
    created_at_unit: Option<TimeUnit>,
    fields: Vec<String>,
    #[serde(default)]
    filter: Option<String>,
    #[serde(default)]
    attributes: Vec<String>,
    #[serde(default)]
    numeric: Vec<String>,
    #[serde(default)]
    facets: Vec<String>,
    #[serde(default)]
    sortable: Vec<String>,
    #[serde(default)]
    timezone: Option<String>,
}

/// How a `created_at` column holds time. Without `created_at_unit`, each
/// value says: text is a date and time, an integer below 10¹¹ counts
/// seconds (10¹¹ s is the year 5138) and a larger one milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum TimeUnit {
    #[serde(rename = "datetime")]
    DateTime,
    #[serde(rename = "s")]
    Seconds,
    #[serde(rename = "ms")]
    Milliseconds,
}

/// A checked source.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub table: String,
    pub id: String,
    pub created_at: String,
    pub time_unit: Option<TimeUnit>,
    /// With two or more, the first is the title and the rest the body; a
    /// single field is the body, and hits have no title.
    pub fields: Vec<String>,
    pub filter: Option<String>,
    pub attributes: Vec<String>,
    /// Attributes kept as numbers too, for ranges (`attr.<name>.gte`) and
    /// sorting; `sortable` ones are always among them.
    pub numeric: Vec<String>,
    /// Attributes counted by value (`facets=<name>`).
    pub facets: Vec<String>,
    /// Numeric attributes a search may be ordered by.
    pub sortable: Vec<String>,
    /// DATETIME values are local times here; UTC when `None`.
    pub timezone: Option<jiff::tz::TimeZone>,
}

impl Source {
    pub fn has_title(&self) -> bool {
        self.fields.len() >= 2
    }

    /// Every column the source reads, for checks and messages.
    pub fn columns(&self) -> impl Iterator<Item = &str> {
        [self.id.as_str(), self.created_at.as_str()]
            .into_iter()
            .chain(self.fields.iter().map(String::as_str))
            .chain(self.attributes.iter().map(String::as_str))
    }
}

/// A source's position in [`Sources`]: what the index stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceId(u8);

impl SourceId {
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    pub fn from_index(i: usize) -> SourceId {
        debug_assert!(i < MAX_SOURCES);
        SourceId(i as u8)
    }
}

/// The configured sources, in order; shared read-only by every layer.
#[derive(Debug, Clone)]
pub struct Sources {
    list: std::sync::Arc<Vec<Source>>,
}

impl Sources {
    fn new(configs: Vec<SourceConfig>) -> Result<Sources, String> {
        if configs.len() > MAX_SOURCES {
            return Err(format!("at most {MAX_SOURCES} [[source]] entries"));
        }
        let mut sources = Vec::with_capacity(configs.len());
        for c in configs {
            let source = check(c)?;
            if sources.iter().any(|s: &Source| s.name == source.name) {
                return Err(format!("two sources are named {:?}", source.name));
            }
            sources.push(source);
        }
        Ok(Sources {
            list: std::sync::Arc::new(sources),
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = &Source> {
        self.list.iter()
    }

    pub fn ids(&self) -> impl Iterator<Item = (SourceId, &Source)> {
        self.list
            .iter()
            .enumerate()
            .map(|(i, s)| (SourceId::from_index(i), s))
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn get(&self, id: SourceId) -> &Source {
        &self.list[id.index()]
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|s| s.name.as_str())
    }

    pub fn by_name(&self, name: &str) -> Option<SourceId> {
        self.list
            .iter()
            .position(|s| s.name == name)
            .map(SourceId::from_index)
    }

    /// Whether some source keeps attribute `name`.
    pub fn has_attribute(&self, name: &str) -> bool {
        self.list
            .iter()
            .any(|s| s.attributes.iter().any(|a| a == name))
    }

    /// Whether some source keeps attribute `name` as a number.
    pub fn is_numeric(&self, name: &str) -> bool {
        self.list
            .iter()
            .any(|s| s.numeric.iter().any(|a| a == name))
    }

    /// Whether some source counts attribute `name` by value.
    pub fn is_facet(&self, name: &str) -> bool {
        self.list.iter().any(|s| s.facets.iter().any(|a| a == name))
    }

    /// Whether some source lets searches be ordered by attribute `name`.
    pub fn is_sortable(&self, name: &str) -> bool {
        self.list
            .iter()
            .any(|s| s.sortable.iter().any(|a| a == name))
    }

    /// Every facet some source declares, in config order, once each: what
    /// the search page offers as chips.
    pub fn facet_names(&self) -> Vec<&str> {
        once_each(self.list.iter().flat_map(|s| &s.facets))
    }

    /// Every sortable attribute, in config order, once each.
    pub fn sortable_names(&self) -> Vec<&str> {
        once_each(self.list.iter().flat_map(|s| &s.sortable))
    }

    /// What an index built for these sources records, one line per source:
    /// a source's place in this list is stored in every document.
    pub fn stamp(&self) -> String {
        self.names().collect::<Vec<_>>().join("\n")
    }

    /// A fingerprint of what the sources read (tables, columns, filters,
    /// time zones): an index built under another one holds rows the
    /// current filter may hide, until a reindex.
    pub fn definition(&self) -> String {
        let text: Vec<String> = self
            .list
            .iter()
            .map(|s| {
                format!(
                    "{}|{}|{}|{}|{:?}|{}|{}|{}|{}|{}|{}",
                    s.name,
                    s.table,
                    s.id,
                    s.created_at,
                    s.time_unit,
                    s.fields.join(","),
                    s.filter.as_deref().unwrap_or(""),
                    s.attributes.join(","),
                    s.numeric.join(","),
                    s.facets.join(","),
                    s.timezone
                        .as_ref()
                        .and_then(|tz| tz.iana_name())
                        .unwrap_or("UTC")
                )
            })
            .collect();
        blake3::hash(text.join("\n").as_bytes()).to_hex()[..16].to_owned()
    }
}

/// The names in order, each at its first place only.
fn once_each<'a>(names: impl Iterator<Item = &'a String>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for name in names {
        if !out.contains(&name.as_str()) {
            out.push(name);
        }
    }
    out
}

/// Longest source name: `chaja_<name>_update` fits MySQL's 64.
const MAX_NAME_CHARS: usize = 51;

/// The filter is SQL from the operator's own file, pasted into `WHERE …
/// AND (filter)` of every load: it must be one condition that cannot close
/// those parentheses, end the statement or comment out the rest. A small
/// scan that skips quoted strings; the database checks the rest at
/// `install` (see `install::check_source`).
fn check_filter(filter: &str) -> Result<(), &'static str> {
    if filter.trim().is_empty() {
        return Err("empty");
    }
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut chars = filter.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            // MySQL's backslash escape, in strings only (not in `names`).
            if c == '\\' && q != '`' {
                chars.next();
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' | '`' => quote = Some(c),
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err("a ) closes more than it opened");
                }
            }
            ';' => return Err("no ; (one condition)"),
            '#' => return Err("no # comments"),
            '-' if chars.peek() == Some(&'-') => return Err("no -- comments"),
            '/' if chars.peek() == Some(&'*') => return Err("no /* comments */"),
            _ => {}
        }
    }
    if quote.is_some() {
        return Err("a quote is not closed");
    }
    if depth != 0 {
        return Err("a ( is not closed");
    }
    Ok(())
}

/// A plain SQL name: letters, digits and `_`, not starting with a digit.
/// Names are written into triggers and queries, so nothing else passes;
/// reserved words still work because every name is quoted where used.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.len() <= 64
}

fn check(c: SourceConfig) -> Result<Source, String> {
    let at = |what: &str| format!("[[source]] {:?}: {what}", c.name);
    // The name is the hit's `type`, a URL parameter, the outbox's
    // `entity_type`, and part of trigger names (`chaja_<name>_insert`,
    // which MySQL caps at 64 characters).
    if !is_identifier(&c.name) || c.name.len() > MAX_NAME_CHARS {
        return Err(at(&format!(
            "name must be 1 to {MAX_NAME_CHARS} letters, digits or _, not starting with a digit"
        )));
    }
    if c.name == "all" {
        return Err(at(
            "`all` means every source in `type=all`; pick another name",
        ));
    }
    for (what, column) in [
        ("table", &c.table),
        ("id", &c.id),
        ("created_at", &c.created_at),
    ] {
        if !is_identifier(column) {
            return Err(at(&format!("{what} {column:?} is not a plain SQL name")));
        }
    }
    if c.fields.is_empty() {
        return Err(at("fields must name at least one text column"));
    }
    for column in c.fields.iter().chain(&c.attributes) {
        if !is_identifier(column) {
            return Err(at(&format!("column {column:?} is not a plain SQL name")));
        }
    }
    if let Some(filter) = &c.filter {
        if let Err(problem) = check_filter(filter) {
            return Err(at(&format!("filter {filter:?}: {problem}")));
        }
    }
    for (what, names) in [
        ("numeric", &c.numeric),
        ("facets", &c.facets),
        ("sortable", &c.sortable),
    ] {
        if let Some(name) = names.iter().find(|n| !c.attributes.contains(n)) {
            return Err(at(&format!(
                "{what} names {name:?}, which is not in attributes"
            )));
        }
    }
    // Sortable implies numeric: a sort reads the number column.
    let mut numeric = c.numeric.clone();
    for name in &c.sortable {
        if !numeric.contains(name) {
            numeric.push(name.clone());
        }
    }
    let timezone = match &c.timezone {
        None => None,
        Some(name) => Some(
            jiff::tz::TimeZone::get(name)
                .map_err(|e| at(&format!("timezone {name:?} is not an IANA time zone: {e}")))?,
        ),
    };
    Ok(Source {
        name: c.name,
        table: c.table,
        id: c.id,
        created_at: c.created_at,
        time_unit: c.created_at_unit,
        fields: c.fields,
        filter: c.filter,
        attributes: c.attributes,
        numeric,
        facets: c.facets,
        sortable: c.sortable,
        timezone,
    })
}

/// Two small sources for unit tests (of every crate): `post` (title and body,
/// `author_id`) and `comment` (a body; `author_id`, `post_id`).
#[doc(hidden)]
pub fn for_tests() -> Sources {
    ConfigFile::parse(
        r#"
        [[source]]
        name = "post"
        table = "post"
        id = "id"
        created_at = "created_at"
        fields = ["title", "body"]
        attributes = ["author_id"]

        [[source]]
        name = "comment"
        table = "comment"
        id = "id"
        created_at = "created_at"
        fields = ["body"]
        attributes = ["author_id", "post_id"]
        "#,
    )
    .expect("valid")
    .sources
    .expect("two sources")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_source_means_none() {
        let file = ConfigFile::parse("[synonyms]\ngroups = [[\"a\", \"b\"]]").unwrap();
        assert!(file.sources.is_none());
    }

    #[test]
    fn filters_are_one_condition() {
        for good in [
            "deleted_at IS NULL AND status = 'PUBLIC'",
            "(a = 1 OR b = 2) AND c IN ('x;y', 'it''s')",
            "title <> '-- not a comment'",
        ] {
            assert_eq!(check_filter(good), Ok(()), "{good}");
        }
        for bad in [
            "x) OR (1=1",
            "1=1; DROP TABLE t",
            "a = 1 -- rest",
            "a = 1 /* */",
            "a = 1 # rest",
            "(a = 1",
            "a = 'open",
            " ",
        ] {
            assert!(check_filter(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sources_replace_the_demo() {
        let file = ConfigFile::parse(
            r#"
            [[source]]
            name = "post"
            table = "post"
            id = "id"
            created_at = "created_at"
            fields = ["title", "body"]
            filter = "deleted_at IS NULL"
            attributes = ["member_id"]
            timezone = "Asia/Seoul"
            "#,
        )
        .unwrap();
        let sources = file.sources.unwrap();
        let post = sources.get(sources.by_name("post").unwrap());
        assert!(post.has_title());
        assert!(post.timezone.is_some());
        assert!(sources.has_attribute("member_id"));
    }

    #[test]
    fn bad_sources_are_named_in_the_error() {
        let source = |extra: &str| {
            format!(
                "[[source]]\nname = \"post\"\ntable = \"post\"\nid = \"id\"\ncreated_at = \"c\"\nfields = [\"body\"]\n{extra}"
            )
        };
        let err_of = |text: &str| ConfigFile::parse(text).unwrap_err().to_string();
        let err = err_of(&source("attributes = [\"a; DROP TABLE x\"]"));
        assert!(
            err.contains("\"post\"") && err.contains("a; DROP TABLE x"),
            "{err}"
        );
        let err = err_of(&source("timezone = \"Mars/Olympus\""));
        assert!(err.contains("Mars/Olympus"), "{err}");
        let err = err_of(&source("filter = \"1); DELETE FROM post\""));
        assert!(err.contains("filter"), "{err}");
        let all = source("").replace("name = \"post\"", "name = \"all\"");
        assert!(err_of(&all).contains("all"));
        let long = source("").replace("post", &"p".repeat(52));
        assert!(ConfigFile::parse(&long).is_err());
        let twice = format!("{}\n{}", source(""), source(""));
        assert!(err_of(&twice).contains("two sources"));
        assert!(ConfigFile::parse(&source("colour = \"red\"")).is_err());
    }
}
