//! The reader: follows the log from a position and yields committed
//! transactions of the followed tables, statements on them, and
//! heartbeats, reconnecting on its own when the connection is lost.
//!
//! One binlog event is read at a time and turned into at most a few
//! output events, which wait in a short queue; nothing else is buffered
//! but the kept changes of the transaction being read (bounded by
//! `Settings::max_changes`). On a lost connection the transaction being
//! read is dropped and read again from its start, from the last committed
//! position, so nothing is skipped.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use mysql_async::binlog::events::{
    Event as LogEvent, EventData, GtidEvent, QueryEvent, RotateEvent, TableMapEvent,
};
use mysql_async::binlog::EventType;
use mysql_async::BinlogStream;

use crate::backoff::Backoff;
use crate::checksum;
use crate::cursor::{Cursor, PendingGtid};
use crate::ddl::{self, DdlKind};
use crate::dump;
use crate::error::Error;
use crate::event::{Ddl, Event, Heartbeat, Transaction};
use crate::group::Group;
use crate::gtid_set::uuid_text;
use crate::mariadb_gtid::{self, GtidEvent as MariaDbGtidEvent};
use crate::position::Position;
use crate::projection::Projection;
use crate::rows::{is_rows_event, MappedTable};
use crate::tables::{TableName, Tables};

/// MySQL 8's second heartbeat event, which mysql_common does not name.
const HEARTBEAT_LOG_EVENT_V2: u8 = 0x29;
/// MariaDB's compressed query and row events (`log_bin_compress=ON`).
const MARIADB_COMPRESSED: std::ops::RangeInclusive<u8> = 165..=171;
/// The header flag of events the server makes up for the dump (the first
/// rotate, for one), which are not in the log.
const LOG_EVENT_ARTIFICIAL_F: u16 = 0x20;

/// How to follow the log.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `mysql://user:password@host:port/` (or `mariadb://`).
    pub url: String,
    /// The reader's replica id, unique among the server's replicas (see
    /// `derive_server_id`).
    pub server_id: u32,
    /// The followed tables; a change names its table by its index here.
    pub tables: Vec<TableName>,
    /// The server sends a heartbeat after this long without events, and
    /// the reader yields one at least this often while the log moves on
    /// other tables only. Three of them missed means a dead connection.
    pub heartbeat: Duration,
    /// A transaction with more kept changes is passed on in partial
    /// batches of this many.
    pub max_changes: usize,
    pub backoff: Backoff,
}

impl Settings {
    pub fn new(url: impl Into<String>, server_id: u32, tables: Vec<TableName>) -> Settings {
        Settings {
            url: url.into(),
            server_id,
            tables,
            heartbeat: Duration::from_secs(5),
            max_changes: 10_000,
            backoff: Backoff::default(),
        }
    }
}

/// Follows the log; see the module documentation.
pub struct Reader<P: Projection> {
    settings: Settings,
    tables: Tables,
    projection: P,
    stream: Option<BinlogStream>,
    cursor: Cursor,
    group: Group<P::Item>,
    /// Table maps of followed tables, by table id.
    maps: HashMap<u64, MappedTable>,
    out: VecDeque<Event<P::Item>>,
    /// Timestamp of the last event with one, for the lag.
    last_timestamp: u32,
    /// When an event was last passed on, for heartbeats of our own.
    last_yield: Instant,
    /// This dump has sent its format description event (until then, event
    /// checksums are unknown to mysql_common).
    format_seen: bool,
    /// Since when the connection is down, and reconnects tried since.
    down_since: Option<Instant>,
    attempts: u32,
}

impl<P: Projection> Reader<P> {
    /// Connects and asks for the log just after `from`. A position the
    /// server can tell at once it cannot serve (another server's file,
    /// a purged MySQL GTID set) is refused here; a purge MariaDB or a file
    /// position reports is the first `next()`'s error. A server that cannot
    /// be reached is an error here too (`Error::is_transient` says whether
    /// to try again): only once started does the reader retry on its own.
    pub async fn start(
        settings: Settings,
        from: Position,
        projection: P,
    ) -> Result<Reader<P>, Error> {
        let tables = Tables::new(settings.tables.clone());
        let mut reader = Reader {
            settings,
            tables,
            projection,
            stream: None,
            cursor: Cursor::new(from),
            group: Group::new(),
            maps: HashMap::new(),
            out: VecDeque::new(),
            last_timestamp: 0,
            last_yield: Instant::now(),
            format_seen: false,
            down_since: None,
            attempts: 0,
        };
        reader.connect().await?;
        Ok(reader)
    }

    /// The point just after the last transaction read, which may still
    /// wait in the queue for `next()`. Store the positions the events
    /// carry, not this.
    pub fn position(&self) -> &Position {
        self.cursor.committed()
    }

    /// The next event. Waits while the log is idle (heartbeats come every
    /// `Settings::heartbeat`) and while the server is away (reconnecting
    /// with backoff). Cancel-safe between events: dropping the future
    /// loses nothing that was not passed on, as the next call resumes the
    /// same stream.
    pub async fn next(&mut self) -> Result<Event<P::Item>, Error> {
        loop {
            if let Some(event) = self.out.pop_front() {
                self.last_yield = Instant::now();
                return Ok(event);
            }
            let result = self.step().await;
            let Err(error) = result else {
                self.down_since = None;
                self.attempts = 0;
                continue;
            };
            if !error.is_transient() {
                return Err(error);
            }
            self.reconnect(error).await?;
        }
    }

    /// Closes the connection.
    pub async fn close(mut self) {
        if let Some(stream) = self.stream.take() {
            let _ = stream.close().await;
        }
    }

    async fn connect(&mut self) -> Result<(), Error> {
        let dump = dump::start(
            &self.settings.url,
            self.settings.server_id,
            self.cursor.committed(),
            self.settings.heartbeat,
        )
        .await?;
        tracing::info!(
            position = %self.cursor.committed(),
            server_id = dump.server.server_id,
            "following the binary log"
        );
        self.stream = Some(dump.stream);
        self.format_seen = false;
        Ok(())
    }

    /// Drops the connection and the transaction being read, then connects
    /// again from the last committed position, waiting longer each time.
    async fn reconnect(&mut self, cause: Error) -> Result<(), Error> {
        self.stream = None;
        self.group.reset();
        self.maps.clear();
        let down_since = *self.down_since.get_or_insert_with(Instant::now);
        let mut last = cause;
        loop {
            if let Some(limit) = self.settings.backoff.give_up_after {
                if down_since.elapsed() >= limit {
                    return Err(Error::GaveUp {
                        waited: down_since.elapsed(),
                        last: Box::new(last),
                    });
                }
            }
            let wait = self.settings.backoff.wait(self.attempts);
            self.attempts = self.attempts.saturating_add(1);
            tracing::warn!(error = %last, ?wait, position = %self.cursor.committed(), "binlog connection lost; reconnecting");
            tokio::time::sleep(wait).await;
            match self.connect().await {
                Ok(()) => return Ok(()),
                Err(error) if error.is_transient() => last = error,
                Err(error) => return Err(error),
            }
        }
    }

    /// Reads one binlog event and handles it.
    async fn step(&mut self) -> Result<(), Error> {
        if self.stream.is_none() {
            self.connect().await?;
        }
        let Some(stream) = self.stream.as_mut() else {
            return Ok(());
        };
        // Three heartbeats missed: the connection is dead even if TCP has
        // not noticed.
        let silence = self.settings.heartbeat * 3 + Duration::from_secs(1);
        let next = match tokio::time::timeout(silence, stream.next()).await {
            Ok(next) => next,
            Err(_) => return Err(lost(format!("no event or heartbeat for {silence:?}"))),
        };
        let event = match next {
            Some(Ok(event)) => event,
            Some(Err(error)) => return Err(dump::classify(error, self.cursor.committed())),
            // The server ended the dump (it shut down, or another replica
            // registered with the same server_id).
            None => return Err(lost("the server ended the binlog dump".to_owned())),
        };
        self.handle(event)
    }

    fn handle(&mut self, event: LogEvent) -> Result<(), Error> {
        let header = event.header();
        let event_type = header.event_type_raw();
        let artificial = header.log_pos() == 0 || header.flags_raw() & LOG_EVENT_ARTIFICIAL_F != 0;
        self.cursor.saw_event(header.log_pos());
        if header.timestamp() != 0 && !artificial {
            self.last_timestamp = header.timestamp();
        }

        if event_type == EventType::HEARTBEAT_EVENT as u8 || event_type == HEARTBEAT_LOG_EVENT_V2 {
            // The server has nothing more to send: caught up, unless it
            // paused inside a transaction.
            let inside = self.group.open || self.group.has_content();
            self.out.push_back(Event::Heartbeat(Heartbeat {
                position: self.cursor.committed().clone(),
                seconds_behind: 0,
                caught_up: !inside,
            }));
            return Ok(());
        }
        if event_type == EventType::ROTATE_EVENT as u8 {
            let rotate: RotateEvent<'_> = self.decode("a rotate event", event.read_event())?;
            let mut name = rotate.name_raw().to_vec();
            if !self.format_seen {
                name = checksum::without_checksum(&header_bytes(&header), event.data(), &name);
            }
            let name = String::from_utf8_lossy(&name).into_owned();
            let moves_position = !artificial && !self.group.open;
            self.cursor.rotate(name, rotate.position(), moves_position);
            return Ok(());
        }
        if event_type == EventType::FORMAT_DESCRIPTION_EVENT as u8 {
            self.format_seen = true;
            return Ok(());
        }
        if event_type == mariadb_gtid::GTID_EVENT {
            let Some(gtid) = MariaDbGtidEvent::parse(header.server_id(), event.data()) else {
                return Err(self.decode_error("a MariaDB GTID event", "too short".to_owned()));
            };
            self.begin_group(PendingGtid::MariaDb(gtid.gtid));
            // A standalone group (DDL) is one statement, ended by it.
            self.group.open = !gtid.standalone();
            return Ok(());
        }
        if event_type == EventType::GTID_EVENT as u8
            || event_type == EventType::GTID_TAGGED_LOG_EVENT as u8
        {
            let gtid: GtidEvent = self.decode("a GTID event", event.read_event())?;
            let tag = gtid
                .tag()
                .map(|tag| tag.as_str().to_owned())
                .unwrap_or_default();
            self.begin_group(PendingGtid::MySql {
                uuid: uuid_text(gtid.sid()),
                tag,
                gno: gtid.gno(),
            });
            return Ok(());
        }
        if event_type == EventType::ANONYMOUS_GTID_EVENT as u8 {
            self.begin_group(PendingGtid::None);
            return Ok(());
        }
        if event_type == EventType::QUERY_EVENT as u8 {
            let query: QueryEvent<'_> = self.decode("a query event", event.read_event())?;
            return self.query(&query.query(), &query.schema(), header.timestamp());
        }
        if event_type == EventType::TABLE_MAP_EVENT as u8 {
            let map: TableMapEvent<'_> = self.decode("a table map event", event.read_event())?;
            return self.table_map(map.into_owned());
        }
        if is_rows_event(event_type) {
            return self.rows(&event);
        }
        if event_type == EventType::XID_EVENT as u8
            || event_type == EventType::XA_PREPARE_LOG_EVENT as u8
        {
            self.commit(header.timestamp());
            return Ok(());
        }
        if event_type == EventType::INCIDENT_EVENT as u8 {
            // A replica stops here too: the server says events are missing
            // from its log (it failed to write some), so the log alone can
            // no longer bring the reader up to date.
            return Err(Error::Unsupported {
                position: self.cursor.committed().to_string(),
                what: "an incident event: the server reports changes missing from its \
                       binary log; start again from a new snapshot"
                    .to_owned(),
            });
        }
        if MARIADB_COMPRESSED.contains(&event_type) {
            return Err(Error::Unsupported {
                position: self.cursor.committed().to_string(),
                what: format!(
                    "a compressed event (type {event_type}): the server runs with \
                     log_bin_compress=ON. Fix: SET GLOBAL log_bin_compress = OFF"
                ),
            });
        }
        // Format descriptions, previous-GTIDs and GTID lists, MariaDB's
        // annotations and checkpoints, MySQL's compressed payloads (whose
        // events follow one by one): nothing to do.
        Ok(())
    }

    /// A GTID event opens a group. One that arrives while a transaction is
    /// still open means its end was an event this reader does not know:
    /// pass on what it read rather than lose it.
    fn begin_group(&mut self, gtid: PendingGtid) {
        if self.group.open || self.group.has_content() {
            tracing::warn!(position = %self.cursor.committed(), "a transaction ended without a commit event that this reader knows");
            self.commit(self.last_timestamp);
        }
        self.group.gtid = gtid;
    }

    /// A statement: `BEGIN`, the end of a transaction, or anything else
    /// (DDL among it), which outside a transaction is its own.
    fn query(&mut self, sql: &str, schema: &str, timestamp: u32) -> Result<(), Error> {
        let statement = sql.trim().trim_end_matches(';').trim();
        if statement.eq_ignore_ascii_case("BEGIN") || starts_with_words(statement, &["XA", "START"])
        {
            self.group.open = true;
            return Ok(());
        }
        // A transaction's end. ROLLBACK is logged only for a transaction
        // that changed non-transactional tables, whose rows stay: pass
        // them on like a commit. XA PREPARE ends MariaDB's logged part of
        // an XA transaction.
        if statement.eq_ignore_ascii_case("COMMIT")
            || statement.eq_ignore_ascii_case("ROLLBACK")
            || starts_with_words(statement, &["XA", "PREPARE"])
        {
            self.commit(timestamp);
            return Ok(());
        }
        for (touched_schema, table, kind) in ddl::touched(statement, schema) {
            // DROP DATABASE names a schema: every followed table in it.
            let indexes = if kind == DdlKind::Drop && table.is_empty() {
                self.tables.in_schema(&touched_schema)
            } else {
                self.tables
                    .find(&touched_schema, &table)
                    .into_iter()
                    .collect()
            };
            for index in indexes {
                let name = self.tables.get(index).clone();
                if kind == DdlKind::Statement {
                    tracing::warn!(table = %name, "rows changed by a statement logged as SQL text (binlog_format=STATEMENT in some session)");
                }
                self.group.statement(index, name.schema, name.table, kind);
            }
        }
        if !self.group.open {
            self.commit(timestamp);
        }
        Ok(())
    }

    /// Keeps the map of a followed table; forgets a reused table id.
    fn table_map(&mut self, map: TableMapEvent<'static>) -> Result<(), Error> {
        let table_id = map.table_id();
        let Some(index) = self.tables.find(&map.database_name(), &map.table_name()) else {
            self.maps.remove(&table_id);
            return Ok(());
        };
        let mapped = match MappedTable::new(index, map) {
            Ok(Some(mapped)) => mapped,
            Ok(None) => {
                return Err(Error::NoColumnNames {
                    table: self.tables.get(index).clone(),
                })
            }
            Err(reason) => return Err(self.decode_error("a table map event", reason)),
        };
        self.maps.insert(table_id, mapped);
        Ok(())
    }

    /// The rows of a followed table, each projected and kept.
    fn rows(&mut self, event: &LogEvent) -> Result<(), Error> {
        let data = self.decode("a rows event", event.read_data())?;
        let Some(EventData::RowsEvent(rows)) = data else {
            return Ok(());
        };
        let Some(mapped) = self.maps.get(&rows.table_id()) else {
            return Ok(());
        };
        let index = mapped.index;
        let changes = match mapped.changes(&rows) {
            Ok(changes) => changes,
            Err(reason) => {
                let what = format!("a rows event of {}", self.tables.get(index));
                return Err(self.decode_error(&what, reason));
            }
        };
        for change in changes {
            let Some(kept) = self.projection.project(index, change) else {
                continue;
            };
            let Some(batch) = self.group.push(kept, self.settings.max_changes) else {
                continue;
            };
            // Too many changes to hold: pass them on now, at the position
            // before this transaction.
            let timestamp = self.last_timestamp;
            self.out.push_back(Event::Transaction(Transaction {
                changes: batch,
                position: self.cursor.committed().clone(),
                complete: false,
                timestamp: system_time(timestamp),
                seconds_behind: seconds_behind(timestamp),
            }));
        }
        Ok(())
    }

    /// The transaction being read ended with the last event: the position
    /// moves past it and what it kept is passed on.
    fn commit(&mut self, timestamp: u32) {
        let gtid = self.group.gtid.clone();
        let ended = self.group.end();
        self.cursor.commit(&gtid);
        let position = self.cursor.committed();
        let had_output =
            !ended.changes.is_empty() || ended.partial_sent || !ended.statements.is_empty();
        if !ended.changes.is_empty() || ended.partial_sent {
            self.out.push_back(Event::Transaction(Transaction {
                changes: ended.changes,
                position: position.clone(),
                complete: true,
                timestamp: system_time(timestamp),
                seconds_behind: seconds_behind(timestamp),
            }));
        }
        for (index, schema, table, kind) in ended.statements {
            self.out.push_back(Event::Ddl(Ddl {
                schema,
                table,
                index,
                kind,
                position: position.clone(),
            }));
        }
        // Nothing for the caller, but the position moved: say so now and
        // then, so a caller whose tables are quiet still stores it.
        if !had_output && self.last_yield.elapsed() >= self.settings.heartbeat {
            self.out.push_back(Event::Heartbeat(Heartbeat {
                position: position.clone(),
                seconds_behind: seconds_behind(timestamp),
                caught_up: false,
            }));
            self.last_yield = Instant::now();
        }
    }

    fn decode<T>(&self, what: &str, result: std::io::Result<T>) -> Result<T, Error> {
        result.map_err(|error| self.decode_error(what, error.to_string()))
    }

    fn decode_error(&self, what: &str, reason: String) -> Error {
        // A value that cannot be represented is unsupported, not corrupt.
        if reason.contains("binlog_row_value_options") {
            return Error::Unsupported {
                position: self.cursor.committed().to_string(),
                what: reason,
            };
        }
        Error::Decode {
            what: what.to_owned(),
            position: self.cursor.committed().to_string(),
            reason,
        }
    }

    /// The followed tables.
    pub fn tables(&self) -> &[TableName] {
        self.tables.list()
    }
}

/// Whether `statement` starts with `words` (case-insensitive, any spacing).
fn starts_with_words(statement: &str, words: &[&str]) -> bool {
    let mut parts = statement.split_whitespace();
    for word in words {
        let Some(part) = parts.next() else {
            return false;
        };
        if !part.eq_ignore_ascii_case(word) {
            return false;
        }
    }
    true
}

/// The 19 bytes of an event's common header, as they came.
fn header_bytes(header: &mysql_async::binlog::events::BinlogEventHeader) -> [u8; 19] {
    let mut bytes = [0u8; 19];
    bytes[0..4].copy_from_slice(&header.timestamp().to_le_bytes());
    bytes[4] = header.event_type_raw();
    bytes[5..9].copy_from_slice(&header.server_id().to_le_bytes());
    bytes[9..13].copy_from_slice(&header.event_size().to_le_bytes());
    bytes[13..17].copy_from_slice(&header.log_pos().to_le_bytes());
    bytes[17..19].copy_from_slice(&header.flags_raw().to_le_bytes());
    bytes
}

/// A lost connection, as the error the reconnect loop retries.
fn lost(reason: String) -> Error {
    Error::Database(mysql_async::Error::Io(mysql_async::IoError::Io(
        std::io::Error::new(std::io::ErrorKind::ConnectionAborted, reason),
    )))
}

fn system_time(timestamp: u32) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(u64::from(timestamp))
}

/// Now minus an event's timestamp, in whole seconds; 0 for an event from
/// the future (the server's clock ahead of ours) or without a timestamp.
fn seconds_behind(timestamp: u32) -> u64 {
    if timestamp == 0 {
        return 0;
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0);
    now.saturating_sub(u64::from(timestamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_words_ignore_case_and_spacing() {
        assert!(starts_with_words("xa  start 'x'", &["XA", "START"]));
        assert!(starts_with_words("XA PREPARE 'x'", &["XA", "PREPARE"]));
        assert!(!starts_with_words("XA", &["XA", "START"]));
        assert!(!starts_with_words("XAX START", &["XA", "START"]));
    }

    /// The mirror runs the reader in a task of its own: it and its
    /// `next()` must be Send. (Checked by compiling.)
    #[allow(dead_code)]
    fn reader_and_next_are_send(reader: &mut Reader<crate::KeepAll>) {
        fn send<T: Send>(_: &T) {}
        send(reader);
        let next = reader.next();
        send(&next);
    }

    #[test]
    fn lag_is_never_negative() {
        assert_eq!(seconds_behind(0), 0);
        assert_eq!(seconds_behind(u32::MAX), 0);
        assert!(seconds_behind(1) > 1_000_000_000);
    }
}
