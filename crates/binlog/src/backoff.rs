//! Waiting between reconnects: doubling from `first` up to `max`.
//!
//! A server restart takes seconds; a failover can take a minute. Retrying
//! at once would hammer a server that is starting, and waiting long from
//! the start would add lag to a blip, so the wait doubles.

use std::time::Duration;

/// How a reader waits between attempts to reconnect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub first: Duration,
    pub max: Duration,
    /// Past this much time without a connection the reader returns
    /// `Error::GaveUp`; `None` retries for ever.
    pub give_up_after: Option<Duration>,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            first: Duration::from_millis(100),
            max: Duration::from_secs(10),
            give_up_after: None,
        }
    }
}

impl Backoff {
    /// The wait before attempt `attempt` (0 for the first retry).
    pub(crate) fn wait(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.min(30));
        self.first.saturating_mul(factor).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap() {
        let backoff = Backoff::default();
        assert_eq!(backoff.wait(0), Duration::from_millis(100));
        assert_eq!(backoff.wait(1), Duration::from_millis(200));
        assert_eq!(backoff.wait(6), Duration::from_millis(6400));
        assert_eq!(backoff.wait(7), Duration::from_secs(10));
        assert_eq!(backoff.wait(u32::MAX), Duration::from_secs(10));
    }
}
