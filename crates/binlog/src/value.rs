//! One column's value in a row image, owned and plain.
//!
//! `mysql_common` decodes each column by its type into its own `Value`,
//! where a DECIMAL, a TIMESTAMP and a YEAR all arrive as bytes. The mirror
//! compares images and reads keys; it should not have to know the column
//! types to tell a decimal from text, so they are told apart here, once.

use std::fmt;

use mysql_async::binlog::value::BinlogValue;
use mysql_async::consts::ColumnType;

/// A column value from a row event.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    /// Integers (TINYINT … BIGINT, signed or not) that fit in an i64, ENUM
    /// (its 1-based index) and YEAR. One variant whatever the signedness,
    /// so that a key compares equal however its column is declared.
    Int(i64),
    /// An unsigned BIGINT above `i64::MAX`.
    UInt(u64),
    Float(f32),
    Double(f64),
    /// DECIMAL, exactly as the server prints it (`-12.50`).
    Decimal(String),
    /// Text and binary columns (CHAR, VARCHAR, TEXT, BLOB, BIT, SET, JSON as
    /// its text), as the bytes the server stored: text in the column's
    /// character set, which for chaja's tables is utf8mb4.
    Bytes(Vec<u8>),
    /// DATE: `YYYY-MM-DD`.
    Date(String),
    /// DATETIME: `YYYY-MM-DD HH:MM:SS[.ffffff]`, a wall-clock time without
    /// a zone.
    DateTime(String),
    /// TIME: `[-]HH:MM:SS[.ffffff]`, hours possibly above 24.
    Time(String),
    /// TIMESTAMP: microseconds since the Unix epoch (UTC).
    Timestamp(i64),
}

impl Value {
    /// The value as UTF-8 text, for text columns.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Bytes(bytes) => std::str::from_utf8(bytes).ok(),
            Value::Decimal(text)
            | Value::Date(text)
            | Value::DateTime(text)
            | Value::Time(text) => Some(text),
            _ => None,
        }
    }

    /// The value as a signed integer, for key columns.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(value) => Some(*value),
            Value::UInt(value) => i64::try_from(*value).ok(),
            _ => None,
        }
    }

    /// Converts a decoded binlog value of a column of type `column_type`.
    pub(crate) fn from_binlog(
        value: BinlogValue<'_>,
        column_type: ColumnType,
    ) -> Result<Value, String> {
        let plain = match value {
            BinlogValue::Value(plain) => plain,
            // MySQL's binary JSON: its text, through mysql_common's own conversion.
            BinlogValue::Jsonb(_) => {
                return match mysql_async::Value::try_from(value) {
                    Ok(mysql_async::Value::Bytes(text)) => Ok(Value::Bytes(text)),
                    Ok(other) => Err(format!("JSON decoded to {other:?}")),
                    Err(error) => Err(error.to_string()),
                };
            }
            // Only with MySQL's binlog_row_value_options=PARTIAL_JSON: the
            // image holds a diff, not the value.
            BinlogValue::JsonDiff(_) => {
                return Err(
                    "a partial JSON update (binlog_row_value_options=PARTIAL_JSON) \
                     has no full value: SET GLOBAL binlog_row_value_options=''"
                        .to_owned(),
                );
            }
        };
        Ok(from_plain(plain, column_type))
    }
}

fn from_plain(value: mysql_async::Value, column_type: ColumnType) -> Value {
    use mysql_async::Value as V;
    match value {
        V::NULL => Value::Null,
        V::Int(int) => match column_type {
            // The old TIMESTAMP type (before MySQL 5.6): seconds.
            ColumnType::MYSQL_TYPE_TIMESTAMP => Value::Timestamp(int.saturating_mul(1_000_000)),
            _ => Value::Int(int),
        },
        V::UInt(int) => match i64::try_from(int) {
            Ok(int) => Value::Int(int),
            Err(_) => Value::UInt(int),
        },
        V::Float(float) => Value::Float(float),
        V::Double(double) => Value::Double(double),
        V::Bytes(bytes) => from_bytes(bytes, column_type),
        V::Date(year, month, day, hour, minute, second, micros) => {
            if matches!(
                column_type,
                ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE
            ) {
                return Value::Date(format!("{year:04}-{month:02}-{day:02}"));
            }
            let mut text =
                format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}");
            if micros != 0 {
                text.push_str(&format!(".{micros:06}"));
            }
            Value::DateTime(text)
        }
        V::Time(negative, days, hours, minutes, seconds, micros) => {
            let hours = u64::from(days) * 24 + u64::from(hours);
            let sign = if negative { "-" } else { "" };
            let mut text = format!("{sign}{hours:02}:{minutes:02}:{seconds:02}");
            if micros != 0 {
                text.push_str(&format!(".{micros:06}"));
            }
            Value::Time(text)
        }
    }
}

/// Bytes that are really numbers for some column types.
fn from_bytes(bytes: Vec<u8>, column_type: ColumnType) -> Value {
    match column_type {
        ColumnType::MYSQL_TYPE_NEWDECIMAL | ColumnType::MYSQL_TYPE_DECIMAL => {
            Value::Decimal(String::from_utf8_lossy(&bytes).into_owned())
        }
        ColumnType::MYSQL_TYPE_YEAR => match std::str::from_utf8(&bytes)
            .ok()
            .and_then(|text| text.parse().ok())
        {
            Some(year) => Value::Int(year),
            None => Value::Bytes(bytes),
        },
        // TIMESTAMP(n): mysql_common prints `seconds[.micros]`.
        ColumnType::MYSQL_TYPE_TIMESTAMP2 => match timestamp_micros(&bytes) {
            Some(micros) => Value::Timestamp(micros),
            None => Value::Bytes(bytes),
        },
        _ => Value::Bytes(bytes),
    }
}

/// `seconds[.micros]` (micros with six digits) to microseconds.
fn timestamp_micros(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (seconds, micros) = match text.split_once('.') {
        Some((seconds, micros)) => (seconds, micros),
        None => (text, "0"),
    };
    let seconds: i64 = seconds.parse().ok()?;
    let micros: i64 = micros.parse().ok()?;
    seconds.checked_mul(1_000_000)?.checked_add(micros)
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(value) => write!(f, "{value}"),
            Value::UInt(value) => write!(f, "{value}"),
            Value::Float(value) => write!(f, "{value}"),
            Value::Double(value) => write!(f, "{value}"),
            Value::Bytes(bytes) => write!(f, "{}", String::from_utf8_lossy(bytes)),
            Value::Decimal(text)
            | Value::Date(text)
            | Value::DateTime(text)
            | Value::Time(text) => f.write_str(text),
            Value::Timestamp(micros) => write!(f, "@{micros}us"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mysql_async::Value as V;

    #[test]
    fn numbers_hidden_in_bytes_are_told_apart() {
        assert_eq!(
            from_plain(
                V::Bytes(b"-12.50".to_vec()),
                ColumnType::MYSQL_TYPE_NEWDECIMAL
            ),
            Value::Decimal("-12.50".to_owned())
        );
        assert_eq!(
            from_plain(V::Bytes(b"2024".to_vec()), ColumnType::MYSQL_TYPE_YEAR),
            Value::Int(2024)
        );
        assert_eq!(
            from_plain(
                V::Bytes(b"1700000000.000250".to_vec()),
                ColumnType::MYSQL_TYPE_TIMESTAMP2
            ),
            Value::Timestamp(1_700_000_000_000_250)
        );
        assert_eq!(
            from_plain(
                V::Bytes(b"1700000000".to_vec()),
                ColumnType::MYSQL_TYPE_TIMESTAMP2
            ),
            Value::Timestamp(1_700_000_000_000_000)
        );
        assert_eq!(
            from_plain(V::Bytes(b"text".to_vec()), ColumnType::MYSQL_TYPE_VARCHAR),
            Value::Bytes(b"text".to_vec())
        );
    }

    #[test]
    fn an_integer_is_one_variant_whatever_its_signedness() {
        assert_eq!(
            from_plain(V::UInt(7), ColumnType::MYSQL_TYPE_LONGLONG),
            Value::Int(7)
        );
        assert_eq!(
            from_plain(V::UInt(u64::MAX), ColumnType::MYSQL_TYPE_LONGLONG),
            Value::UInt(u64::MAX)
        );
    }

    #[test]
    fn dates_and_times_print_as_mysql_does() {
        assert_eq!(
            from_plain(
                V::Date(2024, 2, 29, 0, 0, 0, 0),
                ColumnType::MYSQL_TYPE_DATE
            ),
            Value::Date("2024-02-29".to_owned())
        );
        assert_eq!(
            from_plain(
                V::Date(2024, 2, 29, 13, 5, 9, 120),
                ColumnType::MYSQL_TYPE_DATETIME2
            ),
            Value::DateTime("2024-02-29 13:05:09.000120".to_owned())
        );
        assert_eq!(
            from_plain(V::Time(true, 1, 2, 3, 4, 0), ColumnType::MYSQL_TYPE_TIME2),
            Value::Time("-26:03:04".to_owned())
        );
    }
}
