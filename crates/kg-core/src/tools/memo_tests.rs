//! A memoised render answers byte for byte what rendering again would: random writes,
//! reads, endorsements, maintenance, files coming and going and the clock moving on
//! (across grace periods and endorsement half-lives), under both policies, each
//! render compared with one made past the memo.

use super::*;
use crate::compact::LevelBudget;
use crate::store::StoreConfig;

const T0: f64 = 1_795_176_000.0;
const DAY: f64 = 86_400.0;

/// xorshift64: the same walk on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn level(rng: &mut Rng) -> Level {
    if rng.below(2) == 0 {
        Level::User
    } else {
        Level::Project
    }
}

/// What one render is asked: its kind, client, header and preloaded ids.
type Case<'a> = (
    ReadKind,
    pages::Client,
    Option<&'a str>,
    Option<&'a HashSet<String>>,
);

/// One walk; answers how many renders the memo answered.
fn walk(policy: Policy, read_budget: usize, level_budget: usize, seed: u64) -> u64 {
    let home = tempfile::tempdir().expect("home");
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join("src")).expect("project folder");
    let project = project.to_string_lossy().into_owned();
    let mut config = StoreConfig::new(home.path().join("storage"), home.path());
    config.policy = policy;
    config.budgets.read = read_budget;
    config.budgets.level = LevelBudget::new(level_budget);
    let store = Store::open(config, T0).expect("store");
    let mut now = T0;
    let sid = store
        .register_session(Some(&project), None, now)
        .expect("session");
    let mut rng = Rng(seed);
    let id = |rng: &mut Rng| format!("node-{}", rng.below(30));
    let file = format!("{project}/src/kept.rs");
    for step in 0..160 {
        match rng.below(10) {
            0..=2 => {
                let words = 1 + rng.below(40) as usize;
                let args = PutNodeArgs {
                    session_id: sid.clone(),
                    level: level(&mut rng),
                    id: id(&mut rng),
                    gist: format!("gist {step} {}", "word ".repeat(words)),
                    notes: None,
                    touches: (rng.below(3) == 0).then(|| vec!["src/kept.rs:1".to_string()]),
                };
                kg_put_node(&store, &args, now);
            }
            3 => {
                let args = PutEdgeArgs {
                    session_id: sid.clone(),
                    level: level(&mut rng),
                    from: id(&mut rng),
                    to: id(&mut rng),
                    rel: ["uses", "part-of", "requires"][rng.below(3) as usize].to_string(),
                    notes: None,
                };
                kg_put_edge(&store, &args, now);
            }
            4 => {
                kg_useful(&store, &sid, &[id(&mut rng)], now);
            }
            5 => {
                let args = ReadArgs {
                    session_id: Some(sid.clone()),
                    id: Some(id(&mut rng)),
                    ..ReadArgs::default()
                };
                kg_read(&store, &args, now);
            }
            6 => {
                kg_delete_node(&store, &sid, &id(&mut rng), now);
            }
            7 => store.tick(now),
            8 => {
                // A touched file comes and goes (our DEBT counts the missing ones).
                if rng.below(2) == 0 {
                    std::fs::write(&file, "x").expect("file");
                } else {
                    let _ = std::fs::remove_file(&file);
                }
            }
            _ => {}
        }
        now += match rng.below(6) {
            0 => 0.0,
            1 => 1.0 + rng.below(60) as f64,
            2 => rng.below(86_400) as f64,
            3 => DAY * (1 + rng.below(6)) as f64,
            4 => DAY * rng.below(200) as f64,
            _ => 0.5,
        };
        let preloaded: HashSet<String> = (0..rng.below(6)).map(|_| id(&mut rng)).collect();
        let cases: [Case<'_>; 3] = [
            (ReadKind::FullRead, pages::Client::ClaudeCode, None, None),
            (
                ReadKind::FullRead,
                pages::Client::ClaudeCode,
                None,
                Some(&preloaded),
            ),
            (
                ReadKind::Preload,
                pages::Client::Codex,
                Some("A header the preload counts."),
                None,
            ),
        ];
        for (kind, client, header, preloaded) in cases {
            let memoised = render_session(&store, &sid, kind, client, header, preloaded, now).0;
            store.renders().set_off(true);
            let fresh = render_session(&store, &sid, kind, client, header, preloaded, now).0;
            store.renders().set_off(false);
            assert_eq!(memoised, fresh, "{policy:?}, step {step}, {kind:?}");
        }
    }
    store.renders().hits()
}

#[test]
fn a_memoised_render_is_the_render_under_both_policies() {
    for policy in [Policy::Ours, Policy::Reference] {
        // Roomy, and so tight that anchors and citations are shed.
        for (read_budget, level_budget, seed) in [(40_000, 2_500, 0x9E37_79B9), (900, 1_200, 77)] {
            let hits = walk(policy, read_budget, level_budget, seed);
            assert!(hits >= 10, "{policy:?}: the memo answered {hits} renders");
        }
    }
}
