#!/usr/bin/env python3
"""Writes tests/relevance/similar.json: the judged set of the like search
(`GET /api/similar`, issue 65).

The base posts were written for chaja (no corpus text). From each, four
near-duplicates are derived by rule, as a user writes the same question
again: its sentences reordered, a third of its words dropped, its
particles changed, and its Latin product names typed in the other script.
Each base post has a neighbour on a related topic (judged 1), and a few
posts share only common words with all of them (judged 0, never listed).

Run it again after changing a base post: `python3 tests/relevance/similar_set.py`.
"""

import json
import pathlib

# (id, neighbour, title, content)
BASES = [
    ("mysql-deadlock", "spring-tx-rollback", "MySQL 데드락이 자주 납니다",
     "주문 테이블과 재고 테이블을 같은 트랜잭션에서 갱신하면 MySQL 데드락이 자주 발생합니다. "
     "두 요청이 서로 다른 순서로 행 잠금을 잡는 것 같습니다. "
     "SHOW ENGINE INNODB STATUS 로그를 보면 갭 락이 원인처럼 보입니다. "
     "잠금 순서를 맞추는 것 말고 다른 해결책이 있을까요?"),
    ("spring-tx-rollback", "mysql-deadlock", "Spring 트랜잭션이 롤백되지 않아요",
     "서비스 메서드에 Transactional 애너테이션을 붙였는데 예외가 나도 롤백되지 않습니다. "
     "체크 예외를 던지고 있어서 그런 것 같습니다. "
     "rollbackFor 옵션을 지정하면 해결되는지 궁금합니다. "
     "같은 클래스 안에서 내부 호출을 하면 프록시를 타지 않는다는 말도 들었습니다."),
    ("jpa-n-plus-1", "mysql-like-slow", "JPA N+1 쿼리 문제",
     "게시글 목록을 불러올 때 댓글을 함께 조회하면 쿼리가 게시글 수만큼 더 나갑니다. "
     "JPA 지연 로딩 때문에 생기는 N+1 문제라고 들었습니다. "
     "fetch join과 EntityGraph 중 어떤 방식이 페이징과 함께 쓰기 좋은가요? "
     "배치 사이즈 설정도 효과가 있는지 알고 싶습니다."),
    ("mysql-like-slow", "jpa-n-plus-1", "LIKE 검색이 너무 느립니다",
     "게시판 제목과 본문을 LIKE 앞뒤 와일드카드로 검색하니 백만 건에서 십 초가 넘게 걸립니다. "
     "인덱스를 만들어도 풀스캔을 한다고 실행 계획에 나옵니다. "
     "MySQL 전문 검색 인덱스의 ngram 파서를 써 봤지만 자주 쓰이는 단어에서 느려집니다. "
     "한국어 부분 문자열 검색을 빠르게 하는 방법이 있을까요?"),
    ("redis-cache-ttl", "cache-stampede", "Redis 캐시 만료 시간 정하기",
     "조회가 많은 상품 상세를 Redis 에 캐시하고 있습니다. "
     "만료 시간을 길게 잡으면 가격이 바뀌어도 옛날 값이 보이고, 짧게 잡으면 데이터베이스 부하가 커집니다. "
     "상품이 수정될 때 캐시를 지우는 방식과 TTL 을 짧게 두는 방식 중 무엇이 나을까요?"),
    ("cache-stampede", "redis-cache-ttl", "캐시가 만료되는 순간 서버가 느려져요",
     "인기 키의 캐시가 만료되는 순간 수백 개의 요청이 동시에 데이터베이스로 몰립니다. "
     "이른바 캐시 스탬피드 현상 같습니다. "
     "락을 걸어서 한 요청만 다시 계산하게 하는 방법과 만료 전에 미리 갱신하는 방법을 비교하고 싶습니다."),
    ("docker-build-cache", "k8s-oom", "Docker 빌드 캐시가 매번 깨집니다",
     "Dockerfile 에서 소스 코드를 복사한 다음 의존성을 설치하니 코드 한 줄만 바꿔도 빌드 캐시가 무효가 됩니다. "
     "레이어 순서를 바꿔야 한다고 들었는데 정확히 어떻게 나눠야 하나요? "
     "멀티 스테이지 빌드와 같이 쓰면 이미지 크기도 줄일 수 있는지 궁금합니다."),
    ("k8s-oom", "docker-build-cache", "Kubernetes 파드가 OOMKilled 로 죽어요",
     "자바 애플리케이션 파드가 트래픽이 몰리면 OOMKilled 상태로 재시작됩니다. "
     "컨테이너 메모리 limit 은 1기가로 잡았고 힙은 따로 설정하지 않았습니다. "
     "JVM 이 컨테이너 메모리를 인식하게 하려면 어떤 옵션이 필요한가요?"),
    ("nginx-websocket", "cors-preflight", "Nginx 뒤에서 웹소켓이 끊겨요",
     "Nginx 리버스 프록시 뒤에 웹소켓 서버를 두었는데 연결이 육십 초마다 끊깁니다. "
     "Upgrade 헤더와 Connection 헤더를 넘겨 주도록 설정은 했습니다. "
     "proxy_read_timeout 값을 늘리는 것 말고 핑퐁 메시지를 보내는 편이 좋을까요?"),
    ("cors-preflight", "nginx-websocket", "CORS 프리플라이트 요청이 실패합니다",
     "프론트엔드에서 API 를 호출하면 OPTIONS 프리플라이트 요청이 403 으로 막힙니다. "
     "서버에서 Access-Control-Allow-Origin 헤더는 넣었는데 인증 헤더를 보내면 실패합니다. "
     "credentials 를 함께 쓸 때 허용 출처를 와일드카드로 두면 안 되는 이유가 궁금합니다."),
    ("react-rerender", "typescript-generic", "React 컴포넌트가 너무 자주 다시 그려져요",
     "부모 컴포넌트의 상태가 바뀔 때마다 목록의 모든 자식 컴포넌트가 리렌더링됩니다. "
     "React.memo 로 감쌌지만 콜백 함수를 넘기니 효과가 없습니다. "
     "useCallback 과 useMemo 를 어디까지 써야 하는지 기준이 있을까요?"),
    ("typescript-generic", "react-rerender", "TypeScript 제네릭 제약 조건 질문",
     "객체에서 특정 키의 값을 꺼내는 함수를 TypeScript 제네릭으로 만들고 있습니다. "
     "keyof 로 키를 제한했는데 반환 타입이 유니온으로 넓어집니다. "
     "인덱스 접근 타입을 쓰면 정확한 값 타입을 얻을 수 있나요?"),
    ("python-asyncio", "celery-retry", "Python asyncio 이벤트 루프가 멈춰요",
     "FastAPI 엔드포인트 안에서 requests 라이브러리로 외부 API 를 호출하니 다른 요청까지 멈춥니다. "
     "비동기 함수 안에서 동기 네트워크 호출을 하면 이벤트 루프가 막힌다고 들었습니다. "
     "httpx 같은 비동기 클라이언트로 바꾸는 것 말고 run_in_executor 를 써도 되나요?"),
    ("celery-retry", "python-asyncio", "Celery 작업 재시도가 무한히 반복됩니다",
     "외부 결제 API 호출이 실패하면 Celery 작업을 재시도하게 했는데 같은 작업이 계속 반복됩니다. "
     "max_retries 를 지정했는데도 멈추지 않습니다. "
     "지수 백오프로 재시도 간격을 늘리고 최종 실패를 기록하는 좋은 방법이 있을까요?"),
    ("rust-borrow", "rust-async-send", "Rust 빌림 검사기 오류가 이해되지 않아요",
     "벡터를 순회하면서 같은 벡터에 원소를 추가하려고 하니 Rust 컴파일러가 가변 빌림 오류를 냅니다. "
     "불변 참조가 살아 있는 동안에는 가변 참조를 만들 수 없다고 합니다. "
     "인덱스로 순회하거나 새 벡터에 모으는 것 중 어떤 방식이 관용적인가요?"),
    ("rust-async-send", "rust-borrow", "Rust 비동기 함수가 Send 가 아니라고 합니다",
     "tokio spawn 에 넘긴 async 블록이 Send 를 구현하지 않는다는 오류가 납니다. "
     "await 지점을 넘어서 Rc 나 MutexGuard 를 들고 있어서 그런 것 같습니다. "
     "가드를 await 전에 버리도록 블록을 나누면 해결되나요?"),
    ("git-rebase-conflict", "git-large-file", "Git 리베이스 중 충돌이 계속 납니다",
     "기능 브랜치를 main 위로 리베이스하는데 커밋마다 같은 파일에서 충돌이 반복됩니다. "
     "rerere 설정을 켜면 같은 충돌 해결을 재사용할 수 있다고 들었습니다. "
     "차라리 머지 커밋을 만드는 편이 나은 상황은 언제인가요?"),
    ("git-large-file", "git-rebase-conflict", "Git 저장소에 큰 파일을 올려 버렸어요",
     "실수로 수백 메가바이트짜리 데이터 파일을 커밋해서 저장소가 너무 커졌습니다. "
     "파일을 지워도 히스토리에 남아서 클론이 느립니다. "
     "filter-repo 로 히스토리에서 지우고 나서 팀원들은 어떻게 해야 하나요?"),
    ("kafka-consumer-lag", "grpc-stream-timeout", "Kafka 컨슈머 랙이 계속 늘어납니다",
     "주문 이벤트를 처리하는 Kafka 컨슈머의 랙이 저녁마다 수십만 건까지 쌓입니다. "
     "파티션은 여섯 개인데 컨슈머 인스턴스를 늘려도 처리량이 그대로입니다. "
     "메시지 처리 안에서 데이터베이스 호출이 느린 것이 원인일 수 있을까요?"),
    ("grpc-stream-timeout", "kafka-consumer-lag", "gRPC 스트리밍이 중간에 끊겨요",
     "서버 스트리밍 gRPC 호출이 몇 분 뒤 DEADLINE_EXCEEDED 로 끊어집니다. "
     "클라이언트에서 데드라인을 길게 주었는데도 로드밸런서에서 연결이 닫히는 것 같습니다. "
     "keepalive 설정을 어떻게 맞춰야 하나요?"),
    ("es-korean-analyzer", "mysql-like-slow", "Elasticsearch 한국어 형태소 분석 질문",
     "Elasticsearch 에 nori 형태소 분석기를 붙였는데 복합 명사가 원하는 대로 나뉘지 않습니다. "
     "사용자 사전에 단어를 추가하면 재색인을 해야 하나요? "
     "검색어의 조사를 제거하는 필터 설정도 궁금합니다."),
    ("jwt-refresh-token", "session-cookie", "JWT 리프레시 토큰은 어디에 저장하나요",
     "액세스 토큰은 짧게, 리프레시 토큰은 길게 발급하고 있습니다. "
     "리프레시 토큰을 로컬 스토리지에 두면 XSS 에 취약하다고 들었습니다. "
     "HttpOnly 쿠키에 두고 재발급 때마다 토큰을 교체하는 방식이 맞나요?"),
    ("session-cookie", "jwt-refresh-token", "로그인 세션 쿠키가 유지되지 않아요",
     "서브도메인이 다른 프론트엔드에서 로그인하면 세션 쿠키가 저장되지 않습니다. "
     "SameSite 속성과 Secure 속성을 어떻게 줘야 하는지 헷갈립니다. "
     "쿠키 도메인을 상위 도메인으로 지정하면 해결되나요?"),
    ("linux-open-files", "nginx-websocket", "Too many open files 오류가 납니다",
     "동시 접속이 많아지면 서버 로그에 Too many open files 오류가 찍히고 새 연결을 받지 못합니다. "
     "ulimit 값을 올렸는데 systemd 서비스에는 적용되지 않는 것 같습니다. "
     "LimitNOFILE 설정 위치와 커널 파라미터를 함께 확인해야 하나요?"),
]

# Posts that share only common words with the bases (judged 0).
COMMON_ONLY = [
    ("common-laptop", "노트북 배터리 문제가 있습니다",
     "설정을 바꿔 봤는데 여전히 문제가 있습니다. 방법이 궁금합니다. 해결책이 있을까요?"),
    ("common-keyboard", "키보드 추천 부탁드립니다",
     "어떤 방식이 좋은지 궁금합니다. 차라리 다른 것을 쓰는 편이 나을까요? 기준이 있을까요?"),
    ("common-desk", "책상 정리 방법이 궁금합니다",
     "매번 같은 문제가 반복됩니다. 어떻게 나눠야 하나요? 좋은 방법이 있을까요?"),
    ("common-coffee", "커피 원두 고르는 기준",
     "어떤 것이 나은지 궁금합니다. 무엇이 좋은지 알고 싶습니다. 추천해 주세요."),
    ("common-commute", "출퇴근 시간이 너무 깁니다",
     "매일 같은 시간에 늦어집니다. 다른 해결책이 있을까요? 어떻게 해야 하나요?"),
    ("common-plant", "화분 물 주는 주기 질문",
     "자주 주면 문제가 생기고 길게 두면 시듭니다. 정확히 어떻게 해야 하나요?"),
]

# Latin product names and how Korean developers type them in Hangul.
SCRIPTS = {
    "MySQL": "마이에스큐엘", "Spring": "스프링", "JPA": "제이피에이", "Redis": "레디스",
    "Docker": "도커", "Dockerfile": "도커파일", "Kubernetes": "쿠버네티스", "Nginx": "엔진엑스",
    "CORS": "코스", "React": "리액트", "TypeScript": "타입스크립트", "Python": "파이썬",
    "FastAPI": "패스트에이피아이", "Celery": "셀러리", "Rust": "러스트", "Git": "깃",
    "Kafka": "카프카", "gRPC": "지알피씨", "Elasticsearch": "엘라스틱서치", "JWT": "제이더블유티",
    "tokio": "토키오", "nori": "노리", "systemd": "시스템디", "ngram": "엔그램",
}

# Particles swapped for another a careless writer might use.
PARTICLES = [("은", "는"), ("는", "은"), ("이", "가"), ("가", "이"), ("을", "를"),
             ("를", "을"), ("에서", "에"), ("으로", "로"), ("와", "과"), ("과", "와")]


def sentences(text):
    out, start = [], 0
    for i, c in enumerate(text):
        if c in ".?!" and (i + 1 == len(text) or text[i + 1] == " "):
            out.append(text[start:i + 1].strip())
            start = i + 1
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


def reordered(title, content):
    s = sentences(content)
    return title, " ".join(s[1:][::-1] + s[:1])


def dropped(title, content):
    def drop(text):
        return " ".join(w for i, w in enumerate(text.split()) if i % 3 != 1)
    return drop(title), drop(content)


def particles(title, content):
    def swap(text):
        words = []
        for w in text.split():
            for old, new in PARTICLES:
                if len(w) > len(old) + 1 and w.endswith(old):
                    w = w[: -len(old)] + new
                    break
            words.append(w)
        return " ".join(words)
    return swap(title), swap(content)


def script(title, content):
    def swap(text):
        for latin, hangul in SCRIPTS.items():
            if latin in text:
                text = text.replace(latin, hangul)
            elif hangul in text:
                text = text.replace(hangul, latin)
        return text
    return swap(title), swap(content)


def main():
    posts, judged = [], {}
    for base, neighbour, title, content in BASES:
        posts.append({"id": base, "title": title, "content": content})
        grades = {neighbour: 1}
        for rule in (reordered, dropped, particles, script):
            t, c = rule(title, content)
            variant = f"{base}~{rule.__name__}"
            posts.append({"id": variant, "title": t, "content": c})
            grades[variant] = 2
        judged[base] = grades
    for cid, title, content in COMMON_ONLY:
        posts.append({"id": cid, "title": title, "content": content})
    out = {
        "about": "The judged set of the like search (GET /api/similar), written for chaja "
                 "by tests/relevance/similar_set.py: base posts, four near-duplicates of each "
                 "derived by rule (grade 2), a neighbour on a related topic (grade 1), and posts "
                 "sharing only common words (never judged relevant).",
        "posts": posts,
        "judged": judged,
    }
    path = pathlib.Path(__file__).with_name("similar.json")
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(posts)} posts, {len(judged)} judged bases -> {path}")


if __name__ == "__main__":
    main()
