//! Query execution: exact substring matching, newest first, exact totals.
//!
//! Every keyword becomes a query that matches exactly the rows whose
//! normalized title or content contains it:
//! - 1 character: one term of the `chars` field;
//! - 2 characters: one bigram term in `title` or `content`;
//! - longer: a slop-0 phrase of its bigrams in `title` or `content`.
//!
//! Segments are sorted by `created_at` descending, so the newest-first top-k
//! of a segment is final as soon as a document is older than the k-th best
//! seen; after that the scorer is only counted, which skips the fast-field
//! reads and the heap.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use tantivy::query::{BooleanQuery, EnableScoring, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Term, Value};
use tantivy::{DocAddress, DocId, DocSet, Searcher, TantivyDocument, TERMINATED};

use super::schema::Fields;
use super::tokenizer::grams;
use super::{Generation, Result};
use crate::model::Kind;
use crate::text::{highlight, lead, Keyword, SNIPPET_CHARS};

/// Position of a row in the newest-first order: `created_at DESC`, then
/// `uid DESC` (id, then kind). Larger is newer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SortKey {
    pub created_at: i64,
    pub uid: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filter {
    pub kind: Option<Kind>,
    pub author_id: Option<i64>,
    /// Inclusive bounds on `created_at`, in milliseconds.
    pub from: Option<i64>,
    pub to: Option<i64>,
}

impl Filter {
    fn accepts(&self, key: SortKey) -> bool {
        if let Some(kind) = self.kind {
            if Kind::from_uid(key.uid).0 != kind {
                return false;
            }
        }
        self.from.is_none_or(|from| key.created_at >= from)
            && self.to.is_none_or(|to| key.created_at <= to)
    }

    fn is_empty(&self) -> bool {
        *self == Filter::default()
    }
}

#[derive(Debug, Clone)]
pub struct Request {
    pub keywords: Vec<Keyword>,
    pub filter: Filter,
    /// Hits to skip, for page-based paging.
    pub offset: usize,
    pub limit: usize,
    /// Only rows strictly older than this key, for cursor paging.
    pub after: Option<SortKey>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub kind: Kind,
    pub id: i64,
    pub question_id: Option<i64>,
    pub title: Option<String>,
    /// HTML: escaped text with `<em>` around the matches.
    pub snippet: String,
    pub created_at: i64,
    pub key: SortKey,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Every matching row, exactly, regardless of paging.
    pub total: u64,
    pub hits: Vec<Hit>,
}

/// The query that matches exactly the rows containing every keyword.
pub fn build_query(fields: &Fields, keywords: &[Keyword], filter: &Filter) -> Box<dyn Query> {
    let mut must: Vec<(Occur, Box<dyn Query>)> = keywords
        .iter()
        .map(|k| (Occur::Must, keyword_query(fields, k)))
        .collect();
    if let Some(author) = filter.author_id {
        let term = Term::from_field_u64(fields.author_id, author as u64);
        must.push((
            Occur::Must,
            Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
        ));
    }
    if must.len() == 1 {
        return must.pop().expect("one clause").1;
    }
    Box::new(BooleanQuery::new(must))
}

fn keyword_query(fields: &Fields, keyword: &Keyword) -> Box<dyn Query> {
    let text = keyword.as_str();
    match keyword.char_len() {
        0 => unreachable!("keywords are never empty"),
        1 => Box::new(TermQuery::new(
            Term::from_field_text(fields.chars, text),
            IndexRecordOption::Basic,
        )),
        2 => either_field(fields, |field| {
            Box::new(TermQuery::new(
                Term::from_field_text(field, text),
                IndexRecordOption::Basic,
            ))
        }),
        _ => either_field(fields, |field| {
            let terms = grams(text, 2)
                .into_iter()
                .map(|(offset, gram)| (offset, Term::from_field_text(field, &gram)))
                .collect();
            Box::new(PhraseQuery::new_with_offset(terms))
        }),
    }
}

fn either_field(
    fields: &Fields,
    query: impl Fn(tantivy::schema::Field) -> Box<dyn Query>,
) -> Box<dyn Query> {
    Box::new(BooleanQuery::new(vec![
        (Occur::Should, query(fields.title)),
        (Occur::Should, query(fields.content)),
    ]))
}

/// Runs a search on one generation. Blocking: call it off the async workers.
pub fn search(generation: &Generation, request: &Request) -> Result<Response> {
    debug_assert!(!request.keywords.is_empty());
    let searcher = generation.reader.searcher();
    let fields = &generation.fields;
    let query = build_query(fields, &request.keywords, &request.filter);
    let weight = query.weight(EnableScoring::disabled_from_searcher(&searcher))?;
    let k = request.offset + request.limit;
    // Min-heap of the k newest keys seen so far, with their addresses.
    let mut top: BinaryHeap<Reverse<(SortKey, DocAddress)>> = BinaryHeap::with_capacity(k + 1);
    let mut total: u64 = 0;
    // The author filter is part of the query; the others are checked here,
    // and only without them is every scored document a counted match.
    let text_only = Filter {
        author_id: None,
        ..request.filter
    }
    .is_empty();

    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let mut scorer = weight.scorer(segment, 1.0)?;
        let created = segment.fast_fields().i64("created_at")?;
        let uid = segment.fast_fields().u64("uid")?;
        let alive = segment.alive_bitset();
        let mut doc: DocId = scorer.doc();
        while doc != TERMINATED {
            if alive.is_some_and(|a| a.is_deleted(doc)) {
                doc = scorer.advance();
                continue;
            }
            let key = SortKey {
                created_at: created.first(doc).unwrap_or_default(),
                uid: uid.first(doc).unwrap_or_default(),
            };
            let full = k == 0 || top.len() == k;
            if full && text_only {
                let kth = top.peek().map(|Reverse((key, _))| key.created_at);
                if kth.is_none_or(|kth| key.created_at < kth) {
                    // Sorted segment: nothing after this can enter the top.
                    total += match alive {
                        Some(alive) => u64::from(scorer.count(alive)),
                        None => u64::from(scorer.count_including_deleted()),
                    };
                    break;
                }
            }
            if request.filter.accepts(key) {
                total += 1;
                if k > 0 && request.after.is_none_or(|after| key < after) {
                    let entry = Reverse((key, DocAddress::new(ord as u32, doc)));
                    if top.len() < k {
                        top.push(entry);
                    } else if top.peek().is_some_and(|min| entry < *min) {
                        top.pop();
                        top.push(entry);
                    }
                }
            }
            doc = scorer.advance();
        }
    }

    let mut ranked: Vec<(SortKey, DocAddress)> = top.into_iter().map(|Reverse(e)| e).collect();
    ranked.sort_unstable_by_key(|entry| Reverse(entry.0));
    let hits = ranked
        .into_iter()
        .skip(request.offset)
        .map(|(key, address)| load_hit(&searcher, fields, &request.keywords, key, address))
        .collect::<Result<Vec<Hit>>>()?;
    Ok(Response { total, hits })
}

fn load_hit(
    searcher: &Searcher,
    fields: &Fields,
    keywords: &[Keyword],
    key: SortKey,
    address: DocAddress,
) -> Result<Hit> {
    let doc: TantivyDocument = searcher.doc(address)?;
    let text = |field| {
        doc.get_first(field)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let title = text(fields.title);
    let content = text(fields.content).unwrap_or_default();
    let question_id = doc
        .get_first(fields.question_id)
        .and_then(|v| v.as_u64())
        .filter(|&id| id != 0)
        .map(|id| id as i64);
    let snippet = highlight(&content, keywords, SNIPPET_CHARS)
        .unwrap_or_else(|| lead(&content, SNIPPET_CHARS));
    let (kind, id) = Kind::from_uid(key.uid);
    Ok(Hit {
        kind,
        id,
        question_id,
        title,
        snippet,
        created_at: key.created_at,
        key,
    })
}
