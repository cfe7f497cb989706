//! The `chaja` binary: parse the command line, start logging, dispatch.

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;

use chaja::config::{Cli, Command, DictCommand, LoadtestArgs, StoreArgs};
use chaja_core::sources::{ConfigFile, Sources};
use chaja_store::Db;

/// jemalloc, built with transparent huge pages on (`.cargo/config.toml`).
///
/// A rebuild waits on tantivy's indexing thread, and that thread spends
/// most of its time on random reads and writes of its in-memory term
/// table: hundreds of MB, one insert per gram of every row. On 4 KB pages
/// many of those miss the TLB too; on 2 MB pages far fewer can.
/// The system allocator gets no huge pages here (the kernel gives them
/// only where asked, with `madvise`, as on Debian), and jemalloc alone,
/// without them, was no faster. With them, 100k rows rebuilt in 0.81×
/// the time and CPU (docs/benchmarks/037-huge-pages-for-indexing-thread.md; "huge pages for the indexing
/// thread"), and never-seen searches ran as before.
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
            store.init_analyzer();
            let (db, sources) = open_store(&store).await?;
            let done = chaja_mirror::reindex::reindex(
                &db,
                &sources,
                &store.index_dir,
                store.rebuild_options(),
                true,
            )
            .await
            .context("reindexing")?;
            println!(
                "reindexed {} rows into generation {} (outbox position {}) in {:.1} s, {:.0} rows/s",
                done.docs,
                done.generation,
                done.outbox_seq,
                done.stages.wall.as_secs_f64(),
                done.docs as f64 / done.stages.wall.as_secs_f64().max(1e-3),
            );
            println!("{}", done.stages);
            if done.skipped > 0 {
                println!(
                    "skipped {} rows that cannot be read (fix them, then `chaja verify --repair`):",
                    done.skipped
                );
                for row in done.unreadable.iter().take(20) {
                    println!("  {} {:?}: {}", row.source, row.key, row.reason);
                }
            }
        }
        Command::Verify(args) => {
            args.store.init_analyzer();
            let (db, sources) = open_store(&args.store).await?;
            let index = chaja_index::SearchIndex::open_or_create(&args.store.index_dir, &sources)?;
            let report = chaja_mirror::verify::verify(&db, &sources, index.live()).await?;
            let rows: Vec<String> = report
                .rows_in_db
                .iter()
                .map(|(source, rows)| format!("{source} {rows}"))
                .collect();
            println!(
                "{} index docs {}: missing {} extra {} stale {} duplicate {} unreadable {}",
                rows.join(" "),
                report.docs_in_index,
                report.missing,
                report.extra,
                report.stale,
                report.duplicate,
                report.unreadable
            );
            for drift in report.drift.iter().take(20) {
                println!("  {} {} {:?}", drift.source, drift.id, drift.problem);
            }
            if !report.is_clean() {
                if args.repair {
                    let queued = chaja_mirror::verify::repair(&db, &report.drift).await?;
                    println!("queued {queued} rows for the indexer");
                }
                std::process::exit(2);
            }
        }
        Command::Install(args) => {
            let file = ConfigFile::load_or_default(args.store.config.as_deref())?;
            let (sources, is_demo) = chaja_demo::sources_of(&file);
            if args.print {
                // Only the dialect is needed: nothing is opened or created.
                let dialect = chaja_store::Dialect::of_url(&args.store.database_url)?;
                for statement in chaja_store::install::script(dialect, &sources) {
                    println!("{statement};");
                }
            } else if is_demo {
                chaja_demo::migrate(&connect(&args.store)?)
                    .await
                    .context("migrating the demo's tables")?;
                println!("the demo's tables and triggers are in place");
            } else {
                chaja_store::install::install(&connect(&args.store)?, &sources).await?;
                println!(
                    "installed the outbox and the triggers of {} source(s); now run `chaja reindex`, then `chaja serve`",
                    sources.len()
                );
            }
        }
        Command::Uninstall(store) => {
            let file = ConfigFile::load_or_default(store.config.as_deref())?;
            let Some(sources) = &file.sources else {
                anyhow::bail!(
                    "uninstall removes what `chaja install` added for a config's [[source]] entries; the demo's tables are chaja's own migrations (drop its database instead)"
                );
            };
            chaja_store::install::uninstall(&connect(&store)?, sources).await?;
            println!("removed chaja's triggers and tables");
        }
        Command::Loadtest(args) => loadtest(&args).await?,
        Command::Dict(DictCommand::Build { from, out, user }) => {
            let started = std::time::Instant::now();
            chaja_index::morph::build_dictionary(&from, &out)
                .with_context(|| format!("building the dictionary from {}", from.display()))?;
            if let Some(user) = &user {
                chaja_index::morph::build_user_dictionary(user, &out).with_context(|| {
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
            let db = connect(&args.store)?;
            let report = chaja_demo::seed::run(&db, &args.config())
                .await
                .context("seeding")?;
            println!("{report}");
        }
    }
    Ok(())
}

fn connect(store: &StoreArgs) -> anyhow::Result<Db> {
    if let Some(dir) = store.sqlite_dir() {
        std::fs::create_dir_all(dir)?;
    }
    Ok(Db::connect_lazy(&store.database_url, store.pool_size())?)
}

#[cfg(feature = "loadtest")]
async fn loadtest(args: &LoadtestArgs) -> anyhow::Result<()> {
    if args.scenario == chaja::config::Scenario::Counters {
        let run_time = std::time::Duration::from_secs(args.run_time as u64);
        let summary =
            chaja_loadtest::counters::run(&args.host, &args.counters()?, run_time).await?;
        print!("{summary}");
        return Ok(());
    }
    let summary = chaja_loadtest::run(&args.config()).await?;
    print!("{summary}");
    println!("reports in {}", args.report_dir.display());
    Ok(())
}

/// A server build leaves the load generator out (goose and its HTTP
/// client): say how to get it.
#[cfg(not(feature = "loadtest"))]
async fn loadtest(_: &LoadtestArgs) -> anyhow::Result<()> {
    anyhow::bail!(
        "this chaja was built without the load tester; build it with the default features \
         (`cargo build --release -p chaja`, or `cargo install --path .`) to run `chaja loadtest`"
    )
}

/// The database and the configured sources, ready to read: the demo's
/// migrated, someone else's checked for installed triggers.
async fn open_store(store: &StoreArgs) -> anyhow::Result<(Db, Sources)> {
    let file = ConfigFile::load_or_default(store.config.as_deref())?;
    let db = connect(store)?;
    let (sources, is_demo) = chaja_demo::sources_of(&file);
    if is_demo {
        chaja_demo::migrate(&db)
            .await
            .context("migrating the database")?;
    } else {
        chaja_store::install::check_installed(&db, &sources).await?;
    }
    Ok((db, sources))
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
