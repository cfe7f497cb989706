//! The tables a reader follows, by schema and name.
//!
//! Everything else in the log is skipped before its rows are decoded, so
//! a busy table nobody asked for costs a name lookup per table map.
//! Names are compared ASCII-case-insensitively: a false match only costs a
//! caller a row it ignores, while a missed match would lose changes (with
//! `lower_case_table_names=1` the log holds lower-case names).

use std::fmt;

/// A table: `schema.table`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableName {
    pub schema: String,
    pub table: String,
}

impl TableName {
    pub fn new(schema: impl Into<String>, table: impl Into<String>) -> TableName {
        TableName {
            schema: schema.into(),
            table: table.into(),
        }
    }

    pub(crate) fn is(&self, schema: &str, table: &str) -> bool {
        self.schema.eq_ignore_ascii_case(schema) && self.table.eq_ignore_ascii_case(table)
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.schema, self.table)
    }
}

/// The followed tables; a table is named by its index in this list.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tables {
    list: Vec<TableName>,
}

impl Tables {
    pub(crate) fn new(list: Vec<TableName>) -> Tables {
        Tables { list }
    }

    /// The index of `schema.table`, if it is followed.
    pub(crate) fn find(&self, schema: &str, table: &str) -> Option<usize> {
        self.list.iter().position(|name| name.is(schema, table))
    }

    /// The indexes of the followed tables of `schema`.
    pub(crate) fn in_schema(&self, schema: &str) -> Vec<usize> {
        let mut found = Vec::new();
        for (index, name) in self.list.iter().enumerate() {
            if name.schema.eq_ignore_ascii_case(schema) {
                found.push(index);
            }
        }
        found
    }

    pub(crate) fn get(&self, index: usize) -> &TableName {
        &self.list[index]
    }

    pub(crate) fn list(&self) -> &[TableName] {
        &self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_ignores_ascii_case() {
        let tables = Tables::new(vec![
            TableName::new("Site", "question"),
            TableName::new("site", "review"),
        ]);
        assert_eq!(tables.find("site", "QUESTION"), Some(0));
        assert_eq!(tables.find("site", "review"), Some(1));
        assert_eq!(tables.find("other", "review"), None);
        assert_eq!(tables.in_schema("SITE"), vec![0, 1]);
    }
}
