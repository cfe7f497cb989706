//! chaja (찾아, "find it"): exact Korean substring search over MySQL rows.
//!
//! Two flows, one module each way:
//!
//! - **Request flow** — [`http`] parses and checks a request, [`text`]
//!   normalizes the query into keywords, [`synonyms`] adds the configured
//!   other forms of each, [`index::search`] runs it on the
//!   live index generation on a blocking thread and builds snippets from
//!   stored text. A search never takes a database connection.
//! - **Mirror flow** — the database ([`db`]) is the source of truth. The
//!   tables mirrored are the configured [`sources`]; triggers ([`install`])
//!   write every change of one of their rows to `search_outbox`.
//!   [`mirror::indexer`] tails the outbox, loads the current rows
//!   ([`db::rows`]) and upserts
//!   them into the index ([`index`]), committing the applied outbox position
//!   in the commit payload. [`mirror::reindex`] rebuilds a new generation from
//!   the tables beside the live one and publishes it atomically.
//!
//! Between the request and the index sits [`cache`]: answers of hot
//! queries, in-process and in Redis, tagged with the outbox position they
//! were computed at, and trending keywords. [`suggest`] completes what is
//! being typed from an in-memory snapshot of title morphemes and searches;
//! [`index::morph`] is the Korean morphology (lindera, mecab-ko-dic) behind
//! relevance.
//!
//! Around them: [`config`] (every setting, one clap struct), [`error`] (the
//! one error type and its JSON body), [`app`] (wiring and shutdown),
//! [`model`] (the rows), [`loadtest`] (the load test users run against
//! chaja), [`telemetry`] (logs).
//!
//! [`demo`] is the built-in question/review platform: one configuration of
//! sources, with its own tables, CRUD routes and generated data
//! ([`demo::seed`]). Nothing above imports it; [`app`] mounts its routes
//! when no `[[source]]` is configured.

pub mod app;
pub mod cache;
pub mod config;
pub mod db;
pub mod demo;
pub mod error;
pub mod http;
pub mod index;
pub mod install;
pub mod loadtest;
pub mod mirror;
pub mod model;
pub mod sources;
pub mod suggest;
pub mod synonyms;
pub mod telemetry;
pub mod text;
