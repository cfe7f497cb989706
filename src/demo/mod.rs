//! The demo platform: a question/review site on chaja's own tables.
//!
//! It is one configuration of chaja ([`crate::sources::Sources::demo`]):
//! two sources, `question` over `questions` and `review` over `reviews`,
//! whose tables and triggers come from `migrations/`. Around them it keeps
//! what a small site has: users, comments, likes, a CRUD API ([`http`],
//! over [`db`]), and generated data ([`seed`]) that the load tests and
//! benchmarks search. The search core never imports this module; `app`
//! mounts its routes when no `[[source]]` is configured.

pub mod db;
pub mod http;
pub mod seed;
