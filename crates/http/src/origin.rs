//! Where a request comes from, as a browser says it: the rules that keep a
//! web page from using the operator's browser against chaja.
//!
//! A page open in a browser on the server's machine can send a cross-site
//! POST to `127.0.0.1:8080` (no CORS preflight for a body-less POST), and
//! through DNS rebinding (`evil.example` resolving to 127.0.0.1) it can even
//! read answers, as Jupyter and Elasticsearch once learnt. Two rules close
//! that:
//!
//! - **Cross-site writes are refused**, on every write and admin route, key
//!   or not: a state-changing request whose `Sec-Fetch-Site` is
//!   `cross-site` or `same-site`, or whose `Origin` names another host than
//!   the request's `Host` (or an allowed host), gets a 403. Requests from
//!   programs send neither header and are not affected; a browser sends
//!   them on every cross-origin request and cannot be made to forge them.
//! - **Keyless admin needs a loopback Host.** With no `CHAJA_ADMIN_KEY`,
//!   admin and `/metrics` answer loopback clients only, and now only when
//!   the `Host` they asked for is loopback (`localhost`, `127.0.0.1`,
//!   `[::1]`) or in `CHAJA_ALLOWED_HOSTS`. A rebinding page asks for
//!   `evil.example` and is refused.
//!
//! The other way out was a generated admin key, printed once at the first
//! start. It was not taken: the key-less local console (`/console` on the
//! same machine) would then need a secret copied from a log, and a process
//! that forgot it would lock its own operator out; the Host rule keeps that
//! zero-configuration use and closes the same hole. An operator who serves
//! the console under a name sets `CHAJA_ALLOWED_HOSTS`, or an admin key.

use std::sync::Arc;

use axum::http::{header, HeaderMap, Method};

/// `CHAJA_ALLOWED_HOSTS`: host names (no port) besides loopback under
/// which keyless admin answers and from which browser writes may come.
/// An empty value is an empty list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedHosts(Arc<[String]>);

impl std::str::FromStr for AllowedHosts {
    type Err = String;

    fn from_str(list: &str) -> Result<AllowedHosts, String> {
        let mut hosts = Vec::new();
        for host in list.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            if host.contains(['/', ' ', '@']) {
                return Err(format!("{host:?} is not a host name"));
            }
            hosts.push(host.to_ascii_lowercase());
        }
        Ok(AllowedHosts(hosts.into()))
    }
}

impl AllowedHosts {
    /// Whether keyless admin answers a request for `Host: host`.
    pub(crate) fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(hostname)
        else {
            // HTTP/1.1 requires a Host; without one nothing was asked for
            // by name, so nothing was rebound.
            return true;
        };
        is_loopback_name(&host) || self.0.contains(&host)
    }
}

/// Whether a state-changing request was sent by a page of another site.
pub(crate) fn cross_site(method: &Method, headers: &HeaderMap, allowed: &AllowedHosts) -> bool {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return false;
    }
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if matches!(fetch_site, Some("cross-site" | "same-site")) {
        return true;
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return false;
    };
    let Some(origin) = origin.to_str().ok().and_then(origin_authority) else {
        // `null` (a sandboxed page, a file) or garbage: not this site.
        return true;
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let same = host.is_some_and(|h| h.eq_ignore_ascii_case(origin));
    !(same || allowed.0.contains(&hostname(origin)))
}

/// `host[:port]` of an `Origin` value (`scheme://host[:port]`).
fn origin_authority(origin: &str) -> Option<&str> {
    let (_, rest) = origin.split_once("://")?;
    (!rest.is_empty() && !rest.contains('/')).then_some(rest)
}

/// The host name of `host[:port]` or `[v6]:port`, lowercase.
fn hostname(authority: &str) -> String {
    let host = if let Some(rest) = authority.strip_prefix('[') {
        rest.split(']').next().unwrap_or(rest)
    } else {
        authority
            .rsplit_once(':')
            .map_or(authority, |(host, port)| {
                if port.bytes().all(|b| b.is_ascii_digit()) {
                    host
                } else {
                    authority
                }
            })
    };
    host.to_ascii_lowercase()
}

fn is_loopback_name(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn only_loopback_or_allowed_hosts_admit_keyless_admin() {
        let none = AllowedHosts::default();
        for host in [
            "127.0.0.1:8080",
            "localhost:8080",
            "[::1]:8080",
            "LOCALHOST",
        ] {
            assert!(none.admits(&headers(&[("host", host)])), "{host}");
        }
        for host in ["evil.example", "evil.example:8080", "10.0.0.5:8080"] {
            assert!(!none.admits(&headers(&[("host", host)])), "{host}");
        }
        let allowed: AllowedHosts = "Search.Internal, ops".parse().unwrap();
        assert!(allowed.admits(&headers(&[("host", "search.internal:8080")])));
        assert!(!allowed.admits(&headers(&[("host", "evil.example")])));
    }

    #[test]
    fn cross_site_writes_are_told_apart() {
        let none = AllowedHosts::default();
        let post = Method::POST;
        let at = |pairs| cross_site(&post, &headers(pairs), &none);
        assert!(!at(&[("host", "127.0.0.1:8080")]));
        assert!(!at(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080")
        ]));
        assert!(!at(&[("host", "a:1"), ("sec-fetch-site", "same-origin")]));
        assert!(at(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example")
        ]));
        assert!(at(&[("host", "127.0.0.1:8080"), ("origin", "null")]));
        assert!(at(&[
            ("host", "127.0.0.1:8080"),
            ("sec-fetch-site", "cross-site")
        ]));
        assert!(at(&[
            ("host", "127.0.0.1:8080"),
            ("sec-fetch-site", "same-site")
        ]));
        // Reads are never refused for where they come from.
        let get = headers(&[("host", "a"), ("origin", "http://evil.example")]);
        assert!(!cross_site(&Method::GET, &get, &none));
        let allowed: AllowedHosts = "app.example".parse().unwrap();
        let from_app = headers(&[("host", "10.0.0.5:8080"), ("origin", "https://app.example")]);
        assert!(!cross_site(&post, &from_app, &allowed));
    }
}
