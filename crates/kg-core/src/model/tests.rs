use super::*;
use proptest::prelude::*;

proptest! {
    /// An edge key keeps its three texts apart: equality, order and hashing go by
    /// (from, to, rel), even where two keys' texts run together the same.
    #[test]
    fn edge_keys_compare_by_their_three_texts(
        a in prop::collection::vec("[ab]{0,3}", 3),
        b in prop::collection::vec("[ab]{0,3}", 3),
    ) {
        let (ka, kb) = (EdgeKey::new(&a[0], &a[1], &a[2]), EdgeKey::new(&b[0], &b[1], &b[2]));
        prop_assert_eq!((ka.from(), ka.to(), ka.rel()), (a[0].as_str(), a[1].as_str(), a[2].as_str()));
        prop_assert_eq!(ka == kb, a == b);
        prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
        let hash = |k: &EdgeKey| std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, k);
        if a == b {
            prop_assert_eq!(hash(&ka), hash(&kb));
        }
        prop_assert_eq!(ka.to_string(), format!("{}->{}:{}", a[0], a[1], a[2]));
    }
}

fn any_field() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        field::GIST,
        field::NOTES,
        field::TOUCHES,
        field::CREATED_TS,
        field::LAST_READ_TS,
        field::USEFUL_TS,
        field::ARCHIVED,
        field::ORPHANED_TS,
        "custom",
    ])
}

fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        (0u32..5).prop_map(|n| float_value(1_790_000_000.0 + f64::from(n))),
        "[a-c]{0,2}".prop_map(Value::String),
        prop::collection::vec((0u32..3).prop_map(Value::from), 0..3).prop_map(Value::Array),
    ]
}

proptest! {
    /// Whatever a node's memos keep across a change must equal what they would
    /// compute afresh.
    #[test]
    fn memos_kept_across_changes_match_a_fresh_computation(
        changes in prop::collection::vec((any_field(), any_value(), any::<bool>()), 1..40),
    ) {
        let searched = |obj: &Object| {
            format!("{:?}{:?}{:?}", obj.get(field::GIST), obj.get(field::NOTES), obj.get(field::TOUCHES))
        };
        let mut node = Node::new("n");
        for (key, value, remove) in changes {
            // Fill every memo, then change one field.
            node.meta();
            node.cached_search_text(searched);
            if remove {
                node.remove(key);
            } else {
                node.set(key, value);
            }
            let whole = node.to_object();
            prop_assert_eq!(node.meta(), &NodeMeta::of(whole.iter().map(|(k, v)| (k.as_str(), v))));
            let gist = whole.get(field::GIST).and_then(Value::as_str);
            prop_assert_eq!(node.gist(), gist.unwrap_or(""));
            let fresh = searched(&whole);
            prop_assert_eq!(node.cached_search_text(searched), fresh.as_str());
        }
    }
}

proptest! {
    /// Whichever way a node holds its fields, it reads, serialises and compares as
    /// one Python dict given the same assignments and deletions: a new key goes
    /// last, an existing one keeps its place. With or without the memoised fields
    /// (which let a tier flag skip the lookup) filled before the change.
    #[test]
    fn fields_keep_the_order_a_python_dict_gives_them(
        changes in prop::collection::vec((any_field(), any_value(), any::<bool>(), any::<bool>()), 1..40),
    ) {
        let mut node = Node::new("n");
        let mut dict = Object::new();
        dict.insert(field::ID.into(), Value::String("n".into()));
        for (key, value, remove, memoised) in changes {
            if memoised {
                node.meta();
            }
            if remove {
                prop_assert_eq!(node.remove(key), dict.shift_remove(key));
            } else {
                node.set(key, value.clone());
                dict.insert(key.to_string(), value);
            }
            let fields: Vec<(&str, &Value)> = node.fields().collect();
            let expected: Vec<(&str, &Value)> = dict.iter().map(|(k, v)| (k.as_str(), v)).collect();
            prop_assert_eq!(fields, expected);
            prop_assert_eq!(node.len(), dict.len());
            for key in dict.keys() {
                prop_assert_eq!(node.get(key), dict.get(key));
            }
            let whole = node.to_object();
            prop_assert!(whole.iter().eq(dict.iter()));
            prop_assert_eq!(serde_json::to_string(&node).ok(), serde_json::to_string(&dict).ok());
            prop_assert_eq!(&node, &Node::from_object(dict.clone()));
            prop_assert!(node.clone().into_object().iter().eq(dict.iter()));
        }
    }
}

#[test]
fn node_ids_follow_the_charset() {
    for ok in ["kebab-case-id", "v0.9.10-consistency-audit", "A1", "x"] {
        assert!(validate_ident(IdentKind::NodeId, ok).is_ok(), "{ok}");
    }
    let long = "a".repeat(200);
    for bad in [
        "",
        "a b",
        "<script>",
        "a/b",
        "a'b",
        "-leading",
        long.as_str(),
        "abc\n",
    ] {
        assert!(validate_ident(IdentKind::NodeId, bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        validate_ident(IdentKind::NodeId, "bad id!").unwrap_err(),
        "Invalid node id 'bad id!': use letters, digits, '.', '_', '-' (max 128 chars, must start alphanumeric)"
    );
}

#[test]
fn id_words_count_a_date_as_one() {
    let shape = |id: &str| {
        let s = IdShape::of(id);
        (s.words, s.dated)
    };
    assert_eq!(shape("one-two-three-four-five-six"), (6, false));
    assert_eq!(shape("one-two-three-four-five-six-seven"), (7, false));
    assert_eq!(shape("release-2026-08-25"), (2, true));
    assert_eq!(shape("report-2026-08"), (2, true));
    assert_eq!(shape("a-2026-13-01"), (4, false)); // no month 13
    assert_eq!(shape("v0.9.10-consistency-audit"), (3, false));
    assert_eq!(shape("a--b-"), (2, false));
    assert_eq!(shape("x"), (1, false));
    assert!(IdShape::of("a-b-c-d-e-f-g").too_long());
    assert!(!IdShape::of("2026-01-02-a-b-c-d-e").too_long());
}

#[test]
fn edge_refs_and_rels_follow_their_charsets() {
    for ok in [
        "knowledge-graph/server/store.py",
        "~/Mail/x",
        "node-id",
        "/abs/path",
    ] {
        assert!(validate_ident(IdentKind::EdgeRef, ok).is_ok(), "{ok}");
    }
    for bad in ["", "a'b", "<img>", "a b"] {
        assert!(validate_ident(IdentKind::EdgeRef, bad).is_err(), "{bad}");
    }
    assert!(validate_ident(IdentKind::Rel, "instance-of").is_ok());
    assert!(validate_ident(IdentKind::Rel, "has space").is_err());
    assert_eq!(
        validate_ident(IdentKind::EdgeRef, "x' onerror='1").unwrap_err(),
        "Invalid edge ref \"x' onerror='1\": use letters, digits, '.', '_', '-', '/', '~' (max 256 chars)"
    );
}

#[test]
fn tiers_derive_from_the_underscore_fields() {
    let mut n = Node::new("a");
    assert_eq!(n.tier(), Tier::Active);
    n.set(field::ARCHIVED, Value::Bool(true));
    assert_eq!(n.tier(), Tier::Archived);
    n.set(field::ORPHANED_TS, float_value(1.0));
    assert_eq!(n.tier(), Tier::Orphaned);
    n.set(field::ARCHIVED, Value::Bool(false));
    assert_eq!(n.tier(), Tier::Orphaned);
    n.remove(field::ORPHANED_TS);
    assert_eq!(n.tier(), Tier::Active);
}
