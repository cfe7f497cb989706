//! What a 3-character keyword would cost without the `grams3` field: the
//! rows that hold it, found as the union of the 4-grams that start with it
//! (the text's last trigram aside, which starts no 4-gram). One point of
//! the size/rebuild/latency curve (docs/benchmarks/044-every-target-and-gram-field-costs.md). Searches find the rare
//! trigrams this way (see `trigrams`); the example times it for every
//! trigram, on an index whose `grams3` holds them all.
//!
//! Keywords come on standard input, one per line, normalized as the index
//! normalizes (NFKC, case folded). For each it times, on one thread:
//! - `grams3`: visiting the keyword's own postings (the server counts them
//!   from the skip list without visiting, so this is an upper bound);
//! - `union`: streaming the 4-gram terms with the keyword as prefix from
//!   each segment's term dictionary and ORing their postings into a bitset,
//!   also by the keyword's share of the rows.
//!
//! Then, for trigrams kept only where common, how many would be kept and
//! what share of the field's postings (one term insert each in a
//! rebuild) the rarer ones hold.
//!
//! `cargo run --release -p chaja-index --example trigram_union --
//! <CHAJA_INDEX_DIR>/gen-NNNNNN < keywords.txt`

use std::io::BufRead;
use std::time::Instant;

use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, Term, TERMINATED};

fn main() -> tantivy::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: trigram_union <generation directory> < keywords");
    let index = tantivy::Index::open_in_dir(&dir)?;
    let schema = index.schema();
    let grams3 = schema.get_field("grams3")?;
    let grams4 = schema.get_field("grams4")?;
    let searcher = index.reader()?.searcher();
    let keywords: Vec<String> = std::io::stdin()
        .lock()
        .lines()
        .map_while(Result::ok)
        .filter(|k| k.chars().count() == 3)
        .collect();
    let (mut own_ms, mut union_ms) = (Vec::new(), Vec::new());
    let mut unioned_terms = Vec::new();
    // The union's time by the keyword's share of the rows: what trigrams
    // kept only for common keywords would leave to unions.
    let mut by_share: [(f64, &str, Vec<f64>); 3] = [
        (0.01, "in under 1% of rows", Vec::new()),
        (0.03, "in 1-3% of rows", Vec::new()),
        (f64::INFINITY, "in 3% or more", Vec::new()),
    ];
    let rows = searcher.num_docs() as f64;
    for keyword in &keywords {
        let started = Instant::now();
        let mut own = 0u64;
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(grams3)?;
            let term = Term::from_field_text(grams3, keyword);
            if let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic)? {
                while postings.doc() != TERMINATED {
                    own += 1;
                    postings.advance();
                }
            }
        }
        own_ms.push(started.elapsed().as_secs_f64() * 1e3);

        let started = Instant::now();
        let mut union = 0u64;
        let mut terms = 0usize;
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(grams4)?;
            let mut bits = vec![0u64; segment.max_doc().div_ceil(64) as usize];
            let mut stream = inverted
                .terms()
                .range()
                .ge(keyword.as_bytes())
                .into_stream()?;
            while stream.advance() {
                if !stream.key().starts_with(keyword.as_bytes()) {
                    break;
                }
                terms += 1;
                let mut postings = inverted
                    .read_postings_from_terminfo(stream.value(), IndexRecordOption::Basic)?;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    bits[(doc / 64) as usize] |= 1 << (doc % 64);
                    doc = postings.advance();
                }
            }
            union += bits.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
        }
        let ms = started.elapsed().as_secs_f64() * 1e3;
        union_ms.push(ms);
        if let Some((_, _, times)) = by_share
            .iter_mut()
            .find(|(below, _, _)| (own as f64) < below * rows)
        {
            times.push(ms);
        }
        unioned_terms.push(terms);
        // The union can only miss rows (a keyword at the very end of a text
        // starts no 4-gram here); more would be a bug.
        if union > own {
            eprintln!("{keyword}: union {union} > grams3 {own}");
        }
    }
    let pct = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
    };
    unioned_terms.sort_unstable();
    if keywords.is_empty() {
        return Ok(());
    }
    println!("{} keywords of 3 characters", keywords.len());
    for (name, v) in [("grams3", &mut own_ms), ("union", &mut union_ms)] {
        println!(
            "{name:<7} p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
            pct(v, 0.5),
            pct(v, 0.9),
            pct(v, 0.99),
            pct(v, 1.0)
        );
    }
    for (_, name, times) in &mut by_share {
        if times.is_empty() {
            continue;
        }
        println!(
            "union, keywords {name} ({}): p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
            times.len(),
            pct(times, 0.5),
            pct(times, 0.99),
            pct(times, 1.0)
        );
    }
    // What trigrams kept only for common keywords would save: the share
    // of the field's postings (one per row and distinct trigram, one term
    // insert each when indexing) that belong to the rarer ones.
    let mut doc_freqs: std::collections::HashMap<Vec<u8>, u64> = Default::default();
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(grams3)?;
        let mut stream = inverted.terms().stream()?;
        while stream.advance() {
            *doc_freqs.entry(stream.key().to_vec()).or_default() +=
                u64::from(stream.value().doc_freq);
        }
    }
    let postings: u64 = doc_freqs.values().sum();
    for share in [0.001, 0.003, 0.01, 0.03] {
        let (rare_postings, rare_terms) = doc_freqs
            .values()
            .filter(|&&df| (df as f64) < share * rows)
            .fold((0u64, 0usize), |(sum, n), &df| (sum + df, n + 1));
        println!(
            "trigrams in {:.1}% of rows or more: {} of {}; the rest hold {:.1}% of the postings",
            share * 100.0,
            doc_freqs.len() - rare_terms,
            doc_freqs.len(),
            rare_postings as f64 * 100.0 / postings.max(1) as f64
        );
    }
    println!(
        "4-grams per union: p50 {}  p99 {}  max {}",
        unioned_terms[unioned_terms.len() / 2],
        unioned_terms[unioned_terms.len() * 99 / 100],
        unioned_terms[unioned_terms.len() - 1]
    );
    Ok(())
}
