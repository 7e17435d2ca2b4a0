//! `recall-eval`: score prompt recall and `kg_search` on the labelled memories of
//! tests/recall-eval/ under each policy and protocol, and score runs files written by
//! other systems with the same code (issues 21 and 37). `make eval` runs it in release.

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use kg_core::Policy;
use recall_eval::{Options, evaluate, report, runs_file_of};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PolicyArg {
    Reference,
    Ours,
}

/// Score prompt recall and kg_search against the labels of tests/recall-eval/, for each
/// memory under the reference policy and ours, in a clean and a live session, and judge
/// issue 37's targets. Definitions of every number: tests/recall-eval/README.md,
/// "Running the evaluation".
#[derive(Debug, Parser)]
#[command(name = "recall-eval", version)]
struct Args {
    /// The data folder (manifest.json, memories/, prompts-*.jsonl, searches-*.jsonl).
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Only this memory (repeatable; default: all).
    #[arg(long, value_name = "NAME")]
    memory: Vec<String>,
    /// Only this policy (repeatable; default: reference, then ours).
    #[arg(long, value_enum)]
    policy: Vec<PolicyArg>,
    /// Also score the runs of another system from this file (repeatable), with the same
    /// metric code: JSON in the shape --write-runs writes.
    #[arg(long, value_name = "FILE")]
    runs: Vec<PathBuf>,
    /// Score no policy in-process, only the --runs files.
    #[arg(long, requires = "runs")]
    runs_only: bool,
    /// Write the per-prompt outcomes of the one policy run to FILE, in the runs-file shape.
    #[arg(long, value_name = "FILE")]
    write_runs: Option<PathBuf>,
    /// Evaluate the graphs as committed, without the maintenance tick a running server
    /// would have done (over-budget graphs then keep every active node).
    #[arg(long)]
    no_tick: bool,
    /// Only the first N prompts and queries of each kind.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Print the report as JSON (with --verbose, every prompt's and query's outcome too).
    #[arg(long)]
    json: bool,
    /// List every prompt and query that fell short, with its labels and what came back.
    #[arg(long, short)]
    verbose: bool,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("recall-eval: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args = Args::parse();
    let mut options = Options::new(
        args.data
            .unwrap_or_else(recall_eval::data::default_data_dir),
    );
    options.memories = args.memory;
    if !args.policy.is_empty() {
        options.policies = args
            .policy
            .iter()
            .map(|p| match p {
                PolicyArg::Reference => Policy::Reference,
                PolicyArg::Ours => Policy::Ours,
            })
            .collect();
    }
    if args.runs_only {
        options.policies.clear();
    }
    options.tick = !args.no_tick;
    options.limit = args.limit;
    options.runs_files = args.runs;
    if args.write_runs.is_some() && options.policies.len() != 1 {
        bail!("--write-runs needs exactly one --policy (a runs file holds one system)");
    }
    let mut report = evaluate(&options)?;
    if let (Some(path), Some(&policy)) = (&args.write_runs, options.policies.first()) {
        let file = runs_file_of(&report, recall_eval::policy_name(policy));
        let text = serde_json::to_string_pretty(&file).context("runs as JSON")?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        if !args.verbose {
            for memory in &mut report.memories {
                for policy in &mut memory.policies {
                    policy.runs = None;
                }
            }
        }
        let text = serde_json::to_string_pretty(&report).context("report as JSON")?;
        println!("{text}");
    } else {
        print!("{}", report::render(&report, args.verbose));
    }
    Ok(())
}
