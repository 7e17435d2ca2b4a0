//! The memory tools, each defined once: name, description, argument schema, whether
//! the reference offers it, and its handler, in one entry of [`all_specs`]. MCP
//! (`mcp`) lists and calls them from here; adding a tool is one entry and one handler
//! here, plus its tests.
//!
//! Arguments are checked against each tool's JSON Schema here, with the messages
//! clients already know (`'gist' is a required property`), then converted to
//! kg-core's own argument types: wire types stop at this file.

use crate::renames::RenameFinder;
use crate::state::AppState;
use kg_core::{EdgeKey, Level, Policy, Store};
use kg_core::{PutEdgeArgs, PutNodeArgs, ReadArgs, ToolText};
use rmcp::model::Tool;
use serde_json::{Map, Value, json};
use std::sync::{Arc, OnceLock};

/// One tool, whole: its name, description and argument schema, and the handler that
/// parses its checked arguments and runs it.
pub(crate) struct ToolSpec {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) schema: Value,
    /// Offered under our policy only (the reference has no such tool).
    pub(crate) ours_only: bool,
    pub(crate) run: fn(&ToolCall<'_>) -> ToolText,
}

/// One tool call whose arguments passed the tool's schema.
pub(crate) struct ToolCall<'a> {
    pub(crate) store: &'a Store,
    /// Where git says the files of stale touches went (`kg_fix_touch`).
    pub(crate) renames: &'a RenameFinder,
    pub(crate) args: &'a Map<String, Value>,
    pub(crate) client: kg_core::Client,
    pub(crate) now: f64,
}

impl ToolCall<'_> {
    fn text(&self, key: &str) -> Option<String> {
        text(self.args, key)
    }

    /// A string the schema requires (empty when absent: the schema said so already).
    fn need(&self, key: &str) -> String {
        self.text(key).unwrap_or_default()
    }

    fn sid(&self) -> String {
        self.need("session_id")
    }

    fn list(&self, key: &str) -> Option<Vec<String>> {
        list(self.args, key)
    }

    fn level(&self) -> Option<Level> {
        level_arg(self.args)
    }
}

fn string() -> Value {
    json!({"type": "string"})
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn level() -> Value {
    json!({"type": "string", "enum": ["user", "project"]})
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// What `kg_read` says of itself under both policies.
macro_rules! read_description {
    () => {
        "Read persistent memory. First call of a session: pass cwd (the project root); \
        it returns both graphs (user and project) and a session_id to pass to every later kg_* call. \
        With session_id alone it renders the whole active graph again. With ids (preferred, batched) \
        or id it reads nodes in full — notes, touches, every edge — and brings archived nodes back \
        to active. level limits id lookups to one graph."
    };
}

/// The tools offered under `policy`, in the order clients list them: the
/// reference's nine, and under our policy ours among them, with `kg_read`'s paging.
fn specs(policy: Policy) -> &'static [ToolSpec] {
    static OURS: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    static REFERENCE: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    let cell = match policy {
        Policy::Ours => &OURS,
        Policy::Reference => &REFERENCE,
    };
    cell.get_or_init(|| {
        let mut specs = all_specs(policy);
        specs.retain(|s| !s.ours_only || policy == Policy::Ours);
        specs
    })
}

fn all_specs(policy: Policy) -> Vec<ToolSpec> {
    let ours = policy == Policy::Ours;
    let mut read_properties = json!({"cwd": string(), "session_id": string(), "id": string(),
                                     "ids": strings(), "level": level()});
    if ours {
        read_properties["more"] = json!({"type": "boolean"});
    }
    vec![
        ToolSpec {
            name: "kg_read",
            description: if ours {
                concat!(
                    read_description!(),
                    " A reply longer than your client keeps whole comes in parts: each says so, \
                        and kg_read(session_id, more=true) returns the next."
                )
            } else {
                read_description!()
            },
            ours_only: false,
            run: read,
            schema: object(read_properties, &[]),
        },
        ToolSpec {
            name: "kg_search",
            description: "Ranked full-text search over ids, gists, notes and touches of both graphs, every \
                    tier included (archived and orphaned nodes too), with the connections between the best hits. \
                    Search before writing a node (avoid duplicates) and whenever a problem feels familiar. \
                    Pass session_id so the project graph is searched and already-seen notes are skipped.",
            ours_only: false,
            run: search,
            schema: object(
                json!({"query": string(), "session_id": string()}),
                &["query"],
            ),
        },
        ToolSpec {
            name: "kg_put_node",
            description: "Create or update one insight at the moment you learn it. level: 'user' for \
                    cross-project knowledge about the person or craft, 'project' for this codebase. id: short \
                    kebab-case. gist: one line, the bottom line (aim under 120 chars; over 300 scans badly). \
                    notes: depth and rationale; touches: precise file pointers. Omitted notes/touches stay as \
                    they were; an update re-activates an archived node. Connect it with kg_put_edge.",
            ours_only: false,
            run: put_node,
            schema: object(
                json!({"session_id": string(), "level": level(), "id": string(), "gist": string(),
                           "notes": strings(), "touches": strings()}),
                &["session_id", "level", "id", "gist"],
            ),
        },
        ToolSpec {
            name: "kg_rename_node",
            description: "Give a node a new id. Its edges follow in every graph (cross-level edges of \
                    projects not loaded included), and so do its creation time, endorsements, tier and \
                    history: the only way to change an id without losing them (put + delete loses them). \
                    new_id names the subject in 3-5 kebab-case words; the claim belongs in the gist. \
                    Refused when new_id exists or would make an edge reach a different node. level \
                    limits the lookup (user first, then project, when omitted).",
            ours_only: true,
            run: rename_node,
            schema: object(
                json!({"session_id": string(), "old_id": string(), "new_id": string(), "level": level()}),
                &["session_id", "old_id", "new_id"],
            ),
        },
        ToolSpec {
            name: "kg_put_edge",
            description: "Create or update a typed relation (rel, e.g. requires, part-of, supersedes) from one \
                    node to another node. Prefer an edge between existing nodes over a new node; cross-level \
                    edges live in the project graph and point at user nodes. A file path belongs in a node's \
                    touches; point an edge at a path only when the relation itself is the fact (lives-in).",
            ours_only: false,
            run: put_edge,
            schema: object(
                json!({"session_id": string(), "level": level(), "from": string(), "to": string(),
                           "rel": string(), "notes": strings()}),
                &["session_id", "level", "from", "to", "rel"],
            ),
        },
        ToolSpec {
            name: "kg_delete_node",
            description: "Delete a node that is wrong and cannot be fixed, with all its edges in that graph \
                    (looks in the user graph first, then the project graph).",
            ours_only: false,
            run: delete_node,
            schema: object(
                json!({"session_id": string(), "id": string()}),
                &["session_id", "id"],
            ),
        },
        ToolSpec {
            name: "kg_delete_edge",
            description: "Delete one relation, identified by from, to and rel (user graph first, then project).",
            ours_only: false,
            run: delete_edge,
            schema: object(
                json!({"session_id": string(), "from": string(), "to": string(), "rel": string()}),
                &["session_id", "from", "to", "rel"],
            ),
        },
        ToolSpec {
            name: "kg_useful",
            description: "At wrap-up, endorse up to 5 nodes per session that demonstrably changed the outcome, \
                    judged by results, not by having been read. Endorsements decay over 90 days and keep valuable \
                    nodes active.",
            ours_only: false,
            run: useful,
            schema: object(
                json!({"session_id": string(), "ids": strings()}),
                &["session_id", "ids"],
            ),
        },
        ToolSpec {
            name: "kg_sync",
            description: "Fetch what other sessions (or your subagents) changed since this session last \
                    synced or started.",
            ours_only: false,
            run: sync,
            schema: object(json!({"session_id": string()}), &["session_id"]),
        },
        ToolSpec {
            name: "kg_progress",
            description: "Durable checkpoints for long tasks (scout, extract, maintain), kept across sessions, \
                    restarts and compaction. With state: replace the task's stored state. Without: read it. \
                    A maintenance pass stamps task 'maintain' with {\"last_ts\": <unix seconds>} — only that \
                    stamp resets a graph's DEBT staleness.",
            ours_only: false,
            run: progress,
            schema: object(
                json!({"session_id": string(), "task_id": string(), "state": {"type": "object"}, "level": level()}),
                &["session_id", "task_id"],
            ),
        },
        ToolSpec {
            name: "kg_fix_touch",
            description: "Stale touches (DEBT counts them) name files that no longer exist. Without id: \
                    list this session's stale touches, with the path git says each file was renamed to. With \
                    id and touch (the entry exactly as stored): point that touch at git's new path, or at to, \
                    keeping its line range or symbol. level limits it to one graph.",
            ours_only: true,
            run: fix_touch,
            schema: object(
                json!({"session_id": string(), "id": string(), "touch": string(), "to": string(),
                           "level": level()}),
                &["session_id"],
            ),
        },
    ]
}

pub(crate) fn tool_list(policy: Policy) -> Vec<Tool> {
    listing(specs(policy))
}

/// The `tools/list` entries of `tools`.
fn listing(tools: &[ToolSpec]) -> Vec<Tool> {
    tools
        .iter()
        .map(|s| {
            let schema = match &s.schema {
                Value::Object(o) => o.clone(),
                _ => Map::new(),
            };
            Tool::new(s.name, s.description, Arc::new(schema))
        })
        .collect()
}

/// Check arguments against a schema, reporting the most relevant failure the way
/// Python's `jsonschema` words it: a missing required key first, then the first
/// property (in schema order) of the wrong type or outside its enum, then items.
pub fn validate(schema: &Value, args: &Map<String, Value>) -> Result<(), String> {
    for key in schema["required"].as_array().into_iter().flatten() {
        if let Some(key) = key.as_str()
            && !args.contains_key(key)
        {
            return Err(format!("'{key}' is a required property"));
        }
    }
    let mut deeper = None;
    for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
        let Some(value) = args.get(name) else {
            continue;
        };
        if let Some(message) = type_error(prop, value) {
            return Err(message);
        }
        if let (Some(items), Value::Array(values)) = (prop.get("items"), value) {
            for v in values {
                if let Some(message) = type_error(items, v) {
                    deeper.get_or_insert(message);
                    break;
                }
            }
        }
    }
    deeper.map_or(Ok(()), Err)
}

fn type_error(schema: &Value, value: &Value) -> Option<String> {
    let wanted = schema["type"].as_str()?;
    let ok = match wanted {
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !ok {
        return Some(format!("{} is not of type '{wanted}'", py_repr(value)));
    }
    let choices = schema["enum"].as_array()?;
    if choices.contains(value) {
        return None;
    }
    let listed: Vec<String> = choices.iter().map(py_repr).collect();
    Some(format!(
        "{} is not one of [{}]",
        py_repr(value),
        listed.join(", ")
    ))
}

/// A JSON value printed the way Python prints the decoded value.
fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => kg_core::float_repr(f),
            _ => n.to_string(),
        },
        Value::String(s) => kg_core::repr_str(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", kg_core::repr_str(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn text(args: &Map<String, Value>, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::to_string)
}

fn list(args: &Map<String, Value>, key: &str) -> Option<Vec<String>> {
    args.get(key).and_then(Value::as_array).map(|items| {
        items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    })
}

fn level_arg(args: &Map<String, Value>) -> Option<Level> {
    args.get("level")
        .and_then(Value::as_str)
        .and_then(|l| Level::parse(l).ok())
}

/// One tool call as a client makes it: arguments checked against the tool's schema,
/// then run against the store.
pub fn call(
    state: &AppState,
    name: &str,
    args: &Map<String, Value>,
    client: kg_core::Client,
    now: f64,
) -> ToolText {
    let call = ToolCall {
        store: &state.store,
        renames: &state.renames,
        args,
        client,
        now,
    };
    call_in(specs(state.store.config().policy), name, &call)
}

/// Run `name` from `tools`: unknown names and arguments that break the schema are
/// answered as errors, in the reference's words.
pub(crate) fn call_in(tools: &[ToolSpec], name: &str, call: &ToolCall<'_>) -> ToolText {
    let Some(spec) = tools.iter().find(|s| s.name == name) else {
        return ToolText {
            text: format!(
                "Internal error: Unknown tool: {name} (the tools are {})",
                tools.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            ),
            is_error: true,
        };
    };
    if let Err(message) = validate(&spec.schema, call.args) {
        return ToolText {
            text: format!("Input validation error: {message}"),
            is_error: true,
        };
    }
    (spec.run)(call)
}

// The handlers, one per tool: its arguments, parsed into kg-core's own types.

fn read(c: &ToolCall<'_>) -> ToolText {
    kg_core::kg_read(
        c.store,
        &ReadArgs {
            cwd: c.text("cwd"),
            session_id: c.text("session_id"),
            id: c.text("id"),
            ids: c.list("ids"),
            level: c.level(),
            more: c.args.get("more") == Some(&Value::Bool(true)),
            client: c.client,
        },
        c.now,
    )
}

fn search(c: &ToolCall<'_>) -> ToolText {
    kg_core::kg_search(
        c.store,
        &c.need("query"),
        c.text("session_id").as_deref(),
        c.now,
    )
}

fn put_node(c: &ToolCall<'_>) -> ToolText {
    let locks = c
        .args
        .get("fields")
        .is_some_and(|f| f.get("locked").is_some());
    if c.store.config().policy == Policy::Ours && locks {
        return ToolText {
            text: format!("Error: {}", kg_core::LOCK_IS_A_PERSONS),
            is_error: true,
        };
    }
    kg_core::kg_put_node(
        c.store,
        &PutNodeArgs {
            session_id: c.sid(),
            level: c.level().unwrap_or(Level::User),
            id: c.need("id"),
            gist: c.need("gist"),
            notes: c.list("notes"),
            touches: c.list("touches"),
        },
        c.now,
    )
}

fn rename_node(c: &ToolCall<'_>) -> ToolText {
    kg_core::kg_rename_node(
        c.store,
        &c.sid(),
        &c.need("old_id"),
        &c.need("new_id"),
        c.level(),
        c.now,
    )
}

fn put_edge(c: &ToolCall<'_>) -> ToolText {
    kg_core::kg_put_edge(
        c.store,
        &PutEdgeArgs {
            session_id: c.sid(),
            level: c.level().unwrap_or(Level::User),
            from: c.need("from"),
            to: c.need("to"),
            rel: c.need("rel"),
            notes: c.list("notes"),
        },
        c.now,
    )
}

fn delete_node(c: &ToolCall<'_>) -> ToolText {
    kg_core::kg_delete_node(c.store, &c.sid(), &c.need("id"), c.now)
}

fn delete_edge(c: &ToolCall<'_>) -> ToolText {
    let key = EdgeKey::new(&c.need("from"), &c.need("to"), &c.need("rel"));
    kg_core::kg_delete_edge(c.store, &c.sid(), &key, c.now)
}

fn useful(c: &ToolCall<'_>) -> ToolText {
    kg_core::kg_useful(c.store, &c.sid(), &c.list("ids").unwrap_or_default(), c.now)
}

fn sync(c: &ToolCall<'_>) -> ToolText {
    kg_core::kg_sync(c.store, &c.sid(), c.now)
}

fn progress(c: &ToolCall<'_>) -> ToolText {
    kg_core::kg_progress(
        c.store,
        &c.sid(),
        &c.need("task_id"),
        c.args.get("state").cloned(),
        c.level().unwrap_or(Level::User),
        c.now,
    )
}

fn fix_touch(c: &ToolCall<'_>) -> ToolText {
    let renames = |root: &std::path::Path| c.renames.renames(root);
    kg_core::kg_fix_touch(
        c.store,
        &kg_core::FixTouchArgs {
            session_id: c.sid(),
            id: c.text("id"),
            touch: c.text("touch"),
            to: c.text("to"),
            level: c.level(),
        },
        &renames,
        c.now,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(name: &str) -> &'static Value {
        &specs(Policy::Ours)
            .iter()
            .find(|s| s.name == name)
            .expect("tool")
            .schema
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_reference_nine_tools_in_the_spec_order_and_ours_among_them() {
        let names = |policy| specs(policy).iter().map(|s| s.name).collect::<Vec<_>>();
        let nine = [
            "kg_read",
            "kg_search",
            "kg_put_node",
            "kg_put_edge",
            "kg_delete_node",
            "kg_delete_edge",
            "kg_useful",
            "kg_sync",
            "kg_progress",
        ];
        assert_eq!(names(Policy::Reference), nine);
        // A rename sits beside the write it amends; the touch fix comes last.
        assert_eq!(
            names(Policy::Ours),
            [
                "kg_read",
                "kg_search",
                "kg_put_node",
                "kg_rename_node",
                "kg_put_edge",
                "kg_delete_node",
                "kg_delete_edge",
                "kg_useful",
                "kg_sync",
                "kg_progress",
                "kg_fix_touch",
            ]
        );
    }

    /// A tool added as one entry of a table is listed with its schema, has its
    /// arguments checked against that schema, and runs.
    #[test]
    fn a_tool_added_in_one_place_is_listed_checked_and_callable() {
        fn shout(c: &ToolCall<'_>) -> ToolText {
            ToolText {
                text: c.need("word").to_uppercase(),
                is_error: false,
            }
        }
        let mut tools = all_specs(Policy::Ours);
        tools.push(ToolSpec {
            name: "kg_shout",
            description: "Says a word louder.",
            schema: object(json!({"word": string()}), &["word"]),
            ours_only: true,
            run: shout,
        });

        let listed = listing(&tools);
        let entry = listed
            .iter()
            .find(|t| t.name == "kg_shout")
            .expect("listed");
        assert_eq!(entry.description.as_deref(), Some("Says a word louder."));
        assert_eq!(entry.input_schema["required"], json!(["word"]));

        let home = kg_test_support::TempHome::new();
        let store = kg_test_support::open_store(&home, kg_test_support::T);
        let renames = RenameFinder::default();
        let answer = |arguments: Value| {
            let arguments = args(arguments);
            let call = ToolCall {
                store: &store,
                renames: &renames,
                args: &arguments,
                client: kg_core::Client::default(),
                now: kg_test_support::T,
            };
            call_in(&tools, "kg_shout", &call)
        };
        let checked = answer(json!({"word": 7}));
        assert!(checked.is_error);
        assert_eq!(
            checked.text,
            "Input validation error: 7 is not of type 'string'"
        );
        let missing = answer(json!({}));
        assert_eq!(
            missing.text,
            "Input validation error: 'word' is a required property"
        );
        let ran = answer(json!({"word": "hello"}));
        assert!(!ran.is_error);
        assert_eq!(ran.text, "HELLO");
        assert!(
            !tool_list(Policy::Ours).iter().any(|t| t.name == "kg_shout"),
            "the served table is not the test's"
        );
    }

    #[test]
    fn validation_messages_match_jsonschema() {
        let put = schema("kg_put_node");
        assert_eq!(
            validate(
                put,
                &args(json!({"session_id": "a", "level": "project", "id": "x"}))
            ),
            Err("'gist' is a required property".into())
        );
        assert_eq!(
            validate(
                put,
                &args(json!({"session_id": "a", "level": "project", "id": 5, "gist": "g"}))
            ),
            Err("5 is not of type 'string'".into())
        );
        assert_eq!(
            validate(
                put,
                &args(json!({"session_id": "a", "level": "team", "id": "x", "gist": "g"}))
            ),
            Err("'team' is not one of ['user', 'project']".into())
        );
        assert_eq!(
            validate(
                put,
                &args(
                    json!({"session_id": "a", "level": "user", "id": "x", "gist": "g", "notes": "n"})
                )
            ),
            Err("'n' is not of type 'array'".into())
        );
        assert_eq!(
            validate(
                put,
                &args(
                    json!({"session_id": "a", "level": "user", "id": "x", "gist": "g", "notes": [1]})
                )
            ),
            Err("1 is not of type 'string'".into())
        );
        assert!(
            validate(
                put,
                &args(
                    json!({"session_id": "a", "level": "user", "id": "x", "gist": "g", "extra": 1})
                )
            )
            .is_ok()
        );
        assert_eq!(
            validate(
                schema("kg_progress"),
                &args(json!({"session_id": "a", "task_id": "t", "state": [true, null]}))
            ),
            Err("[True, None] is not of type 'object'".into())
        );
    }
}
