//! The evaluation as a person reads it: a headline table per memory with the
//! policies side by side and the targets, per-kind tables, and with
//! `verbose` every prompt and query that went wrong.

use crate::metrics::{RecallStats, SearchStats};
use crate::run::{PromptRun, SearchRun};
use crate::{MemoryReport, PolicyReport, Quality, Report};
use std::fmt::Write as _;
use std::path::Path;

/// Longest prompt text shown in a verbose line.
const PROMPT_CHARS: usize = 110;

fn rate(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_string(), |v| format!("{v:.2}"))
}

fn millis(value: Option<f64>) -> String {
    match value {
        None => "–".to_string(),
        Some(v) if v < 0.1 => format!("{v:.3} ms"),
        Some(v) => format!("{v:.2} ms"),
    }
}

/// Thousands separated by commas, as BENCHMARKS.md writes them.
fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn cut(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let kept: String = one_line.chars().take(max - 1).collect();
    format!("{kept}…")
}

/// The whole report as text.
pub fn render(report: &Report, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "KG Memory recall evaluation (issue 21)");
    let _ = writeln!(
        out,
        "data {} · clock frozen at now_ts {} · {}{}",
        shown_path(&report.data_dir),
        report.now_ts,
        if report.tick {
            "one maintenance tick after loading"
        } else {
            "no maintenance tick (graphs as committed)"
        },
        report
            .limit
            .map(|n| format!(" · FAST MODE: first {n} prompts and queries of each kind"))
            .unwrap_or_default(),
    );
    let _ = writeln!(
        out,
        "Each prompt runs in a fresh session (nothing seen). on-topic = prompts with labels \
         (every kind but\noff-topic and the unlabelled acknowledgements of `short`). \
         silence = no recall block (the full-read\nnudge and reminders are fixed wording, \
         not memory). precision counts hit and connection lines.\nDefinitions: \
         tests/recall-eval/README.md, \"Running the evaluation\"."
    );
    for memory in &report.memories {
        render_memory(&mut out, memory, verbose);
    }
    // Columns are padded to a width; padding at a line's end is noise in a diff.
    let mut trimmed: String = out.lines().map(|l| format!("{}\n", l.trim_end())).collect();
    if trimmed.is_empty() {
        trimmed.push('\n');
    }
    trimmed
}

/// The data folder as a person would type it: relative to the working directory when
/// it lies inside it.
fn shown_path(path: &str) -> String {
    let relative = std::env::current_dir().ok().and_then(|cwd| {
        Path::new(path)
            .strip_prefix(cwd)
            .ok()
            .map(Path::to_path_buf)
    });
    relative.map_or_else(|| path.to_string(), |p| p.display().to_string())
}

/// One line of the headline table: a label, one value per policy, the target.
fn row(out: &mut String, label: &str, values: &[String], target: &str) {
    let mut line = format!("  {label:<48}");
    for v in values {
        let _ = write!(line, "{v:>11}");
    }
    let _ = write!(line, "   {target}");
    let _ = writeln!(out, "{}", line.trim_end());
}

fn render_memory(out: &mut String, memory: &MemoryReport, verbose: bool) {
    let policies = &memory.policies;
    let _ = writeln!(
        out,
        "\n━━ {} (project {}) · {} prompts · {} kg_search queries ━━",
        memory.name, memory.slug, memory.prompts, memory.searches
    );
    for p in policies {
        let l = &p.load;
        let tick = if l.ticked {
            format!(
                "active {} → {} after the tick ({} → {} chars, budget {})",
                l.active_before,
                l.active_after,
                count(l.chars_before),
                count(l.chars_after),
                count(l.budget)
            )
        } else {
            format!(
                "active {} ({} chars, budget {}), no tick",
                l.active_before,
                count(l.chars_before),
                count(l.budget)
            )
        };
        let _ = writeln!(
            out,
            "{:<10} project graph {} nodes, {tick}; user graph {} nodes",
            p.policy, l.project_nodes, l.user_nodes
        );
    }
    let _ = writeln!(out);
    let header: Vec<String> = policies.iter().map(|p| p.policy.clone()).collect();
    row(out, "", &header, "target");
    let q = |f: &dyn Fn(&Quality) -> Option<f64>| -> Vec<String> {
        policies.iter().map(|p| rate(f(&p.quality))).collect()
    };
    let after = |kind: &'static str, f: fn(&RecallStats) -> Option<f64>| {
        move |quality: &Quality| quality.after(kind).and_then(f)
    };
    let first = |kind: &'static str, f: fn(&RecallStats) -> Option<f64>| {
        move |quality: &Quality| quality.first(kind).and_then(f)
    };
    let search = |f: fn(&SearchStats) -> Option<f64>| {
        move |quality: &Quality| quality.searches("all").and_then(f)
    };
    let _ = writeln!(out, "  after the full read");
    row(
        out,
        "  on-topic injection rate",
        &q(&after("all", |s| s.injection_rate)),
        "≥ 0.90",
    );
    row(
        out,
        "  precision of injected ids (hits + connections)",
        &q(&after("all", |s| s.precision)),
        "≥ 0.80",
    );
    row(
        out,
        "    hit lines only",
        &q(&after("all", |s| s.precision_hits)),
        "",
    );
    row(
        out,
        "    ids per injection",
        &q(&after("all", |s| s.ids_per_injection)),
        "",
    );
    row(
        out,
        "  silence on off-topic prompts",
        &q(&after("off-topic", |s| s.silence_rate)),
        "≥ 0.98",
    );
    row(
        out,
        "    all unlabelled prompts (off-topic + acks)",
        &q(&after("all", |s| s.silence_rate)),
        "",
    );
    row(
        out,
        "    nothing said at all (no reminder either)",
        &q(&after("off-topic", |s| s.strict_silence_rate)),
        "",
    );
    row(
        out,
        "  recall@5 (on-topic)",
        &q(&after("all", |s| s.recall_at_5)),
        "≥ 0.70",
    );
    row(out, "  MRR (on-topic)", &q(&after("all", |s| s.mrr)), "");
    row(
        out,
        "  paraphrase recall@5",
        &q(&after("paraphrase", |s| s.recall_at_5)),
        "≥ 0.50",
    );
    let _ = writeln!(out, "  first prompt of a session, before the full read");
    row(
        out,
        "  on-topic injection rate",
        &q(&first("all", |s| s.injection_rate)),
        "",
    );
    row(
        out,
        "  precision of injected ids",
        &q(&first("all", |s| s.precision)),
        "",
    );
    row(
        out,
        "  recall@5 (on-topic)",
        &q(&first("all", |s| s.recall_at_5)),
        "",
    );
    row(
        out,
        "  silence on off-topic prompts",
        &q(&first("off-topic", |s| s.silence_rate)),
        "",
    );
    let _ = writeln!(out, "  kg_search");
    row(out, "  hit@1", &q(&search(|s| s.hit_at_1)), "");
    row(out, "  hit@5", &q(&search(|s| s.hit_at_5)), "");
    row(out, "  MRR", &q(&search(|s| s.mrr)), "≥ 0.85");
    row(
        out,
        "  first label ranked first",
        &q(&search(|s| s.ideal_at_1)),
        "",
    );
    let _ = writeln!(out, "  median latency, in-process");
    let lat = |f: &dyn Fn(&PolicyReport) -> Option<f64>| -> Vec<String> {
        policies.iter().map(|p| millis(f(p))).collect()
    };
    row(
        out,
        "  prompt recall (prompt_reply)",
        &lat(&|p| p.latency.prompt_recall_ms),
        "",
    );
    row(out, "  kg_search", &lat(&|p| p.latency.kg_search_ms), "");

    render_kinds(out, policies);
    render_search_kinds(out, policies);
    if verbose {
        render_misses(out, memory);
    }
}

/// Per kind after the full read, the policies side by side.
fn render_kinds(out: &mut String, policies: &[PolicyReport]) {
    let Some(first) = policies.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "\n  per kind, after the full read (lab = labelled prompts, unl = unlabelled; \
         inj, prec, R@5, MRR over labelled; sil over unlabelled)"
    );
    let _ = write!(out, "  {:<15}{:>4}{:>4}", "kind", "lab", "unl");
    for p in policies {
        let _ = write!(out, " │ {:<29}", p.policy);
    }
    let _ = writeln!(out);
    let _ = write!(out, "  {:<15}{:>4}{:>4}", "", "", "");
    for _ in policies {
        let _ = write!(
            out,
            " │ {:>5}{:>6}{:>6}{:>6}{:>6}",
            "inj", "prec", "R@5", "MRR", "sil"
        );
    }
    let _ = writeln!(out);
    for (i, row) in first.quality.after_full_read.iter().enumerate() {
        let _ = write!(
            out,
            "  {:<15}{:>4}{:>4}",
            row.kind, row.stats.labelled, row.stats.unlabelled
        );
        for p in policies {
            match p.quality.after_full_read.get(i) {
                Some(r) => {
                    let s = &r.stats;
                    let _ = write!(
                        out,
                        " │ {:>5}{:>6}{:>6}{:>6}{:>6}",
                        rate(s.injection_rate),
                        rate(s.precision),
                        rate(s.recall_at_5),
                        rate(s.mrr),
                        rate(s.silence_rate)
                    );
                }
                None => {
                    let _ = write!(out, " │ {:>29}", "");
                }
            }
        }
        let _ = writeln!(out);
    }
}

/// `kg_search` per query kind, the policies side by side.
fn render_search_kinds(out: &mut String, policies: &[PolicyReport]) {
    let Some(first) = policies.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "\n  kg_search per kind (1st@1 = the first label ranked first)"
    );
    let _ = write!(out, "  {:<15}{:>8}", "kind", "queries");
    for p in policies {
        let _ = write!(out, " │ {:<24}", p.policy);
    }
    let _ = writeln!(out);
    let _ = write!(out, "  {:<15}{:>8}", "", "");
    for _ in policies {
        let _ = write!(
            out,
            " │ {:>6}{:>6}{:>6}{:>6}",
            "hit@1", "hit@5", "MRR", "1st@1"
        );
    }
    let _ = writeln!(out);
    for (i, row) in first.quality.search.iter().enumerate() {
        let _ = write!(out, "  {:<15}{:>8}", row.kind, row.stats.queries);
        for p in policies {
            if let Some(r) = p.quality.search.get(i) {
                let s = &r.stats;
                let _ = write!(
                    out,
                    " │ {:>6}{:>6}{:>6}{:>6}",
                    rate(s.hit_at_1),
                    rate(s.hit_at_5),
                    rate(s.mrr),
                    rate(s.ideal_at_1)
                );
            }
        }
        let _ = writeln!(out);
    }
}

/// Whether a prompt's outcome falls short: a labelled prompt that missed a label
/// within the first 5 or got an unlabelled id, an unlabelled prompt that got recall.
fn is_miss(run: &PromptRun) -> bool {
    if run.relevant.is_empty() {
        return run.said.injected();
    }
    let ids = run.injected();
    ids.iter().any(|id| !run.relevant.iter().any(|r| r == id))
        || run
            .relevant
            .iter()
            .any(|r| !ids.iter().take(5).any(|id| id == r))
}

fn marked(ids: &[String], relevant: &[String]) -> String {
    ids.iter()
        .map(|id| {
            let mark = if relevant.contains(id) { '✓' } else { '✗' };
            format!("{mark} {id}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn render_prompt_miss(out: &mut String, run: &PromptRun) {
    let _ = writeln!(
        out,
        "  {:<8} {:<15} {:?}",
        run.id,
        run.kind,
        cut(&run.prompt, PROMPT_CHARS)
    );
    let labels = if run.relevant.is_empty() {
        "(none: silence is right)".to_string()
    } else {
        run.relevant.join(", ")
    };
    let _ = writeln!(out, "      labels    {labels}");
    if run.said.injected() {
        let _ = write!(out, "      injected  {}", marked(&run.hits, &run.relevant));
        if !run.connectors.is_empty() {
            let _ = write!(
                out,
                "  │ connections {}",
                marked(&run.connectors, &run.relevant)
            );
        }
        let _ = writeln!(out);
    } else {
        let _ = writeln!(out, "      injected  nothing ({:?})", run.said);
    }
}

fn render_search_miss(out: &mut String, run: &SearchRun) {
    let rank = run
        .ranked
        .iter()
        .position(|id| run.relevant.first() == Some(id))
        .map_or_else(|| "not ranked".to_string(), |i| format!("rank {}", i + 1));
    let _ = writeln!(
        out,
        "  {:<8} {:<11} {:?} — first label {} at {rank}",
        run.id,
        run.kind,
        run.query,
        run.relevant.first().map_or("?", String::as_str)
    );
    let top: Vec<String> = run.ranked.iter().take(5).cloned().collect();
    let _ = writeln!(
        out,
        "      ranked    {}",
        if top.is_empty() {
            "nothing".to_string()
        } else {
            marked(&top, &run.relevant)
        }
    );
}

/// Every prompt and query that went wrong, per policy; a policy whose outcomes equal
/// the previous one's says so instead of repeating them.
fn render_misses(out: &mut String, memory: &MemoryReport) {
    let mut previous: Option<&PolicyReport> = None;
    for p in &memory.policies {
        let Some(runs) = &p.runs else { continue };
        let same_as = previous.and_then(|prev| {
            let prev_runs = prev.runs.as_ref()?;
            let prompts_same = prev_runs.after_full_read.len() == runs.after_full_read.len()
                && prev_runs
                    .after_full_read
                    .iter()
                    .zip(&runs.after_full_read)
                    .all(|(a, b)| a.outcome() == b.outcome());
            let searches_same = prev_runs.searches.len() == runs.searches.len()
                && prev_runs
                    .searches
                    .iter()
                    .zip(&runs.searches)
                    .all(|(a, b)| a.ranked == b.ranked);
            (prompts_same && searches_same).then_some(prev.policy.as_str())
        });
        previous = Some(p);
        let misses: Vec<&PromptRun> = runs.after_full_read.iter().filter(|r| is_miss(r)).collect();
        let _ = writeln!(
            out,
            "\n  ── {} · {} · prompts that fell short after the full read: {} of {} \
             (✓ labelled, ✗ not labelled)",
            memory.name,
            p.policy,
            misses.len(),
            runs.after_full_read.len()
        );
        if let Some(prev) = same_as {
            let _ = writeln!(
                out,
                "  every prompt and query came out exactly as under {prev}"
            );
            continue;
        }
        for run in misses {
            render_prompt_miss(out, run);
        }
        let search_misses: Vec<&SearchRun> = runs
            .searches
            .iter()
            .filter(|r| r.ranked.first() != r.relevant.first())
            .collect();
        let _ = writeln!(
            out,
            "\n  ── {} · {} · kg_search queries whose first label is not ranked first: {} of {}",
            memory.name,
            p.policy,
            search_misses.len(),
            runs.searches.len()
        );
        for run in search_misses {
            render_search_miss(out, run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_like_the_benchmarks_file() {
        assert_eq!(count(17_500), "17,500");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(rate(None), "–");
        assert_eq!(rate(Some(0.8949)), "0.89");
        assert_eq!(millis(Some(0.0421)), "0.042 ms");
        assert_eq!(cut("abcdef", 4), "abc…");
    }
}
