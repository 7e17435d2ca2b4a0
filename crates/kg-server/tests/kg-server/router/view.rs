//! The neighbourhood view's routes, answered from the store and kept inside the
//! projects.

use super::*;

#[tokio::test]
async fn the_neighbourhood_view_answers_from_the_store() {
    let app = App::new();
    // a → b ← c → d, a → src/x.rs, b → a node of the other level; c archived by hand.
    for id in ["a", "b", "c", "d", "far"] {
        let put = json!({"level": "user", "id": id, "gist": format!("gist of {id}")});
        let (status, body) = app.call("POST", "/api/nodes", Some(&put.to_string())).await;
        assert_eq!(status, 200, "{body}");
    }
    for (from, to) in [
        ("a", "b"),
        ("c", "b"),
        ("c", "d"),
        ("d", "far"),
        ("a", "src/x.rs"),
        ("b", "proj-note"),
    ] {
        let edge = json!({"level": "user", "from": from, "to": to, "rel": "r"});
        let (status, body) = app
            .call("POST", "/api/edges", Some(&edge.to_string()))
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let archive = r#"{"level": "user", "actions": [{"kind": "archive", "id": "c"}]}"#;
    let (status, body) = app.call("POST", "/api/view/step", Some(archive)).await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = app
        .call("GET", "/api/view/neighbourhood?level=user&id=b&k=1", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        parse(&body),
        json!({
            "level": "user",
            "project_path": null,
            "id": "b",
            "k": 1,
            "nodes": [
                {"id": "b", "distance": 0, "tier": "active"},
                {"id": "a", "distance": 1, "tier": "active"},
                {"id": "c", "distance": 1, "tier": "archived"},
            ],
            "artifacts": [],
            "edges": [
                {"from": "a", "to": "b", "rel": "r"},
                {"from": "c", "to": "b", "rel": "r"},
            ],
            "outside_edges": 1,
        })
    );
    // k defaults to 1; k = 2 reaches d and the file a points at; k = 3 reaches `far`.
    let (_, one) = app.call("GET", "/api/view/neighbourhood?id=b", None).await;
    assert_eq!(parse(&one)["k"], 1);
    assert_eq!(parse(&one)["nodes"], parse(&body)["nodes"]);
    let (status, body) = app
        .call("GET", "/api/view/neighbourhood?level=user&id=b&k=2", None)
        .await;
    assert_eq!(status, 200, "{body}");
    let body = parse(&body);
    let ids: Vec<&str> = body["nodes"]
        .as_array()
        .map(|n| n.iter().filter_map(|x| x["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, ["b", "a", "c", "d"]);
    assert_eq!(
        body["artifacts"],
        json!([{"path": "src/x.rs", "distance": 2}])
    );
    assert_eq!(body["edges"].as_array().map(Vec::len), Some(4));
    let (status, body) = app
        .call("GET", "/api/view/neighbourhood?level=user&id=b&k=3", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(parse(&body)["nodes"][4]["id"], "far");

    // k outside 1–3, or no number at all.
    for k in ["0", "4", "-1", "two", "1.5"] {
        let (status, body) = app
            .call(
                "GET",
                &format!("/api/view/neighbourhood?level=user&id=b&k={k}"),
                None,
            )
            .await;
        assert_eq!(
            (status, body),
            (
                400,
                format!(r#"{{"detail":"Invalid k '{k}': a neighbourhood reaches 1 to 3 hops"}}"#)
            ),
            "k={k}"
        );
    }
    // An unknown node, a missing id, an unknown level.
    let (status, body) = app
        .call(
            "GET",
            "/api/view/neighbourhood?level=user&id=nope&k=2",
            None,
        )
        .await;
    assert_eq!(
        (status, body.as_str()),
        (404, r#"{"detail":"Node 'nope' not found in user graph"}"#)
    );
    let (status, body) = app.call("GET", "/api/view/neighbourhood?k=2", None).await;
    assert_eq!(
        (status, body.as_str()),
        (
            422,
            r#"{"detail":[{"loc":["query","id"],"msg":"Field required","type":"value_error"}]}"#
        )
    );
    let (status, body) = app
        .call("GET", "/api/view/neighbourhood?level=team&id=b", None)
        .await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn the_neighbourhood_view_stays_inside_the_projects() {
    let app = App::new();
    let project = app.project("app");
    for id in ["n1", "n2"] {
        let put = json!({"level": "project", "id": id, "gist": "g", "project_path": project});
        let (status, body) = app.call("POST", "/api/nodes", Some(&put.to_string())).await;
        assert_eq!(status, 200, "{body}");
    }
    let edge =
        json!({"level": "project", "from": "n1", "to": "n2", "rel": "r", "project_path": project});
    let (status, body) = app
        .call("POST", "/api/edges", Some(&edge.to_string()))
        .await;
    assert_eq!(status, 200, "{body}");
    let encoded = kg_client::encode(&project);
    let (status, body) = app
        .call(
            "GET",
            &format!("/api/view/neighbourhood?level=project&project_path={encoded}&id=n1&k=1"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let body = parse(&body);
    assert_eq!(body["project_path"], project.as_str());
    assert_eq!(
        body["nodes"],
        json!([
            {"id": "n1", "distance": 0, "tier": "active"},
            {"id": "n2", "distance": 1, "tier": "active"},
        ])
    );

    // The project level needs a project; paths that climb out of home are refused
    // before any graph is touched, and a project that does not exist is 404.
    let (status, body) = app
        .call("GET", "/api/view/neighbourhood?level=project&id=n1", None)
        .await;
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            r#"{"detail":"project_path is required for the project level"}"#
        )
    );
    let outside_home = "Project path must be within home directory: ";
    for (climb, status_wanted, detail_wanted) in [
        (format!("{project}/../../../etc"), 400, outside_home),
        ("/etc".to_string(), 400, outside_home),
        (
            "../../etc/passwd".to_string(),
            400,
            "Project path must be absolute: ",
        ),
        // Encoded dots are a folder name, not a climb: no such project.
        (
            format!("{project}/%2e%2e/%2e%2e/etc"),
            404,
            "No such project: ",
        ),
    ] {
        let uri = format!(
            "/api/view/neighbourhood?level=project&id=n1&project_path={}",
            kg_client::encode(&climb)
        );
        let (status, body) = app.call("GET", &uri, None).await;
        assert_eq!(status, status_wanted, "{climb}: {body}");
        assert!(
            parse(&body)["detail"]
                .as_str()
                .is_some_and(|d| d.starts_with(detail_wanted)),
            "{climb}: {body}"
        );
    }
    // Nothing was created for the refused paths: the one project graph is `app`'s.
    let (_, graphs) = app.call("GET", "/api/view/graphs", None).await;
    let projects: Vec<Value> = parse(&graphs)["graphs"]
        .as_array()
        .map(|g| {
            g.iter()
                .skip(1)
                .map(|x| x["project_path"].clone())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(projects, [json!(project)]);
    let missing = kg_client::encode(&app.home.join("nowhere").to_string_lossy());
    let (status, body) = app
        .call(
            "GET",
            &format!("/api/view/neighbourhood?level=project&id=n1&project_path={missing}"),
            None,
        )
        .await;
    assert_eq!(status, 404, "{body}");
}
