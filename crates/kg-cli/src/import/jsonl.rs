//! The official MCP memory server's file (`@modelcontextprotocol/server-memory`,
//! `memory.jsonl`): one JSON object per line, either
//! `{"type":"entity","name":…,"entityType":…,"observations":[…]}` or
//! `{"type":"relation","from":…,"to":…,"relationType":…}`. Blank lines are ignored,
//! as that server ignores them.
//!
//! Mapping: an entity becomes a node whose id is its name as kebab-case (the name is
//! kept in a note when that changed it), whose gist is its first observation (cut to
//! the scan limit, the whole text then kept in the notes) and whose notes are the
//! other observations plus where it came from and its entity type. A relation becomes
//! an edge labelled with its relation type as kebab-case.

use super::text::{NODE_ID_CHARS, REL_CHARS, fit_notes, headline, one_line, quoted, slug};
use super::{NewEdge, NewNode, Parsed, Problem, Skip};
use serde_json::Value;
use std::collections::HashMap;

/// Parse the whole file, or say everything that is wrong with it.
pub fn parse(text: &str, file_name: &str) -> Result<Parsed, Vec<Problem>> {
    let mut parsed = Parsed::default();
    let mut problems = Vec::new();
    // Entity name → (line, id); id → (line, name): names must be unique, and so must
    // the ids made from them.
    let mut names: HashMap<String, (usize, String)> = HashMap::new();
    let mut ids: HashMap<String, (usize, String)> = HashMap::new();
    let mut relations: Vec<(usize, String, String, String)> = Vec::new();
    let mut seen_relations: HashMap<(String, String, String), usize> = HashMap::new();

    for (index, raw) in text.split('\n').enumerate() {
        let line = index + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if raw.trim().is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(raw) {
            Ok(v) => v,
            Err(e) => {
                problems.push(Problem::at(line, format!("not a JSON object ({e})")));
                continue;
            }
        };
        let Some(object) = value.as_object() else {
            problems.push(Problem::at(
                line,
                "not a JSON object: each line must be one entity or one relation".into(),
            ));
            continue;
        };
        match object.get("type").and_then(Value::as_str) {
            Some("entity") => match entity(object, line, file_name) {
                Ok((name, node)) => {
                    if let Some((first, _)) = names.get(&name) {
                        problems.push(Problem::at(
                            line,
                            format!(
                                "the entity {} is already on line {first}; each name may appear once (merge the two lines)",
                                quoted(&name)
                            ),
                        ));
                        continue;
                    }
                    if let Some((first, other)) = ids.get(&node.id) {
                        problems.push(Problem::at(
                            line,
                            format!(
                                "the entity {} would get the node id '{}', which the entity {} on line {first} already gets; rename one of them",
                                quoted(&name),
                                node.id,
                                quoted(other)
                            ),
                        ));
                        continue;
                    }
                    names.insert(name.clone(), (line, node.id.clone()));
                    ids.insert(node.id.clone(), (line, name));
                    parsed.nodes.push(node);
                }
                Err(problem) => problems.push(problem),
            },
            Some("relation") => match relation(object, line) {
                Ok((from, to, rel_type)) => {
                    let key = (from.clone(), to.clone(), rel_type.clone());
                    if let Some(first) = seen_relations.get(&key) {
                        parsed.skipped.push(Skip {
                            line,
                            reason: format!("the same relation as line {first}"),
                        });
                        continue;
                    }
                    seen_relations.insert(key, line);
                    relations.push((line, from, to, rel_type));
                }
                Err(problem) => problems.push(problem),
            },
            // The memory server itself ignores any other line; say so instead.
            Some(other) => parsed.skipped.push(Skip {
                line,
                reason: format!(
                    "its type {} is neither \"entity\" nor \"relation\"",
                    quoted(other)
                ),
            }),
            None => parsed.skipped.push(Skip {
                line,
                reason: "it has no \"type\" (\"entity\" or \"relation\")".into(),
            }),
        }
    }

    // Relations may come before the entities they name, so they are resolved last.
    for (line, from, to, rel_type) in relations {
        let rel = slug(&rel_type, REL_CHARS);
        if rel.is_empty() {
            problems.push(Problem::at(
                line,
                format!(
                    "the relation type {} has no Latin letters or digits (a-z, 0-9), which edge labels are made of; rename it",
                    quoted(&rel_type)
                ),
            ));
            continue;
        }
        let mut edge = NewEdge {
            from: String::new(),
            to: String::new(),
            rel,
            line,
            outside: Vec::new(),
        };
        let mut resolvable = true;
        for (name, end) in [(&from, &mut edge.from), (&to, &mut edge.to)] {
            if let Some((_, id)) = names.get(name) {
                *end = id.clone();
                continue;
            }
            // Not an entity of this file: it may be a node the graph already has.
            let id = slug(name, NODE_ID_CHARS);
            if id.is_empty() {
                problems.push(Problem::at(
                    line,
                    format!(
                        "the relation names {}, which is no entity of this file and has no Latin letters or digits (a-z, 0-9), which node ids are made of",
                        quoted(name)
                    ),
                ));
                resolvable = false;
                continue;
            }
            *end = id.clone();
            edge.outside.push((name.clone(), id));
        }
        if resolvable {
            parsed.edges.push(edge);
        }
    }

    if problems.is_empty() {
        Ok(parsed)
    } else {
        Err(problems)
    }
}

fn text_field<'a>(
    object: &'a serde_json::Map<String, Value>,
    key: &str,
    line: usize,
    what: &str,
) -> Result<&'a str, Problem> {
    match object.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(Value::String(_)) => Err(Problem::at(line, format!("{what} has an empty \"{key}\""))),
        Some(_) => Err(Problem::at(
            line,
            format!("{what}'s \"{key}\" must be a string"),
        )),
        None => Err(Problem::at(line, format!("{what} has no \"{key}\""))),
    }
}

/// An entity line as (its name, its node).
fn entity(
    object: &serde_json::Map<String, Value>,
    line: usize,
    file_name: &str,
) -> Result<(String, NewNode), Problem> {
    let name = text_field(object, "name", line, "the entity")?.to_string();
    // The memory server always writes a type; a missing one costs nothing but a note.
    let entity_type = match object.get("entityType") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(one_line(s)).filter(|s| !s.is_empty()),
        Some(_) => {
            return Err(Problem::at(
                line,
                format!(
                    "the entity {}'s \"entityType\" must be a string",
                    quoted(&name)
                ),
            ));
        }
    };
    let observations: Vec<String> = match object.get("observations") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(Problem::at(
                    line,
                    format!(
                        "the entity {}'s \"observations\" must be a list of strings",
                        quoted(&name)
                    ),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(Problem::at(
                line,
                format!(
                    "the entity {}'s \"observations\" must be a list of strings",
                    quoted(&name)
                ),
            ));
        }
    };
    let observations: Vec<String> = observations
        .iter()
        .map(|o| one_line(o))
        .filter(|o| !o.is_empty())
        .collect();

    let id = slug(&name, NODE_ID_CHARS);
    let shape = kg_core::IdShape::of(&id);
    if shape.too_long() {
        return Err(Problem::at(
            line,
            format!(
                "the entity name {} makes the node id '{id}' of {} words, and ids of new nodes have at most {}; shorten the name in the file (the full name may stay in its observations)",
                quoted(&name),
                shape.words,
                kg_core::MAX_ID_WORDS
            ),
        ));
    }
    if id.is_empty() {
        return Err(Problem::at(
            line,
            format!(
                "the entity name {} has no Latin letters or digits (a-z, 0-9), which node ids are made of; rename it in the file (the name may stay in its observations)",
                quoted(&name)
            ),
        ));
    }
    let (gist, cut) = match observations.first() {
        Some(first) => headline(first),
        None => headline(&match &entity_type {
            Some(t) => format!("{name} ({t})"),
            None => name.clone(),
        }),
    };
    // The first observation is the gist; it is repeated in the notes only when the
    // gist had to be cut.
    let rest = if cut || observations.is_empty() {
        &observations[..]
    } else {
        &observations[1..]
    };
    let mut provenance = format!(
        "Imported from {file_name} line {line}: entity {}",
        quoted(&name)
    );
    if let Some(t) = &entity_type {
        provenance.push_str(&format!(" of type {}", quoted(t)));
    }
    provenance.push('.');
    let mut notes = fit_notes(rest, 1).map_err(|chars| {
        Problem::at(
            line,
            format!(
                "the entity {} holds {chars} characters of observations, more than one node keeps ({} notes of {} characters); split it into several entities",
                quoted(&name),
                kg_core::MAX_NOTES,
                kg_core::MAX_NOTE_CHARS
            ),
        )
    })?;
    notes.push(provenance);
    // A name only lowercased is no rename worth showing; the note keeps it anyway.
    let renamed_from = (id != name.to_lowercase()).then(|| name.clone());
    Ok((
        name,
        NewNode {
            id,
            gist,
            notes,
            line,
            renamed_from,
        },
    ))
}

/// A relation line as (from, to, relation type), names as the file spells them.
fn relation(
    object: &serde_json::Map<String, Value>,
    line: usize,
) -> Result<(String, String, String), Problem> {
    let from = text_field(object, "from", line, "the relation")?;
    let to = text_field(object, "to", line, "the relation")?;
    let rel_type = text_field(object, "relationType", line, "the relation")?;
    Ok((from.to_string(), to.to_string(), rel_type.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_and_relations_become_nodes_and_edges() {
        let text = concat!(
            r#"{"type":"entity","name":"John_Smith","entityType":"person","observations":["Speaks fluent Spanish","Graduated in 2019"]}"#,
            "\n\n",
            r#"{"type":"relation","from":"John_Smith","to":"Anthropic","relationType":"works_at"}"#,
            "\n",
            r#"{"type":"entity","name":"Anthropic","entityType":"organization","observations":[]}"#,
        );
        let parsed = parse(text, "memory.jsonl").expect("valid");
        let ids: Vec<_> = parsed.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["john-smith", "anthropic"]);
        let john = &parsed.nodes[0];
        assert_eq!(john.gist, "Speaks fluent Spanish");
        assert_eq!(
            john.notes,
            [
                "Graduated in 2019",
                "Imported from memory.jsonl line 1: entity \"John_Smith\" of type \"person\"."
            ]
        );
        assert_eq!(john.renamed_from.as_deref(), Some("John_Smith"));
        assert_eq!(parsed.nodes[1].gist, "Anthropic (organization)");
        let edge = &parsed.edges[0];
        assert_eq!(
            (
                edge.from.as_str(),
                edge.to.as_str(),
                edge.rel.as_str(),
                edge.line
            ),
            ("john-smith", "anthropic", "works-at", 3)
        );
        assert!(edge.outside.is_empty());
    }

    #[test]
    fn every_problem_is_reported_with_its_line() {
        let text = concat!(
            "{\"type\":\"entity\",\"name\":\"A\",\"observations\":[]}\n",
            "{not json\n",
            "{\"type\":\"entity\",\"name\":\"A\",\"observations\":[]}\n",
            "{\"type\":\"entity\",\"name\":\"a\",\"observations\":[]}\n",
            "{\"type\":\"entity\",\"name\":\"🎉\"}\n",
            "{\"type\":\"relation\",\"from\":\"A\",\"to\":\"B\"}\n",
            "{\"type\":\"entity\",\"name\":\"C\",\"observations\":\"x\"}\n",
            "[1]\n",
        );
        let problems = parse(text, "m.jsonl").expect_err("bad input");
        let lines: Vec<_> = problems.iter().map(|p| p.line).collect();
        assert_eq!(
            lines,
            [
                Some(2),
                Some(3),
                Some(4),
                Some(5),
                Some(6),
                Some(7),
                Some(8)
            ]
        );
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert!(text[1].contains("already on line 1"), "{}", text[1]);
        assert!(text[2].contains("node id 'a'"), "{}", text[2]);
        assert!(
            text[3].contains("no Latin letters or digits"),
            "{}",
            text[3]
        );
        assert!(text[4].contains("no \"relationType\""), "{}", text[4]);
    }

    #[test]
    fn unknown_lines_and_repeated_relations_are_skipped_with_a_reason() {
        let text = concat!(
            "{\"type\":\"relation\",\"from\":\"A\",\"to\":\"B\",\"relationType\":\"knows\"}\n",
            "{\"type\":\"relation\",\"from\":\"A\",\"to\":\"B\",\"relationType\":\"knows\"}\n",
            "{\"type\":\"note\",\"text\":\"hi\"}\n",
        );
        let parsed = parse(text, "m.jsonl").expect("valid");
        assert_eq!(parsed.edges.len(), 1);
        assert_eq!(
            parsed.edges[0].outside.len(),
            2,
            "neither end is in the file"
        );
        let skipped: Vec<_> = parsed.skipped.iter().map(|s| s.line).collect();
        assert_eq!(skipped, [2, 3]);
    }
}
