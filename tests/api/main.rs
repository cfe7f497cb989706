//! The one integration test binary. Each area has its own module; tests that
//! touch a store run once on SQLite and once on MariaDB/MySQL.

mod browser;
mod cache;
mod checker;
mod concurrency;
mod counters;
mod cursors;
mod facets;
mod faults;
mod fixtures;
mod helpers;
mod http_client;
mod korean;
#[cfg(feature = "loadtest")]
mod loadtest;
mod mirror;
mod openapi;
mod ops;
mod platform;
mod property;
mod scale;
mod search;
mod seed;
mod settings;
mod similar;
mod sources;
mod trust;
mod unreadable;
