//! Request ids: unique per request, and cheap to make.
//!
//! tower-http's `MakeRequestUuid` asks the kernel for 16 random bytes on
//! every request (a `getrandom` system call each time); a profile of the
//! cached answer path put it at about 1% of the process. An id only has to
//! tell requests apart in the fleet's logs, so this one is a random prefix
//! drawn once per process and a counter after it, `3f9c04e1d2b7a856-2a`.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::http::{HeaderValue, Request};
use tower_http::request_id::{MakeRequestId, RequestId};

#[derive(Clone)]
pub(crate) struct RequestIds {
    prefix: u64,
    next: Arc<AtomicU64>,
}

impl RequestIds {
    pub(crate) fn new() -> RequestIds {
        // Written by hand rather than with a random-number crate: std's
        // `RandomState` is already seeded from the OS, once per process.
        let prefix = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        RequestIds {
            prefix,
            next: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _: &Request<B>) -> Option<RequestId> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = format!("{:016x}-{n:x}", self.prefix);
        HeaderValue::from_str(&id).ok().map(RequestId::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_differ_between_requests_and_between_processes() {
        let request = Request::new(());
        let mut ids = RequestIds::new();
        let mut again = ids.clone();
        let first = ids.make_request_id(&request).unwrap();
        let second = again.make_request_id(&request).unwrap();
        assert_ne!(first.header_value(), second.header_value());
        // Another maker stands for another process: another prefix.
        let other = RequestIds::new().make_request_id(&request).unwrap();
        let prefix = |id: &RequestId| id.header_value().to_str().unwrap()[..16].to_owned();
        assert_ne!(prefix(&first), prefix(&other));
    }
}
