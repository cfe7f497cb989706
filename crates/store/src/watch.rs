//! Which columns of a source's table chaja reads, so that an update of
//! any other column (a view counter, `updated_at`) costs nothing.
//!
//! The update trigger records a change only when one of these differs
//! between `OLD` and `NEW`: the key, `created_at`, the text fields, the
//! attributes, and every column the `filter` reads. The first four are
//! named in the config; the filter's columns are found by reading it as
//! SQL: its words, less string literals, keywords, type names and function
//! names. When that reading cannot be trusted (a subquery, a qualified
//! name, a word that is not a column of the table), the trigger records
//! every update, as it did before, and `install` says so.

use chaja_core::sources::Source;

/// What the update trigger compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    /// These columns, in order, each once.
    Columns(Vec<String>),
    /// Every update is recorded: the filter could not be read reliably.
    Every { why: String },
}

/// Words of a filter that are SQL, not columns.
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "not",
    "xor",
    "null",
    "is",
    "in",
    "like",
    "between",
    "true",
    "false",
    "case",
    "when",
    "then",
    "else",
    "end",
    "escape",
    "div",
    "mod",
    "regexp",
    "rlike",
    "binary",
    "collate",
    "interval",
    "unknown",
    "as",
    "asc",
    "desc",
    "distinct",
    "signed",
    "unsigned",
    "char",
    "character",
    "integer",
    "int",
    "decimal",
    "double",
    "float",
    "real",
    "date",
    "datetime",
    "time",
    "timestamp",
    "year",
    "month",
    "week",
    "day",
    "hour",
    "minute",
    "second",
    "microsecond",
    "quarter",
    "json",
    "text",
    "blob",
    "utf8mb4",
    "utf8",
    "glob",
    "using",
];

/// Words that make a filter read more than the row: its answer can change
/// without the row changing, and no comparison of columns can tell.
const READS_ELSEWHERE: &[&str] = &["select", "from", "exists", "join", "union", "where"];

/// The columns `source`'s update trigger compares. `columns`, when known,
/// are the table's: a filter word that is none of them (or a keyword this
/// reading does not know) means the filter cannot be read reliably.
pub fn watched(source: &Source, columns: Option<&[String]>) -> Watched {
    let mut watched: Vec<String> = Vec::new();
    let mut add = |column: &str| {
        if !watched.iter().any(|w| w.eq_ignore_ascii_case(column)) {
            watched.push(column.to_owned());
        }
    };
    add(&source.id);
    add(&source.created_at);
    for column in source.fields.iter().chain(&source.attributes) {
        add(column);
    }
    if let Some(filter) = &source.filter {
        match filter_columns(filter) {
            Ok(found) => {
                for column in found {
                    let known =
                        columns.is_none_or(|cs| cs.iter().any(|c| c.eq_ignore_ascii_case(&column)));
                    if !known {
                        return Watched::Every {
                            why: format!(
                                "the filter's word `{column}` is not a column of `{}`",
                                source.table
                            ),
                        };
                    }
                    add(&column);
                }
            }
            Err(why) => return Watched::Every { why },
        }
    }
    Watched::Columns(watched)
}

/// The column names a filter reads, or why it cannot be read.
fn filter_columns(filter: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = filter.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            // A string literal: skip to its close, past doubled quotes and
            // backslash escapes.
            i += 1;
            while i < chars.len() {
                if chars[i] == '\\' {
                    i += 2;
                    continue;
                }
                if chars[i] == c {
                    if chars.get(i + 1) == Some(&c) {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            i += 1;
        } else if c == '`' {
            let end = chars[i + 1..]
                .iter()
                .position(|&d| d == '`')
                .ok_or("a ` is not closed")?;
            let name: String = chars[i + 1..i + 1 + end].iter().collect();
            i += end + 2;
            if next_is(&chars, i, '.') {
                return Err(format!(
                    "the filter names `{name}.…`, another table's column"
                ));
            }
            found.push(name);
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let lower = word.to_ascii_lowercase();
            // A literal's prefix: `b'0'`, `x'1F'`, `N'…'`, `_utf8mb4'…'`.
            if matches!(chars.get(i), Some('\'' | '"')) {
                continue;
            }
            if READS_ELSEWHERE.contains(&lower.as_str()) {
                return Err(format!("the filter reads more than the row (`{word}`)"));
            }
            if next_is(&chars, i, '.') {
                return Err(format!(
                    "the filter names `{word}.…`, another table's column"
                ));
            }
            // A function's name, or SQL: neither is a column.
            if next_is(&chars, i, '(') || KEYWORDS.contains(&lower.as_str()) {
                continue;
            }
            found.push(word);
        } else if c.is_ascii_digit() {
            // A number (`1e3`, `0x1F` included).
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    Ok(found)
}

/// Whether the next character after `i` that is not a space is `c`.
fn next_is(chars: &[char], i: usize, c: char) -> bool {
    chars[i..].iter().find(|ch| !ch.is_whitespace()) == Some(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_reads_its_columns_and_not_its_sql() {
        let cols = |f: &str| filter_columns(f).unwrap();
        assert_eq!(
            cols("deleted_at IS NULL AND status = 'PUBLIC'"),
            ["deleted_at", "status"]
        );
        assert_eq!(cols("`is_deleted` = b'0'"), ["is_deleted"]);
        assert_eq!(
            cols("CAST(score AS SIGNED) > 3 AND created_at > NOW() - INTERVAL 7 DAY"),
            ["score", "created_at"]
        );
        assert_eq!(cols("kind IN ('a', 'it''s \\' q')"), ["kind"]);
        assert_eq!(cols("hidden = 0 OR hidden IS NULL"), ["hidden", "hidden"]);
        assert!(filter_columns("author_id IN (SELECT id FROM members)").is_err());
        assert!(filter_columns("q.deleted = 0").is_err());
    }

    #[test]
    fn the_watched_columns_are_the_config_and_the_filter() {
        let file = chaja_core::sources::ConfigFile::parse(
            r#"
            [[source]]
            name = "post"
            table = "post"
            id = "id"
            created_at = "created_at"
            fields = ["title", "body"]
            filter = "deleted = 0 AND `status` <> 'HIDDEN'"
            attributes = ["member_id"]
            "#,
        )
        .unwrap();
        let sources = file.sources.unwrap();
        let post = sources.iter().next().unwrap();
        let all = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(
            watched(post, None),
            Watched::Columns(all(&[
                "id",
                "created_at",
                "title",
                "body",
                "member_id",
                "deleted",
                "status"
            ]))
        );
        let table = all(&[
            "id",
            "created_at",
            "title",
            "body",
            "member_id",
            "deleted",
            "status",
            "view_count",
        ]);
        assert!(matches!(watched(post, Some(&table)), Watched::Columns(_)));
        let without_status = all(&["id", "created_at", "title", "body", "member_id", "deleted"]);
        assert!(matches!(
            watched(post, Some(&without_status)),
            Watched::Every { .. }
        ));
    }
}
