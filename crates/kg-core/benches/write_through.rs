//! Write-through cost: `put_node` (an update of an existing node) on graphs of 100, 500
//! and 2,000 nodes, against two floors on the same disk with the same bytes: a bare
//! write + fsync + rename (the physical floor the issue names), and the whole protocol a
//! save owes done with bare system calls. Run:
//! `cargo bench -p kg-core --bench write_through`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kg_core::{Level, Store, StoreConfig, Target};
use std::io::Write;
use std::path::PathBuf;

use kg_test_support::T;

fn bench_dir(name: &str) -> PathBuf {
    // On the build disk, not tmpfs: fsync must cost what it costs for users.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("bench dir");
    dir
}

fn user() -> Target<'static> {
    Target {
        level: Level::User,
        session: None,
        project_path: None,
    }
}

/// A store whose user graph holds `n` realistic nodes (gists ~100 chars, notes,
/// touches, three edges each), past their grace period.
fn store_with(n: usize, dir: &PathBuf) -> Store {
    let store = Store::open(
        StoreConfig::new(dir.join("storage"), dir),
        T - 30.0 * 86_400.0,
    )
    .expect("open");
    for i in 0..n {
        let gist = format!(
            "Component {i} owns the ledger posting path for tenant batches; retries are idempotent {i:04}"
        );
        let notes = vec![
            format!("note for {i}: verified after the refactor"),
            "second note".into(),
        ];
        store
            .put_node(
                user(),
                &format!("node-{i}"),
                &gist,
                Some(notes),
                Some(vec![format!("src/m{i}.rs")]),
                T - 30.0 * 86_400.0,
            )
            .expect("seed");
        if i > 0 {
            store
                .put_edge(
                    user(),
                    &format!("node-{i}"),
                    &format!("node-{}", i / 2),
                    "part-of",
                    None,
                    T - 30.0 * 86_400.0,
                )
                .expect("edge");
        }
    }
    store
}

fn write_through(c: &mut Criterion) {
    let mut group = c.benchmark_group("put_node");
    group.sample_size(60);
    for n in [100usize, 500, 2000] {
        let dir = bench_dir(&format!("put-{n}"));
        let store = store_with(n, &dir);
        let mut k = 0u64;
        group.bench_with_input(BenchmarkId::new("write_through", n), &n, |b, &n| {
            b.iter(|| {
                k += 1;
                let id = format!("node-{}", k as usize % n);
                store
                    .put_node(
                        user(),
                        &id,
                        &format!("Updated insight {k}: the cache TTL is five minutes"),
                        None,
                        None,
                        T + k as f64,
                    )
                    .expect("put");
            })
        });
        // The floor: the same number of bytes, written durably the simplest way.
        let bytes = std::fs::read(dir.join("storage/user.json")).expect("graph file");
        let floor_dir = bench_dir(&format!("floor-{n}"));
        let target = floor_dir.join("user.json");
        let prev = floor_dir.join("user.prev");
        let staging = floor_dir.join("user.prev-tmp");
        let write_floor = |whole_protocol: bool| {
            let tmp = floor_dir.join("user.tmp");
            let mut f = std::fs::File::create(&tmp).expect("create");
            f.write_all(&bytes).expect("write");
            f.sync_all().expect("fsync");
            if whole_protocol && target.exists() {
                std::fs::hard_link(&target, &staging).expect("link");
                std::fs::rename(&staging, &prev).expect("rename prev");
            }
            std::fs::rename(&tmp, &target).expect("rename");
            if whole_protocol {
                std::fs::File::open(&floor_dir)
                    .and_then(|d| d.sync_all())
                    .expect("fsync dir");
            }
        };
        group.bench_with_input(
            BenchmarkId::new("bare_write_fsync_rename", n),
            &n,
            |b, _| b.iter(|| write_floor(false)),
        );
        // The floor of the protocol write-through owes (core.md §2.5, issue 2): also
        // keep the replaced file as `.prev` (a hard link) and fsync the folder, without
        // which the rename itself is not durable. No conforming save can be cheaper.
        group.bench_with_input(
            BenchmarkId::new("bare_protocol_prev_link_fsync_dir", n),
            &n,
            |b, _| b.iter(|| write_floor(true)),
        );
    }
    group.finish();
}

/// What the credential scan (issue 36) adds to every write, without the disk: a gist
/// and three notes that name keys, tokens and passwords (so the generic rules run), and
/// a plain one.
fn credential_scan(c: &mut Criterion) {
    let mut group = c.benchmark_group("credential_scan");
    let texts = [
        "Rotate the API key every 90 days; the token and the password live in Vault at secret/prod/api",
        "auth: the access token is refreshed with /oauth/token before it expires after 15 minutes",
        "The staging password policy asks for 12 characters; keys are per environment",
        "Deploys happen on Tuesdays; the release checklist is in docs/release.md",
    ];
    group.bench_function("gist_and_three_notes", |b| {
        b.iter(|| {
            for text in &texts {
                assert!(kg_core::secrets::find(std::hint::black_box(text), &|_| false).is_none());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, write_through, credential_scan);
criterion_main!(benches);
