//! Follows a MySQL or MariaDB binary log as a replica does, for a change
//! feed that needs no DDL in the site's schema (issue 63).
//!
//! The outbox feed asks the site for a table and triggers; many DBAs
//! refuse triggers on hot tables, and every writer pays for them. The
//! binary log already holds every committed row change, in commit order,
//! and a replica's grants (`REPLICATION SLAVE`, `REPLICATION CLIENT`,
//! `SELECT`) are all it takes to read it. This crate is that reader, and
//! nothing more: it knows neither sources nor the index. The mirror turns
//! its row changes into the (source, key) changes the indexer consumes.
//!
//! - [`Reader`] follows the log from a [`Position`] and yields
//!   [`Event`]s: a committed [`Transaction`] of the followed tables' row
//!   changes (by column name, reduced by the caller's [`Projection`]),
//!   a [`Ddl`] for a statement that changed a followed table without rows
//!   (`TRUNCATE`, `DROP`, `ALTER`, `RENAME`), or a [`Heartbeat`]. It
//!   reconnects on its own and resumes exactly at the last commit.
//! - [`current_position`] is where a rebuild's scan starts replaying from.
//! - [`preflight`] checks the server's settings and grants, naming the
//!   statement that fixes each one missing.
//!
//! The client is `mysql_async` with its `binlog` feature (see README.md
//! for why); MariaDB's GTIDs, which it does not know, are read here.

mod backoff;
mod change;
mod checksum;
mod cursor;
mod ddl;
mod dump;
mod error;
mod event;
mod group;
mod gtid_set;
mod mariadb_gtid;
mod position;
mod preflight;
mod projection;
mod reader;
mod rows;
mod server;
mod server_id;
mod tables;
mod value;

pub use backoff::Backoff;
pub use change::{ChangeKind, Columns, Row, RowChange};
pub use ddl::DdlKind;
pub use error::Error;
pub use event::{Ddl, Event, Heartbeat, Transaction};
pub use gtid_set::{BadGtidSet, GtidSet};
pub use mariadb_gtid::{BadMariaDbGtids, MariaDbGtid, MariaDbGtids};
pub use position::{BadPosition, Position, ServerIdentity};
pub use preflight::{preflight, Check, PreflightSettings, Report, Status};
pub use projection::{KeepAll, Projection};
pub use reader::{Reader, Settings};
pub use server::current_position;
pub use server_id::{derive_server_id, DERIVED_END, DERIVED_MIN};
pub use tables::TableName;
pub use value::Value;
