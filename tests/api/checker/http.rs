//! The search API as the checks see it: exact totals and `(type, id)` hits.

use std::time::Duration;

use serde_json::Value;

use super::model::RowKind;

/// One search answer: the exact total and the `(type, id)` of the hits.
#[derive(Debug)]
pub(super) struct Found {
    pub(super) total: u64,
    pub(super) hits: Vec<(String, i64)>,
    /// Each hit's `like_count` attribute, when it has one.
    pub(super) likes: Vec<Option<i64>>,
}

impl Found {
    pub(super) fn is_exactly(&self, kind: RowKind, id: i64) -> bool {
        self.total == 1 && self.hits == [(kind.api().to_owned(), id)]
    }
}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "total {} hits {:?}", self.total, self.hits)
    }
}

#[derive(Clone)]
pub(super) struct Http {
    client: crate::http_client::Client,
    base: String,
}

impl Http {
    pub(super) fn new(port: u16) -> Http {
        Http {
            client: crate::http_client::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    pub(super) async fn search(&self, q: &str) -> Result<Found, String> {
        let url = format!(
            "{}/api/search?q={}&size=100",
            self.base,
            crate::helpers::urlencode(q)
        );
        let response = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| format!("search {q:?}: {e}"))?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|e| format!("search {q:?}: {status}, {e}"))?;
        if !status.is_success() {
            return Err(format!("search {q:?}: {status} {body}"));
        }
        let hits = body["hits"]
            .as_array()
            .ok_or_else(|| format!("search {q:?}: no hits in {body}"))?;
        Ok(Found {
            total: body["total"].as_u64().unwrap_or(u64::MAX),
            likes: hits
                .iter()
                .map(|h| h["attributes"]["like_count"].as_i64())
                .collect(),
            hits: hits
                .iter()
                .map(|h| {
                    (
                        h["type"].as_str().unwrap_or("?").to_owned(),
                        h["id"].as_i64().unwrap_or(-1),
                    )
                })
                .collect(),
        })
    }

    pub(super) async fn healthy(&self) -> bool {
        match self
            .client
            .get(format!("{}/healthz", self.base))
            .send()
            .await
        {
            Ok(r) => r.status().is_success(),
            Err(_) => false,
        }
    }

    pub(super) async fn readyz(&self) -> Option<Value> {
        let response = self
            .client
            .get(format!("{}/readyz", self.base))
            .send()
            .await
            .ok()?;
        response.json().await.ok()
    }

    pub(super) async fn generation(&self) -> Option<u64> {
        self.readyz().await?["index"]["generation"].as_u64()
    }

    pub(super) async fn admin_reindex(&self) -> Result<u16, String> {
        let response = self
            .client
            .post(format!("{}/api/admin/reindex", self.base))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        Ok(response.status().as_u16())
    }
}
