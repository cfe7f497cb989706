//! Korean analysis throughput on real text, and why it is not cached by
//! word.
//!
//! One timed pass over the corpus's distinct sentences, in order, after an
//! untimed one (so lindera's buffers and its dictionary entries are warm,
//! as they are a few seconds into a rebuild):
//! - `sentence`: lindera over each whole sentence (what chaja indexes);
//! - `word by word`: lindera over each space-separated word on its own.
//!
//! Analysing word by word would allow a cache keyed by word, since most
//! words repeat; the bench reports how often that gives the sentence's
//! morphemes, which is the reason chaja does not.
//!
//! `CHAJA_BENCH_CORPUS=../shared/corpus/sentences.tsv.gz CHAJA_KO_DIC=data/ko-dic cargo bench --bench morph`

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use chaja_core::text::normalize;
use chaja_demo::seed::TextSource;
use chaja_index::morph::{self, Analyzer};

fn main() {
    let corpus = std::env::var("CHAJA_BENCH_CORPUS")
        .expect("set CHAJA_BENCH_CORPUS to sentences.tsv.gz (see ../shared/corpus)");
    let ko_dic = std::env::var("CHAJA_KO_DIC")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/data/ko-dic").to_owned());
    let analyzer = morph::init(Path::new(&ko_dic));
    let Analyzer::Korean(..) = analyzer else {
        panic!("no dictionary at {ko_dic}: build it with `chaja dict build`");
    };
    let TextSource::Corpus(groups) = TextSource::from_corpus(Path::new(&corpus)).expect("corpus")
    else {
        unreachable!("from_corpus reads a corpus")
    };
    let sentences: Vec<String> = groups
        .into_iter()
        .flatten()
        .map(|s| normalize(&s))
        .collect();
    let chars: usize = sentences.iter().map(|s| s.chars().count()).sum();
    let words: usize = sentences.iter().map(|s| s.split_whitespace().count()).sum();
    println!(
        "{} sentences, {words} words, {chars} characters",
        sentences.len()
    );

    let time = |name: &str, f: &dyn Fn(&str) -> usize| {
        let start = Instant::now();
        let morphemes: usize = sentences.iter().map(|s| f(s)).sum();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{name:<16} {secs:>6.2} s  {:>5.2} M chars/s  {morphemes} morphemes",
            chars as f64 / secs / 1e6
        );
        secs
    };
    let by_sentence = |s: &str| analyzer.morphemes(s);
    let by_word = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .flat_map(|w| analyzer.morphemes(w))
            .collect()
    };
    // Both ways see every sentence once before timing, so neither warms
    // lindera's buffers or the dictionary entries for the other.
    for s in &sentences {
        by_sentence(s);
        by_word(s);
    }
    let whole = time("sentence", &|s| by_sentence(s).len());
    let words_secs = time("word by word", &|s| by_word(s).len());
    println!(
        "word by word is {:.2}× the sentence way",
        whole / words_secs
    );
    let mut seen = std::collections::HashSet::new();
    let repeated = sentences
        .iter()
        .flat_map(|s| s.split_whitespace())
        .filter(|w| !seen.insert(*w))
        .count();
    println!(
        "a word cache would hit {:.1}% ({repeated} of {words} words seen before)",
        100.0 * repeated as f64 / words as f64
    );

    // Same morphemes, as a multiset, per sentence.
    let count = |ms: Vec<String>| {
        let mut m: HashMap<String, usize> = HashMap::new();
        for s in ms {
            *m.entry(s).or_default() += 1;
        }
        m
    };
    let same = sentences
        .iter()
        .filter(|s| count(by_sentence(s)) == count(by_word(s)))
        .count();
    println!(
        "word by word gives the sentence's morphemes for {same} of {} sentences ({:.1}%)",
        sentences.len(),
        100.0 * same as f64 / sentences.len() as f64
    );
}
