//! The stored records as the answers carry them: kg-core keeps nodes and edges as
//! open-ended JSON objects and the server passes them through as they are (a file
//! from another version may hold keys this one does not know). These types name the
//! keys kg-core reads and writes, for the TypeScript side; the payloads that carry a
//! record declare it `#[ts(type = "StoredNode")]` and send kg-core's object.

use super::*;

/// A stored node, internal fields included (`kg_core::field` names them).
#[derive(Debug, Clone, PartialEq, Deserialize, TS)]
pub struct StoredNode {
    pub id: String,
    #[ts(optional)]
    pub gist: Option<String>,
    #[ts(optional, type = "Array<unknown>")]
    pub notes: Option<Vec<Value>>,
    #[ts(optional, type = "Array<unknown>")]
    pub touches: Option<Vec<Value>>,
    #[ts(optional)]
    pub _created_ts: Option<f64>,
    #[ts(optional)]
    pub _last_read_ts: Option<f64>,
    #[ts(optional)]
    pub _useful_ts: Option<Vec<f64>>,
    #[ts(optional)]
    pub _archived: Option<bool>,
    #[ts(optional)]
    pub _orphaned_ts: Option<f64>,
    /// Who wrote the current content and when.
    #[ts(optional)]
    pub _written: Option<StoredWritten>,
    /// A person locked it: agents may not rewrite, rename or delete it.
    #[ts(optional)]
    pub locked: Option<bool>,
}

/// A node's `_written`: when its content was written, and by which KG session
/// (`null`: a person).
#[derive(Debug, Clone, PartialEq, Deserialize, TS)]
pub struct StoredWritten {
    pub ts: f64,
    pub by: Option<String>,
}

/// A stored edge.
#[derive(Debug, Clone, PartialEq, Deserialize, TS)]
pub struct StoredEdge {
    pub from: String,
    pub to: String,
    pub rel: String,
    #[ts(optional, type = "Array<unknown>")]
    pub notes: Option<Vec<Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use kg_core::field;

    /// Every node field kg-core names is a key of the TypeScript `StoredNode`.
    #[test]
    fn the_stored_node_names_every_field_kg_core_writes() {
        let decl = StoredNode::decl(&ts_rs::Config::new());
        for name in [
            field::ID,
            field::GIST,
            field::NOTES,
            field::TOUCHES,
            field::CREATED_TS,
            field::LAST_READ_TS,
            field::USEFUL_TS,
            field::ARCHIVED,
            field::ORPHANED_TS,
            field::WRITTEN,
            field::LOCKED,
        ] {
            let named = decl.contains(&format!("{name}: ")) || decl.contains(&format!("{name}?: "));
            assert!(named, "{name} is missing from {decl}");
        }
    }

    /// A node and an edge as kg-core writes them read as these types.
    #[test]
    fn records_kg_core_writes_read_as_these_types() {
        let node = serde_json::json!({
            "id": "a", "gist": "g", "notes": ["n"], "touches": ["src/a.rs"],
            "_created_ts": 1.0, "_last_read_ts": 2.0, "_useful_ts": [3.0],
            "_archived": true, "_orphaned_ts": 4.0,
            "_written": {"ts": 5.0, "by": null}, "locked": true,
        });
        let read: StoredNode = serde_json::from_value(node).expect("a stored node");
        assert_eq!(read._written.map(|w| w.ts), Some(5.0));
        let edge = kg_core::Edge::new(kg_core::EdgeKey::new("a", "b", "uses"));
        let read: StoredEdge =
            serde_json::from_value(Value::Object(edge.as_object().clone())).expect("a stored edge");
        assert_eq!((read.from.as_str(), read.rel.as_str()), ("a", "uses"));
    }
}
