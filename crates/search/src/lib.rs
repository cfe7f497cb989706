//! The answer path, between the HTTP layer and the index.
//!
//! - [`service`]: [`SearchService`], a checked request in, an answer out:
//!   the cache for first pages, else the index on the blocking pool, with
//!   the request's deadline; trending and zero-result counts; and
//!   `did_you_mean` for a first page that found little.
//! - [`cache`]: the two-tier answer cache (moka in-process, Redis shared),
//!   keyed by the typed [`chaja_index::search::SearchKey`], fresh by the
//!   index [`chaja_index::Version`] or a stated age bound, with one
//!   recompute per key; [`cache::redis`] bounds every Redis call.
//! - [`turns`]: searches the cache does not answer run a few at a time,
//!   in arrival order, with a bounded line; past it they are shed.
//! - [`lane`]: the heavy lane, where searches no cache helps take turns.
//! - [`cursor`]: the rank of a page's last hit, bound to its query by a MAC
//!   and to the point in time its walk reads ([`snapshots`]).
//! - [`trending`]: time-bucketed keyword counts (실시간 인기 검색어), in
//!   Redis or in-process.
//! - [`suggest`]: as-you-type completions and `did_you_mean` candidates
//!   from title morphemes and trending searches.
//!
//! Nothing here knows HTTP: errors are [`SearchError`], and hits are
//! encoded by the caller.

pub mod cache;
pub mod cursor;
mod error;
pub mod lane;
pub mod service;
pub mod snapshots;
pub mod suggest;
pub mod trending;
pub mod turns;

pub use error::SearchError;
pub use service::{
    Alternative, Asked, EncodeSimilar, SearchService, Served, SimilarServed, LOW_RESULTS,
};

pub type Result<T, E = SearchError> = std::result::Result<T, E>;
