//! What operators expect around every request: keys by scope, per-client
//! limits (a rate, and requests in flight), request metrics, and shedding
//! load with a 503 instead of queueing without bound.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::BoxError;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::client::{ClientResolver, Networks};
use crate::error::ApiError;
use crate::origin::{self, AllowedHosts};

/// The keys by scope. Each guards its own scope only: the admin key does
/// not open writes, nor the write key admin.
#[derive(Clone, Debug, Default)]
pub struct Keys {
    search: Option<Arc<str>>,
    write: Option<Arc<str>>,
    admin: Option<Arc<str>>,
}

impl Keys {
    /// Empty strings count as unset.
    pub fn new(search: Option<String>, write: Option<String>, admin: Option<String>) -> Keys {
        let key = |k: Option<String>| k.filter(|k| !k.is_empty()).map(Arc::from);
        Keys {
            search: key(search),
            write: key(write),
            admin: key(admin),
        }
    }
}

/// What a request touches, and so which key it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Health, the API reference, reads of the platform's rows.
    Public,
    /// Searches, suggestions, trending.
    Search,
    /// Anything under `/api/` that is not a read.
    Write,
    /// `/api/admin/*` and `/metrics`: operations and what they reveal.
    Admin,
}

fn scope(method: &Method, path: &str) -> Scope {
    if path.starts_with("/api/admin/") || path == "/metrics" {
        Scope::Admin
    } else if path == "/api/search"
        || path.starts_with("/api/search/")
        || path == "/api/suggest"
        // A like search reads the index only, whether its text comes in
        // the query string or in a POST body.
        || path == "/api/similar"
    {
        Scope::Search
    } else if path.starts_with("/api/") && !matches!(*method, Method::GET | Method::HEAD) {
        Scope::Write
    } else {
        Scope::Public
    }
}

/// Whether a request can be refused for its key (when its scope's key is
/// set, or, for admin, from off this machine): every route but the public
/// ones. The OpenAPI document declares 401 and 403 on these.
pub(crate) fn needs_key(method: &Method, path: &str) -> bool {
    scope(method, path) != Scope::Public
}

/// Why a request is refused, if it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// No key sent: 401.
    Missing,
    /// A wrong key, or admin without a key from off the machine: 403.
    Wrong,
}

/// Whether a request of `scope` from `peer` with bearer token `given` may
/// go on. With no admin key set, admin answers loopback clients only, so a
/// server reachable from outside is never open to rebuilds by default.
fn check(
    keys: &Keys,
    scope: Scope,
    on_this_machine: bool,
    given: Option<&str>,
) -> Result<(), Refusal> {
    let key = match scope {
        Scope::Public => return Ok(()),
        // The admin key opens searches too (a load test sends it so that
        // its searches are not counted in trending).
        Scope::Search
            if keys
                .admin
                .as_ref()
                .zip(given)
                .is_some_and(|(admin, given)| {
                    constant_time_eq::constant_time_eq(given.as_bytes(), admin.as_bytes())
                }) =>
        {
            return Ok(())
        }
        Scope::Search => &keys.search,
        Scope::Write => &keys.write,
        Scope::Admin => &keys.admin,
    };
    let Some(key) = key else {
        return match scope {
            Scope::Admin if !on_this_machine => Err(Refusal::Wrong),
            _ => Ok(()),
        };
    };
    match given {
        None => Err(Refusal::Missing),
        Some(given) if constant_time_eq::constant_time_eq(given.as_bytes(), key.as_bytes()) => {
            Ok(())
        }
        Some(_) => Err(Refusal::Wrong),
    }
}

/// Marks a request whose searches trending does not count (see `guard`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Uncounted;

/// Settings the middleware reads, built once from the config and shared
/// behind an `Arc` (see [`guard`]).
pub struct Guard {
    keys: Keys,
    hosts: AllowedHosts,
    uncounted: Networks,
    resolver: ClientResolver,
    limiter: Option<Arc<Limiter>>,
    in_flight: Option<Arc<InFlight>>,
}

impl Guard {
    /// `per_second` requests per client, bursts up to twice that; 0 turns
    /// the limit off. `in_flight_per_client` requests at once per client;
    /// 0 turns that cap off. Loopback clients are never limited, so a load
    /// test on the same machine measures the server.
    pub fn new(
        keys: Keys,
        hosts: AllowedHosts,
        uncounted: Networks,
        resolver: ClientResolver,
        per_second: u32,
        in_flight_per_client: usize,
    ) -> Guard {
        let limiter = NonZeroU32::new(per_second).map(|rate| {
            let burst = rate.saturating_mul(NonZeroU32::new(2).expect("2 is not zero"));
            Arc::new(Limiter {
                clients: RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)),
                pruned_at_ms: AtomicI64::new(chaja_core::clock::now_ms()),
            })
        });
        let in_flight = (in_flight_per_client > 0).then(|| {
            Arc::new(InFlight {
                cap: in_flight_per_client,
                clients: Mutex::default(),
            })
        });
        Guard {
            keys,
            hosts,
            uncounted,
            resolver,
            limiter,
            in_flight,
        }
    }
}

/// Requests in flight per client. A map of counters under a mutex, written
/// by hand because it is this small: an entry exists only while its client
/// has a request in flight, so its size is bounded by the global in-flight
/// limit, and the lock is held for one increment or decrement.
struct InFlight {
    cap: usize,
    clients: Mutex<HashMap<IpAddr, usize>>,
}

impl InFlight {
    /// A slot for `client`, or `None` when it already has `cap` in flight.
    fn enter(self: &Arc<Self>, client: IpAddr) -> Option<InFlightSlot> {
        let mut clients = self.clients.lock().expect("in-flight lock");
        let count = clients.entry(client).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(InFlightSlot {
            table: self.clone(),
            client,
        })
    }
}

/// Gives its slot back when the request finishes or is dropped.
struct InFlightSlot {
    table: Arc<InFlight>,
    client: IpAddr,
}

impl Drop for InFlightSlot {
    fn drop(&mut self) {
        let mut clients = self.table.clients.lock().expect("in-flight lock");
        if let Some(count) = clients.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                clients.remove(&self.client);
            }
        }
    }
}

/// The per-client rate limiter, with its state pruned: every client that
/// ever sent a request would otherwise keep an entry for good.
struct Limiter {
    /// Keyed by `Client::key`.
    clients: DefaultKeyedRateLimiter<IpAddr>,
    pruned_at_ms: AtomicI64,
}

/// How often the limiter forgets clients whose quota has refilled.
const PRUNE_EVERY_MS: i64 = 10_000;

impl Limiter {
    /// Drops the state of clients that are as good as new; the request that
    /// finds it due does it, one at a time.
    fn prune_if_due(&self) {
        let now = chaja_core::clock::now_ms();
        let last = self.pruned_at_ms.load(Ordering::Relaxed);
        if now - last < PRUNE_EVERY_MS {
            return;
        }
        if self
            .pruned_at_ms
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.prune();
        }
    }

    fn prune(&self) {
        self.clients.retain_recent();
        self.clients.shrink_to_fit();
    }
}

/// Keys, hosts, client resolution and the per-client limits, in front of
/// every route. The guard is behind an `Arc` because `from_fn_with_state`
/// clones its state for each request, and the guard holds several
/// reference-counted sets.
pub async fn guard(State(guard): State<Arc<Guard>>, mut request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    let client = peer.map(|peer| guard.resolver.resolve(peer, request.headers()));
    if let Some(client) = client {
        request.extensions_mut().insert(client);
    }
    let limited = client.filter(|c| !c.is_loopback());
    if let (Some(limiter), Some(client)) = (&guard.limiter, limited) {
        limiter.prune_if_due();
        if let Err(not_until) = limiter.clients.check_key(&client.key) {
            let wait = not_until.wait_time_from(governor::clock::Clock::now(
                &governor::clock::DefaultClock::default(),
            ));
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            return too_many(ApiError::TooManyRequests, seconds.max(1));
        }
    }
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let given = given.as_deref();
    let scope = scope(request.method(), request.uri().path());
    // Searches trending does not count: the operator's own (the admin
    // key: a load test, a check) and excluded addresses.
    let is_admin = match (&guard.keys.admin, given) {
        (Some(key), Some(given)) => {
            constant_time_eq::constant_time_eq(given.as_bytes(), key.as_bytes())
        }
        _ => false,
    };
    if is_admin || client.is_some_and(|c| guard.uncounted.contains(c.addr)) {
        request.extensions_mut().insert(Uncounted);
    }
    // Before the key: a page of another site must not use a key the
    // operator's browser holds (or loopback trust) to change anything.
    if matches!(scope, Scope::Write | Scope::Admin)
        && origin::cross_site(request.method(), request.headers(), &guard.hosts)
    {
        return ApiError::CrossSite.into_response();
    }
    if scope == Scope::Admin && guard.keys.admin.is_none() && !guard.hosts.admits(request.headers())
    {
        return ApiError::HostNotAllowed.into_response();
    }
    match check(
        &guard.keys,
        scope,
        client.is_some_and(|c| c.is_loopback()),
        given,
    ) {
        Ok(()) => {}
        Err(Refusal::Missing) => {
            let mut response = ApiError::Unauthorized.into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        Err(Refusal::Wrong) => return ApiError::Forbidden.into_response(),
    }
    let _slot = match (&guard.in_flight, limited) {
        (Some(in_flight), Some(client)) => match in_flight.enter(client.key) {
            Some(slot) => Some(slot),
            None => return too_many(ApiError::TooManyInFlight, 1),
        },
        _ => None,
    };
    next.run(request).await
}

fn too_many(error: ApiError, retry_after_seconds: u64) -> Response {
    let mut response = error.into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_seconds));
    response
}

/// Latency histogram and count by route, method and status.
pub async fn record_metrics(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    // Any token is a valid HTTP method: only the standard ones get a label
    // of their own, so clients cannot create metric series at will.
    let method = match *request.method() {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
    .to_owned();
    let response = next.run(request).await;
    let labels = [
        ("route", route),
        ("method", method),
        ("status", response.status().as_u16().to_string()),
    ];
    metrics::counter!("http_requests_total", &labels).increment(1);
    metrics::histogram!("http_request_duration_seconds", &labels)
        .record(started.elapsed().as_secs_f64());
    response
}

/// Turns the timeout and load-shed layers' errors into JSON 503s.
pub async fn overloaded(error: BoxError) -> Response {
    let (code, message) = if error.is::<tower::timeout::error::Elapsed>() {
        ("timeout", "the request took too long; try again")
    } else if error.is::<tower::load_shed::error::Overloaded>() {
        ("overloaded", "too many requests in flight; try again")
    } else {
        tracing::error!(error = %error, "middleware failed");
        ("internal", "internal error")
    };
    let status = if code == "internal" {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = serde_json::json!({ "error": { "code": code, "message": message } });
    (status, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTSIDE: bool = false;
    const LOOPBACK: bool = true;

    #[test]
    fn each_key_guards_its_own_scope() {
        let keys = Keys::new(Some("s".into()), Some("w".into()), Some("a".into()));
        let get = Method::GET;
        let post = Method::POST;
        assert_eq!(scope(&get, "/api/search"), Scope::Search);
        assert_eq!(scope(&get, "/api/search/trending"), Scope::Search);
        assert_eq!(scope(&get, "/api/suggest"), Scope::Search);
        assert_eq!(scope(&get, "/api/similar"), Scope::Search);
        assert_eq!(scope(&post, "/api/similar"), Scope::Search);
        assert_eq!(scope(&post, "/api/things"), Scope::Write);
        assert_eq!(scope(&get, "/api/things/1"), Scope::Public);
        assert_eq!(scope(&post, "/api/admin/reindex"), Scope::Admin);
        assert_eq!(scope(&get, "/metrics"), Scope::Admin);
        assert_eq!(scope(&get, "/readyz"), Scope::Public);
        for (scope, right) in [
            (Scope::Search, "s"),
            (Scope::Write, "w"),
            (Scope::Admin, "a"),
        ] {
            assert_eq!(check(&keys, scope, LOOPBACK, Some(right)), Ok(()));
            assert_eq!(check(&keys, scope, LOOPBACK, None), Err(Refusal::Missing));
            // The admin key opens searches too (see `check`).
            let opens = |key: &str| key == right || (scope == Scope::Search && key == "a");
            for other in ["s", "w", "a"].into_iter().filter(|k| !opens(k)) {
                assert_eq!(
                    check(&keys, scope, OUTSIDE, Some(other)),
                    Err(Refusal::Wrong)
                );
            }
        }
        assert_eq!(check(&keys, Scope::Search, OUTSIDE, Some("a")), Ok(()));
        assert_eq!(check(&keys, Scope::Public, OUTSIDE, None), Ok(()));
    }

    #[test]
    fn the_rate_limiter_forgets_clients_whose_quota_refilled() {
        let guard = Guard::new(
            Keys::default(),
            AllowedHosts::default(),
            Networks::default(),
            ClientResolver::default(),
            1000,
            0,
        );
        let limiter = guard.limiter.expect("a limit is set");
        for i in 0..1000u32 {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            assert!(limiter.clients.check_key(&ip).is_ok());
        }
        assert_eq!(limiter.clients.len(), 1000);
        // At 1,000 a second, one request's worth refills in a millisecond.
        std::thread::sleep(std::time::Duration::from_millis(20));
        limiter.prune();
        assert_eq!(limiter.clients.len(), 0);
    }

    #[test]
    fn without_keys_only_admin_is_closed_and_only_to_other_machines() {
        let keys = Keys::new(None, Some(String::new()), None);
        assert_eq!(check(&keys, Scope::Search, OUTSIDE, None), Ok(()));
        assert_eq!(check(&keys, Scope::Write, OUTSIDE, None), Ok(()));
        assert_eq!(check(&keys, Scope::Admin, LOOPBACK, None), Ok(()));
        assert_eq!(
            check(&keys, Scope::Admin, OUTSIDE, None),
            Err(Refusal::Wrong)
        );
        assert_eq!(
            check(&keys, Scope::Admin, OUTSIDE, Some("guess")),
            Err(Refusal::Wrong)
        );
        // IPv4-mapped loopback is loopback.
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let client = ClientResolver::default().resolve(mapped, &axum::http::HeaderMap::new());
        assert_eq!(
            check(&keys, Scope::Admin, client.is_loopback(), None),
            Ok(())
        );
    }
}
