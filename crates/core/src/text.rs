//! Text normalization, query parsing and highlighting.
//!
//! Matching is defined on normalized text: a row matches a keyword when
//! `normalize(keyword)` is a substring of `normalize(title)` or
//! `normalize(content)`. Everything that builds grams or checks matches goes
//! through [`normalize`], so the index and a brute-force scan agree.

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// NFKC, then lowercase, with the two Greek small sigmas as one.
///
/// NFKC folds full-width Latin, compatibility jamo and ligatures, and composes
/// the decomposed (NFD) Hangul that macOS writes. Lowercasing afterwards is
/// the case folding `LIKE` does under a case-insensitive collation.
///
/// Greek lowercases a capital sigma to `ς` at the end of a word and to `σ`
/// elsewhere, so Unicode's whole-string lowercasing depends on where a
/// string ends: `ΣΊΣΥΦΟΣ` becomes `σίσυφος` but its prefix `ΣΊΣ` becomes
/// `σίς`, which is no longer a substring of it. Matching is substring
/// matching, so the rule here is a per-character map that folds `ς` into
/// `σ` too: `σίσυφος`, `ΣΊΣΥΦΟΣ` and `ΣΊΣ` all find the row, as they do
/// under MySQL's case-insensitive collations. It is lowercasing and not
/// full case folding: `ß` stays `ß`.
///
/// Changing this rule changes the index: bump [`NORMALIZATION`].
pub fn normalize(text: &str) -> String {
    // Indexing normalizes every row, so the common cases go fast. Text of
    // ASCII and precomposed Hangul syllables only is already NFKC (none of
    // them decompose or compose with each other) and lowercases bytewise.
    if text.chars().all(is_plain) {
        return text.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(text.len());
    // Otherwise most text is still NFKC, and skips the composition pass.
    if is_nfkc_quick(text.chars()) == IsNormalized::Yes {
        text.chars().for_each(|c| push_lowercase(&mut out, c));
    } else {
        text.nfkc().for_each(|c| push_lowercase(&mut out, c));
    }
    out
}

/// `char::to_lowercase` with the final sigma folded into `σ` (see
/// [`normalize`]), skipping the table search for ASCII and Hangul
/// syllables, which are most of the text.
fn push_lowercase(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else if ('\u{AC00}'..='\u{D7A3}').contains(&c) {
        out.push(c);
    } else if c == 'ς' {
        out.push('σ');
    } else {
        out.extend(c.to_lowercase());
    }
}

/// Names the rule [`normalize`] implements. An index built under another
/// rule may miss rows: the server warns, and `chaja reindex` rebuilds it.
pub const NORMALIZATION: &str = "nfkc-lowercase-sigma-3";

/// One required substring of a search query, already normalized.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Keyword(pub String);

impl Keyword {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn char_len(&self) -> usize {
        self.0.chars().count()
    }
}

/// Splits a query into keywords that must all match.
///
/// Whitespace separates keywords; a double-quoted part is one keyword with
/// its spaces kept. An unclosed quote runs to the end of the query. The
/// query is split as typed, and each part is normalized on its own: NFKC
/// turns some characters into text with a space in it (`¨` is a space and
/// a combining diaeresis, `ﷺ` a phrase of three words), and splitting
/// after normalizing would make one typed word several keywords, which
/// match rows that normalized `LIKE` does not. Only ASCII `"` quotes and
/// the whitespace typed are syntax; a fullwidth `＂` is a character to find.
pub fn parse_query(q: &str) -> Vec<Keyword> {
    let mut keywords: Vec<Keyword> = Vec::new();
    let mut push = |raw: &str| {
        let keyword = normalize(raw);
        if !keyword.is_empty() && !keywords.iter().any(|k| k.0 == keyword) {
            keywords.push(Keyword(keyword));
        }
    };
    let mut rest = q;
    while !rest.is_empty() {
        if let Some(after_quote) = rest.strip_prefix('"') {
            let (phrase, tail) = match after_quote.find('"') {
                Some(end) => (&after_quote[..end], &after_quote[end + 1..]),
                None => (after_quote, ""),
            };
            push(phrase);
            rest = tail;
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '"')
                .unwrap_or(rest.len());
            push(&rest[..end]);
            rest = &rest[end..];
        }
        rest = rest.trim_start_matches(|c: char| c.is_whitespace());
    }
    keywords
}

/// Characters of the keywords together, as the index sees them: what the
/// query length limit counts (NFKC can make one typed character many).
pub fn normalized_chars(keywords: &[Keyword]) -> usize {
    keywords.iter().map(Keyword::char_len).sum()
}

/// Does the row match every keyword, in its title or its content?
///
/// This is the definition the index must reproduce; tests use it as the
/// brute-force oracle.
pub fn row_matches(keywords: &[Keyword], title: &str, content: &str) -> bool {
    let title = normalize(title);
    let content = normalize(content);
    keywords
        .iter()
        .all(|k| title.contains(k.as_str()) || content.contains(k.as_str()))
}

/// Normalized text with a map back to the original.
///
/// NFKC is not a per-character mapping: it changes lengths and composes
/// sequences (NFD Hangul jamo into syllables). The original is cut into
/// chunks that normalization never joins (a starter with its trailing
/// combining marks, Hangul vowel/final jamo, whatever composes; see
/// [`joins_previous`]) and each chunk is normalized
/// alone, so each normalized character knows the original bytes it came from.
struct Mapped {
    text: String,
    /// For each byte of `text`, the original byte range of its chunk;
    /// `None` when `text` has the original's byte offsets (see [`mapped`]).
    origin: Option<Vec<(usize, usize)>>,
}

impl Mapped {
    /// The original byte range of `text[start..end]`.
    fn original_span(&self, start: usize, end: usize) -> (usize, usize) {
        match &self.origin {
            None => (start, end),
            Some(origin) => (origin[start].0, origin[end - 1].1),
        }
    }
}

/// ASCII and precomposed Hangul syllables: their own NFKC form, composing
/// with nothing, and lowercased within their bytes.
fn is_plain(c: char) -> bool {
    c.is_ascii() || ('\u{AC00}'..='\u{D7A3}').contains(&c)
}

/// Whether `c` must be normalized together with the character before it,
/// `prev`: when its decomposition starts with a combining mark, or with a
/// character that composes with the end of `prev`'s (`ᄆ` + `ᅧ` = `며`,
/// also from the compatibility jamo `ㅁㅕ`; the Tamil `ஒ` + `ௗ` = `ஔ`).
/// Only adjacent starters compose, so `prev` is all there is to look at.
fn joins_previous(prev: Option<char>, c: char) -> bool {
    // Nothing composes onto ASCII or a precomposed Hangul syllable.
    if is_plain(c) {
        return false;
    }
    let Some(first) = std::iter::once(c).nfkd().next() else {
        return false;
    };
    // Hangul vowels and finals join whatever comes before (a final after
    // `며` composes with the syllable those two make, not with `ᅧ`).
    if canonical_combining_class(first) != 0
        || ('\u{1160}'..='\u{11FF}').contains(&first)
        || ('\u{D7B0}'..='\u{D7FF}').contains(&first)
    {
        return true;
    }
    prev.and_then(|p| std::iter::once(p).nfkd().last())
        .is_some_and(|last| unicode_normalization::char::compose(last, first).is_some())
}

fn mapped(original: &str) -> Mapped {
    // Most rows hold nothing but plain characters (9 in 10 of the
    // benchmark corpus): normalizing them keeps every byte offset, so no
    // map is needed, and building one (16 bytes per byte of text) was most
    // of the cost of an answer's snippets.
    if original.chars().all(is_plain) {
        return Mapped {
            text: original.to_ascii_lowercase(),
            origin: None,
        };
    }
    mapped_by_chunks(original)
}

/// [`mapped`] for any text: chunk by chunk, with the map.
fn mapped_by_chunks(original: &str) -> Mapped {
    let mut text = String::with_capacity(original.len());
    let mut origin = Vec::with_capacity(original.len());
    let mut chunk_start = 0;
    let mut flush = |start: usize, end: usize, text: &mut String| {
        if start >= end {
            return;
        }
        let chunk = &original[start..end];
        let mut chars = chunk.chars();
        // Fast path: a lone ASCII character or precomposed Hangul syllable
        // is its own NFKC form; only ASCII needs lowercasing. This is most
        // of Korean technical prose, and spares an allocation per character.
        if let (Some(c), None) = (chars.next(), chars.next()) {
            if is_plain(c) {
                let c = c.to_ascii_lowercase();
                origin.extend(std::iter::repeat_n((start, end), c.len_utf8()));
                text.push(c);
                return;
            }
        }
        let piece = normalize(chunk);
        origin.extend(std::iter::repeat_n((start, end), piece.len()));
        text.push_str(&piece);
    };
    let mut prev = None;
    for (i, c) in original.char_indices() {
        if i > chunk_start && !joins_previous(prev, c) {
            flush(chunk_start, i, &mut text);
            chunk_start = i;
        }
        prev = Some(c);
    }
    flush(chunk_start, original.len(), &mut text);
    Mapped {
        text,
        origin: Some(origin),
    }
}

/// About how many characters a snippet shows.
pub const SNIPPET_CHARS: usize = 160;

/// Most characters of a title a hit shows: a whole title of any usual
/// length, and a bound on work and size for rows other programs wrote.
pub const TITLE_CHARS: usize = 400;

/// How much of a text highlighting looks at. Mapping normalized offsets
/// back to the original costs 16 bytes per byte of text: a 16 MiB row that
/// another program wrote would cost 256 MB per snippet. A match past this
/// point gets the start of the text as its snippet instead.
pub const HIGHLIGHT_SCAN_BYTES: usize = 256 << 10;

/// A window of the original text around the first match, HTML-escaped, with
/// every match of every keyword inside it wrapped in `<em>`.
///
/// Returns `None` when no keyword occurs in the first
/// `HIGHLIGHT_SCAN_BYTES` of `original`.
///
/// Every hit of an answer is highlighted, so this runs ten times a query:
/// most texts are searched as they are (see `plain_spans`), and only
/// the others are normalized with a map back to the original.
pub fn highlight(original: &str, keywords: &[Keyword], window_chars: usize) -> Option<String> {
    let mut scanned = original.len().min(HIGHLIGHT_SCAN_BYTES);
    while !original.is_char_boundary(scanned) {
        scanned -= 1;
    }
    let text = &original[..scanned];
    let spans =
        plain_spans(text, keywords, window_chars).unwrap_or_else(|| mapped_spans(text, keywords));
    render(original, spans, window_chars)
}

/// The original byte ranges of every match of every keyword in `text`,
/// found in its normalized form.
fn mapped_spans(text: &str, keywords: &[Keyword]) -> Vec<(usize, usize)> {
    let m = mapped(text);
    let mut spans = Vec::new();
    for k in keywords {
        let needle = k.as_str();
        if !needle.is_empty() {
            each_match(m.text.as_bytes(), needle, |start, end| {
                spans.push(m.original_span(start, end))
            });
        }
    }
    spans
}

/// Calls `found` with the byte range of every occurrence of `needle` in
/// `haystack`, overlapping ones included. `memchr`'s vectorized `memmem`
/// rather than `str::find`, whose two-way search was a tenth of a
/// never-seen query's cost at 100k rows (ten snippets of ~4 KB each).
fn each_match(haystack: &[u8], needle: &str, mut found: impl FnMut(usize, usize)) {
    let finder = memchr::memmem::Finder::new(needle);
    // The next search starts one character after a match's start.
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let mut from = 0;
    while let Some(pos) = finder.find(&haystack[from..]) {
        let start = from + pos;
        found(start, start + needle.len());
        from = start + step;
    }
}

/// The matches that [`render`] can show, found in `text` as it is, with
/// no normalized copy and no map: `Some` when that is exact, `None` when
/// `text` must be mapped.
///
/// It is exact when every keyword is plain (see [`is_plain`]) and has no
/// ASCII letter, and `text` is plain up to the end of the window around
/// the first match: there `text` is its own normal form but for ASCII
/// case, which such keywords cannot meet, so a keyword occurs in the
/// normalized text exactly where it occurs in `text`, at the same bytes.
/// Matches past the window's end are left out: `render` shows none of
/// them. Korean keywords in Korean prose take this path.
fn plain_spans(
    text: &str,
    keywords: &[Keyword],
    window_chars: usize,
) -> Option<Vec<(usize, usize)>> {
    let needles: Vec<&str> = keywords
        .iter()
        .map(Keyword::as_str)
        .filter(|n| !n.is_empty())
        .collect();
    if needles
        .iter()
        .flat_map(|n| n.chars())
        .any(|c| !is_plain(c) || c.is_ascii_alphabetic())
    {
        return None;
    }
    let bytes = text.as_bytes();
    let first = needles
        .iter()
        .filter_map(|n| memchr::memmem::find(bytes, n.as_bytes()))
        .min();
    let Some(first) = first else {
        // No match as written, and none normalized where `text` is plain.
        return text.chars().all(is_plain).then(Vec::new);
    };
    let (_, window_end) = window(text, first, window_chars);
    // Every match that starts in the window ends at least a character
    // before `end`; the character at `end` could compose only with the
    // one before it (a final jamo with its syllable), which none reaches.
    let longest = needles.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut end = (window_end + longest).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    if !text[..end].chars().all(is_plain) {
        return None;
    }
    let mut spans = Vec::new();
    for needle in needles {
        each_match(&bytes[..end], needle, |start, end| spans.push((start, end)));
    }
    Some(spans)
}

/// The snippet of `original` around the first of `spans`, every span in
/// it wrapped in `<em>`; `None` when there is no span.
fn render(original: &str, mut spans: Vec<(usize, usize)>, window_chars: usize) -> Option<String> {
    if spans.is_empty() {
        return None;
    }
    spans.sort_unstable();
    // Merge overlapping spans so tags never nest.
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let (first_start, _) = merged[0];
    let (win_start, win_end) = window(original, first_start, window_chars);
    let mut out = String::with_capacity(window_chars * 4);
    if win_start > 0 {
        out.push('…');
    }
    let mut cursor = win_start;
    for (s, e) in merged {
        if s >= win_end {
            break;
        }
        let (s, e) = (s.max(cursor), e.min(win_end));
        if e <= s {
            continue;
        }
        escape_into(&mut out, &original[cursor..s]);
        out.push_str("<em>");
        escape_into(&mut out, &original[s..e]);
        out.push_str("</em>");
        cursor = e;
    }
    escape_into(&mut out, &original[cursor..win_end]);
    if win_end < original.len() {
        out.push('…');
    }
    Some(out)
}

/// The start of the text, escaped, for hits whose match is elsewhere.
pub fn lead(original: &str, window_chars: usize) -> String {
    let (_, end) = window(original, 0, window_chars);
    let mut out = String::new();
    escape_into(&mut out, &original[..end]);
    if end < original.len() {
        out.push('…');
    }
    out
}

/// A byte range of about `chars` characters that starts a little before
/// `anchor`, on character boundaries.
fn window(text: &str, anchor: usize, chars: usize) -> (usize, usize) {
    let before = chars / 4;
    let start = text[..anchor]
        .char_indices()
        .rev()
        .nth(before.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    let end = text[start..]
        .char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| start + i);
    (start, end.max(anchor.min(text.len())))
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kw(q: &str) -> Vec<String> {
        parse_query(q).into_iter().map(|k| k.0).collect()
    }

    #[test]
    fn highlight_looks_at_a_bounded_prefix_of_huge_texts() {
        let huge = format!("{}찾는말", "가".repeat(4 << 20));
        let kws = parse_query("찾는말");
        // Past the scanned prefix: no highlight (the caller shows the lead).
        assert_eq!(highlight(&huge, &kws, SNIPPET_CHARS), None);
        let early = format!("찾는말{}", "가".repeat(4 << 20));
        let snippet = highlight(&early, &kws, SNIPPET_CHARS).unwrap();
        assert!(snippet.starts_with("<em>찾는말</em>"), "{}", &snippet[..40]);
        assert!(snippet.len() < 1024);
    }

    #[test]
    fn normalize_folds_width_case_and_nfd_hangul() {
        assert_eq!(normalize("ＳＰＲＩＮＧ Boot"), "spring boot");
        let nfd: String = "한글".nfd().collect();
        assert_ne!(nfd, "한글");
        assert_eq!(normalize(&nfd), "한글");
    }

    proptest::proptest! {
        /// The fast paths change nothing: the definition is NFKC, then
        /// lowercase character by character, with `ς` as `σ`.
        #[test]
        fn normalize_is_nfkc_then_lowercase(text in "(\\PC|[가-힣ㄱ-ㅎＡ-ｚA-Z\u{1100}-\u{11FF}\u{0300}-\u{036F}İΣΟς ])*") {
            let reference: String = text
                .nfkc()
                .flat_map(char::to_lowercase)
                .map(|c| if c == 'ς' { 'σ' } else { c })
                .collect();
            proptest::prop_assert_eq!(normalize(&text), reference);
        }

        #[test]
        fn normalize_of_ascii_and_hangul_syllables(text in "[가-힣a-zA-Z0-9 .,!?\t\n]*") {
            let reference = text.nfkc().collect::<String>().to_lowercase();
            proptest::prop_assert_eq!(normalize(&text), reference);
        }

        /// Substrings stay substrings: what `LIKE` finds in a text, the
        /// normalized keyword finds in the normalized text.
        #[test]
        fn a_substring_normalizes_to_a_substring(text in "[ΣΟΑσςabAB가 ]{0,12}", start in 0usize..12, len in 1usize..12) {
            let chars: Vec<char> = text.chars().collect();
            let start = start.min(chars.len());
            let end = (start + len).min(chars.len());
            let piece: String = chars[start..end].iter().collect();
            proptest::prop_assert!(normalize(&text).contains(&normalize(&piece)));
        }

        /// Highlighting finds a keyword where matching does: its map of the
        /// text agrees with `normalize`, final sigmas included.
        #[test]
        fn highlight_text_is_normalize(text in "(\\PC|[ΣΟσς ㄱ-ㅣ\u{1100}-\u{11FF}\u{FFA0}-\u{FFDC}])*") {
            proptest::prop_assert_eq!(mapped(&text).text, normalize(&text));
        }
    }

    /// A final jamo composes with the syllable before it (`가` + `ᆨ` =
    /// `각`): a match that such a character follows is no match of the
    /// normalized text, and the plain search must not claim it.
    #[test]
    fn a_match_the_next_character_composes_with_is_no_match() {
        let keywords = parse_query("가");
        let text = "가\u{11A8} 가나";
        assert_eq!(
            highlight(text, &keywords, 4).as_deref(),
            Some("… <em>가</em>나")
        );
        assert_eq!(highlight("가\u{11A8}", &keywords, 4), None);
    }

    proptest::proptest! {
        /// Searching plain text as it is gives the snippet the map gives,
        /// whatever the text (plain or not, any case), the keywords (cut
        /// from it or not) and the window.
        #[test]
        fn highlight_without_the_map_is_highlight_with_it(
            text in "[가나다라가-힣 a-cA-C0-9<&]{0,30}([ＡＢａ\u{11A8}\u{0301}ㄱㅏ·][가나다 a-cA-C]{0,10}){0,2}",
            cuts in proptest::collection::vec((0usize..40, 1usize..5), 1..3),
            extra in "[가나다라a-cA-C ]{0,3}",
            window_chars in 0usize..30,
        ) {
            let chars: Vec<char> = text.chars().collect();
            let mut query = extra;
            for (start, len) in cuts {
                let start = start.min(chars.len());
                let end = (start + len).min(chars.len());
                query.push(' ');
                query.extend(&chars[start..end]);
            }
            let keywords = parse_query(&query);
            let mapped = render(&text, mapped_spans(&text, &keywords), window_chars);
            proptest::prop_assert_eq!(highlight(&text, &keywords, window_chars), mapped);
        }
    }

    proptest::proptest! {
        /// Plain text skips the map, and finds the same original spans.
        #[test]
        fn plain_text_maps_like_any_text(text in "[가-힣a-zA-Z0-9 .<&]{0,40}") {
            let fast = mapped(&text);
            let slow = mapped_by_chunks(&text);
            proptest::prop_assert!(fast.origin.is_none());
            proptest::prop_assert_eq!(&fast.text, &slow.text);
            let bounds: Vec<usize> = fast.text.char_indices().map(|(i, _)| i).chain([fast.text.len()]).collect();
            for (i, &start) in bounds.iter().enumerate() {
                for &end in &bounds[i + 1..] {
                    proptest::prop_assert_eq!(fast.original_span(start, end), slow.original_span(start, end));
                }
            }
        }
    }

    /// Compatibility jamo compose across characters under NFKC (`ㅁ` and a
    /// halfwidth `ￊ` make `며`; `ㅋㅠ` makes `큐`): highlighting maps them
    /// as one chunk, as normalizing does. Found by the property test below.
    #[test]
    fn compatibility_jamo_that_compose_highlight_as_one() {
        assert_eq!(mapped("ㅁￊ").text, normalize("ㅁￊ"));
        assert_eq!(mapped("ஒ\u{bd7}").text, normalize("ஒ\u{bd7}"));
        for text in ["ㅁㅕㄴ", "\u{1106}\u{1167}\u{11AB}", "ㅁ\u{1167}\u{11AB}"] {
            assert_eq!(mapped(text).text, normalize(text), "{text}");
        }
        assert_eq!(normalize("ㅋㅠ"), "큐");
        let keywords = parse_query("큐");
        assert_eq!(
            highlight("ㅋㅠ 질문", &keywords, SNIPPET_CHARS).as_deref(),
            Some("<em>ㅋㅠ</em> 질문")
        );
    }

    /// Every Greek sigma is one letter (`ΣΊΣΥΦΟΣ`, `σίσυφος` and its prefix
    /// `ΣΊΣ` all match), and `ß` is not folded to `ss`.
    #[test]
    fn normalize_folds_the_final_sigma_and_keeps_sharp_s() {
        assert_eq!(normalize("ΣΊΣΥΦΟΣ"), normalize("σίσυφος"));
        assert!(row_matches(&parse_query("σίσυφος"), "", "ὁ ΣΊΣΥΦΟΣ, 신화"));
        assert!(row_matches(&parse_query("ΣΊΣΥΦΟΣ"), "", "σίσυφος"));
        assert!(row_matches(&parse_query("ΣΊΣ"), "", "ΣΊΣΥΦΟΣ"));
        assert!(row_matches(&parse_query("ος"), "", "ΟΣΑ"));
        assert_eq!(normalize("STRAẞE Straße"), "straße straße");
        assert!(!row_matches(&parse_query("strasse"), "", "Straße"));
        let h = highlight("신화 ΣΊΣΥΦΟΣ 이야기", &parse_query("σίσυφος"), 160).unwrap();
        assert_eq!(h, "신화 <em>ΣΊΣΥΦΟΣ</em> 이야기");
    }

    #[test]
    fn query_splits_words_and_keeps_quoted_phrases() {
        assert_eq!(kw("스프링  부트"), ["스프링", "부트"]);
        assert_eq!(kw("\"스프링 부트\" JPA"), ["스프링 부트", "jpa"]);
        assert_eq!(kw("a \"b c"), ["a", "b c"]);
        assert_eq!(kw("100% a_b"), ["100%", "a_b"]);
        assert_eq!(kw("x x"), ["x"]);
        assert!(kw("   ").is_empty());
        assert!(kw("\"\"").is_empty());
    }

    /// A typed word stays one keyword even when NFKC puts a space in it:
    /// `a¨b` is `a ̈b`, one substring to find, not `a` and `̈b`.
    #[test]
    fn a_word_is_split_as_typed_then_normalized() {
        assert_eq!(kw("a¨b"), ["a \u{308}b"]);
        assert_eq!(kw("x ﷺ"), ["x", "صلى الله عليه وسلم"]);
        assert_eq!(kw("Ａ　Ｂ"), ["a", "b"]);
        assert_eq!(kw("＂스프링 부트＂"), ["\"스프링", "부트\""]);
        let long = parse_query(&format!("\"{}\"", "ﷺ".repeat(98)));
        assert_eq!(normalized_chars(&long), 98 * 18);
    }

    #[test]
    fn highlight_marks_original_text_after_nfkc_and_nfd() {
        let kws = parse_query("spring");
        assert_eq!(
            highlight("I <3 ＳＰＲＩＮＧ!", &kws, 160).unwrap(),
            "I &lt;3 <em>ＳＰＲＩＮＧ</em>!"
        );
        assert_eq!(
            highlight("스프링 SPRING & Spring", &kws, 160).unwrap(),
            "스프링 <em>SPRING</em> &amp; <em>Spring</em>"
        );
        let nfd: String = "클라우드 서비스".nfd().collect();
        let kws = parse_query("우드");
        let h = highlight(&nfd, &kws, 160).unwrap();
        let expected_em: String = "우드".nfd().collect();
        assert!(h.contains(&format!("<em>{expected_em}</em>")), "{h}");
        assert!(highlight("nothing here", &kws, 160).is_none());
    }

    #[test]
    fn highlight_windows_long_text_around_the_match() {
        let text = format!("{}키워드{}", "가".repeat(500), "나".repeat(500));
        let h = highlight(&text, &parse_query("키워드"), 40).unwrap();
        assert!(h.starts_with('…') && h.ends_with('…'), "{h}");
        assert!(h.contains("<em>키워드</em>"));
        assert!(h.chars().count() < 60, "{h}");
    }
}
