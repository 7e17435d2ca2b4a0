//! A new node that nearly repeats one its graph already holds (issue 37, spec
//! since-0.9.30 §3): the agent is told which, so it can fold the new lesson into the
//! existing node instead of keeping two. It never blocks a write.
//!
//! Two kinds of repeat: an id that only looks different (`Auth-flow` beside
//! `auth-flow`, `auth-fIow` with a capital I for the l), found by the Unicode
//! confusable skeleton of UTS #39 with case and separators folded; and a node that
//! holds most of the new node's words, weighed by how rare each is in the graph.

use crate::graph::Graph;
use crate::relevance;

/// Nodes a graph must hold besides the new one before content is compared: in a
/// tiny graph every node shares the few words there are.
pub const MIN_OTHER_NODES: usize = 10;
/// Share of the new node's weighed words another node must hold to be named. On the two
/// labelled memories of tests/recall-eval (370 distinct nodes), no node reaches 0.67 of
/// another.
pub const MIN_SHARE: f64 = 0.7;
/// Distinct words they must share: a short probe shares one or two with anything.
pub const MIN_SHARED_WORDS: usize = 3;

/// How the new node repeats an existing one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Repeat {
    /// The ids differ only in case, separators or look-alike characters.
    LookAlike,
    /// The existing node holds this share of the new node's weighed words.
    Content { share: f64 },
}

/// The existing node a new one repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct Similar {
    /// The existing node's id.
    pub id: String,
    /// Its gist.
    pub gist: String,
    /// How it was found.
    pub repeat: Repeat,
}

/// An id as it looks: confusable characters mapped to one prototype (UTS #39),
/// lowercased, separators dropped.
pub fn id_skeleton(id: &str) -> String {
    use unicode_security::confusable_detection::skeleton;
    skeleton(id)
        .flat_map(char::to_lowercase)
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .collect()
}

/// The node of `graph` that the node `id` (already in the graph) repeats, if any.
pub fn similar_to(graph: &Graph, id: &str) -> Option<Similar> {
    let own = graph.nodes.get_index_of(id)?;
    let skeleton = id_skeleton(id);
    let found = |other: &str, repeat| {
        graph.nodes.get(other).map(|node| Similar {
            id: other.to_string(),
            gist: node.gist().to_string(),
            repeat,
        })
    };
    if let Some(other) = graph
        .nodes
        .keys()
        .find(|other| other.as_str() != id && id_skeleton(other) == skeleton)
    {
        return found(other, Repeat::LookAlike);
    }
    if graph.nodes.len() <= MIN_OTHER_NODES {
        return None;
    }
    let overlap = relevance::closest(graph, own)?;
    if overlap.share < MIN_SHARE || overlap.shared < MIN_SHARED_WORDS {
        return None;
    }
    let (other, _) = graph.nodes.get_index(overlap.node)?;
    found(
        other,
        Repeat::Content {
            share: overlap.share,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, field};
    use serde_json::json;

    fn graph(nodes: &[(&str, &str)]) -> Graph {
        let mut g = Graph::default();
        for (id, gist) in nodes {
            let mut n = Node::new(id);
            n.set(field::GIST, json!(gist));
            g.nodes.insert((*id).to_string(), n);
        }
        g
    }

    #[test]
    fn look_alike_ids_are_named() {
        assert_eq!(id_skeleton("Auth-flow"), id_skeleton("auth-flow"));
        assert_eq!(id_skeleton("auth-fIow"), id_skeleton("auth-flow"));
        assert_eq!(id_skeleton("auth_flow"), id_skeleton("auth-flow"));
        assert_ne!(id_skeleton("auth-flows"), id_skeleton("auth-flow"));
        let g = graph(&[
            ("auth-flow", "Login goes through the SSO broker"),
            ("auth-fIow", "x"),
        ]);
        let similar = similar_to(&g, "auth-fIow").expect("named");
        assert_eq!(
            (similar.id.as_str(), similar.repeat),
            ("auth-flow", Repeat::LookAlike)
        );
    }

    #[test]
    fn a_node_that_repeats_another_is_named_and_a_new_topic_is_not() {
        let mut nodes = vec![
            (
                "cache-invalidation-rule",
                "Cache entries expire after ten minutes and are cleared on deploy",
            ),
            (
                "deploy-pipeline",
                "Deploys run through GitHub Actions, then ECS rolling update",
            ),
            (
                "db-pool-size",
                "PgBouncer pool is 40 connections per service",
            ),
            (
                "auth-jwt-ttl",
                "Access JWTs live 15 minutes, refresh tokens 30 days",
            ),
            (
                "billing-retries",
                "Stripe calls retry three times with idempotency keys",
            ),
            ("search-index", "Meilisearch reindexes tickets nightly"),
            (
                "email-bounces",
                "Postmark bounces mark the contact as unreachable",
            ),
            ("ws-idle", "The ALB closes idle WebSockets after 60 seconds"),
            (
                "s3-attachments",
                "Attachments go to S3 with presigned URLs valid 5 minutes",
            ),
            (
                "otel-sampling",
                "Traces are sampled at 10 percent in production",
            ),
            (
                "queue-visibility",
                "Jobs in the Postgres queue become visible again after 5 minutes",
            ),
        ];
        nodes.push((
            "cache-expiry-deploy",
            "Cache entries expire after ten minutes; a deploy clears them",
        ));
        let g = graph(&nodes);
        let similar = similar_to(&g, "cache-expiry-deploy").expect("a repeat");
        assert_eq!(similar.id, "cache-invalidation-rule");
        let mut fresh = nodes.clone();
        fresh.pop();
        fresh.push((
            "ui-dark-mode",
            "The web app follows the system's dark mode setting",
        ));
        assert_eq!(similar_to(&graph(&fresh), "ui-dark-mode"), None);
        // A graph too small to tell a repeat from a shared topic.
        assert_eq!(similar_to(&graph(&nodes[5..]), "cache-expiry-deploy"), None);
    }
}
