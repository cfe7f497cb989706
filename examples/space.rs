//! Bytes per field of an index generation, by file kind: where an index's
//! size goes. `cargo run --release --example space -- INDEX_DIR/gen-000001`
use std::collections::BTreeMap;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("a generation directory: INDEX_DIR/gen-NNNNNN");
    let index = tantivy::Index::open_in_dir(&dir).expect("index");
    let searcher = index.reader().expect("reader").searcher();
    let usage = searcher.space_usage().expect("space usage");
    let mut by_field: BTreeMap<String, [u64; 5]> = BTreeMap::new();
    for segment in usage.segments() {
        let kinds = [
            segment.postings(),
            segment.positions(),
            segment.termdict(),
            segment.fast_fields(),
            segment.fieldnorms(),
        ];
        for (k, kind) in kinds.iter().enumerate() {
            for field_usage in kind.fields() {
                let name = field_usage.field_name().to_owned();
                by_field.entry(name).or_default()[k] += field_usage.total().get_bytes();
            }
        }
    }
    println!("field: postings positions termdict fast fieldnorms (MB)");
    let mb = |b: u64| b as f64 / 1e6;
    for (name, v) in &by_field {
        println!(
            "{name}: {:.1} {:.1} {:.1} {:.1} {:.1}",
            mb(v[0]),
            mb(v[1]),
            mb(v[2]),
            mb(v[3]),
            mb(v[4])
        );
    }
    let store: u64 = usage
        .segments()
        .iter()
        .map(|s| s.store().total().get_bytes())
        .sum();
    println!(
        "store: {:.1} MB; total {:.1} MB",
        mb(store),
        mb(usage.total().get_bytes())
    );
}
