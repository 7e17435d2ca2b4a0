//! `kg-memory import`: bring memory kept by another tool into KG Memory.
//!
//! Two formats: the official MCP memory server's `memory.jsonl` ([`jsonl`]) and
//! Claude Code's `CLAUDE.md` / `MEMORY.md` bullet files ([`markdown`]). The whole file
//! is read and checked first; any problem (a malformed line, a duplicate name, a name
//! no id can be made from, a file over the size limit, bytes that are not UTF-8) stops
//! the import with every problem listed and nothing written. Then the target graph is
//! read, and the preview says what would be created, what is already there (kept as
//! it is: an import never overwrites a node), what is skipped and why, and where it
//! goes, and, from the store's own dry run of the import, what the maintenance pass
//! after it will archive. Only after a yes (or `--yes`) is it written: the nodes and
//! edges as one batch through the store ([`destination`]), all or nothing, one
//! maintenance pass and one save.

mod destination;
mod jsonl;
mod markdown;
mod text;

use destination::Destination;
pub use destination::DestinationError;
use kg_core::{BatchOutcome, Level};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

pub use kg_server::import::{MAX_IMPORT_BYTES, MAX_IMPORT_EDGES, MAX_IMPORT_NODES};
/// Problems listed when an input is refused; the rest are counted.
const PROBLEMS_SHOWN: usize = 20;

/// The formats `kg-memory import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The MCP memory server's memory.jsonl
    Jsonl,
    /// CLAUDE.md, MEMORY.md or another markdown file of bullets
    Markdown,
}

impl Format {
    fn describe(self) -> &'static str {
        match self {
            Format::Jsonl => "the MCP memory server's JSONL",
            Format::Markdown => "markdown bullets, as in CLAUDE.md or MEMORY.md",
        }
    }
}

/// `kg-memory import`'s command line.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The file: the MCP memory server's memory.jsonl, or a CLAUDE.md / MEMORY.md
    pub file: PathBuf,
    /// Import into the project graph of this folder (default for a markdown file in a
    /// project folder: that folder)
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub project: Option<PathBuf>,
    /// Import into the user graph (default for memory.jsonl and ~/.claude/CLAUDE.md)
    #[arg(long)]
    pub user: bool,
    /// The file's format; by default told by its name (.jsonl, .md) or first line
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Show what would be imported, and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Import without asking
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// A node an input file asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct NewNode {
    pub id: String,
    pub gist: String,
    pub notes: Vec<String>,
    /// The line the file has it on (1-based).
    pub line: usize,
    /// What the file calls it, when the id is not that name.
    pub renamed_from: Option<String>,
}

/// An edge an input file asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEdge {
    pub from: String,
    pub to: String,
    pub rel: String,
    pub line: usize,
    /// Ends that name no node of the file, as (name, id): the edge is made only if the
    /// graph already has those ids.
    pub outside: Vec<(String, String)>,
}

/// A line of the input that creates nothing, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skip {
    pub line: usize,
    pub reason: String,
}

/// What a file asks for, before the graph is consulted.
#[derive(Debug, Default)]
pub struct Parsed {
    pub nodes: Vec<NewNode>,
    pub edges: Vec<NewEdge>,
    pub skipped: Vec<Skip>,
    /// Things the file points at that are not read (linked topic files).
    pub notices: Vec<Skip>,
}

/// Something wrong with the input that stops the import.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub line: Option<usize>,
    pub message: String,
}

impl Problem {
    pub fn at(line: usize, message: String) -> Problem {
        Problem {
            line: Some(line),
            message,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// An input file that cannot be imported; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    // Not `source`: the cause is in the message, and an error chain would say it twice.
    #[error("cannot read {path}: {error}. Nothing was written.")]
    Read { path: String, error: std::io::Error },
    #[error(
        "{path} is {size} bytes; kg-memory import reads files up to {MAX_IMPORT_BYTES} bytes (4 MiB). Split it and import the parts that matter. Nothing was written."
    )]
    TooLarge { path: String, size: u64 },
    #[error(
        "{path} is not UTF-8 text: line {line} holds bytes that are not UTF-8. Save it as UTF-8 and try again. Nothing was written."
    )]
    NotUtf8 { path: String, line: usize },
    #[error("{path} is empty: there is nothing in it to import. Nothing was written.")]
    Empty { path: String },
    #[error("{path} cannot be imported; nothing was written.\n{}", list(problems))]
    Problems {
        path: String,
        problems: Vec<Problem>,
    },
}

/// Why `kg-memory import` stopped. A cause is a `source`, said after the message by
/// the binary.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file is refused (nothing was written).
    #[error(transparent)]
    Input(#[from] InputError),
    /// Where the import would go cannot be told or used.
    #[error("{0}")]
    Target(String),
    /// A project folder cannot be opened or resolved.
    #[error("{what}")]
    Folder {
        what: String,
        #[source]
        error: std::io::Error,
    },
    /// The graph could not be reached or read.
    #[error(transparent)]
    Destination(#[from] DestinationError),
    /// The store's dry run failed.
    #[error("the store's dry run of the import failed; nothing was written")]
    DryRun(#[source] DestinationError),
    /// No `--yes` and no terminal to ask on.
    #[error(
        "nothing was imported: pass --yes to import without the question (there is no terminal to ask on)"
    )]
    NoTerminal,
    /// The answer to the question could not be read.
    #[error("cannot read the answer")]
    Answer(#[source] std::io::Error),
    /// The write itself failed.
    #[error("nothing was imported")]
    NotImported(#[source] DestinationError),
}

fn list(problems: &[Problem]) -> String {
    let mut out = String::new();
    for p in problems.iter().take(PROBLEMS_SHOWN) {
        let _ = writeln!(out, "  {p}");
    }
    if problems.len() > PROBLEMS_SHOWN {
        let _ = writeln!(
            out,
            "  … and {} more problem(s)",
            problems.len() - PROBLEMS_SHOWN
        );
    }
    out.trim_end().to_string()
}

/// A file read whole and checked.
#[derive(Debug)]
pub struct Source {
    pub path: PathBuf,
    pub format: Format,
    pub parsed: Parsed,
}

/// Read `path` (refused over [`MAX_IMPORT_BYTES`] or when not UTF-8), tell its format
/// unless given, and parse it.
pub fn read_source(path: &Path, format: Option<Format>) -> Result<Source, InputError> {
    let shown = path.display().to_string();
    let read_error = |error| InputError::Read {
        path: shown.clone(),
        error,
    };
    // Opened as a stranger's file: a FIFO or a device (a link to /dev/zero) is refused
    // at once, rather than waited on or read until memory runs out.
    let (_, meta) = kg_core::open_regular(path).map_err(read_error)?;
    if meta.len() > MAX_IMPORT_BYTES {
        return Err(InputError::TooLarge {
            path: shown,
            size: meta.len(),
        });
    }
    // Read again up to the cap: the file may have grown since.
    let bytes =
        kg_core::read_regular(path, MAX_IMPORT_BYTES).map_err(|error| match error.kind() {
            std::io::ErrorKind::InvalidData => InputError::TooLarge {
                path: shown.clone(),
                size: MAX_IMPORT_BYTES + 1,
            },
            _ => read_error(error),
        })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let bad_at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..bad_at]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        InputError::NotUtf8 {
            path: shown.clone(),
            line,
        }
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Err(InputError::Empty { path: shown });
    }
    let format = format.unwrap_or_else(|| guess_format(path, text));
    let file_name = path
        .file_name()
        .map_or_else(|| shown.clone(), |n| n.to_string_lossy().into_owned());
    let parsed = match format {
        Format::Jsonl => jsonl::parse(text, &file_name),
        Format::Markdown => markdown::parse(text, &file_name),
    };
    let mut parsed = parsed.map_err(|problems| InputError::Problems {
        path: shown.clone(),
        problems,
    })?;
    let mut too_many = Vec::new();
    if parsed.nodes.len() > MAX_IMPORT_NODES {
        too_many.push(Problem {
            line: None,
            message: format!(
                "the file holds {} nodes; one import creates at most {MAX_IMPORT_NODES}. Split it and import the parts that matter",
                parsed.nodes.len()
            ),
        });
    }
    if parsed.edges.len() > MAX_IMPORT_EDGES {
        too_many.push(Problem {
            line: None,
            message: format!(
                "the file holds {} relations; one import creates at most {MAX_IMPORT_EDGES}. Split it and import the parts that matter",
                parsed.edges.len()
            ),
        });
    }
    if !too_many.is_empty() {
        return Err(InputError::Problems {
            path: shown,
            problems: too_many,
        });
    }
    parsed.skipped.sort_by_key(|s| s.line);
    Ok(Source {
        path: path.to_path_buf(),
        format,
        parsed,
    })
}

/// `.jsonl` / `.json` are the memory server's; `.md` / `.markdown` are markdown; any
/// other name goes by the first line that is not blank (`{` starts JSONL).
fn guess_format(path: &Path, text: &str) -> Format {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("jsonl" | "json" | "ndjson") => Format::Jsonl,
        Some("md" | "markdown") => Format::Markdown,
        _ => match text.lines().map(str::trim).find(|l| !l.is_empty()) {
            Some(first) if first.starts_with('{') => Format::Jsonl,
            _ => Format::Markdown,
        },
    }
}

/// The graph an import goes to, and why that one.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetGraph {
    pub level: Level,
    /// The resolved project folder of a project graph.
    pub project: Option<String>,
    pub why: String,
}

impl TargetGraph {
    /// "the user graph", "the project graph of /home/ana/src/billing".
    pub fn name(&self) -> String {
        match &self.project {
            Some(path) => format!("project graph of {path}"),
            None => "user graph".to_string(),
        }
    }
}

/// Which graph: `--project` or `--user` when given; otherwise the user graph for the
/// memory server's file (one memory for everything, as the user graph is) and for
/// files in `~/.claude` (personal instructions for every project), and the folder's
/// project graph for a markdown file in a project folder (its parent for
/// `.claude/CLAUDE.md`). Auto memory under `~/.claude/projects/` belongs to a project
/// whose folder its path does not tell reliably, so it must be named.
pub fn choose_target(
    args: &ImportArgs,
    file: &Path,
    format: Format,
    home: &Path,
) -> Result<TargetGraph, ImportError> {
    let project = |folder: &Path, why: String| -> Result<TargetGraph, ImportError> {
        let resolved = std::fs::canonicalize(folder).map_err(|error| ImportError::Folder {
            what: format!("the project folder {} cannot be opened", folder.display()),
            error,
        })?;
        if !resolved.is_dir() {
            return Err(ImportError::Target(format!(
                "{} is not a folder; --project takes the project's folder",
                resolved.display()
            )));
        }
        Ok(TargetGraph {
            level: Level::Project,
            project: Some(resolved.to_string_lossy().into_owned()),
            why,
        })
    };
    let user = |why: &str| TargetGraph {
        level: Level::User,
        project: None,
        why: why.to_string(),
    };
    if let Some(folder) = &args.project {
        return project(folder, "as --project says".into());
    }
    if args.user {
        return Ok(user("as --user says"));
    }
    if format == Format::Jsonl {
        return Ok(user(
            "the memory server keeps one memory for everything; --project DIR imports it into a project instead",
        ));
    }
    let file = std::fs::canonicalize(file).map_err(|error| ImportError::Folder {
        what: format!("cannot resolve {}", file.display()),
        error,
    })?;
    let claude = std::fs::canonicalize(home.join(".claude")).unwrap_or(home.join(".claude"));
    if file.starts_with(claude.join("projects")) {
        return Err(ImportError::Target(format!(
            "{} is Claude Code's auto memory of one of your projects, and its path does not tell which folder that is. Say where it goes: --project <the project's folder>, or --user. Nothing was written.",
            file.display()
        )));
    }
    if file.starts_with(&claude) {
        return Ok(user(
            "files in ~/.claude hold your instructions for every project; --project DIR imports it into a project instead",
        ));
    }
    let folder = file.parent().unwrap_or(Path::new("/"));
    let folder = if folder.file_name().is_some_and(|n| n == ".claude") {
        folder.parent().unwrap_or(folder)
    } else {
        folder
    };
    project(
        folder,
        "the file lies in that folder; --user imports it into the user graph, --project DIR into another project".into(),
    )
}

/// What the target graph holds, as far as an import cares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphFacts {
    pub node_ids: HashSet<String>,
    pub edges: HashSet<(String, String, String)>,
    /// Rendered characters of the level's active part, and its budget.
    pub chars: usize,
    pub budget: usize,
    /// Active, archived, orphaned nodes.
    pub counts: (usize, usize, usize),
}

/// What an import will do to one graph.
#[derive(Debug, Default)]
pub struct Plan {
    pub create: Vec<NewNode>,
    /// Nodes whose id the graph already has: kept as they are.
    pub existing: Vec<NewNode>,
    pub edges: Vec<NewEdge>,
    /// Edges the graph already has.
    pub edges_present: usize,
    pub skipped: Vec<Skip>,
    pub notices: Vec<Skip>,
}

impl Plan {
    pub fn writes(&self) -> usize {
        self.create.len() + self.edges.len()
    }
}

/// Match what the file asks for against what the graph holds.
pub fn plan(parsed: Parsed, facts: &GraphFacts, target: &TargetGraph) -> Plan {
    let mut plan = Plan {
        skipped: parsed.skipped,
        notices: parsed.notices,
        ..Plan::default()
    };
    for node in parsed.nodes {
        if facts.node_ids.contains(&node.id) {
            plan.existing.push(node);
        } else {
            plan.create.push(node);
        }
    }
    for edge in parsed.edges {
        let missing: Vec<&(String, String)> = edge
            .outside
            .iter()
            .filter(|(_, id)| !facts.node_ids.contains(id))
            .collect();
        if !missing.is_empty() {
            let names: Vec<String> = missing
                .iter()
                .map(|(name, id)| format!("{} (id {id})", text::quoted(name)))
                .collect();
            plan.skipped.push(Skip {
                line: edge.line,
                reason: format!(
                    "the relation {} --{}--> {} names {}, neither an entity of this file nor a node of the {}",
                    edge.from,
                    edge.rel,
                    edge.to,
                    names.join(" and "),
                    target.name()
                ),
            });
            continue;
        }
        if facts
            .edges
            .contains(&(edge.from.clone(), edge.to.clone(), edge.rel.clone()))
        {
            plan.edges_present += 1;
        } else {
            plan.edges.push(edge);
        }
    }
    plan.skipped.sort_by_key(|s| s.line);
    plan
}

/// `text` cut to `max` characters with `…`, for one preview line.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let head: String = text.chars().take(max - 1).collect();
        format!("{head}…")
    }
}

/// Characters of a gist shown per preview line.
const PREVIEW_GIST: usize = 90;

/// The preview: where it goes, what is created, kept, skipped, and what the budget
/// means for it.
pub fn preview(
    (path, format): (&Path, Format),
    target: &TargetGraph,
    route: &str,
    facts: &GraphFacts,
    plan: &Plan,
    dry_run: &BatchOutcome,
    grace_days: f64,
) -> String {
    let mut out = String::new();
    let graph = target.name();
    let _ = writeln!(out, "Import {} ({})", path.display(), format.describe());
    let _ = writeln!(out, "into the {graph} ({}),", target.why);
    let _ = writeln!(out, "through {route}.");
    let _ = writeln!(out);
    let _ = writeln!(out, "Nodes to create: {}", plan.create.len());
    for n in &plan.create {
        let _ = write!(out, "  + {}: {}", n.id, clip(&n.gist, PREVIEW_GIST));
        match &n.renamed_from {
            Some(name) => {
                let _ = writeln!(out, "   [line {}, named {}]", n.line, text::quoted(name));
            }
            None => {
                let _ = writeln!(out, "   [line {}]", n.line);
            }
        }
    }
    let _ = writeln!(out, "Edges to create: {}", plan.edges.len());
    for e in &plan.edges {
        let _ = writeln!(
            out,
            "  + {} --{}--> {}   [line {}]",
            e.from, e.rel, e.to, e.line
        );
    }
    if !plan.existing.is_empty() {
        let _ = writeln!(
            out,
            "Already in the {graph}, kept as they are (their gists and notes are not changed; edges to them are still made): {}",
            plan.existing.len()
        );
        for n in &plan.existing {
            let _ = writeln!(out, "  = {}   [line {}]", n.id, n.line);
        }
    }
    if plan.edges_present > 0 {
        let _ = writeln!(
            out,
            "Edges already in the {graph}, left as they are: {}",
            plan.edges_present
        );
    }
    if !plan.skipped.is_empty() {
        let _ = writeln!(out, "Skipped: {}", plan.skipped.len());
        for s in &plan.skipped {
            let _ = writeln!(out, "  - line {}: {}", s.line, s.reason);
        }
    }
    if !plan.notices.is_empty() {
        let _ = writeln!(out, "Not followed:");
        for s in &plan.notices {
            let _ = writeln!(out, "  ! line {}: {}", s.line, s.reason);
        }
    }
    let _ = writeln!(out);
    let (active, archived, orphaned) = facts.counts;
    let _ = writeln!(
        out,
        "The {graph} now holds {active} active, {archived} archived and {orphaned} orphaned node(s); its active part renders {} of its {} characters.",
        facts.chars, facts.budget
    );
    if plan.writes() > 0 {
        let _ = writeln!(out, "{}", after_import(&graph, dry_run, grace_days));
    }
    out
}

/// What the import leaves, from the store's dry run: the level's size and tiers, and
/// what the maintenance pass after it archives, existing nodes first.
fn after_import(graph: &str, dry_run: &BatchOutcome, grace_days: f64) -> String {
    let (active, archived, orphaned) = dry_run.counts;
    let mut out = format!(
        "After the import it would hold {active} active, {archived} archived and {orphaned} orphaned node(s), its active part rendering {} of {} characters.",
        dry_run.chars_after, dry_run.budget
    );
    let existing = dry_run.archived_existing.len();
    let new = dry_run.rebalanced.archived.len() - existing;
    if existing + new == 0 {
        out.push_str(" Nothing would be archived to make room.");
        return out;
    }
    let _ = write!(
        out,
        " To keep it within its budget, the maintenance pass after the import would archive {existing} node(s) the {graph} holds now"
    );
    if new > 0 {
        let _ = write!(out, " and {new} of the new ones");
    }
    if existing > 0 {
        let shown: Vec<&str> = dry_run
            .archived_existing
            .iter()
            .take(ARCHIVED_SHOWN)
            .map(String::as_str)
            .collect();
        let more = existing - shown.len();
        let _ = write!(out, " ({}", shown.join(", "));
        if more > 0 {
            let _ = write!(out, " and {more} more");
        }
        out.push(')');
    }
    let _ = write!(
        out,
        ": its lowest-scored nodes, nodes newer than {grace_days} days only beyond their share of the budget, nodes read this week last. Archived nodes stay searchable and come back when read; when the archive overflows too, the least connected are orphaned (hidden from reads, still found by search)."
    );
    out
}

/// Existing nodes the preview names among those the import would archive.
const ARCHIVED_SHOWN: usize = 10;

/// Ask on the terminal; anything but yes is no.
pub fn confirm(question: &str, say: fn(&str)) -> std::io::Result<bool> {
    say(question);
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(is_yes(&answer))
}

fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_lowercase().as_str(), "y" | "yes")
}

/// `kg-memory import`: read and check the file, preview, ask, write, report.
pub async fn run(
    args: ImportArgs,
    settings: &kg_server::Settings,
    say: fn(&str),
) -> Result<(), ImportError> {
    let source = read_source(&args.file, args.format)?;
    let target = choose_target(&args, &args.file, source.format, &settings.home)?;
    let destination = Destination::open(settings).await?;
    let facts = destination.facts(&target).await?;
    let route = destination.describe();
    let plan = plan(source.parsed, &facts, &target);
    // The store's own dry run of this very batch: what the preview says maintenance
    // will archive is what the import would do.
    let dry_run = if plan.writes() > 0 {
        destination
            .import(&target, &plan.create, &plan.edges, true)
            .await
            .map_err(ImportError::DryRun)?
    } else {
        BatchOutcome::default()
    };
    say(&preview(
        (&source.path, source.format),
        &target,
        &route,
        &facts,
        &plan,
        &dry_run,
        settings.grace_days,
    ));
    if plan.writes() == 0 {
        say("\nNothing to import: everything in the file is already in the graph or skipped.\n");
        return Ok(());
    }
    if args.dry_run {
        say("\nDry run: nothing was written.\n");
        return Ok(());
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(ImportError::NoTerminal);
        }
        let question = format!(
            "\nCreate {} node(s) and {} edge(s) in the {}? [y/N] ",
            plan.create.len(),
            plan.edges.len(),
            target.name()
        );
        if !confirm(&question, say).map_err(ImportError::Answer)? {
            say("Nothing was imported.\n");
            return Ok(());
        }
    }
    // One batch: the store keeps what the graph gained since the preview (an import
    // never overwrites) and writes the rest, or nothing.
    let result = destination
        .import(&target, &plan.create, &plan.edges, false)
        .await;
    destination.finish();
    let done = result.map_err(ImportError::NotImported)?;
    let (active, archived, orphaned) = done.counts;
    let mut report = format!(
        "\nImported {} node(s) and {} edge(s) into the {}. It now holds {active} active, {archived} archived and {orphaned} orphaned node(s); its active part renders {} of {} characters.\n",
        done.created.len(),
        done.edges_created,
        target.name(),
        done.chars_after,
        done.budget
    );
    let meanwhile = done.kept.len() + done.edges_kept;
    if meanwhile > 0 {
        let _ = writeln!(
            report,
            "{meanwhile} node(s) or edge(s) were written by someone else after the preview; they were kept as they are."
        );
    }
    if !done.archived_existing.is_empty() {
        let _ = writeln!(
            report,
            "Maintenance archived {} node(s) the graph held before, to keep it within its budget.",
            done.archived_existing.len()
        );
    }
    say(&report);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> TargetGraph {
        TargetGraph {
            level: Level::User,
            project: None,
            why: "test".into(),
        }
    }

    #[test]
    fn existing_nodes_are_kept_and_edges_need_known_ends() {
        let parsed = jsonl::parse(
            concat!(
                "{\"type\":\"entity\",\"name\":\"alpha\",\"observations\":[\"A\"]}\n",
                "{\"type\":\"entity\",\"name\":\"beta\",\"observations\":[\"B\"]}\n",
                "{\"type\":\"relation\",\"from\":\"alpha\",\"to\":\"beta\",\"relationType\":\"uses\"}\n",
                "{\"type\":\"relation\",\"from\":\"alpha\",\"to\":\"Gamma\",\"relationType\":\"uses\"}\n",
                "{\"type\":\"relation\",\"from\":\"alpha\",\"to\":\"Delta\",\"relationType\":\"uses\"}\n",
            ),
            "m.jsonl",
        )
        .expect("valid");
        let facts = GraphFacts {
            node_ids: ["beta", "gamma"].map(String::from).into(),
            ..GraphFacts::default()
        };
        let plan = plan(parsed, &facts, &target());
        assert_eq!(
            plan.create.iter().map(|n| &n.id).collect::<Vec<_>>(),
            ["alpha"]
        );
        assert_eq!(
            plan.existing.iter().map(|n| &n.id).collect::<Vec<_>>(),
            ["beta"]
        );
        let edges: Vec<_> = plan.edges.iter().map(|e| e.to.as_str()).collect();
        assert_eq!(edges, ["beta", "gamma"]);
        assert_eq!(plan.skipped.len(), 1);
        assert!(
            plan.skipped[0].reason.contains("\"Delta\" (id delta)"),
            "{}",
            plan.skipped[0].reason
        );
    }

    #[test]
    fn only_yes_is_yes() {
        for yes in ["y", "Y\n", " yes "] {
            assert!(is_yes(yes), "{yes}");
        }
        for no in ["", "\n", "n", "no", "yep"] {
            assert!(!is_yes(no), "{no}");
        }
    }

    #[test]
    fn formats_are_told_by_name_then_by_first_line() {
        assert_eq!(
            guess_format(Path::new("memory.jsonl"), "# x"),
            Format::Jsonl
        );
        assert_eq!(guess_format(Path::new("CLAUDE.md"), "{"), Format::Markdown);
        assert_eq!(
            guess_format(Path::new("memory"), "\n {\"type\":1}"),
            Format::Jsonl
        );
        assert_eq!(guess_format(Path::new("notes"), "- a"), Format::Markdown);
    }
}
