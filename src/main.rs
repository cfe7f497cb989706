//! The `chaja` binary: parse the command line, start logging, dispatch.

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;

use chaja::config::{Cli, Command, DictCommand};

fn main() -> anyhow::Result<()> {
    // Settings from `./.env`, under any already in the environment; only
    // the working directory's file, never one found in a parent directory.
    // Read before the runtime starts its threads: setting environment
    // variables while other threads may read them is unsound.
    let dotenv = match dotenvy::from_path(".env") {
        Err(dotenvy::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
        other => Some(other),
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(dotenv))
}

async fn run(dotenv: Option<Result<(), dotenvy::Error>>) -> anyhow::Result<()> {
    let cli = Cli::parse();
    chaja::telemetry::init(&cli.log_format);
    match dotenv {
        Some(Ok(())) => tracing::info!("read settings from ./.env"),
        Some(Err(e)) => anyhow::bail!("reading ./.env: {e}"),
        None => {}
    }
    match cli.command {
        Command::Serve(args) => {
            let app = chaja::app::App::build(&args)
                .await
                .context("starting chaja")?;
            let listener = tokio::net::TcpListener::bind(args.bind)
                .await
                .with_context(|| format!("binding {}", args.bind))?;
            tracing::info!(addr = %listener.local_addr()?, "chaja serving");
            let shutdown = CancellationToken::new();
            tokio::spawn(cancel_on_signal(shutdown.clone()));
            app.run(listener, shutdown).await?;
        }
        Command::Reindex(store) => {
            chaja::index::morph::init(&store.ko_dic);
            if let Some(dir) = store.sqlite_dir() {
                std::fs::create_dir_all(dir)?;
            }
            let db = chaja::db::Db::connect_lazy(&store.database_url, store.pool_size())?;
            db.migrate().await.context("migrating the database")?;
            let done =
                chaja::mirror::reindex::reindex(&db, &store.index_dir, store.writer_memory(), true)
                    .await
                    .context("reindexing")?;
            println!(
                "reindexed {} rows into generation {} (outbox position {})",
                done.docs, done.generation, done.outbox_seq
            );
        }
        Command::Verify(args) => {
            chaja::index::morph::init(&args.store.ko_dic);
            let db = chaja::db::Db::connect_lazy(&args.store.database_url, args.store.pool_size())?;
            let index = chaja::index::SearchIndex::open_or_create(&args.store.index_dir)?;
            let report = chaja::mirror::verify::verify(&db, index.live()).await?;
            println!(
                "questions {} reviews {} index docs {}: missing {} extra {} stale {} duplicate {}",
                report.questions_in_db,
                report.reviews_in_db,
                report.docs_in_index,
                report.missing,
                report.extra,
                report.stale,
                report.duplicate
            );
            for drift in report.drift.iter().take(20) {
                println!("  {} {} {:?}", drift.kind.as_str(), drift.id, drift.problem);
            }
            if !report.is_clean() {
                if args.repair {
                    let queued = chaja::mirror::verify::repair(&db, &report.drift).await?;
                    println!("queued {queued} rows for the indexer");
                }
                std::process::exit(2);
            }
        }
        Command::Loadtest(args) => {
            let summary = chaja::loadtest::run(&args).await?;
            print!("{summary}");
            println!("reports in {}", args.report_dir.display());
        }
        Command::Dict(DictCommand::Build { from, out, user }) => {
            let started = std::time::Instant::now();
            chaja::index::morph::build_dictionary(&from, &out)
                .with_context(|| format!("building the dictionary from {}", from.display()))?;
            if let Some(user) = &user {
                chaja::index::morph::build_user_dictionary(user, &out).with_context(|| {
                    format!("building the user dictionary from {}", user.display())
                })?;
            }
            println!(
                "built the korean dictionary in {} in {:.1} s",
                out.display(),
                started.elapsed().as_secs_f64()
            );
        }
        Command::Seed(args) => {
            let report = chaja::seed::run(&args).await.context("seeding")?;
            println!("{report}");
        }
    }
    Ok(())
}

/// Ctrl-C or SIGTERM starts a graceful shutdown.
async fn cancel_on_signal(token: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("shutting down");
    token.cancel();
    // A second Ctrl-C does not wait for the drain: every index commit is
    // atomic, so stopping now loses nothing but in-flight requests.
    if tokio::signal::ctrl_c().await.is_ok() {
        tracing::warn!("second interrupt; exiting now");
        std::process::exit(130);
    }
}
