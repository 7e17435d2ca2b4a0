//! Renaming a node (since-0.9.30.md §5) over random graphs with cross-level edges,
//! in loaded project graphs and in project graph files not in memory: no edge is left
//! dangling or pointed at another node, and no endorsement or version is lost.

use kg_core::{
    Actor, Graph, Level, Node, Store, StoreError, Target, edge_version_key, field,
    node_version_key, parse_graph, serialize_graph,
};
use kg_test_support::{T, TempHome, open_store};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Two project folders with graphs in memory, and one project graph only on disk.
struct World {
    home: TempHome,
    store: Store,
    projects: Vec<String>,
    sid: String,
    disk: PathBuf,
}

fn target(level: Level, project: Option<&str>) -> Target<'_> {
    Target {
        level,
        session: None,
        project_path: project,
    }
}

/// What one graph looks like for the checks: node ids, and edges as
/// `(from, to, rel)`.
#[derive(Debug, Clone, PartialEq)]
struct Shape {
    nodes: BTreeSet<String>,
    edges: BTreeSet<(String, String, String)>,
    likes: usize,
}

fn shape(g: &Graph) -> Shape {
    Shape {
        nodes: g.nodes.keys().cloned().collect(),
        edges: g
            .edges
            .keys()
            .map(|k| {
                (
                    k.from().to_string(),
                    k.to().to_string(),
                    k.rel().to_string(),
                )
            })
            .collect(),
        likes: g.nodes.values().map(|n| n.useful_ts().len()).sum(),
    }
}

/// A random world: `user` and `local[p]` node counts, and edges as index picks.
#[derive(Debug, Clone)]
struct Spec {
    user: usize,
    local: [usize; 3],
    /// (graph 0..4 where 0 is the user graph, from, to, cross-level)
    edges: Vec<(usize, usize, usize, bool)>,
    /// Projects that also own a node of a user id (shadowing it there).
    shadows: Vec<(usize, usize)>,
    likes: Vec<usize>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        2usize..8,
        [1usize..5, 1usize..5, 1usize..5],
        prop::collection::vec((0usize..4, 0usize..16, 0usize..16, any::<bool>()), 0..30),
        prop::collection::vec((0usize..3, 0usize..16), 0..3),
        prop::collection::vec(0usize..16, 0..6),
    )
        .prop_map(|(user, local, edges, shadows, likes)| Spec {
            user,
            local,
            edges,
            shadows,
            likes,
        })
}

fn uid(i: usize) -> String {
    format!("user-node-{i}")
}

fn pid(p: usize, i: usize) -> String {
    format!("p{p}-node-{i}")
}

fn build(spec: &Spec) -> World {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let projects: Vec<String> = (0..2)
        .map(|p| {
            let folder = home.path.join(format!("proj{p}"));
            std::fs::create_dir_all(&folder).expect("project");
            store.resolve_root(&folder.to_string_lossy()).expect("root")
        })
        .collect();
    let sid = store.register_session(None, None, T).expect("session");
    for i in 0..spec.user {
        store
            .put_node(
                target(Level::User, None),
                &uid(i),
                &format!("user gist {i}"),
                None,
                None,
                T,
            )
            .expect("user node");
    }
    for &i in &spec.likes {
        if i < spec.user {
            let liker = store.register_session(None, None, T).expect("liker");
            store.useful(&liker, &[uid(i)], T).expect("like");
        }
    }
    for (p, root) in projects.iter().enumerate() {
        for i in 0..spec.local[p] {
            store
                .put_node(
                    target(Level::Project, Some(root)),
                    &pid(p, i),
                    "project gist",
                    None,
                    None,
                    T,
                )
                .expect("project node");
        }
    }
    for &(p, i) in &spec.shadows {
        if p < 2 && i < spec.user {
            store
                .put_node(
                    target(Level::Project, Some(&projects[p])),
                    &uid(i),
                    "a local node",
                    None,
                    None,
                    T,
                )
                .expect("shadow");
        }
    }
    let mut disk_graph = Graph::default();
    for i in 0..spec.local[2] {
        let mut node = Node::new(&pid(2, i));
        node.set(field::GIST, json!("on disk"));
        disk_graph.nodes.insert(pid(2, i), node);
    }
    for &(g, a, b, cross) in &spec.edges {
        match g {
            0 => {
                let (from, to) = (uid(a % spec.user), uid(b % spec.user));
                store
                    .put_edge(target(Level::User, None), &from, &to, "relates", None, T)
                    .expect("user edge");
            }
            1 | 2 => {
                let p = g - 1;
                let from = pid(p, a % spec.local[p]);
                let to = if cross {
                    uid(b % spec.user)
                } else {
                    pid(p, b % spec.local[p])
                };
                store
                    .put_edge(
                        target(Level::Project, Some(&projects[p])),
                        &from,
                        &to,
                        "uses",
                        None,
                        T,
                    )
                    .expect("project edge");
            }
            _ => {
                let from = pid(2, a % spec.local[2]);
                let to = if cross {
                    uid(b % spec.user)
                } else {
                    pid(2, b % spec.local[2])
                };
                let key = kg_core::EdgeKey::new(&from, &to, "uses");
                disk_graph
                    .edges
                    .insert(key.clone(), kg_core::Edge::new(key));
            }
        }
    }
    let disk_root = home.path.join("gone");
    let disk = home.storage().join("projects/gone/graph.json");
    std::fs::create_dir_all(disk.parent().expect("folder")).expect("mkdir");
    let root = disk_root.to_string_lossy().into_owned();
    std::fs::write(
        &disk,
        serialize_graph(&disk_graph, Level::Project, Some(&root)),
    )
    .expect("disk");
    World {
        home,
        store,
        projects,
        sid,
        disk,
    }
}

impl World {
    fn shapes(&self) -> Vec<Shape> {
        let mut shapes = vec![self.store.with_graph(self.store.user_slot(), shape)];
        for root in &self.projects {
            let slot = self.store.project_slot(root, T).expect("slot");
            shapes.push(self.store.with_graph(&slot, shape));
        }
        let file = parse_graph(&std::fs::read(&self.disk).expect("disk")).expect("parses");
        shapes.push(shape(&file.graph));
        shapes
    }

    fn versions(&self, level: Level, project: Option<&str>, id: &str) -> Option<i64> {
        let slot = self
            .store
            .resolve_target(target(level, project), T)
            .expect("slot");
        self.store.with_graph(&slot, |g| {
            g.versions.get(&node_version_key(id)).map(|v| v.v())
        })
    }
}

/// The graph's edges with `old` read as `new` where it means the renamed node.
fn expected_after(before: &Shape, old: &str, new: &str, renames_here: bool) -> Shape {
    let end = |e: &String| {
        if renames_here && e == old {
            new.to_string()
        } else {
            e.clone()
        }
    };
    Shape {
        nodes: before
            .nodes
            .iter()
            .map(|n| if n == old { new.to_string() } else { n.clone() })
            .collect(),
        edges: before
            .edges
            .iter()
            .map(|(f, t, r)| (end(f), end(t), r.clone()))
            .collect(),
        likes: before.likes,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_rename_leaves_no_dangling_edge_and_loses_nothing(spec in spec(), pick in 0usize..32, user_side in any::<bool>()) {
        let w = build(&spec);
        let before = w.shapes();
        let (level, project, old) = if user_side {
            (Level::User, None, uid(pick % spec.user))
        } else {
            let p = pick % 2;
            (Level::Project, Some(w.projects[p].as_str()), pid(p, pick % spec.local[p]))
        };
        let new = format!("renamed-{pick}");
        let likes = {
            let slot = w.store.resolve_target(target(level, project), T).expect("slot");
            w.store.with_graph(&slot, |g| g.nodes[&old].useful_ts().to_vec())
        };
        let version = w.versions(level, project, &old);
        let renamed = w.store.rename_node(Some(target(level, project)), Some(&w.sid), &old, &new, Actor::Person, T + 1.0);
        let renamed = match renamed {
            Ok(r) => r,
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        let after = w.shapes();
        // Which graphs' edges named the renamed node, and so follow it.
        for (g, (b, a)) in before.iter().zip(&after).enumerate() {
            let renames_here = match level {
                Level::Project => g == 1 + w.projects.iter().position(|r| Some(r.as_str()) == project).unwrap_or(9),
                // A project's own node of that id keeps its edges.
                Level::User => g == 0 || !b.nodes.contains(&old),
            };
            let own_node = match level {
                Level::User => g == 0,
                Level::Project => renames_here,
            };
            let mut expected = expected_after(b, &old, &new, renames_here);
            if !own_node {
                expected.nodes = b.nodes.clone();
            }
            prop_assert_eq!(a, &expected, "graph {}", g);
            // Every edge joined two nodes before; each still does (no dangling end).
            let user_nodes = &after[0].nodes;
            for (f, t, _) in &a.edges {
                for end in [f, t] {
                    let known = a.nodes.contains(end) || (g > 0 && user_nodes.contains(end));
                    prop_assert!(known, "graph {} has a dangling end {}", g, end);
                }
            }
        }
        // The node kept its endorsements; its version moved with it and went up.
        let slot = w.store.resolve_target(target(level, project), T).expect("slot");
        let kept = w.store.with_graph(&slot, |g| g.nodes.get(&new).map(|n| n.useful_ts().to_vec()));
        prop_assert_eq!(kept, Some(likes));
        prop_assert_eq!(w.versions(level, project, &new), Some(version.unwrap_or(0) + 1));
        prop_assert_eq!(w.versions(level, project, &old), None);
        prop_assert_eq!(renamed.node.get("id"), Some(&Value::String(new.clone())));
        let _ = &w.home;
    }
}

#[test]
fn bad_renames_are_refused_and_change_nothing() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let user = target(Level::User, None);
    for id in ["alpha-node", "beta-node"] {
        store
            .put_node(user, id, "a gist", None, None, T)
            .expect("put");
    }
    let file = || std::fs::read_to_string(home.storage().join("user.json")).expect("file");
    let before = file();
    let long = "a".repeat(200);
    let cases: [(&str, &str, &str); 6] = [
        ("alpha-node", "", "Invalid node id"),
        ("alpha-node", &long, "Invalid node id"),
        ("alpha-node", "bad id!", "Invalid node id"),
        (
            "alpha-node",
            "one-two-three-four-five-six-seven",
            "has 7 words",
        ),
        ("alpha-node", "alpha-node", "already called"),
        ("alpha-node", "beta-node", "already has a node 'beta-node'"),
    ];
    for (old, new, says) in cases {
        let e = store
            .rename_node(Some(user), None, old, new, Actor::Person, T + 1.0)
            .expect_err(new);
        assert!(e.to_string().contains(says), "{new}: {e}");
        assert!(e.is_client_error());
    }
    let missing = store.rename_node(
        None,
        None,
        "no-such-node",
        "fresh-id",
        Actor::Person,
        T + 1.0,
    );
    assert!(
        matches!(missing, Err(StoreError::NodeNotFound { .. })),
        "{missing:?}"
    );
    assert_eq!(file(), before, "nothing was written");
}

#[test]
fn a_rename_of_an_edge_onto_an_existing_one_merges_their_notes() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let user = target(Level::User, None);
    for id in ["hub", "old-name"] {
        store
            .put_node(user, id, "a gist", None, None, T)
            .expect("put");
    }
    // A dangling edge to the new id already exists.
    store
        .put_edge(
            user,
            "hub",
            "new-name",
            "uses",
            Some(vec!["first".into()]),
            T,
        )
        .expect("edge");
    store
        .put_edge(
            user,
            "hub",
            "old-name",
            "uses",
            Some(vec!["second".into()]),
            T,
        )
        .expect("edge");
    let r = store
        .rename_node(
            Some(user),
            None,
            "old-name",
            "new-name",
            Actor::Person,
            T + 1.0,
        )
        .expect("rename");
    assert_eq!(r.edges_rewired, 1);
    store.with_graph(store.user_slot(), |g| {
        assert_eq!(g.edges.len(), 1);
        let edge = g.edges.values().next().expect("edge");
        assert_eq!(edge.notes(), ["first", "second"]);
        let key = edge.key.clone();
        assert!(g.versions.contains_key(&edge_version_key(&key)));
    });
}
