//! Logging: `RUST_LOG` filters, `CHAJA_LOG_FORMAT=json` for machines.

use tracing_subscriber::EnvFilter;

pub fn init(format: &str) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,tantivy=warn,sqlx=warn,lindera_dictionary=error"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}
