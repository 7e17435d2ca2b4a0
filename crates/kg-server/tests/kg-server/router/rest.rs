//! The REST routes: health, round trips, and the shapes of their errors; the guard
//! before any route.

use super::*;

#[tokio::test]
async fn health_answers_on_both_paths() {
    let app = App::new();
    for path in ["/health", "/api/health"] {
        let request = Request::get(path)
            .header(header::HOST, HOST)
            .body(Body::empty())
            .expect("request");
        let (status, content_type, body) = app.send(request).await;
        assert_eq!(
            (status, content_type.as_str()),
            (StatusCode::OK, "application/json")
        );
        assert_eq!(
            body,
            format!(
                r#"{{"status":"ok","version":"{}","transport":"streamable-http","active_sessions":0,"loaded_graphs":1}}"#,
                kg_server::VERSION
            )
        );
    }
}

#[tokio::test]
async fn nodes_and_edges_round_trip_through_rest() {
    let app = App::new();
    let (status, body) = app.call("POST", "/api/sessions/register", None).await;
    assert_eq!(status, 200, "{body}");
    assert!(parse(&body)["session_id"].is_string(), "{body}");

    let put = r#"{"level": "user", "id": "cache-ttl", "gist": "TTL is 5 min", "notes": ["n"]}"#;
    let (status, body) = app.call("POST", "/api/nodes", Some(put)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(parse(&body)["node"]["gist"], "TTL is 5 min");
    let edge = r#"{"level": "user", "from": "cache-ttl", "to": "src/cache.rs", "rel": "in"}"#;
    let (status, body) = app.call("POST", "/api/edges", Some(edge)).await;
    assert_eq!(
        (status, parse(&body)),
        (
            200,
            json!({"edge": {"from": "cache-ttl", "to": "src/cache.rs", "rel": "in"}, "level": "user"})
        )
    );

    let (status, body) = app.call("GET", "/api/nodes/user/cache-ttl", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(parse(&body)["edges"].as_array().map(Vec::len), Some(1));

    let path = "/api/edges/user/cache-ttl/src%2Fcache.rs/in";
    let (status, body) = app.call("DELETE", path, None).await;
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"deleted":true,"level":"user"}"#)
    );
    let (status, body) = app.call("DELETE", "/api/nodes/user/cache-ttl", None).await;
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            r#"{"deleted":"cache-ttl","level":"user","edges_deleted":0}"#
        )
    );
    let (status, body) = app.call("DELETE", "/api/nodes/user/cache-ttl", None).await;
    assert_eq!(
        (status, body.as_str()),
        (
            404,
            r#"{"detail":"Node 'cache-ttl' not found in user graph"}"#
        )
    );

    // `state: null` is a state like any other; only a missing one is refused.
    let (status, body) = app
        .call(
            "POST",
            "/api/progress",
            Some(r#"{"task_id": "t", "state": null}"#),
        )
        .await;
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"task_id":"t","stored":true}"#)
    );
}

#[tokio::test]
async fn unknown_paths_and_methods() {
    let app = App::new();
    // Under /api a JSON detail, elsewhere plain text.
    let request = Request::get("/api/nope")
        .header(header::HOST, HOST)
        .body(Body::empty())
        .expect("request");
    assert_eq!(
        app.send(request).await,
        (
            StatusCode::NOT_FOUND,
            "application/json".into(),
            r#"{"detail":"Not Found"}"#.into()
        )
    );
    let request = Request::get("/nope")
        .header(header::HOST, HOST)
        .body(Body::empty())
        .expect("request");
    assert_eq!(
        app.send(request).await,
        (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8".into(),
            "Not Found".into()
        )
    );
    // A known path with the wrong method: the router's own 405, naming what is allowed.
    let request = Request::get("/api/nodes")
        .header(header::HOST, HOST)
        .body(Body::empty())
        .expect("request");
    let response = app.router.clone().oneshot(request).await.expect("answer");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        response
            .headers()
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok()),
        Some("POST")
    );
    let (status, body) = app.call("PUT", "/api/nodes/user/x", None).await;
    assert_eq!((status, body.as_str()), (405, ""));
}

#[tokio::test]
async fn bad_bodies_get_todays_error_shapes() {
    let app = App::new();
    let problem = |field: &str, msg: &str| {
        format!(r#"{{"loc":["body","{field}"],"msg":"{msg}","type":"value_error"}}"#)
    };
    // Every field problem at once, in the order the fields are read.
    let (status, body) = app
        .call(
            "POST",
            "/api/nodes",
            Some(
                r#"{"level": null, "id": 5, "notes": "n", "touches": ["a", 1], "session_id": []}"#,
            ),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body,
        format!(
            r#"{{"detail":[{},{},{},{},{},{}]}}"#,
            problem("level", "Field required"),
            problem("id", "Input should be a valid string"),
            problem("gist", "Field required"),
            problem("notes", "Input should be a list of strings"),
            problem("touches", "Input should be a list of strings"),
            problem("session_id", "Input should be a valid string"),
        )
    );
    let (status, body) = app
        .call(
            "POST",
            "/api/edges",
            Some(r#"{"from": "a", "notes": [true]}"#),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body,
        format!(
            r#"{{"detail":[{},{},{},{}]}}"#,
            problem("level", "Field required"),
            problem("to", "Field required"),
            problem("rel", "Field required"),
            problem("notes", "Input should be a list of strings"),
        )
    );
    let (status, body) = app
        .call("POST", "/api/progress", Some(r#"{"level": 1}"#))
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body,
        format!(
            r#"{{"detail":[{},{},{}]}}"#,
            problem("task_id", "Field required"),
            problem("level", "Input should be a valid string"),
            problem("state", "Field required"),
        )
    );
    let (status, body) = app.call("POST", "/api/nodes", Some("[1]")).await;
    assert_eq!(
        (status, body),
        (
            422,
            format!(
                r#"{{"detail":[{}]}}"#,
                problem("", "the body must be a JSON object")
            )
        )
    );
    let (status, body) = app.call("POST", "/api/nodes", Some(r#"{"id": "x""#)).await;
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            r#"{"detail":"Malformed JSON body: EOF while parsing an object at line 1 column 10"}"#
        )
    );
    // Checked after the fields: the identifier first, then the level.
    let (status, body) = app
        .call(
            "POST",
            "/api/nodes",
            Some(r#"{"level": "team", "id": "a b", "gist": "g"}"#),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        parse(&body)["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Invalid node id")),
        "{body}"
    );
    let (status, body) = app
        .call(
            "POST",
            "/api/nodes",
            Some(r#"{"level": "team", "id": "ab", "gist": "g"}"#),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        parse(&body)["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Invalid level 'team'")),
        "{body}"
    );

    let request = Request::post("/api/nodes")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from("{}"))
        .expect("request");
    assert_eq!(
        app.send(request).await,
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "application/json".into(),
            r#"{"detail":"Send the body as JSON with Content-Type: application/json"}"#.into()
        )
    );
    let huge = format!(r#"{{"gist": "{}"}}"#, "x".repeat(2 << 20));
    let (status, body) = app.call("POST", "/api/nodes", Some(&huge)).await;
    assert_eq!(
        (status, body.as_str()),
        (
            413,
            r#"{"detail":"Request body is larger than the 1 MiB limit"}"#
        )
    );
    // A hook never breaks a session: an unusable body is answered with silence.
    for path in ["/api/prompt_context", "/api/tool_event"] {
        let (status, body) = app.call("POST", path, Some("[")).await;
        assert_eq!((status, body.as_str()), (200, "{}"), "{path}");
    }
}

#[tokio::test]
async fn query_and_path_errors() {
    let app = App::new();
    let (status, body) = app.call("GET", "/api/session_bootstrap", None).await;
    assert_eq!(
        (status, body.as_str()),
        (
            422,
            r#"{"detail":[{"loc":["query","project_path"],"msg":"Field required","type":"value_error"}]}"#
        )
    );
    let (status, body) = app
        .call("GET", "/api/session_state?project_path=", None)
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = app.call("GET", "/api/nodes/team/x", None).await;
    assert_eq!(status, 400);
    assert!(
        parse(&body)["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Invalid level 'team'")),
        "{body}"
    );
    let (status, body) = app.call("GET", "/api/sessions/0123abcd/stats", None).await;
    assert_eq!(status, 404, "{body}");
    assert!(
        parse(&body)["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Unknown session: 0123abcd.")),
        "{body}"
    );
    let outside = app
        .call("GET", "/api/graph/read?project_path=/etc", None)
        .await;
    assert_eq!(outside.0, 400, "{}", outside.1);
    let missing = format!(
        "/api/graph/read?project_path={}",
        kg_client::encode(&app.home.join("nowhere").to_string_lossy())
    );
    let (status, body) = app.call("GET", &missing, None).await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn view_routes_answer_their_own_errors() {
    let app = App::new();
    let (status, body) = app.call("POST", "/api/view/step", Some("{}")).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("missing field `level`"), "{body}");
    let (status, body) = app
        .call(
            "POST",
            "/api/view/step",
            Some(r#"{"level": "user", "actions": [{"kind": "gone", "id": "x"}]}"#),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("unknown variant `gone`"), "{body}");
    let (status, body) = app
        .call(
            "POST",
            "/api/view/step",
            Some(r#"{"level": "user", "actions": [{"kind": "promote", "id": "x"}]}"#),
        )
        .await;
    assert_eq!(
        (status, body.as_str()),
        (404, r#"{"detail":"Node 'x' not found in user graph"}"#)
    );
    let (status, body) = app.call("GET", "/api/view/level?level=project", None).await;
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            r#"{"detail":"project_path is required for the project level"}"#
        )
    );
    let (status, body) = app
        .call("GET", "/api/view/search?q=x&levels=user,team", None)
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = app.call("GET", "/api/view/graphs", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(parse(&body)["graphs"][0]["graph"], "user");

    // A move that works: put a node in a project, archive it by hand, promote it back.
    let project = app.project("app");
    let put = json!({"level": "project", "id": "n1", "gist": "g", "project_path": project});
    let (status, body) = app.call("POST", "/api/nodes", Some(&put.to_string())).await;
    assert_eq!(status, 200, "{body}");
    for (kind, list) in [("archive", "archived"), ("promote", "promoted")] {
        let step = json!({"level": "project", "project_path": project,
                          "actions": [{"kind": kind, "id": "n1"}]});
        let (status, body) = app
            .call("POST", "/api/view/step", Some(&step.to_string()))
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(parse(&body)[list], json!(["n1"]), "{kind}");
    }
}

#[tokio::test]
async fn the_guard_refuses_strangers_before_any_route() {
    let app = App::new();
    let get = |host: Option<&str>, extra: &[(&str, &str)]| {
        let mut request = Request::get("/api/health");
        if let Some(host) = host {
            request = request.header(header::HOST, host);
        }
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        request.body(Body::empty()).expect("request")
    };
    let text = "text/plain; charset=utf-8".to_string();
    let misdirected = (
        StatusCode::MISDIRECTED_REQUEST,
        text.clone(),
        "Misdirected Request: Host must be local".to_string(),
    );
    assert_eq!(app.send(get(Some("evil.example"), &[])).await, misdirected);
    assert_eq!(app.send(get(None, &[])).await, misdirected);
    assert_eq!(
        app.send(get(Some("localhost:80@evil.example"), &[])).await,
        misdirected
    );
    let cross_site = (
        StatusCode::FORBIDDEN,
        text.clone(),
        "Forbidden: KG Memory does not answer requests made by another site's page; open the graph view by typing its address".to_string(),
    );
    for site in ["cross-site", "same-site", "someday"] {
        assert_eq!(
            app.send(get(Some(HOST), &[("sec-fetch-site", site)])).await,
            cross_site,
            "{site}"
        );
    }
    let foreign_origin = (
        StatusCode::FORBIDDEN,
        text,
        "Forbidden: requests from this page's origin are not accepted; KG Memory only talks to its own pages".to_string(),
    );
    for origin in ["http://evil.example", "http://127.0.0.1:9999", "null"] {
        assert_eq!(
            app.send(get(Some(HOST), &[("origin", origin)])).await,
            foreign_origin,
            "{origin}"
        );
    }
    // The page's own origin, the user's own navigation and the tray's webview pass.
    for extra in [
        [
            ("origin", "http://127.0.0.1:8765"),
            ("sec-fetch-site", "same-origin"),
        ],
        [("origin", "tauri://localhost"), ("sec-fetch-site", "none")],
    ] {
        let (status, _, body) = app.send(get(Some(HOST), &extra)).await;
        assert_eq!(status, StatusCode::OK, "{extra:?}: {body}");
    }
    let (status, _, _) = app.send(get(Some("localhost"), &[])).await;
    assert_eq!(status, StatusCode::OK);
    // A refused mutation never reaches the store.
    let request = Request::post("/api/nodes")
        .header(header::HOST, HOST)
        .header("sec-fetch-site", "cross-site")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"level": "user", "id": "x", "gist": "g"}"#))
        .expect("request");
    assert_eq!(app.send(request).await.0, StatusCode::FORBIDDEN);
    let (status, _) = app.call("GET", "/api/nodes/user/x", None).await;
    assert_eq!(status, 404);
}
