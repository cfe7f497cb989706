//! Settings have one source, the CLI's definition (`chaja::config::Cli`):
//! `.env.example` must list every environment variable it reads, of every
//! subcommand, with its default. The rule this checks, line by line:
//!
//! - a variable appears as `NAME=value`, or commented as `# NAME=value`;
//! - one with a default has a line that gives exactly that default, and no
//!   uncommented line gives another (so a copy of the file as `.env`
//!   changes no default); commented lines may show other values;
//! - one without a default (or with an empty one) appears commented only,
//!   with an empty or an example value;
//! - every `NAME=` line names a variable the CLI reads, or `RUST_LOG`
//!   (read by the log filter, not by clap).

use std::collections::BTreeMap;

use clap::CommandFactory;

use crate::helpers::workspace_root;

/// Variables in `.env.example` that the CLI's definition does not hold.
const NOT_CLI: &[&str] = &["RUST_LOG"];

/// Each variable of the CLI → the arguments that read it (`chaja serve
/// --bind`), each with its default ("" when it has none).
type Variables = BTreeMap<String, Vec<(String, String)>>;

/// Every environment variable of `command` and its subcommands, into
/// `found`; arguments hidden from `--help` aside.
fn variables(command: &clap::Command, path: &str, found: &mut Variables) {
    for arg in command.get_arguments().filter(|arg| !arg.is_hide_set()) {
        let Some(name) = arg.get_env() else {
            continue;
        };
        let default: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|value| value.to_string_lossy().into_owned())
            .collect();
        found
            .entry(name.to_string_lossy().into_owned())
            .or_default()
            .push((format!("{path} --{}", arg.get_id()), default.join(",")));
    }
    for sub in command.get_subcommands() {
        variables(sub, &format!("{path} {}", sub.get_name()), found);
    }
}

/// Each `NAME=value` line of `text`: (name, value, commented).
fn lines(text: &str) -> Vec<(String, String, bool)> {
    text.lines()
        .filter_map(|line| {
            let (commented, rest) = match line.strip_prefix("# ") {
                Some(rest) => (true, rest),
                None => (false, line),
            };
            let (name, value) = rest.split_once('=')?;
            let is_name = name.starts_with(|c: char| c.is_ascii_uppercase())
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            is_name.then(|| (name.to_owned(), value.to_owned(), commented))
        })
        .collect()
}

/// What is wrong with `example` against the CLI's variables, one line each.
fn problems(cli: &Variables, example: &str) -> Vec<String> {
    let lines = lines(example);
    let mut problems = Vec::new();
    for (name, args) in cli {
        let defaults: Vec<&str> = args.iter().map(|(_, d)| d.as_str()).collect();
        let default = defaults[0];
        if defaults.iter().any(|d| *d != default) {
            problems.push(format!(
                "{name}: the arguments that read it disagree on its default: {args:?}"
            ));
            continue;
        }
        let mine: Vec<&(String, String, bool)> =
            lines.iter().filter(|(n, _, _)| n == name).collect();
        if mine.is_empty() {
            let line = format!("# {name}={default}");
            problems.push(format!(
                "{name}: missing; add `{line}` with a line on why to set it"
            ));
            continue;
        }
        if default.is_empty() {
            if mine.iter().any(|(_, _, commented)| !commented) {
                problems.push(format!(
                    "{name}: has no default, so its lines are commented (`# {name}=`)"
                ));
            }
            continue;
        }
        if !mine.iter().any(|(_, value, _)| value == default) {
            problems.push(format!(
                "{name}: no line gives its default: `{name}={default}` or `# {name}={default}`"
            ));
        }
        for (_, value, commented) in &mine {
            if !commented && value != default {
                problems.push(format!(
                    "{name}={value}: not its default ({default}); comment it out, or give the default"
                ));
            }
        }
    }
    for (name, _, _) in &lines {
        if !cli.contains_key(name) && !NOT_CLI.contains(&name.as_str()) {
            problems.push(format!("{name}: no argument of the CLI reads it"));
        }
    }
    problems
}

fn cli_variables() -> Variables {
    let mut found = BTreeMap::new();
    variables(&chaja::config::Cli::command(), "chaja", &mut found);
    found
}

#[test]
fn env_example_lists_every_variable_of_the_cli_with_its_default() {
    let cli = cli_variables();
    // The walk sees `serve`'s groups, not just the top level.
    for name in [
        "DATABASE_URL",
        "CHAJA_BIND",
        "CHAJA_SEARCH_TURNS",
        "CHAJA_LOG_FORMAT",
    ] {
        assert!(
            cli.contains_key(name),
            "{name} not found in the CLI: {cli:?}"
        );
    }
    let path = workspace_root().join(".env.example");
    let example = std::fs::read_to_string(&path).unwrap();
    let problems = problems(&cli, &example);
    assert!(
        problems.is_empty(),
        "{} against `chaja --help` (src/config.rs):\n  {}",
        path.display(),
        problems.join("\n  ")
    );
}

/// The check finds each kind of drift, so that a pass means something.
#[test]
fn the_env_example_check_finds_drift() {
    let cli = cli_variables();
    let example = std::fs::read_to_string(workspace_root().join(".env.example")).unwrap();
    let without = |name: &str| -> String {
        example
            .lines()
            .filter(|line| lines(line).first().is_none_or(|(n, _, _)| n != name))
            .map(|line| format!("{line}\n"))
            .collect()
    };
    let cases = [
        (
            "a variable removed",
            without("CHAJA_SEARCH_TURNS"),
            "CHAJA_SEARCH_TURNS: missing",
        ),
        (
            "a default changed",
            without("CHAJA_POLL_MS") + "CHAJA_POLL_MS=250\n",
            "CHAJA_POLL_MS=250: not its default",
        ),
        (
            "a variable with no default set",
            example.clone() + "CHAJA_DB_POOL=8\n",
            "CHAJA_DB_POOL: has no default",
        ),
        (
            "a name the CLI does not read",
            example.clone() + "# CHAJA_NO_SUCH_SETTING=1\n",
            "CHAJA_NO_SUCH_SETTING: no argument",
        ),
    ];
    for (what, text, expected) in cases {
        let found = problems(&cli, &text);
        assert!(
            found.iter().any(|p| p.starts_with(expected)),
            "{what}: expected {expected:?}, found {found:?}"
        );
    }
}
