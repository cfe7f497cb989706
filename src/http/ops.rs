//! What operators expect around every request: API keys on writes, a
//! per-client rate limit, request metrics, and shedding load with a 503
//! instead of queueing without bound.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::BoxError;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::error::Error;

/// Settings the middleware reads, built once from the config.
#[derive(Clone)]
pub struct Guard {
    api_key: Option<Arc<str>>,
    limiter: Option<Arc<DefaultKeyedRateLimiter<IpAddr>>>,
}

impl Guard {
    /// `per_second` requests per client IP, bursts up to twice that; 0 turns
    /// the limit off.
    pub fn new(api_key: Option<String>, per_second: u32) -> Guard {
        let limiter = NonZeroU32::new(per_second).map(|rate| {
            let burst = rate.saturating_mul(NonZeroU32::new(2).expect("2 is not zero"));
            Arc::new(RateLimiter::keyed(
                Quota::per_second(rate).allow_burst(burst),
            ))
        });
        Guard {
            api_key: api_key.filter(|k| !k.is_empty()).map(Arc::from),
            limiter,
        }
    }
}

/// Writes and `/api/admin/*` need the key; searches and reads stay public.
fn needs_key(method: &Method, path: &str) -> bool {
    path.starts_with("/api/admin/")
        || (path.starts_with("/api/") && !matches!(*method, Method::GET | Method::HEAD))
}

pub async fn guard(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    if let Some(limiter) = &guard.limiter {
        let ip = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        if let Some(ip) = ip {
            if let Err(not_until) = limiter.check_key(&ip) {
                let wait = not_until.wait_time_from(governor::clock::Clock::now(
                    &governor::clock::DefaultClock::default(),
                ));
                let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                let mut response = Error::TooManyRequests.into_response();
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
                return response;
            }
        }
    }
    if let Some(key) = &guard.api_key {
        if needs_key(request.method(), request.uri().path()) {
            let given = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            match given {
                None => {
                    let mut response = Error::Unauthorized.into_response();
                    response
                        .headers_mut()
                        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                    return response;
                }
                Some(given)
                    if !constant_time_eq::constant_time_eq(given.as_bytes(), key.as_bytes()) =>
                {
                    return Error::Forbidden.into_response();
                }
                Some(_) => {}
            }
        }
    }
    next.run(request).await
}

/// Latency histogram and count by route, method and status.
pub async fn record_metrics(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().to_string();
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
