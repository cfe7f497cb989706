//! The one clock: milliseconds since the Unix epoch, as every timestamp
//! column, cached answer and checkpoint stores them.

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
