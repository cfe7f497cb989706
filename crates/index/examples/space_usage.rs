//! Where an index's bytes go, per field and per component, summed over its
//! segments: what the size breakdown in docs/benchmarks/021-index-bytes-by-field.md
//! comes from.
//!
//! `cargo run --release -p chaja-index --example space_usage -- <CHAJA_INDEX_DIR>/gen-NNNNNN`

use std::collections::BTreeMap;

fn main() -> tantivy::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: space_usage <generation directory>");
    let index = tantivy::Index::open_in_dir(&dir)?;
    let schema = index.schema();
    let searcher = index.reader()?.searcher();
    let usage = searcher.space_usage()?;
    // (field, component) -> bytes
    let mut table: BTreeMap<(String, &str), u64> = BTreeMap::new();
    let mut store = 0u64;
    for segment in usage.segments() {
        let parts = [
            ("terms", segment.termdict()),
            ("postings", segment.postings()),
            ("positions", segment.positions()),
            ("fast", segment.fast_fields()),
            ("fieldnorms", segment.fieldnorms()),
        ];
        for (component, per_field) in parts {
            for field in per_field.fields() {
                *table
                    .entry((field.field_name().to_string(), component))
                    .or_default() += field.total().get_bytes();
            }
        }
        store += segment.store().total().get_bytes();
    }
    let total = usage.total().get_bytes();
    let mb = |b: u64| b as f64 / 1e6;
    println!("{:<16} {:<11} {:>10}", "field", "component", "MB");
    let mut rows: Vec<_> = table.into_iter().filter(|(_, b)| *b > 0).collect();
    rows.sort_by_key(|(_, b)| std::cmp::Reverse(*b));
    for ((field, component), bytes) in rows {
        println!("{field:<16} {component:<11} {:>10.1}", mb(bytes));
    }
    println!(
        "{:<16} {:<11} {:>10.1}",
        "(stored fields)",
        "store",
        mb(store)
    );
    println!(
        "total {:.1} MB in {} segments, {} docs, {} fields",
        mb(total),
        usage.segments().len(),
        searcher.num_docs(),
        schema.fields().count()
    );
    Ok(())
}
