//! How a gram field's bytes split by how common its terms are: for each
//! share of the rows a term is in, the terms below it and the postings and
//! positions bytes they hold. What a layout that keeps positions only for
//! common 4-grams would save.
//!
//! `cargo run --release -p chaja-index --example gram_tail -- <CHAJA_INDEX_DIR>/gen-NNNNNN [field]`

fn main() -> tantivy::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .expect("usage: gram_tail <generation directory> [field]");
    let name = args.next().unwrap_or_else(|| "grams4".into());
    let index = tantivy::Index::open_in_dir(&dir)?;
    let field = index.schema().get_field(&name)?;
    let searcher = index.reader()?.searcher();
    let docs = searcher.num_docs() as f64;
    // Shares of the rows, from rare to common.
    let cuts = [0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 1.01];
    // (terms, postings bytes, positions bytes) below each cut.
    let mut below = vec![(0u64, 0u64, 0u64); cuts.len()];
    let mut all = (0u64, 0u64, 0u64);
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(field)?;
        let mut stream = inverted.terms().stream()?;
        let seg_docs = segment.max_doc() as f64;
        while stream.advance() {
            let info = stream.value();
            let share = info.doc_freq as f64 / seg_docs;
            let row = (
                1,
                info.postings_range.len() as u64,
                info.positions_range.len() as u64,
            );
            all = (all.0 + row.0, all.1 + row.1, all.2 + row.2);
            for (cut, sum) in cuts.iter().zip(below.iter_mut()) {
                if share < *cut {
                    *sum = (sum.0 + row.0, sum.1 + row.1, sum.2 + row.2);
                }
            }
        }
    }
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "{name}: {} docs, {} terms (per segment, summed), postings {:.1} MB, positions {:.1} MB",
        docs,
        all.0,
        mb(all.1),
        mb(all.2)
    );
    println!(
        "{:>10} {:>12} {:>14} {:>15}",
        "share <", "terms", "postings MB", "positions MB"
    );
    for (cut, (terms, postings, positions)) in cuts.iter().zip(below) {
        println!(
            "{:>9.2}% {:>12} {:>8.1} ({:>3.0}%) {:>8.1} ({:>3.0}%)",
            cut * 100.0,
            terms,
            mb(postings),
            100.0 * postings as f64 / all.1.max(1) as f64,
            mb(positions),
            100.0 * positions as f64 / all.2.max(1) as f64
        );
    }
    Ok(())
}
