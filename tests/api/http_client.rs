//! The tests' HTTP client: HTTP/1 on hyper, the library axum serves with.
//!
//! Written here rather than taken from a client crate so that the `chaja`
//! package, tests included, links no HTTP client: `cargo tree -p chaja
//! --no-default-features` shows none, and only the load tester (its own
//! crate, behind a feature) carries one. It covers what the tests ask of a
//! client and nothing more: a method, headers, a JSON or raw body, query
//! pairs, a timeout and a local address; the answer's status, headers and
//! whole body.

pub use axum::http::{HeaderMap, Method, StatusCode};

use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// What went wrong on the way: a bad URL, a connection, a timeout, a body
/// that did not decode.
#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn error(what: &str, e: impl std::fmt::Display) -> Error {
    Error(format!("{what}: {e}"))
}

/// A pooled client; cheap to clone.
#[derive(Clone)]
pub struct Client {
    inner: hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>,
    timeout: Option<Duration>,
}

impl Default for Client {
    fn default() -> Client {
        Client::new()
    }
}

impl Client {
    pub fn new() -> Client {
        Client::builder()
            .build()
            .expect("a client with no settings builds")
    }

    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    pub fn get(&self, url: impl AsRef<str>) -> RequestBuilder {
        self.request(Method::GET, url)
    }

    pub fn post(&self, url: impl AsRef<str>) -> RequestBuilder {
        self.request(Method::POST, url)
    }

    pub fn request(&self, method: Method, url: impl AsRef<str>) -> RequestBuilder {
        RequestBuilder {
            client: self.clone(),
            method,
            url: url.as_ref().to_owned(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }
}

#[derive(Default)]
pub struct ClientBuilder {
    timeout: Option<Duration>,
    local_address: Option<IpAddr>,
}

impl ClientBuilder {
    /// The longest a request may take, answer included.
    pub fn timeout(mut self, timeout: Duration) -> ClientBuilder {
        self.timeout = Some(timeout);
        self
    }

    /// The address connections come from (a test of per-client limits
    /// uses several loopback addresses).
    pub fn local_address(mut self, address: impl Into<Option<IpAddr>>) -> ClientBuilder {
        self.local_address = address.into();
        self
    }

    pub fn build(self) -> Result<Client, Error> {
        let mut connector = HttpConnector::new();
        connector.set_local_address(self.local_address);
        connector.set_nodelay(true);
        Ok(Client {
            inner: hyper_util::client::legacy::Client::builder(TokioExecutor::new())
                .build(connector),
            timeout: self.timeout,
        })
    }
}

pub struct RequestBuilder {
    client: Client,
    method: Method,
    url: String,
    headers: Vec<(String, String)>,
    body: Bytes,
}

impl RequestBuilder {
    pub fn header(mut self, name: impl AsRef<str>, value: impl AsRef<str>) -> RequestBuilder {
        self.headers
            .push((name.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    pub fn bearer_auth(self, token: impl std::fmt::Display) -> RequestBuilder {
        self.header("authorization", format!("Bearer {token}"))
    }

    /// A JSON body, with its content type.
    pub fn json<T: serde::Serialize + ?Sized>(mut self, body: &T) -> RequestBuilder {
        self.body = serde_json::to_vec(body)
            .expect("a test body serializes")
            .into();
        self.header("content-type", "application/json")
    }

    pub fn body(mut self, body: impl Into<Bytes>) -> RequestBuilder {
        self.body = body.into();
        self
    }

    /// Appends `pairs` to the URL's query, form-encoded.
    pub fn query<K: AsRef<str>, V: AsRef<str>>(mut self, pairs: &[(K, V)]) -> RequestBuilder {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (name, value) in pairs {
            query.append_pair(name.as_ref(), value.as_ref());
        }
        let separator = if self.url.contains('?') { '&' } else { '?' };
        self.url = format!("{}{separator}{}", self.url, query.finish());
        self
    }

    /// Sends the request and reads the whole answer.
    pub async fn send(self) -> Result<Response, Error> {
        let mut request = axum::http::Request::builder()
            .method(self.method)
            .uri(escape(&self.url));
        for (name, value) in &self.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let request = request
            .body(Full::new(self.body))
            .map_err(|e| error("building the request", e))?;
        let exchange = async {
            let response = self
                .client
                .inner
                .request(request)
                .await
                .map_err(|e| error("sending the request", e))?;
            let (parts, body) = response.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|e| error("reading the answer", e))?
                .to_bytes();
            Ok(Response {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        match self.client.timeout {
            Some(limit) => tokio::time::timeout(limit, exchange)
                .await
                .map_err(|_| Error(format!("no answer within {limit:?}")))?,
            None => exchange.await,
        }
    }
}

/// Percent-encodes what a URI may not hold as is (Hangul typed into a
/// query, spaces, quotes), as a browser or `url::Url` does; `%` stays, so
/// a URL already encoded passes unchanged.
fn escape(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for byte in url.bytes() {
        if byte.is_ascii_graphic() && !b"\"<>\\^`{|}".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A whole answer: status, headers and body.
#[derive(Debug)]
pub struct Response {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Response {
    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    pub async fn json<T: serde::de::DeserializeOwned>(self) -> Result<T, Error> {
        serde_json::from_slice(&self.body).map_err(|e| error("decoding JSON", e))
    }

    pub async fn text(self) -> Result<String, Error> {
        String::from_utf8(self.body.to_vec()).map_err(|e| error("decoding text", e))
    }

    pub async fn bytes(self) -> Result<Bytes, Error> {
        Ok(self.body)
    }
}
