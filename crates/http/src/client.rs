//! Who a request comes from, for rate limits, per-client caps, trending
//! counts and the admin loopback rule.
//!
//! Directly on the internet the client is the socket's peer. Behind a
//! reverse proxy the peer is the proxy, so every client would share one
//! budget, and a proxy on the same machine would make everyone "loopback".
//! With `CHAJA_TRUSTED_PROXIES` set, a request whose peer is one of them is
//! charged to the address that proxy recorded: the rightmost entry of
//! `X-Forwarded-For` (or of `Forwarded`), which is the one the trusted proxy
//! wrote itself; entries to its left are whatever the client sent. Headers
//! from any other peer are ignored, so a client cannot pick its own address.
//! Parsing is `client-ip`'s, the crate `axum-client-ip` is built on.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The header a trusted proxy records the client in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For` (nginx, HAProxy, most load balancers).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=…`.
    Forwarded,
}

/// Addresses or CIDR blocks, comma-separated (`CHAJA_TRUSTED_PROXIES`,
/// `CHAJA_TRENDING_EXCLUDE`). An empty value is an empty list, so `KEY=` in
/// a compose file means none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Networks(pub Vec<IpNet>);

impl Networks {
    pub fn contains(&self, addr: IpAddr) -> bool {
        let addr = addr.to_canonical();
        self.0.iter().any(|net| net.contains(&addr))
    }
}

impl std::str::FromStr for Networks {
    type Err = String;

    fn from_str(s: &str) -> Result<Networks, String> {
        s.split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| {
                part.parse::<IpNet>()
                    .or_else(|_| part.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("{part:?} is not an IP address or CIDR block"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Networks)
    }
}

/// Resolves a request's client from its peer and headers.
#[derive(Debug, Clone, Default)]
pub struct ClientResolver {
    trusted: Arc<[IpNet]>,
    header: ForwardedHeader,
}

impl ClientResolver {
    /// No trusted proxies: the client is always the peer.
    pub fn new(trusted: Networks, header: ForwardedHeader) -> ClientResolver {
        ClientResolver {
            trusted: trusted.0.into(),
            header,
        }
    }

    pub fn resolve(&self, peer: IpAddr, headers: &HeaderMap) -> Client {
        let peer = peer.to_canonical();
        if !self.trusted.iter().any(|net| net.contains(&peer)) {
            return Client::new(peer);
        }
        let forwarded = match self.header {
            ForwardedHeader::XForwardedFor => client_ip::rightmost_x_forwarded_for(headers),
            ForwardedHeader::Forwarded => client_ip::rightmost_forwarded(headers),
        };
        match forwarded {
            Ok(ip) => Client::new(ip.to_canonical()),
            // A trusted proxy that did not say who the client is (no header,
            // or one a client garbled): charged to the proxy, and never
            // loopback, though the proxy itself may be on this machine.
            Err(_) => Client {
                loopback: false,
                ..Client::new(peer)
            },
        }
    }
}

/// A request's client, resolved once by the guard and kept in the
/// request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Client {
    /// The address.
    pub addr: IpAddr,
    /// Whether the request comes from this machine: the loopback rule
    /// (admin without a key, no per-client limits).
    loopback: bool,
    /// What limits and counts are keyed by: the address, with IPv6 cut to
    /// its /64. One subscriber gets a whole /64, so keying by address would
    /// let one machine pose as 2^64 clients.
    pub key: IpAddr,
}

impl Client {
    pub fn new(addr: IpAddr) -> Client {
        let key = match addr {
            IpAddr::V4(_) => addr,
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(prefix))
            }
        };
        Client {
            addr,
            loopback: addr.is_loopback(),
            key,
        }
    }

    pub fn is_loopback(&self) -> bool {
        self.loopback
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(name: &'static str, value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_static(value));
        h
    }

    #[test]
    fn forwarded_addresses_count_only_from_trusted_peers() {
        let resolver = ClientResolver::new(
            "10.0.0.0/8, 192.0.2.1".parse().unwrap(),
            ForwardedHeader::XForwardedFor,
        );
        let xff = headers("x-forwarded-for", "127.0.0.1, 203.0.113.9");
        let proxy: IpAddr = "10.1.2.3".parse().unwrap();
        let stranger: IpAddr = "198.51.100.7".parse().unwrap();
        assert_eq!(
            resolver.resolve(proxy, &xff).addr,
            "203.0.113.9".parse::<IpAddr>().unwrap()
        );
        // A client that is not a trusted proxy cannot choose its address.
        assert_eq!(resolver.resolve(stranger, &xff).addr, stranger);
        // A trusted proxy that sent nothing usable: the proxy itself.
        assert_eq!(resolver.resolve(proxy, &HeaderMap::new()).addr, proxy);
        // ...and a proxy on this machine does not make its clients local.
        let local = ClientResolver::new("127.0.0.1".parse().unwrap(), ForwardedHeader::Forwarded);
        let garbled = headers("forwarded", "for=\", for=203.0.113.9");
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(!local.resolve(loopback, &garbled).is_loopback());
        assert!(!local.resolve(loopback, &HeaderMap::new()).is_loopback());
        assert!(local
            .resolve(loopback, &headers("forwarded", "for=127.0.0.1"))
            .is_loopback());
        assert!(ClientResolver::default()
            .resolve(loopback, &HeaderMap::new())
            .is_loopback());
        // Off unless configured.
        let off = ClientResolver::default();
        assert_eq!(off.resolve(proxy, &xff).addr, proxy);
        // A bare address is a /32; an empty setting is no proxies.
        let single: IpAddr = "192.0.2.1".parse().unwrap();
        assert_ne!(resolver.resolve(single, &xff).addr, single);
        assert_eq!("".parse::<Networks>().unwrap(), Networks::default());
        assert!("10.0.0.0/8,nonsense".parse::<Networks>().is_err());

        let rfc = ClientResolver::new("10.0.0.0/8".parse().unwrap(), ForwardedHeader::Forwarded);
        let fwd = headers("forwarded", "for=127.0.0.1, for=\"[2001:db8::1]:4711\"");
        assert_eq!(
            rfc.resolve(proxy, &fwd).addr,
            "2001:db8::1".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64() {
        let a = Client::new("2001:db8:1:2:aaaa::1".parse().unwrap());
        let b = Client::new("2001:db8:1:2:bbbb::2".parse().unwrap());
        let c = Client::new("2001:db8:1:3::1".parse().unwrap());
        assert_eq!(a.key, b.key);
        assert_ne!(a.key, c.key);
        let v4 = Client::new("::ffff:192.0.2.1".parse::<IpAddr>().unwrap().to_canonical());
        assert_eq!(v4.key, "192.0.2.1".parse::<IpAddr>().unwrap());
        assert!(Client::new("::1".parse().unwrap()).is_loopback());
    }
}
