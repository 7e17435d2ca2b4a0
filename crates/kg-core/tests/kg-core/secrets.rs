//! The credential scan against a labelled set (`secrets/labelled.tsv`): real
//! credential formats with made-up values, and look-alikes that are no secret (commit
//! hashes, UUIDs, digests, placeholders, lessons that talk about keys). Its precision
//! and recall are reported in BENCHMARKS.md; this test keeps them from falling.

use kg_core::secrets::find;

const LABELLED: &str = include_str!("secrets/labelled.tsv");

#[test]
fn the_credential_scan_finds_real_formats_and_lets_look_alikes_pass() {
    let (mut tp, mut fp, mut fn_, mut tn) = (0usize, 0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    for line in LABELLED
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut parts = line.splitn(3, '\t');
        let (label, kind, text) = (
            parts.next().expect("label"),
            parts.next().expect("kind"),
            parts.next().expect("text"),
        );
        let found = find(text, &|_| false);
        match (label, &found) {
            ("secret", Some(_)) => tp += 1,
            ("secret", None) => {
                fn_ += 1;
                misses.push(format!("missed {kind}: {text}"));
            }
            ("plain", Some(f)) => {
                fp += 1;
                misses.push(format!("flagged {kind} as {}: {text}", f.rule));
            }
            ("plain", None) => tn += 1,
            _ => panic!("bad label in: {line}"),
        }
    }
    let total = tp + fp + fn_ + tn;
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    eprintln!(
        "{total} strings: {} secrets, {} plain; precision {precision:.3}, recall {recall:.3} (tp {tp}, fp {fp}, fn {fn_}, tn {tn})",
        tp + fn_,
        fp + tn
    );
    for miss in &misses {
        eprintln!("  {miss}");
    }
    assert!(total >= 200, "{total}");
    assert!(precision >= 0.95, "precision {precision:.3}");
    assert!(recall >= 0.90, "recall {recall:.3}");
}
