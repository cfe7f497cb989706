//! One row's change, with its images by column name.
//!
//! Row events carry values by column position only; the names come from
//! the table-map event just before them (with `binlog_row_metadata=FULL`).
//! Reading by name is what makes an `ALTER TABLE` mid-stream harmless: a
//! new or moved column changes positions, not names. The names of one
//! table map are shared by every row read under it.

use std::sync::Arc;

use crate::value::Value;

/// The column names of a table as one table-map event gave them.
pub type Columns = Arc<[String]>;

/// One row image: a value per column.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    columns: Columns,
    values: Vec<Value>,
}

impl Row {
    pub(crate) fn new(columns: Columns, values: Vec<Value>) -> Row {
        Row { columns, values }
    }

    /// The value of column `name`, compared ASCII-case-insensitively as
    /// MySQL compares column names. `None` when the table has no such
    /// column (it was dropped or renamed).
    pub fn get(&self, name: &str) -> Option<&Value> {
        let index = self
            .columns
            .iter()
            .position(|column| column.eq_ignore_ascii_case(name))?;
        self.values.get(index)
    }

    /// The column names, in table order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// (name, value) pairs, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.columns
            .iter()
            .map(String::as_str)
            .zip(self.values.iter())
    }
}

/// What happened to the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Insert,
    Update,
    Delete,
}

/// One row inserted, updated or deleted.
#[derive(Debug, Clone, PartialEq)]
pub struct RowChange {
    pub kind: ChangeKind,
    /// The row before: updates and deletes.
    pub before: Option<Row>,
    /// The row after: inserts and updates.
    pub after: Option<Row>,
}

impl RowChange {
    /// Whether column `name` differs between the images. Always true for
    /// an insert or a delete, and for a column missing from either image
    /// (so a caller that misses a column does not mistake it for unchanged).
    pub fn changed(&self, name: &str) -> bool {
        let (Some(before), Some(after)) = (&self.before, &self.after) else {
            return true;
        };
        match (before.get(name), after.get(name)) {
            (Some(old), Some(new)) => old != new,
            _ => true,
        }
    }

    /// The image that holds the row as it is now (after), or as it was
    /// (before) for a delete.
    pub fn latest(&self) -> Option<&Row> {
        self.after.as_ref().or(self.before.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: &[i64]) -> Row {
        let columns: Columns = Arc::from(vec!["id".to_owned(), "Views".to_owned()]);
        Row::new(columns, values.iter().map(|v| Value::Int(*v)).collect())
    }

    #[test]
    fn columns_are_found_by_name_in_any_case() {
        let row = row(&[1, 7]);
        assert_eq!(row.get("VIEWS"), Some(&Value::Int(7)));
        assert_eq!(row.get("title"), None);
    }

    #[test]
    fn changed_compares_the_named_column_only() {
        let update = RowChange {
            kind: ChangeKind::Update,
            before: Some(row(&[1, 7])),
            after: Some(row(&[1, 8])),
        };
        assert!(update.changed("views"));
        assert!(!update.changed("id"));
        assert!(
            update.changed("title"),
            "a missing column counts as changed"
        );
        let insert = RowChange {
            kind: ChangeKind::Insert,
            before: None,
            after: Some(row(&[1, 7])),
        };
        assert!(insert.changed("id"));
    }
}
