//! Posts like a given one: "비슷한 질문이 이미 있어요" while a question is
//! written, and "관련 질문" beside a post.
//!
//! Lexical, as Elasticsearch's `more_like_this` is: the input (a row the
//! index holds, or text not stored yet) is cut into its content morphemes
//! by the same analyzer as the rows (particles and endings are never
//! morphemes, see `morph`), and the few that tell it apart are chosen by
//! tf-idf:
//! - a morpheme's weight is how often the input holds it, a title's
//!   counting twice, times its idf over the index's rows (BM25's, which
//!   is never 0, so no cutoff can empty a site of a dozen rows);
//! - a morpheme in more than half the rows says nothing of a post once
//!   there are enough rows for a share to mean something, and is left out
//!   while others remain;
//! - at most [`MAX_TERMS`] are kept.
//!
//! The rows holding any of them are ranked by BM25 over the morpheme
//! fields (title ×2, the same statistics as relevance, see `statistics`),
//! an OR that tantivy scores with block-max WAND, so that only rows that
//! could enter the page are scored. Filters are checked per candidate.
//! The best candidates are then ranked again by how much of the chosen
//! terms' weight each holds: a near-duplicate holds nearly all of it and
//! comes first, where a long post sharing a few common terms many times
//! could otherwise outscore it. Each hit says which terms it shares
//! (`because`), the weightiest first.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, BoostQuery, EnableScoring, Occur, Query, TermQuery,
};
use tantivy::schema::{IndexRecordOption, Term};
use tantivy::{DocAddress, DocId, DocSet, SegmentReader, TERMINATED};

use chaja_core::sources::SourceId;
use chaja_core::text::{parse_query, Keyword};

use super::budget::{Budget, ScanError};
use super::hit::load_hit;
use super::query::TITLE_BOOST;
use super::request::{Filter, Hit, SearchKey};
use super::statistics::RowStatistics;
use crate::attributes::{AttrRequest, NumberRange, SegmentAttrs};
use crate::morph::{self, Analyzer};
use crate::{key_term, stored, Generation, View, BODY_SEPARATOR};

/// Terms a like search looks for at most: enough for a post's topic and
/// its distinctive names, few enough to stay one small OR.
pub const MAX_TERMS: usize = 20;

/// Hits a like search returns at most.
pub const MAX_SIZE: usize = 20;

/// Candidates ranked by BM25 and then by the weight they hold, per hit
/// asked: the second ranking only reorders what the first found.
const CANDIDATES_PER_HIT: usize = 4;

/// Terms a hit's `because` lists at most.
const BECAUSE: usize = 5;

/// Below this many rows, no term is left out for being common: every
/// share of a handful of rows is large.
const COMMON_FLOOR_ROWS: u64 = 20;

/// What a like search is like.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SimilarInput {
    /// A row the index holds, left out of the results.
    Row { source: SourceId, key: String },
    /// Text not stored yet: a title (optional) and a body.
    Text { title: Option<String>, body: String },
}

/// A like search: its input, the filters its results pass, how many.
#[derive(Debug, Clone, PartialEq)]
pub struct SimilarRequest {
    pub input: SimilarInput,
    /// As a search's: `type`, `attr.*`, ranges, `from`/`to`.
    pub filter: Filter,
    pub size: usize,
}

/// How the input was cut into terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Analysis {
    /// Content morphemes (the Korean dictionary).
    Morphemes,
    /// Plain words: no dictionary (or morphology off).
    Words,
}

impl Analysis {
    /// What the process's analyzer cuts text into.
    pub fn of_process() -> Analysis {
        match morph::analyzer() {
            Analyzer::Korean(_) => Analysis::Morphemes,
            Analyzer::Words | Analyzer::Off => Analysis::Words,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Analysis::Morphemes => "morphemes",
            Analysis::Words => "words",
        }
    }
}

/// One post like the input.
#[derive(Debug, Clone, PartialEq)]
pub struct SimilarHit {
    pub hit: Hit,
    pub score: f32,
    /// The chosen terms it holds, the weightiest first.
    pub because: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimilarResponse {
    pub hits: Vec<SimilarHit>,
    pub analysis: Analysis,
    /// The terms chosen, the weightiest first.
    pub terms: Vec<String>,
}

impl SimilarRequest {
    /// What names its answer in the cache: every field, so that a new one
    /// is a compile error here.
    pub fn key(&self) -> SearchKey {
        let SimilarRequest {
            input,
            filter,
            size,
        } = self;
        let Filter {
            source,
            attributes,
            from,
            to,
            ranges,
        } = filter;
        let input = match input {
            SimilarInput::Row { source, key } => serde_json::json!(["row", source.index(), key]),
            SimilarInput::Text { title, body } => serde_json::json!(["text", title, body]),
        };
        let ranges: Vec<_> = ranges
            .iter()
            .map(|NumberRange { name, gte, lte }| (name, gte, lte))
            .collect();
        let text = serde_json::json!([
            input,
            source.map(SourceId::index),
            attributes,
            from,
            to,
            ranges,
            size,
            morph::analyzer().name()
        ])
        .to_string();
        SearchKey::hashed("similar", &text)
    }
}

/// A chosen term and its weight (tf × idf).
struct Chosen {
    text: String,
    weight: f32,
    title: Term,
    content: Term,
    /// Rows holding it in their title or their content (the larger).
    df: u64,
}

/// The rows' statistics, with each chosen term's document frequency the
/// same in the title and the content field: the one its weight was
/// chosen by. Per field, a term in every title but one body (`질문`,
/// where titles say "…질문") had an idf in the content field that made
/// that one body outrank every post that shares the input's topic.
/// Elasticsearch blends a term's frequencies across fields for the same
/// reason (`cross_fields`).
struct Blended<'a> {
    rows: &'a RowStatistics<'a>,
    df: HashMap<Term, u64>,
}

impl<'a> Blended<'a> {
    fn of(rows: &'a RowStatistics<'a>, chosen: &[Chosen]) -> Blended<'a> {
        let df = chosen
            .iter()
            .flat_map(|c| [(c.title.clone(), c.df), (c.content.clone(), c.df)])
            .collect();
        Blended { rows, df }
    }
}

impl Bm25StatisticsProvider for Blended<'_> {
    fn total_num_tokens(&self, field: tantivy::schema::Field) -> tantivy::Result<u64> {
        self.rows.total_num_tokens(field)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.rows.total_num_docs()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        match self.df.get(term) {
            Some(&df) => Ok(df),
            None => self.rows.doc_freq(term),
        }
    }
}

/// Posts like `request`'s input on `view`, best first; `None` when its
/// input is a row the view does not hold. Blocking.
pub fn similar(
    generation: &Generation,
    view: &View,
    request: &SimilarRequest,
    budget: &Budget,
) -> Result<Option<SimilarResponse>, ScanError> {
    budget.check()?;
    let SimilarRequest {
        input,
        filter,
        size,
    } = request;
    let size = (*size).min(MAX_SIZE);
    let analyzer = morph::analyzer();
    let analysis = Analysis::of_process();
    let (title, body, itself) = match input {
        SimilarInput::Text { title, body } => {
            (title.clone().unwrap_or_default(), body.clone(), None)
        }
        SimilarInput::Row { source, key } => match stored_text(generation, view, *source, key)? {
            Some((title, body, at)) => (title, body, Some(at)),
            None => return Ok(None),
        },
    };
    let statistics = RowStatistics::of(view);
    let chosen = choose_terms(generation, view, &statistics, analyzer, &title, &body)?;
    let terms: Vec<String> = chosen.iter().map(|c| c.text.clone()).collect();
    if chosen.is_empty() || size == 0 {
        return Ok(Some(SimilarResponse {
            hits: Vec::new(),
            analysis,
            terms,
        }));
    }
    let clauses: Vec<(Occur, Box<dyn Query>)> = chosen
        .iter()
        .flat_map(|c| {
            let title: Box<dyn Query> = Box::new(BoostQuery::new(
                Box::new(TermQuery::new(
                    c.title.clone(),
                    IndexRecordOption::WithFreqs,
                )),
                TITLE_BOOST,
            ));
            let content: Box<dyn Query> = Box::new(TermQuery::new(
                c.content.clone(),
                IndexRecordOption::WithFreqs,
            ));
            [(Occur::Should, title), (Occur::Should, content)]
        })
        .collect();
    let query = BooleanQuery::new(clauses);
    let blended = Blended::of(&statistics, &chosen);
    let weight = query.weight(EnableScoring::enabled_from_statistics_provider(
        &blended,
        &view.searcher,
    ))?;

    // The best candidates by BM25 across segments; the threshold carries
    // over, so later segments score only rows that could enter.
    let k = size * CANDIDATES_PER_HIT;
    let mut best: BinaryHeap<Reverse<(Score, u32, DocId)>> = BinaryHeap::with_capacity(k + 1);
    let caches = &generation.caches;
    for (ord, segment) in view.searcher.segment_readers().iter().enumerate() {
        budget.check()?;
        let ord = ord as u32;
        let columns = &view.columns[ord as usize];
        let patched = view.patches.segment(segment.segment_id()).cloned();
        let wanted = AttrRequest {
            ranges: &filter.ranges,
            order: None,
            facets: &[],
            equalities: &filter.attributes,
        };
        let attrs = SegmentAttrs::open(segment, wanted, &caches.attr_arrays, patched)?;
        let equal = Equalities::of(generation, segment, filter)?;
        let alive = segment.alive_bitset();
        let skip = itself.and_then(|(at, doc)| (at == ord).then_some(doc));
        let mut threshold = best.peek().map_or(f32::MIN, |Reverse((s, _, _))| s.0);
        weight.for_each_pruning(threshold, segment, &mut |doc, score| {
            let accepted = alive.is_none_or(|a| a.is_alive(doc))
                && skip != Some(doc)
                && filter.accepts(
                    columns.created.first(doc).unwrap_or_default(),
                    columns.tag.first(doc).unwrap_or_default(),
                )
                && (equal.holds(doc) || attrs.is_patched(doc))
                && attrs.accepts(doc);
            if accepted {
                best.push(Reverse((Score(score), ord, doc)));
                if best.len() > k {
                    best.pop();
                }
                if best.len() == k {
                    threshold = best.peek().map_or(f32::MIN, |Reverse((s, _, _))| s.0);
                }
            }
            threshold
        })?;
    }
    budget.check()?;

    // Ranked again by the share of the chosen weight each holds.
    let total: f32 = chosen.iter().map(|c| c.weight).sum();
    let candidates: Vec<(f32, u32, DocId)> = best
        .into_iter()
        .map(|Reverse((Score(score), ord, doc))| (score, ord, doc))
        .collect();
    let held = shared_terms(view, &chosen, &candidates)?;
    let mut ranked: Vec<(f32, u32, DocId, Vec<usize>)> = candidates
        .into_iter()
        .zip(held)
        .map(|((score, ord, doc), held)| {
            let share: f32 = held.iter().map(|&i| chosen[i].weight).sum::<f32>() / total;
            (score * (1.0 + share), ord, doc, held)
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    ranked.truncate(size);
    let mut hits = Vec::with_capacity(ranked.len());
    for (score, ord, doc, held) in ranked {
        let because: Vec<String> = held
            .iter()
            .take(BECAUSE)
            .map(|&i| chosen[i].text.clone())
            .collect();
        let highlighted: Vec<Keyword> = because.iter().flat_map(|t| parse_query(t)).collect();
        let rank = (i64::from(score.max(0.0).to_bits()), 0, 0, 0);
        let hit = load_hit(
            view,
            &generation.fields,
            &highlighted,
            rank,
            DocAddress::new(ord, doc),
        )?;
        hits.push(SimilarHit {
            hit,
            score,
            because,
        });
    }
    Ok(Some(SimilarResponse {
        hits,
        analysis,
        terms,
    }))
}

/// A score that orders as an `f32` does, for the heap.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score(f32);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Score) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Score) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A stored row's title and body, and where it is (segment ord, doc).
type StoredRow = (String, String, (u32, DocId));

/// The stored title and body of row `key` of `source`, and where it is;
/// `None` when the view holds no live document of it.
fn stored_text(
    generation: &Generation,
    view: &View,
    source: SourceId,
    key: &str,
) -> crate::Result<Option<StoredRow>> {
    let term = Term::from_field_text(generation.fields.key, &key_term(source, key));
    for (ord, segment) in view.searcher.segment_readers().iter().enumerate() {
        let inverted = segment.inverted_index(generation.fields.key)?;
        let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic)? else {
            continue;
        };
        let alive = segment.alive_bitset();
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                let bytes = view.stores[ord].get_document_bytes(doc)?;
                let stored = stored::read(&bytes, &generation.fields)?;
                let title = stored.title.unwrap_or_default().to_owned();
                let body = stored
                    .content
                    .unwrap_or_default()
                    .replace(BODY_SEPARATOR, "\n");
                return Ok(Some((title, body, (ord as u32, doc))));
            }
            doc = postings.advance();
        }
    }
    Ok(None)
}

/// The terms that tell the input apart, the weightiest first (see the
/// module docs).
fn choose_terms(
    generation: &Generation,
    view: &View,
    statistics: &RowStatistics,
    analyzer: &Analyzer,
    title: &str,
    body: &str,
) -> crate::Result<Vec<Chosen>> {
    let mut tf: HashMap<String, f32> = HashMap::new();
    for (text, times) in [(title, TITLE_BOOST), (body, 1.0)] {
        let words = match analyzer {
            // With morphology off the fields are empty: plain words find
            // nothing, and the answer says it did not analyse.
            Analyzer::Off => Vec::new(),
            analyzer => analyzer.morphemes(text),
        };
        for word in words {
            *tf.entry(word).or_default() += times;
        }
    }
    let rows = statistics.rows()?;
    let fields = &generation.fields;
    let mut weighed: Vec<(Chosen, u64)> = Vec::with_capacity(tf.len());
    for (text, tf) in tf {
        let title = Term::from_field_text(fields.title_morph, &text);
        let content = Term::from_field_text(fields.content_morph, &text);
        let df = view
            .searcher
            .doc_freq(&title)?
            .max(view.searcher.doc_freq(&content)?)
            .min(rows);
        if df == 0 {
            continue;
        }
        // BM25's idf: never 0, however common.
        let idf = (1.0 + ((rows - df) as f32 + 0.5) / (df as f32 + 0.5)).ln();
        let weight = tf * idf;
        weighed.push((
            Chosen {
                text,
                weight,
                title,
                content,
                df,
            },
            df,
        ));
    }
    weighed.sort_by(|a, b| {
        b.0.weight
            .total_cmp(&a.0.weight)
            .then(a.0.text.cmp(&b.0.text))
    });
    let common = |df: u64| rows >= COMMON_FLOOR_ROWS && df * 2 > rows;
    if weighed.iter().any(|(_, df)| !common(*df)) {
        weighed.retain(|(_, df)| !common(*df));
    }
    Ok(weighed
        .into_iter()
        .take(MAX_TERMS)
        .map(|(chosen, _)| chosen)
        .collect())
}

/// For each candidate, the indexes into `chosen` of the terms it holds
/// (in its title or its content), in `chosen`'s order: a seek per term and
/// candidate, candidates of a segment visited in doc order.
fn shared_terms(
    view: &View,
    chosen: &[Chosen],
    candidates: &[(f32, u32, DocId)],
) -> crate::Result<Vec<Vec<usize>>> {
    let mut held = vec![Vec::new(); candidates.len()];
    let mut by_segment: HashMap<u32, Vec<(DocId, usize)>> = HashMap::new();
    for (i, (_, ord, doc)) in candidates.iter().enumerate() {
        by_segment.entry(*ord).or_default().push((*doc, i));
    }
    for (ord, mut docs) in by_segment {
        docs.sort_unstable();
        let segment: &SegmentReader = view.searcher.segment_reader(ord);
        for (t, term) in chosen.iter().enumerate() {
            for field_term in [&term.title, &term.content] {
                let inverted = segment.inverted_index(field_term.field())?;
                let Some(mut postings) =
                    inverted.read_postings(field_term, IndexRecordOption::Basic)?
                else {
                    continue;
                };
                for &(doc, i) in &docs {
                    if postings.doc() < doc {
                        postings.seek(doc);
                    }
                    if postings.doc() == doc && held[i].last() != Some(&t) {
                        held[i].push(t);
                    }
                }
            }
        }
    }
    Ok(held)
}

/// The documents of a segment holding every `attr.<name>=<value>` of a
/// filter, as their postings say (what documents held before their
/// patches: a patched document is checked against its patch instead).
struct Equalities {
    /// One bit per document; `None`: no equality to check.
    bits: Option<Vec<u64>>,
}

impl Equalities {
    fn of(
        generation: &Generation,
        segment: &SegmentReader,
        filter: &Filter,
    ) -> crate::Result<Equalities> {
        if filter.attributes.is_empty() {
            return Ok(Equalities { bits: None });
        }
        let words = (segment.max_doc() as usize).div_ceil(64);
        let mut all = vec![!0u64; words];
        let inverted = segment.inverted_index(generation.fields.attrs)?;
        for (name, value) in &filter.attributes {
            let term = Term::from_field_text(generation.fields.attrs, &format!("{name}={value}"));
            let mut one = vec![0u64; words];
            if let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic)? {
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    one[(doc / 64) as usize] |= 1 << (doc % 64);
                    doc = postings.advance();
                }
            }
            for (a, o) in all.iter_mut().zip(one) {
                *a &= o;
            }
        }
        Ok(Equalities { bits: Some(all) })
    }

    fn holds(&self, doc: DocId) -> bool {
        self.bits
            .as_ref()
            .is_none_or(|bits| bits[(doc / 64) as usize] & (1 << (doc % 64)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use chaja_core::model::{Doc, Key};
    use chaja_core::sources::SourceId;

    use super::*;
    use crate::create_generation;

    const POSTS: [(&str, &str); 12] = [
        ("트랜잭션 격리수준 질문", "스프링 트랜잭션 격리수준을 반복 읽기로 바꾸면 팬텀 읽기가 사라지나요? 마이에스큐엘 기본값이 궁금합니다."),
        ("격리수준과 팬텀 읽기", "마이에스큐엘 반복 읽기 격리수준에서 팬텀 읽기가 생기는지 궁금합니다. 스프링 트랜잭션 설정도 알려주세요."),
        ("도커 이미지 크기", "멀티 스테이지 빌드로 도커 이미지 크기를 줄이는 방법이 궁금합니다."),
        ("쿠버네티스 파드 재시작", "파드가 메모리 부족으로 계속 재시작됩니다. 리소스 제한을 어떻게 잡나요?"),
        ("리액트 상태 관리", "리액트에서 전역 상태 관리는 리덕스와 컨텍스트 중 무엇이 좋나요?"),
        ("파이썬 비동기", "파이썬 비동기 함수에서 이벤트 루프가 막히는 이유가 궁금합니다."),
        ("러스트 소유권", "러스트 소유권과 빌림 규칙 때문에 컴파일이 안 됩니다."),
        ("엔진엑스 프록시", "엔진엑스 리버스 프록시 뒤에서 웹소켓 연결이 끊깁니다."),
        ("레디스 캐시 만료", "레디스 캐시 만료 시간을 어떻게 정하면 좋을까요?"),
        ("깃 리베이스", "깃 리베이스와 머지 중 무엇을 써야 하나요?"),
        ("자바 가비지 컬렉션", "자바 가비지 컬렉션 때문에 응답이 멈춥니다."),
        ("궁금합니다", "궁금합니다 궁금합니다 궁금합니다 좋나요 무엇을"),
    ];

    fn index() -> (tempfile::TempDir, crate::Generation) {
        let dir = tempfile::tempdir().unwrap();
        let generation = create_generation(dir.path(), &chaja_core::sources::for_tests()).unwrap();
        let mut writer = generation.writer_with_threads(32 << 20, 1).unwrap();
        for (i, (title, body)) in POSTS.iter().enumerate() {
            writer
                .upsert(&Doc {
                    source: SourceId::from_index(i % 2),
                    key: Key::Int(i as i64),
                    title: Some(title.to_string()),
                    body: vec![body.to_string()],
                    created_at: 1_000 + i as i64,
                    attributes: Vec::new(),
                })
                .unwrap();
        }
        writer.commit(1).unwrap();
        generation.reload().unwrap();
        (dir, generation)
    }

    fn like(generation: &crate::Generation, input: SimilarInput, filter: Filter) -> Vec<i64> {
        let request = SimilarRequest {
            input,
            filter,
            size: 5,
        };
        let view = generation.view();
        let found = similar(generation, &view, &request, &Budget::unlimited())
            .unwrap()
            .expect("the row is held");
        found
            .hits
            .iter()
            .map(|h| h.hit.key.text().parse().unwrap())
            .collect()
    }

    /// On a dozen rows (no term left out for being common), a post's
    /// near-duplicate comes first, the post itself never, and a post that
    /// only shares common words (`궁금합니다`) does not outrank it.
    #[test]
    fn a_near_duplicate_comes_first_and_the_row_itself_never() {
        let (_dir, generation) = index();
        let row = |key: i64| SimilarInput::Row {
            source: SourceId::from_index((key % 2) as usize),
            key: key.to_string(),
        };
        let found = like(&generation, row(0), Filter::default());
        assert_eq!(found.first(), Some(&1), "{found:?}");
        assert!(!found.contains(&0));
        let text = SimilarInput::Text {
            title: Some("팬텀 읽기".to_owned()),
            body: "반복 읽기 격리수준 트랜잭션".to_owned(),
        };
        let found = like(&generation, text, Filter::default());
        assert!(
            found[..2].contains(&0) && found[..2].contains(&1),
            "{found:?}"
        );
        // A source filter: only the other source's rows.
        let only = Filter {
            source: Some(SourceId::from_index(1)),
            ..Filter::default()
        };
        let found = like(&generation, row(0), only);
        assert!(found.iter().all(|k| k % 2 == 1), "{found:?}");
        assert_eq!(found.first(), Some(&1));
        // A row the index does not hold.
        let view = generation.view();
        let missing = SimilarRequest {
            input: row(99),
            filter: Filter::default(),
            size: 5,
        };
        assert!(similar(&generation, &view, &missing, &Budget::unlimited())
            .unwrap()
            .is_none());
    }

    /// Each hit says which chosen terms it shares, the weightiest first.
    #[test]
    fn a_hit_says_which_terms_it_shares() {
        let (_dir, generation) = index();
        let request = SimilarRequest {
            input: SimilarInput::Row {
                source: SourceId::from_index(0),
                key: "0".to_owned(),
            },
            filter: Filter::default(),
            size: 3,
        };
        let view = generation.view();
        let found = similar(&generation, &view, &request, &Budget::unlimited())
            .unwrap()
            .unwrap();
        let first = &found.hits[0];
        assert!(!first.because.is_empty());
        // A subsequence of the chosen terms, in their order.
        let mut terms = found.terms.iter();
        for term in &first.because {
            assert!(
                terms.any(|t| t == term),
                "{:?} in {:?}",
                first.because,
                found.terms
            );
        }
        assert!(
            first.because.iter().any(|t| t == "트랜잭션"),
            "{:?}",
            first.because
        );
    }
}
