//! chaja (찾아, "find it"): exact Korean substring search over MySQL rows.
//!
//! This crate is the `chaja` binary's wiring; each job is a crate of its
//! own, and the dependency arrows point one way:
//!
//! - **Request flow** — `chaja-http` (axum: parameters, keys, limits, the
//!   pages, the one place errors become status codes) → `chaja-search`
//!   (the answer path: cache, heavy lane, cursors, trending, suggestions)
//!   → `chaja-index` (tantivy: n-grams, morphology, generations, the
//!   engine). A search never takes a database connection.
//! - **Mirror flow** — `chaja-store` (MySQL/SQLite: rows, the outbox,
//!   `install`'s triggers) → `chaja-mirror` (the outbox tailer, rebuilds,
//!   verify) → `chaja-index`.
//! - `chaja-core` holds what every crate shares: normalization and query
//!   parsing, the sources model, synonyms, rows, the clock.
//! - `chaja-demo` is the built-in question/review platform, one
//!   configuration on top; `chaja-loadtest` (behind the default feature
//!   `loadtest`) is the only crate that links goose and reqwest.
//!
//! Here: [`config`] (every setting, clap groups that convert once into
//! each crate's config), [`app`] (open the stores, start the indexer,
//! serve, shut down) and [`telemetry`] (logs).

pub mod app;
pub mod config;
pub mod telemetry;
