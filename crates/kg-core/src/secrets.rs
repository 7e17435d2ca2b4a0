//! Credentials never enter the memory: a gist, note, touch or edge note that holds an
//! API key, a token, a private key or a password is refused on every write (tools,
//! REST, the graph view, import) and held back when it arrives by sync, since the
//! memory is read by every later session and synced to every remote.
//!
//! The rules are gitleaks' (`secrets/gitleaks.toml`, its default configuration,
//! MIT-licensed: `secrets/GITLEAKS-LICENSE`), kept as they are and read in gitleaks'
//! own way: a rule runs only when one of its keywords is in the text (one
//! Aho-Corasick pass over all keywords), its regex finds the candidate, its secret
//! must be random enough (Shannon entropy), and its allowlists and the global one
//! (placeholders, stopwords) let the harmless look-alikes through. A few shapes that
//! an agent pastes and gitleaks leaves to other tools (a password in a URL or in plain
//! words, a private key block cut short) are ours, in the same format
//! (`secrets/ours.toml`). Regexes compile the first time a text needs them.

use aho_corasick::AhoCorasick;
use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use std::sync::OnceLock;

const GITLEAKS: &str = include_str!("secrets/gitleaks.toml");
const OURS: &str = include_str!("secrets/ours.toml");

/// A credential found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule that found it (`github-pat`, `aws-access-token`, …).
    pub rule: String,
    /// What it is, in words ("GitHub Personal Access Token").
    pub kind: String,
    /// A short digest of the secret, by which a person may allow this one string as
    /// no secret (it does not repeat the secret).
    pub fingerprint: String,
}

/// The first credential in `text`, if any; `allowed` says which fingerprints a person
/// has allowed as no secret.
pub fn find(text: &str, allowed: &dyn Fn(&str) -> bool) -> Option<Finding> {
    scanner().find(text, allowed)
}

/// The digest a finding of `secret` carries (64-bit FNV-1a, as hex).
pub fn fingerprint(secret: &str) -> String {
    let hash = secret.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    allowlist: Option<AllowlistEntry>,
    #[serde(default)]
    rules: Vec<RuleEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleEntry {
    id: String,
    #[serde(default)]
    description: String,
    regex: Option<String>,
    #[serde(default)]
    secret_group: usize,
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    allowlists: Vec<AllowlistEntry>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AllowlistEntry {
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    regex_target: Option<String>,
    #[serde(default)]
    paths: Vec<String>,
    condition: Option<String>,
}

/// What an allowlist's regexes look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

struct Allowlist {
    target: Target,
    regexes: Vec<Regex>,
    stopwords: Vec<String>,
}

impl Allowlist {
    /// `None` for an allowlist that cannot apply to text outside files (one that
    /// needs a path as well).
    fn of(entry: AllowlistEntry) -> Option<Allowlist> {
        let and = entry
            .condition
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case("and"));
        if and && !entry.paths.is_empty() {
            return None;
        }
        Some(Allowlist {
            target: match entry.regex_target.as_deref() {
                Some("match") => Target::Match,
                Some("line") => Target::Line,
                _ => Target::Secret,
            },
            regexes: entry.regexes.iter().filter_map(|r| compile(r)).collect(),
            stopwords: entry
                .stopwords
                .into_iter()
                .map(|s| s.to_lowercase())
                .collect(),
        })
    }

    fn allows(&self, secret: &str, found: &str, line: &str) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => found,
            Target::Line => line,
        };
        if self.regexes.iter().any(|r| r.is_match(target)) {
            return true;
        }
        if self.stopwords.is_empty() {
            return false;
        }
        let lower = secret.to_lowercase();
        self.stopwords
            .iter()
            .any(|word| lower.contains(word.as_str()))
    }
}

struct Rule {
    id: String,
    kind: String,
    pattern: String,
    regex: OnceLock<Option<Regex>>,
    secret_group: usize,
    entropy: Option<f64>,
    allowlists: Vec<Allowlist>,
}

impl Rule {
    fn regex(&self) -> Option<&Regex> {
        self.regex.get_or_init(|| compile(&self.pattern)).as_ref()
    }

    /// The first credential this rule finds in `text`.
    fn find(
        &self,
        text: &str,
        global: &Allowlist,
        allowed: &dyn Fn(&str) -> bool,
    ) -> Option<Finding> {
        let regex = self.regex()?;
        for caps in regex.captures_iter(text) {
            let found = caps.get(0).map_or("", |m| m.as_str());
            let secret = if self.secret_group > 0 {
                caps.get(self.secret_group).map(|m| m.as_str())
            } else {
                caps.iter()
                    .skip(1)
                    .flatten()
                    .map(|m| m.as_str())
                    .find(|s| !s.is_empty())
            }
            .unwrap_or(found);
            if secret.is_empty() {
                continue;
            }
            if self
                .entropy
                .is_some_and(|least| shannon_entropy(secret) < least)
            {
                continue;
            }
            // gitleaks' rule for its generic rules: a secret holds a digit.
            if self.id.starts_with("generic") && !secret.chars().any(|c| c.is_ascii_digit()) {
                continue;
            }
            if global.allows(secret, found, text)
                || self
                    .allowlists
                    .iter()
                    .any(|a| a.allows(secret, found, text))
            {
                continue;
            }
            let fingerprint = fingerprint(secret);
            if allowed(&fingerprint) {
                continue;
            }
            return Some(Finding {
                rule: self.id.clone(),
                kind: self.kind.clone(),
                fingerprint,
            });
        }
        None
    }
}

struct Scanner {
    rules: Vec<Rule>,
    keywords: Option<AhoCorasick>,
    /// For each keyword (by pattern index), the rules it wakes.
    woken: Vec<Vec<usize>>,
    /// Rules without keywords: they run on every text.
    always: Vec<usize>,
    global: Allowlist,
}

impl Scanner {
    fn find(&self, text: &str, allowed: &dyn Fn(&str) -> bool) -> Option<Finding> {
        let lower = text.to_lowercase();
        let mut wake = vec![false; self.rules.len()];
        for &i in &self.always {
            wake[i] = true;
        }
        for m in self
            .keywords
            .iter()
            .flat_map(|k| k.find_overlapping_iter(&lower))
        {
            for &i in &self.woken[m.pattern().as_usize()] {
                wake[i] = true;
            }
        }
        wake.iter()
            .enumerate()
            .filter(|(_, w)| **w)
            .find_map(|(i, _)| self.rules[i].find(text, &self.global, allowed))
    }
}

fn scanner() -> &'static Scanner {
    static SCANNER: OnceLock<Scanner> = OnceLock::new();
    SCANNER.get_or_init(|| build(&[GITLEAKS, OURS]))
}

fn build(files: &[&str]) -> Scanner {
    let mut rules = Vec::new();
    let mut global = Allowlist {
        target: Target::Secret,
        regexes: Vec::new(),
        stopwords: Vec::new(),
    };
    for text in files {
        let config: ConfigFile = match toml::from_str(text) {
            Ok(config) => config,
            Err(e) => {
                // Only our own embedded files are read: a test proves they parse.
                log::error!("the credential rules do not parse: {e}");
                continue;
            }
        };
        if let Some(list) = config.allowlist.and_then(Allowlist::of) {
            global.regexes.extend(list.regexes);
            global.stopwords.extend(list.stopwords);
        }
        for entry in config.rules {
            let Some(pattern) = entry.regex else {
                continue; // rules about file names only
            };
            rules.push((
                entry.keywords,
                Rule {
                    kind: kind_of(&entry.description, &entry.id),
                    id: entry.id,
                    pattern,
                    regex: OnceLock::new(),
                    secret_group: entry.secret_group,
                    entropy: entry.entropy,
                    allowlists: entry
                        .allowlists
                        .into_iter()
                        .filter_map(Allowlist::of)
                        .collect(),
                },
            ));
        }
    }
    let mut words: Vec<String> = Vec::new();
    let mut woken: Vec<Vec<usize>> = Vec::new();
    let mut always = Vec::new();
    let mut kept = Vec::with_capacity(rules.len());
    for (i, (keywords, rule)) in rules.into_iter().enumerate() {
        if keywords.is_empty() {
            always.push(i);
        }
        for word in keywords {
            let word = word.to_lowercase();
            match words.iter().position(|w| *w == word) {
                Some(at) => woken[at].push(i),
                None => {
                    words.push(word);
                    woken.push(vec![i]);
                }
            }
        }
        kept.push(rule);
    }
    let keywords = AhoCorasick::new(&words)
        .map_err(|e| {
            log::error!(
                "the credential rules' keywords do not build ({e}): every rule runs on every text"
            )
        })
        .ok();
    if keywords.is_none() {
        always = (0..kept.len()).collect();
    }
    Scanner {
        rules: kept,
        keywords,
        woken,
        always,
        global,
    }
}

/// A regex in gitleaks' (RE2) syntax, which Rust's regex reads; `None` (logged) for
/// one it cannot, so one odd rule never disables the rest.
fn compile(pattern: &str) -> Option<Regex> {
    match RegexBuilder::new(pattern)
        .size_limit(64 << 20)
        .dfa_size_limit(16 << 20)
        .build()
    {
        Ok(regex) => Some(regex),
        Err(e) => {
            log::warn!("a credential rule does not compile and is left out: {e}");
            None
        }
    }
}

/// What a rule finds, in words: from gitleaks' description ("Uncovered a GitHub
/// Personal Access Token, potentially …"), else its id.
fn kind_of(description: &str, id: &str) -> String {
    static WORDS: OnceLock<Option<Regex>> = OnceLock::new();
    let words = WORDS.get_or_init(|| {
        compile(
            r"(?i)^(?:found|detected|identified|uncovered|discovered)\s+(?:an?\s+|the\s+)?(?:possible\s+|potential\s+)?(.+?)(?:,|\.| which | that | potentially | posing | exposing | risking | provided | for | used | could | might |$)",
        )
    });
    words
        .as_ref()
        .and_then(|r| r.captures(description))
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().trim().to_string())
        .filter(|k| !k.is_empty() && k.len() <= 80)
        .unwrap_or_else(|| id.replace('-', " "))
}

/// Shannon entropy of `text`, in bits per character.
fn shannon_entropy(text: &str) -> f64 {
    let mut counts: std::collections::HashMap<char, usize> = std::collections::HashMap::new();
    let mut total = 0usize;
    for c in text.chars() {
        *counts.entry(c).or_default() += 1;
        total += 1;
    }
    if total == 0 {
        return 0.0;
    }
    let n = total as f64;
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_rules_parse_and_compile() {
        for text in [GITLEAKS, OURS] {
            toml::from_str::<ConfigFile>(text).expect("rules parse");
        }
        let scanner = scanner();
        assert!(scanner.rules.len() > 200, "{}", scanner.rules.len());
        let broken: Vec<&str> = scanner
            .rules
            .iter()
            .filter(|r| r.regex().is_none())
            .map(|r| r.id.as_str())
            .collect();
        assert!(broken.is_empty(), "rules that do not compile: {broken:?}");
    }

    #[test]
    fn findings_name_the_kind_and_never_the_secret() {
        let token = "ghp_8Kd2mQ7rT4vX1zN9pL3sW6yB0cF5hJ2aE7gU";
        let finding = find(&format!("use {token} for the CI"), &|_| false).expect("found");
        assert_eq!(finding.rule, "github-pat");
        assert!(finding.kind.contains("GitHub"), "{}", finding.kind);
        assert!(!finding.kind.contains(token));
        assert!(find(&format!("use {token}"), &|fp| fp == finding.fingerprint).is_none());
        assert!(
            find(
                "Deploys happen on Tuesdays; the token lives in Vault",
                &|_| false
            )
            .is_none()
        );
    }
}
