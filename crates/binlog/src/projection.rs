//! What a caller keeps of each row change.
//!
//! A transaction of a million rows must not become a million decoded row
//! images in memory. The reader hands each change to the caller's
//! projection as soon as it is decoded and buffers only what comes back:
//! the mirror keeps (source, key) and whether a column it reads changed,
//! a few bytes per row, and nothing for an update that changed none.
//! Together with `Settings::max_changes` this bounds a reader's memory.

use crate::change::RowChange;

/// Reduces each row change of a followed table to what the caller keeps.
pub trait Projection {
    type Item;

    /// `table` is the table's index in `Settings::tables`. `None` keeps
    /// nothing of this change.
    fn project(&mut self, table: usize, change: RowChange) -> Option<Self::Item>;
}

/// Any `FnMut(table, change) -> Option<item>` is a projection.
impl<F, T> Projection for F
where
    F: FnMut(usize, RowChange) -> Option<T>,
{
    type Item = T;

    fn project(&mut self, table: usize, change: RowChange) -> Option<T> {
        self(table, change)
    }
}

/// Keeps every change whole, with its table's index: for tests and tools
/// that read small logs, not for the mirror.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeepAll;

impl Projection for KeepAll {
    type Item = (usize, RowChange);

    fn project(&mut self, table: usize, change: RowChange) -> Option<(usize, RowChange)> {
        Some((table, change))
    }
}
