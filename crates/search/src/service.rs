//! The answer path: a checked [`Request`] in, an [`Answer`] out.
//!
//! A first page goes through the [`SearchCache`]; on a miss, or for any
//! other page, the search waits for one of the [`Turns`] searches take in
//! arrival order (heavy ones first in the [`HeavyLane`]), runs on the live
//! generation on the blocking pool, and stops at the request's deadline or
//! when nobody waits for it any more. The hits are encoded once, by the
//! caller's encoder, so the cache keeps bytes and never a REST type.
//! Around the answer: trending and zero-result counts, and `did_you_mean`
//! for a first page that found little.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use chaja_core::clock::now_ms;
use chaja_core::text::{normalize, parse_query};
use chaja_index::search::similar::{SimilarHit, SimilarInput, SimilarRequest};
use chaja_index::search::{self, Filter, Hit, Request, SearchKey};
use chaja_index::SearchIndex;

use crate::cache::{Answer, CacheStatus, SearchCache};
use crate::lane::{is_heavy, HeavyLane};
use crate::snapshots::{Snapshot, SnapshotId, Snapshots};
use crate::suggest::Suggester;
use crate::trending::Trending;
use crate::turns::Turns;
use crate::{cursor, Result, SearchError};

/// A query that may be what was meant, with its exact total.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Alternative {
    pub q: String,
    pub total: u64,
}

/// A first page with at most this many hits offers `did_you_mean`.
pub const LOW_RESULTS: u64 = 2;

/// Alternatives for `q`, remembered for a while per normalized query, so
/// that a flood of misses costs one lookup each, not one per request.
type AlternativesCache = moka::future::Cache<String, Arc<Vec<Alternative>>>;

/// Encodes a like search's hit as the JSON value the API serves (the
/// caller's, as [`EncodeHits`]).
pub type EncodeSimilar = Box<dyn Fn(SimilarHit) -> Box<serde_json::value::RawValue> + Send + Sync>;

/// A like search's text past this many characters takes a turn of the
/// heavy lane before its engine turn: its analysis alone costs as much as
/// a heavy search, and a flood of them must not hold every engine turn.
pub const LONG_SIMILAR_TEXT_CHARS: usize = 2_000;

/// A like search's answer as served.
pub struct SimilarServed {
    pub answer: Arc<Answer>,
    pub cache: CacheStatus,
}

/// Encodes each hit as the JSON value the API serves; the caller's, so
/// that the shape of a hit stays with the HTTP layer.
pub type EncodeHits = Box<dyn Fn(Hit) -> Box<serde_json::value::RawValue> + Send + Sync>;

/// The page sizes first pages are computed and cached at: a request for
/// another size is served from the smallest that holds it, so that a
/// client varying `size` makes no new cache keys (and no new searches).
const PAGE_BUCKETS: [usize; 4] = [10, 20, 50, 100];

/// The size a first page of `size` hits is computed at.
pub fn page_bucket(size: usize) -> usize {
    PAGE_BUCKETS
        .into_iter()
        .find(|&bucket| bucket >= size)
        .unwrap_or(size)
}

/// What a search asks beyond the request itself.
pub struct Asked<'a> {
    /// The point in time its cursor names, for a page after a cursor: the
    /// page reads the view the walk's first page read (see `snapshots`).
    pub snapshot: Option<SnapshotId>,
    /// The query as typed, for `did_you_mean`.
    pub q: &'a str,
    /// Who asked (see the HTTP layer's client resolution): counted once per
    /// keyword and window in trending; `None` is not counted.
    pub client: Option<IpAddr>,
    /// When the request arrived: its deadline runs from here.
    pub started: Instant,
}

/// An answer as served to one request.
pub struct Served {
    pub answer: Arc<Answer>,
    /// How many of the answer's hits the request's page holds.
    shown: usize,
    /// Continues after the page's last hit; `None` when nothing follows.
    pub next_cursor: Option<String>,
    pub cache: CacheStatus,
    /// Other queries that find something, for a first page that found
    /// little (empty when none do).
    pub did_you_mean: Option<Arc<Vec<Alternative>>>,
    /// Time spent in the index, when the cache did not answer.
    pub index_time: Duration,
}

impl Served {
    /// The request's page of the answer's hits, each already JSON: the
    /// caller writes them out as they are, with no copy into a new array.
    pub fn hits(&self) -> &[Box<serde_json::value::RawValue>] {
        &self.answer.hits[..self.shown]
    }
}

/// Cheap, cloneable handles to everything the answer path reads.
#[derive(Clone)]
pub struct SearchService {
    pub index: SearchIndex,
    pub cache: SearchCache,
    pub trending: Trending,
    /// Searches that found nothing: what a site's content is missing.
    pub zero_results: Trending,
    pub suggester: Suggester,
    /// The lane heavy searches take turns in (see [`is_heavy`]).
    pub lane: Arc<HeavyLane>,
    /// The turns every search the cache does not answer takes, in arrival
    /// order, with a bounded line (see [`Turns`]).
    pub engine: Arc<Turns>,
    /// Signs cursors (see [`cursor`]).
    pub cursor_key: Arc<[u8; 32]>,
    /// The views cursor walks read (see [`Snapshots`]).
    pub snapshots: Snapshots,
    /// How long a request may take: a search stops its work at this
    /// deadline even if nothing else stops it.
    pub request_timeout: Duration,
    did_you_mean: AlternativesCache,
    /// The machine's cores: past as many searches at once, each runs on
    /// one thread (see [`search::Fanout`]).
    cores: usize,
    /// Like searches the engine computed (the cache answered the others).
    similar_computed: Arc<std::sync::atomic::AtomicU64>,
}

impl SearchService {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        index: SearchIndex,
        cache: SearchCache,
        trending: Trending,
        zero_results: Trending,
        suggester: Suggester,
        lane: HeavyLane,
        engine: Turns,
        cursor_key: [u8; 32],
        cursor_keep_alive: Duration,
        request_timeout: Duration,
    ) -> SearchService {
        SearchService {
            index,
            cache,
            trending,
            zero_results,
            suggester,
            lane: Arc::new(lane),
            engine: Arc::new(engine),
            cursor_key: Arc::new(cursor_key),
            snapshots: Snapshots::new(cursor_keep_alive),
            request_timeout,
            did_you_mean: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(Duration::from_secs(30))
                .build(),
            cores: std::thread::available_parallelism().map_or(2, |n| n.get()),
            similar_computed: Arc::default(),
        }
    }

    /// Answers `request`: from the cache for a first page that is fresh
    /// enough, else from the index.
    pub async fn search(
        &self,
        request: &Request,
        asked: Asked<'_>,
        encode: EncodeHits,
    ) -> Result<Served> {
        let index_time = Arc::new(Mutex::new(None::<Duration>));
        // A page after a cursor reads the view its walk's first page read;
        // one no longer held is an error, never a page of another view.
        let pinned = match (request.after, asked.snapshot) {
            (Some(_), Some(id)) => Some(self.snapshots.get(id).ok_or(SearchError::CursorExpired)?),
            _ => None,
        };
        // Only first pages are cached: deep pages and cursor pages are rare
        // per key and would crowd out the hot set. A first page is computed
        // at its size's bucket, and this request served its part of it.
        let first_page = request.offset == 0 && request.after.is_none();
        let computed = match first_page {
            true => Request {
                limit: page_bucket(request.limit),
                ..request.clone()
            },
            false => request.clone(),
        };
        let deadline = asked.started + self.request_timeout;
        let encode = Arc::new(encode);
        let run = |watermark: i64, pinned: Option<Snapshot>| {
            let index_time = index_time.clone();
            let computed = computed.clone();
            let encode = encode.clone();
            self.compute(computed, watermark, deadline, index_time, encode, pinned)
        };
        let (mut answer, mut cache) = if first_page {
            self.cache
                .get_or_compute(&SearchKey::first_page(&computed), |w| run(w, None))
                .await?
        } else {
            let watermark = self.cache.version();
            (Arc::new(run(watermark, pinned).await?), CacheStatus::MISS)
        };
        // A first page a walk may go on from must name a view still held:
        // one cached from another process (Redis), or kept past every
        // walk's keep-alive, is computed again here, so that its cursor's
        // pages rank rows as it did.
        if first_page && self.needs_cursor(&answer, request) && !self.holds(&answer) {
            let watermark = self.cache.version();
            answer = Arc::new(run(watermark, None).await?);
            cache = CacheStatus::MISS;
        }
        if first_page {
            self.count(request, &answer, asked.client);
        }
        let did_you_mean = if first_page && answer.total() <= LOW_RESULTS {
            Some(self.alternatives(asked.q).await)
        } else {
            None
        };
        let index_time = index_time.lock().expect("timing lock").unwrap_or_default();
        let (shown, next_cursor) = self.page(&answer, request);
        Ok(Served {
            answer,
            shown,
            next_cursor,
            cache,
            did_you_mean,
            index_time,
        })
    }

    /// Whether the request's page of `answer` ends with a cursor: it is
    /// full and more may follow.
    fn needs_cursor(&self, answer: &Answer, request: &Request) -> bool {
        let n = request.limit.min(answer.hits.len());
        n == request.limit && n > 0 && (answer.hits.len() > n || answer.more)
    }

    /// Whether the view `answer` was computed on is held (reading it keeps
    /// it held for another keep-alive).
    fn holds(&self, answer: &Answer) -> bool {
        answer
            .snapshot
            .is_some_and(|id| self.snapshots.get(SnapshotId(id)).is_some())
    }

    /// How many of `answer`'s hits the request's page shows (its first
    /// `request.limit`), and the cursor after them when more may follow,
    /// naming the view the answer was computed on.
    fn page(&self, answer: &Answer, request: &Request) -> (usize, Option<String>) {
        let n = request.limit.min(answer.hits.len());
        let next_cursor = match (self.needs_cursor(answer, request), answer.snapshot) {
            (true, Some(id)) => Some(cursor::encode(
                answer.ranks[n - 1],
                request,
                SnapshotId(id),
                &self.cursor_key,
            )),
            _ => None,
        };
        (n, next_cursor)
    }

    /// One search off the async workers: on `pinned`, the view a walk
    /// reads, or else on the live generation's current view, which is then
    /// held for the walks the answer may begin.
    async fn compute(
        &self,
        request: Request,
        watermark: i64,
        deadline: Instant,
        index_time: Arc<Mutex<Option<Duration>>>,
        encode: Arc<EncodeHits>,
        pinned: Option<Snapshot>,
    ) -> Result<Answer> {
        let Snapshot { generation, view } = match pinned {
            Some(pinned) => pinned,
            None => {
                let generation = self.index.live();
                let view = generation.view();
                Snapshot { generation, view }
            }
        };
        let snapshot = self.snapshots.hold(&generation, &view);
        let sources = self.index.sources().len();
        let span = tracing::Span::current();
        // The answer is as fresh as the watermark read just before this.
        let computed_at_ms = now_ms();
        // The search stops when this future is dropped (the request timed
        // out or its client hung up) or at the request's deadline, instead
        // of finishing work nobody reads.
        let budget = search::Budget::until(deadline);
        // Heavy searches take turns for a few cores (see `is_heavy`), then
        // every search takes a turn of the engine, in arrival order (see
        // `Turns`). A request that times out while it waits is dropped by
        // the HTTP layer's timeout, and leaves the line.
        let lane_turn = match is_heavy(&request) {
            true => Some(self.lane.enter().await?),
            false => None,
        };
        let turn = self.engine.enter().await?;
        // With this turn, the searches at work now; enough of them keep the
        // cores busy without fanning out.
        let fanout = search::Fanout::for_load(self.engine.taken(), self.cores);
        let stop = budget.stop_on_drop();
        let (response, request) = tokio::task::spawn_blocking(move || {
            // The turns are the work's, not the request's: a scan that
            // outlives its request still holds them until it stops.
            let _turns = (lane_turn, turn);
            let _enter = span.enter();
            let started = Instant::now();
            let result = search::search_view(&generation, &view, &request, &budget, fanout);
            *index_time.lock().expect("timing lock") = Some(started.elapsed());
            result.map(|r| (r, request))
        })
        .await??;
        stop.disarm();
        let more = response.hits.len() == request.limit;
        let ranks = response.hits.iter().map(|hit| hit.rank).collect();
        Ok(Answer {
            by_source: response.by_source[..sources].to_vec(),
            hits: response.hits.into_iter().map(|hit| encode(hit)).collect(),
            ranks,
            facets: response.facets,
            more,
            watermark,
            computed_at_ms,
            snapshot: Some(snapshot.0),
        })
    }

    /// Posts like `request`'s input (see `chaja_index::search::similar`):
    /// from the cache while fresh, else from the index, in the same turns
    /// (and for a long text, the same heavy lane) as searches, with the
    /// same deadline.
    pub async fn similar(
        &self,
        request: &SimilarRequest,
        asked: Asked<'_>,
        encode: EncodeSimilar,
    ) -> Result<SimilarServed> {
        let deadline = asked.started + self.request_timeout;
        let compute = |_watermark: i64| self.compute_similar(request.clone(), deadline, encode);
        let (answer, cache) = self.cache.get_or_compute(&request.key(), compute).await?;
        Ok(SimilarServed { answer, cache })
    }

    /// Like searches the engine has computed in this process.
    pub fn similar_computed(&self) -> u64 {
        self.similar_computed
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn compute_similar(
        &self,
        request: SimilarRequest,
        deadline: Instant,
        encode: EncodeSimilar,
    ) -> Result<Answer> {
        self.similar_computed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        metrics::counter!("similar_searches_computed_total").increment(1);
        let watermark = self.cache.version();
        let generation = self.index.live();
        let view = generation.view();
        let computed_at_ms = now_ms();
        let budget = search::Budget::until(deadline);
        let long = match &request.input {
            SimilarInput::Text { title, body } => {
                body.chars().count() + title.as_deref().map_or(0, |t| t.chars().count())
                    > LONG_SIMILAR_TEXT_CHARS
            }
            SimilarInput::Row { .. } => false,
        };
        let lane_turn = match long {
            true => Some(self.lane.enter().await?),
            false => None,
        };
        let turn = self.engine.enter().await?;
        let span = tracing::Span::current();
        let stop = budget.stop_on_drop();
        let found = tokio::task::spawn_blocking(move || {
            let _turns = (lane_turn, turn);
            let _enter = span.enter();
            search::similar::similar(&generation, &view, &request, &budget)
        })
        .await??;
        stop.disarm();
        let Some(found) = found else {
            return Err(SearchError::NotFound(
                "no such row in the index: the row does not exist, is hidden by its source's filter, or is not indexed yet".to_owned(),
            ));
        };
        Ok(Answer {
            by_source: Vec::new(),
            ranks: found.hits.iter().map(|h| h.hit.rank).collect(),
            hits: found.hits.into_iter().map(encode).collect(),
            facets: Vec::new(),
            more: false,
            watermark,
            computed_at_ms,
            snapshot: None,
        })
    }

    /// Trending counts searches that found something: a query nobody's
    /// data answers is not a trend, and junk cannot fill the counters.
    /// Searches that found nothing are counted apart, for the operators:
    /// the most actionable signal a content site has.
    fn count(&self, request: &Request, answer: &Answer, client: Option<IpAddr>) {
        let Some(client) = client else { return };
        let keywords: Vec<&str> = request.keywords.iter().map(|k| k.as_str()).collect();
        if answer.total() > 0 {
            self.trending.record(&keywords.join(" "), client);
        } else if request.filter == Filter::default() {
            // Only unfiltered: `파이썬` by an author with no posts, or in a
            // random date range, says nothing about what the site lacks.
            self.zero_results.record(&keywords.join(" "), client);
        }
    }

    /// The alternatives of a query that found little: candidate words from
    /// the suggester, each kept only if it finds something (its exact total
    /// is counted on the live index). Optional work, so it runs only when
    /// the heavy lane has a turn free at once, on the blocking pool, each
    /// count with a short budget; otherwise, or on any failure, the answer
    /// goes without. A search never waits or fails for want of a
    /// suggestion.
    async fn alternatives(&self, q: &str) -> Arc<Vec<Alternative>> {
        let key = normalize(q.trim());
        if let Some(known) = self.did_you_mean.get(&key).await {
            return known;
        }
        let Some(turn) = self.lane.try_enter() else {
            return Arc::default();
        };
        let suggester = self.suggester.clone();
        let generation = self.index.live();
        let q = q.to_owned();
        let counted = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            let deadline = Instant::now() + Duration::from_millis(200);
            suggester
                .did_you_mean(&q, 3)
                .into_iter()
                .filter_map(|word| {
                    let request = Request::newest_first(parse_query(&word), 1);
                    let budget = search::Budget::until(deadline);
                    let total = search::search_budgeted(
                        &generation,
                        &request,
                        &budget,
                        search::Fanout::Parallel,
                    )
                    .ok()?
                    .total;
                    (total > 0).then_some(Alternative { q: word, total })
                })
                .collect::<Vec<_>>()
        })
        .await;
        let found = Arc::new(counted.unwrap_or_default());
        self.did_you_mean.insert(key, found.clone()).await;
        found
    }
}
