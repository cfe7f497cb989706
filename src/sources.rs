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
//! attributes = ["member_id"]        # returned with hits, `attr.member_id=7`
//! ```
//!
//! With no `[[source]]` the built-in demo platform's two sources apply
//! ([`Sources::demo`]). The index records the sources it was built for: a
//! source renamed or reordered under it is an error that says to reindex,
//! since a document's source is stored as its position in this list.

use std::path::Path;

use serde::Deserialize;

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
    #[serde(skip)]
    pub sources: Sources,
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<ConfigFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        ConfigFile::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<ConfigFile, String> {
        let mut file: ConfigFile = toml::from_str(text).map_err(|e| e.to_string())?;
        file.sources = if file.source.is_empty() {
            Sources::demo()
        } else {
            Sources::new(std::mem::take(&mut file.source))?
        };
        Ok(file)
    }

    /// The file at `path`, or the defaults (the demo sources) without one.
    pub fn load_or_default(path: Option<&Path>) -> Result<ConfigFile, String> {
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
    /// The built-in demo's, not from a config file.
    demo: bool,
}

impl Default for Sources {
    fn default() -> Sources {
        Sources::demo()
    }
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
            demo: false,
        })
    }

    /// The built-in question/review platform (`demo`), as sources.
    pub fn demo() -> Sources {
        let config = |name: &str, table: &str, fields: &[&str], attributes: &[&str]| SourceConfig {
            name: name.to_owned(),
            table: table.to_owned(),
            id: "id".to_owned(),
            created_at: "created_at".to_owned(),
            created_at_unit: Some(TimeUnit::Milliseconds),
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
            filter: None,
            attributes: attributes.iter().map(|a| (*a).to_owned()).collect(),
            timezone: None,
        };
        let sources = Sources::new(vec![
            config(
                "question",
                "questions",
                &["title", "content"],
                &["author_id"],
            ),
            config(
                "review",
                "reviews",
                &["content"],
                &["author_id", "question_id"],
            ),
        ])
        .expect("the demo sources are valid");
        Sources {
            demo: true,
            ..sources
        }
    }

    /// Whether these are the built-in demo's sources, whose tables and
    /// triggers chaja's migrations create. Sources from a config file never
    /// are, whatever they name.
    pub fn is_demo(&self) -> bool {
        self.demo
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

    /// What an index built for these sources records, one line per source:
    /// a source's place in this list is stored in every document.
    pub fn stamp(&self) -> String {
        self.names().collect::<Vec<_>>().join("\n")
    }
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
    // The name is the hit's `type`, a URL parameter, and the outbox's
    // `entity_type` (VARCHAR(64)).
    if !is_identifier(&c.name) {
        return Err(at(
            "name must be 1 to 64 letters, digits or _, not starting with a digit",
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
        // The predicate is SQL from the operator's own file; it goes into a
        // WHERE clause in parentheses, so it must not close them or end
        // the statement.
        if filter.contains(';') || filter.trim().is_empty() {
            return Err(at("filter must be one SQL condition, without ;"));
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
        timezone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_source_means_the_demo() {
        let file = ConfigFile::parse("[synonyms]\ngroups = [[\"a\", \"b\"]]").unwrap();
        assert!(file.sources.is_demo());
        assert_eq!(
            file.sources.names().collect::<Vec<_>>(),
            ["question", "review"]
        );
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
        assert!(!file.sources.is_demo());
        let post = file.sources.get(file.sources.by_name("post").unwrap());
        assert!(post.has_title());
        assert!(post.timezone.is_some());
        assert!(file.sources.has_attribute("member_id"));
    }

    #[test]
    fn bad_sources_are_named_in_the_error() {
        let source = |extra: &str| {
            format!(
                "[[source]]\nname = \"post\"\ntable = \"post\"\nid = \"id\"\ncreated_at = \"c\"\nfields = [\"body\"]\n{extra}"
            )
        };
        let err = ConfigFile::parse(&source("attributes = [\"a; DROP TABLE x\"]")).unwrap_err();
        assert!(
            err.contains("\"post\"") && err.contains("a; DROP TABLE x"),
            "{err}"
        );
        let err = ConfigFile::parse(&source("timezone = \"Mars/Olympus\"")).unwrap_err();
        assert!(err.contains("Mars/Olympus"), "{err}");
        let err = ConfigFile::parse(&source("filter = \"1); DELETE FROM post\"")).unwrap_err();
        assert!(err.contains("filter"), "{err}");
        let twice = format!("{}\n{}", source(""), source(""));
        assert!(ConfigFile::parse(&twice)
            .unwrap_err()
            .contains("two sources"));
        assert!(ConfigFile::parse(&source("colour = \"red\"")).is_err());
    }
}
