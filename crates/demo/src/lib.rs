//! The demo platform: a question/review site on chaja's own tables.
//!
//! It is one configuration of chaja ([`sources`], from `sources.toml`):
//! two sources, `question` over `questions` and `review` over `reviews`,
//! whose tables come from the workspace's `migrations/` ([`migrate`]).
//! Around them it keeps what a small site has: users, comments, likes, a
//! CRUD API ([`http`], over [`db`]), and generated data ([`seed`]) that
//! the load tests and benchmarks search. Nothing in the search core
//! depends on this crate; the binary mounts its routes when no
//! `[[source]]` is configured.

pub mod db;
mod error;
pub mod http;
pub mod seed;

pub use error::DemoError;

pub type Result<T, E = DemoError> = std::result::Result<T, E>;

use chaja_core::sources::{ConfigFile, Sources};
use chaja_store::{Db, Dialect};

/// Creates or upgrades the demo's tables (its numbered migrations, one
/// folder per dialect), then installs chaja's tables and the demo's
/// triggers as `chaja install` does for any site's.
///
/// The first migrations also created chaja's tables and triggers; they
/// stay as they are (sqlx refuses an edited migration), and from here on
/// `chaja_store::install` is the one definition of both: what it would
/// create is already there, or it puts it there.
pub async fn migrate(db: &Db) -> Result<()> {
    let migrator = match db.dialect {
        Dialect::MySql => sqlx::migrate!("../../migrations/mysql"),
        Dialect::Sqlite => sqlx::migrate!("../../migrations/sqlite"),
    };
    migrator
        .run(&db.pool)
        .await
        .map_err(|e| sqlx::Error::Migrate(Box::new(e)))?;
    chaja_store::install::install(db, &sources()).await?;
    Ok(())
}

/// The demo's two sources, described as a site's would be.
pub fn sources() -> Sources {
    ConfigFile::parse(include_str!("sources.toml"))
        .expect("the demo's sources are valid")
        .sources
        .expect("the demo has sources")
}

/// The sources a config file names, or the demo's when it names none; and
/// whether they are the demo's (whose tables chaja's migrations create).
pub fn sources_of(file: &ConfigFile) -> (Sources, bool) {
    match &file.sources {
        Some(sources) => (sources.clone(), false),
        None => (sources(), true),
    }
}
