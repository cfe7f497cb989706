//! Where the prose comes from: sentences drawn by a word chain (the
//! default, see `novel`), runs of a corpus's real sentences, or a small
//! built-in generator of Korean developer Q&A prose.

use std::io::{BufRead, BufReader};
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, RngCore};

use super::novel::Chain;
use crate::{DemoError, Result};

/// How `chaja seed` writes its rows' text (`--text`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TextKind {
    /// Sentences drawn one word at a time, which seldom repeat (see
    /// `novel`): what a real board's text is like.
    #[default]
    Novel,
    /// Runs of consecutive corpus sentences (or the built-in templates
    /// without a corpus): every figure before issue 64 was measured on
    /// these, where most sentences repeat.
    CorpusRuns,
}

/// Where the prose comes from.
pub enum TextSource {
    Builtin,
    /// Groups of consecutive sentences from one source document.
    Corpus(Vec<Vec<String>>),
    /// A word chain over real sentences (or the built-in templates).
    Novel(Chain),
}

impl TextSource {
    /// The text `kind` asks for, from the corpus at `corpus` when given.
    pub fn of(kind: TextKind, corpus: Option<&Path>) -> Result<TextSource> {
        match (kind, corpus) {
            (TextKind::CorpusRuns, Some(path)) => TextSource::from_corpus(path),
            (TextKind::CorpusRuns, None) => Ok(TextSource::Builtin),
            (TextKind::Novel, Some(path)) => {
                let TextSource::Corpus(groups) = TextSource::from_corpus(path)? else {
                    unreachable!("a corpus reads as groups of sentences");
                };
                let chain = Chain::of(groups.iter().flatten().map(String::as_str));
                chain
                    .map(TextSource::Novel)
                    .ok_or_else(|| DemoError::Corpus("the corpus has no words".to_owned()))
            }
            (TextKind::Novel, None) => Ok(TextSource::Novel(builtin_chain())),
        }
    }

    /// Reads `sentences.tsv.gz` (`source<TAB>group<TAB>sentence`) or
    /// `docs.jsonl.gz` (`{"title","content"}`), gzipped or not.
    pub fn from_corpus(path: &Path) -> Result<TextSource> {
        let file = std::fs::File::open(path)?;
        let reader: Box<dyn BufRead> = if path.extension().is_some_and(|e| e == "gz") {
            Box::new(BufReader::new(flate2::read::GzDecoder::new(file)))
        } else {
            Box::new(BufReader::new(file))
        };
        let jsonl = path.to_string_lossy().contains(".jsonl");
        let mut groups: Vec<Vec<String>> = Vec::new();
        let mut last_group = String::new();
        for line in reader.lines() {
            let line = line?;
            if jsonl {
                let doc: serde_json::Value = serde_json::from_str(&line)
                    .map_err(|e| DemoError::Corpus(format!("bad corpus line: {e}")))?;
                let content = doc["content"].as_str().unwrap_or_default();
                let sentences: Vec<String> = content
                    .split_inclusive(['.', '?', '!', '\n'])
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect();
                if !sentences.is_empty() {
                    groups.push(sentences);
                }
            } else {
                let mut parts = line.splitn(3, '\t');
                let (Some(_src), Some(group), Some(sentence)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                if group != last_group || groups.is_empty() {
                    groups.push(Vec::new());
                    last_group = group.to_owned();
                }
                groups
                    .last_mut()
                    .expect("pushed above")
                    .push(sentence.to_owned());
            }
        }
        if groups.is_empty() {
            return Err(DemoError::Corpus("the corpus has no sentences".to_owned()));
        }
        Ok(TextSource::Corpus(groups))
    }

    pub fn title(&self, rng: &mut StdRng) -> String {
        match self {
            TextSource::Builtin => {
                let t = pick(rng, TITLES);
                fill(t, rng)
            }
            TextSource::Corpus(groups) => {
                let group = &groups[rng.random_range(0..groups.len())];
                let s = &group[rng.random_range(0..group.len())];
                let mut title: String = s.chars().take(60).collect();
                if rng.random_ratio(1, 5) {
                    title.push(' ');
                    title.push_str(&rare_token(rng));
                }
                title
            }
            TextSource::Novel(chain) => {
                let s = chain.sentence(rng);
                let mut title: String = s.chars().take(60).collect();
                if rng.random_ratio(1, 5) {
                    title.push(' ');
                    title.push_str(&rare_token(rng));
                }
                title
            }
        }
    }

    /// About 1,500 characters (log-normal), with a rare token now and then.
    pub fn body(&self, rng: &mut StdRng) -> String {
        let normal: f64 = (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0;
        let target = (1500.0 * (0.35 * normal).exp()).clamp(200.0, 12_000.0) as usize;
        let mut body = String::with_capacity(target * 3 + 64);
        let mut chars = 0;
        match self {
            TextSource::Builtin => {
                while chars < target {
                    let s = fill(pick(rng, SENTENCES), rng);
                    chars += s.chars().count() + 1;
                    body.push_str(&s);
                    body.push(' ');
                }
            }
            TextSource::Novel(chain) => {
                while chars < target {
                    let s = chain.sentence(rng);
                    chars += s.chars().count() + 1;
                    body.push_str(&s);
                    body.push(' ');
                }
            }
            TextSource::Corpus(groups) => {
                let mut g = rng.random_range(0..groups.len());
                let mut k = rng.random_range(0..groups[g].len());
                while chars < target {
                    let s = &groups[g][k];
                    chars += s.chars().count() + 1;
                    body.push_str(s);
                    body.push(' ');
                    k += 1;
                    if k == groups[g].len() {
                        g = (g + 1) % groups.len();
                        k = 0;
                    }
                }
            }
        }
        if rng.random_ratio(1, 3) {
            body.push_str(&rare_token(rng));
        }
        body.trim_end().to_owned()
    }
}

/// The chain of the built-in templates, each filled many ways: text that
/// seldom repeats on a machine without the corpus (tests, a first try).
fn builtin_chain() -> Chain {
    use rand::SeedableRng;
    let mut rng = StdRng::seed_from_u64(0x5EED);
    let filled: Vec<String> = (0..4_000)
        .map(|i| match i % 5 {
            0 => fill(pick(&mut rng, TITLES), &mut rng),
            _ => fill(pick(&mut rng, SENTENCES), &mut rng),
        })
        .collect();
    Chain::of(filled.iter().map(String::as_str)).expect("the templates hold words")
}

pub(super) fn pick<'a>(rng: &mut StdRng, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len())]
}

/// Replaces `{n}` (noun), `{t}` (technology) and `{p}` (problem) slots.
pub(super) fn fill(template: &str, rng: &mut StdRng) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let slot = &rest[start + 1..start + 2];
        out.push_str(match slot {
            "n" => pick(rng, NOUNS),
            "t" => pick(rng, TECH),
            _ => pick(rng, PROBLEMS),
        });
        rest = &rest[start + 3..];
    }
    out.push_str(rest);
    out
}

/// A token that is rare at any scale: an error code, a version, an identifier.
pub(super) fn rare_token(rng: &mut StdRng) -> String {
    match rng.next_u32() % 3 {
        0 => format!("ERR-{:05}", rng.random_range(0..100_000)),
        1 => format!(
            "v{}.{}.{}",
            rng.random_range(0..20),
            rng.random_range(0..50),
            rng.random_range(0..100)
        ),
        _ => format!(
            "{}{}{}",
            pick(rng, &["load", "parse", "fetch", "build", "sync"]),
            pick(rng, &["User", "Order", "Token", "Cache", "Index"]),
            rng.random_range(0..1000)
        ),
    }
}

pub(super) const TITLES: &[&str] = &[
    "{t}에서 {n} 설정 시 {p} 문제",
    "{t} {n}가 동작하지 않습니다",
    "{n}를 {t}로 옮길 때 {p}가 납니다",
    "{t} 사용 중 {p} 해결 방법이 있을까요?",
    "{n}와 {n} 중 무엇을 써야 하나요",
    "{t}로 {n} 구현하기 리뷰 부탁드립니다",
    "{t} 버전 업그레이드 후 {p}",
    "{n} 성능 개선 질문",
];

pub(super) const SENTENCES: &[&str] = &[
    "{t}에서 {n}를 사용할 때 {p}가 발생합니다.",
    "로컬에서는 잘 되는데 배포 환경에서만 {p}가 납니다.",
    "{n} 설정을 바꿔 보았지만 결과는 같았습니다.",
    "공식 문서에 따르면 {n}는 {t}에서 기본으로 켜져 있다고 합니다.",
    "혹시 {n}와 관련해서 비슷한 경험이 있으신 분 계신가요?",
    "테스트 코드를 작성해서 {p}를 재현해 보았습니다.",
    "{t} 버전을 올린 뒤부터 {n}가 느려졌습니다.",
    "리뷰 감사합니다. 말씀하신 대로 {n}를 분리해 보겠습니다.",
    "이 부분은 {n} 대신 {n}를 쓰면 더 간단해질 것 같습니다.",
    "트랜잭션 안에서 {n}를 호출하면 {p}가 생길 수 있습니다.",
    "로그를 보면 {n} 단계에서 시간이 가장 오래 걸립니다.",
    "캐시를 적용하니 응답 시간이 크게 줄었습니다.",
    "{t}의 {n} 옵션을 끄면 문제가 사라집니다.",
    "변수 이름을 조금 더 명확하게 바꾸면 좋겠습니다.",
    "예외 처리가 빠져 있어서 {p}가 그대로 노출됩니다.",
    "인덱스를 추가한 뒤 쿼리 실행 계획을 다시 확인했습니다.",
    "동시에 요청이 많아지면 {n}에서 병목이 생깁니다.",
    "결론적으로 {t}에서는 {n}를 권장합니다.",
    "커넥션 풀 크기를 늘려도 처리량은 그대로였습니다.",
    "이 코드는 {n}의 책임이 너무 많아 보입니다.",
];

pub(super) const NOUNS: &[&str] = &[
    "엔티티",
    "리포지토리",
    "컨트롤러",
    "서비스 계층",
    "트랜잭션",
    "커넥션 풀",
    "인덱스",
    "캐시",
    "세션",
    "쿠키",
    "토큰",
    "스레드",
    "비동기 처리",
    "페이징",
    "정렬",
    "검색",
    "로그인",
    "회원가입",
    "게시글",
    "댓글",
    "좋아요",
    "알림",
    "배포",
    "테스트",
    "의존성 주입",
    "직렬화",
    "역직렬화",
    "쿼리",
    "조인",
    "지연 로딩",
    "즉시 로딩",
    "영속성 컨텍스트",
    "필터",
    "인터셉터",
    "미들웨어",
    "라우터",
    "컴포넌트",
    "상태 관리",
    "훅",
    "빌드",
    "번들",
    "타입",
    "제네릭",
    "클로저",
    "이터레이터",
    "소유권",
    "라이프타임",
    "메모리",
    "가비지 컬렉션",
    "로드 밸런서",
    "컨테이너",
    "이미지",
    "볼륨",
    "환경 변수",
];

pub(super) const TECH: &[&str] = &[
    "Spring Boot",
    "JPA",
    "MySQL",
    "Redis",
    "React",
    "Next.js",
    "Node.js",
    "Django",
    "FastAPI",
    "Rust",
    "Kotlin",
    "Docker",
    "Kubernetes",
    "nGrinder",
    "JMeter",
    "k6",
    "QueryDSL",
    "MyBatis",
    "Nginx",
    "GitHub Actions",
    "AWS",
    "Elasticsearch",
    "Kafka",
    "TypeScript",
    "Python",
];

pub(super) const PROBLEMS: &[&str] = &[
    "N+1 문제",
    "데드락",
    "타임아웃",
    "메모리 누수",
    "NullPointerException",
    "CORS 에러",
    "순환 참조",
    "중복 저장",
    "동시성 문제",
    "인코딩 깨짐",
    "404 에러",
    "500 에러",
    "느린 쿼리",
    "무한 루프",
    "스택 오버플로",
    "권한 오류",
    "연결 끊김",
];
