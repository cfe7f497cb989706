//! What every chaja crate shares, and nothing that does I/O beyond reading
//! the config file.
//!
//! - [`text`]: the matching rule (NFKC, lowercase, final sigma), query
//!   parsing into keywords, and snippet highlighting mapped back to the
//!   original text.
//! - [`sources`]: the config file: the tables to mirror (`[[source]]`),
//!   checked once into [`sources::Sources`], and `[synonyms]`.
//! - [`synonyms`]: query-time synonym groups.
//! - [`model`]: a source's row as the index sees it ([`model::Doc`]).
//! - [`manifest`]: keywords with their exact row counts, written by
//!   `chaja seed` and read by the load test and benchmarks.
//! - [`clock`]: epoch milliseconds, the one time unit of the stores.

pub mod clock;
pub mod manifest;
pub mod model;
pub mod sources;
pub mod synonyms;
pub mod text;

/// The config file is missing, unreadable or wrong: the message names the
/// entry and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);
