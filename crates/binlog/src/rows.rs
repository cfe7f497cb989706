//! Row events of a followed table, decoded into changes by column name.
//!
//! Each rows event names its table by a number that the table-map event
//! just before it defines: the table's schema, name, column types and
//! (with `binlog_row_metadata=FULL`) column names. The map of a followed
//! table is kept until the next map of the same number, so the names
//! always match the rows that follow them, across an `ALTER TABLE`.

use std::sync::Arc;

use mysql_async::binlog::events::{OptionalMetadataField, RowsEventData, TableMapEvent};
use mysql_async::binlog::row::BinlogRow;
use mysql_async::binlog::EventType;

use crate::change::{ChangeKind, Columns, Row, RowChange};
use crate::value::Value;

/// A followed table as its last table map described it.
#[derive(Debug)]
pub(crate) struct MappedTable {
    /// The table's index in the followed list.
    pub(crate) index: usize,
    columns: Columns,
    map: TableMapEvent<'static>,
}

impl MappedTable {
    /// `None` when the map carries no column names.
    pub(crate) fn new(
        index: usize,
        map: TableMapEvent<'static>,
    ) -> Result<Option<MappedTable>, String> {
        let Some(names) = column_names(&map)? else {
            return Ok(None);
        };
        if names.len() as u64 != map.columns_count() {
            return Err(format!(
                "the table map names {} columns of {}",
                names.len(),
                map.columns_count()
            ));
        }
        Ok(Some(MappedTable {
            index,
            columns: Arc::from(names),
            map,
        }))
    }

    /// Decodes every row of a rows event of this table.
    pub(crate) fn changes(&self, event: &RowsEventData<'_>) -> Result<Vec<RowChange>, String> {
        let kind = match event {
            RowsEventData::WriteRowsEventV1(_) | RowsEventData::WriteRowsEvent(_) => {
                ChangeKind::Insert
            }
            RowsEventData::DeleteRowsEventV1(_) | RowsEventData::DeleteRowsEvent(_) => {
                ChangeKind::Delete
            }
            RowsEventData::UpdateRowsEventV1(_)
            | RowsEventData::UpdateRowsEvent(_)
            | RowsEventData::PartialUpdateRowsEvent(_) => ChangeKind::Update,
        };
        let mut changes = Vec::new();
        for row in event.rows(&self.map) {
            let (before, after) = row.map_err(|error| error.to_string())?;
            let before = match before {
                Some(image) => Some(self.row(image)?),
                None => None,
            };
            let after = match after {
                Some(image) => Some(self.row(image)?),
                None => None,
            };
            changes.push(RowChange {
                kind,
                before,
                after,
            });
        }
        Ok(changes)
    }

    /// One image. With `binlog_row_image=FULL` it holds every column and
    /// shares the map's names; a partial image (MINIMAL, NOBLOB) names its
    /// own columns.
    fn row(&self, mut image: BinlogRow) -> Result<Row, String> {
        let full = image.len() == self.columns.len();
        let mut names = Vec::new();
        let mut values = Vec::with_capacity(image.len());
        for i in 0..image.len() {
            let column = &image.columns_ref()[i];
            let column_type = column.column_type();
            if !full {
                names.push(column.name_str().into_owned());
            }
            let value = match image.take(i) {
                Some(value) => Value::from_binlog(value, column_type)?,
                None => Value::Null,
            };
            values.push(value);
        }
        let columns = if full {
            self.columns.clone()
        } else {
            Arc::from(names)
        };
        Ok(Row::new(columns, values))
    }
}

/// The column names of a table map's optional metadata.
fn column_names(map: &TableMapEvent<'_>) -> Result<Option<Vec<String>>, String> {
    for field in map.iter_optional_meta() {
        let field = field.map_err(|error| error.to_string())?;
        let OptionalMetadataField::ColumnName(names) = field else {
            continue;
        };
        let mut found = Vec::new();
        for name in names.iter_names() {
            let name = name.map_err(|error| error.to_string())?;
            found.push(name.name().into_owned());
        }
        return Ok(Some(found));
    }
    Ok(None)
}

/// Whether an event type carries rows (v1 as MariaDB writes them, v2 as
/// MySQL does, and MySQL's partial JSON updates).
pub(crate) fn is_rows_event(event_type: u8) -> bool {
    [
        EventType::WRITE_ROWS_EVENT_V1,
        EventType::UPDATE_ROWS_EVENT_V1,
        EventType::DELETE_ROWS_EVENT_V1,
        EventType::WRITE_ROWS_EVENT,
        EventType::UPDATE_ROWS_EVENT,
        EventType::DELETE_ROWS_EVENT,
        EventType::PARTIAL_UPDATE_ROWS_EVENT,
    ]
    .iter()
    .any(|known| *known as u8 == event_type)
}
