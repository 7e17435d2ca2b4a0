#!/usr/bin/env python3
"""Validate the recall evaluation in tests/recall-eval/ (Python 3 standard library only).

    python3 tests/recall-eval/validate.py          # exit 0 when everything holds, 1 otherwise

Checks, per memory listed in manifest.json:
  * memories/ is byte-identical to what build_memories.py writes (reproducible);
  * every graph file parses and follows the storage format (shared/spec core.md §1, §2): top-level
    keys, node fields and their types and order, edge keys and endpoints, id / rel / endpoint
    patterns, `_meta` (versions for every node and edge, namespace, project_path placeholder);
  * realism counts: >= 150 project nodes, shares of nodes with edges / notes / touches, 35-45 %
    archived, some orphaned, typed edges including lives-in and cross-level edges, timestamps spread
    over months with some reads / likes in the last 7 days and some nodes inside the grace period;
  * the rendered size of each level (core.md §7.3) is reported; the user graph must hold no archived
    node that a refill would promote (the project graph is over its budget by design, see README.md);
  * prompts: fields, unique ids and texts, kinds and their shares, labelled ids exist, off-topic
    prompts have no labels, plus per-kind shape checks (paraphrases share no content word with the
    first relevant node's id, gist, notes and touches, also under the Snowball English and Porter stemmers
    when `snowballstemmer` is installed; multi-hop answers are neighbours of another labelled node;
    multi-topic labels fall into at least two groups not joined by an edge; at most 3 labels a prompt;
    file-path prompts name a file that a labelled node touches; short prompts are short);
  * kg_search queries: >= 40, unique, every labelled id exists, paraphrased queries share no content
    word with their first relevant node.

This script reads labels and memories only. It runs no recall or search algorithm.
"""

import calendar
import json
import os
import re
import subprocess
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))

NODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
REL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
ENDPOINT = re.compile(r"[A-Za-z0-9~/][A-Za-z0-9._~/-]{0,255}\Z")
NODE_KEYS = ["id", "gist", "notes", "touches", "_created_ts", "_last_read_ts", "_useful_ts", "_archived", "_orphaned_ts"]
KINDS = {  # target share of each kind and the allowed deviation
    "on-topic": 0.22, "paraphrase": 0.22, "multi-hop": 0.14, "file-path": 0.12,
    "off-topic": 0.14, "short": 0.035, "mixed-language": 0.035, "multi-topic": 0.08,
}
MAX_LABELS = 3  # recall@5 can reach 1 only when a prompt has at most this many labels
SHARE_TOLERANCE = 0.04
REQUIRED_RELS = {"depends-on", "calls", "caused-by", "fixed-by", "supersedes", "part-of", "configured-by",
                 "lives-in", "applies"}
DAY = 86400.0
MAX_LEVEL = 17500
FILL_CEILING = 14000

# Function words and generic verbs ignored when comparing a paraphrase with its node.
STOPWORDS = set("""
a an the and or but if then than so of to in on at by for from with without into onto over under
about after again against all also am any are as be been before being between both can cannot could
did do does doing done down during each else even every few had has have having he her here hers him
his how i im i'm is isn't it its it's just me more most my no nor not now off once only other our ours
out own same she should some still such that their theirs them there these they this those through too
up very was wasn't we were what when where which while who whom why will would you your yours yet
again ok okay please pls hey hi thanks thank let lets let's get got gets getting make makes made need
needs want wants know think see look use used using via per vs etc e g eg ie i e one two new old thing
things something anything way ways still back right left sure really maybe yes go going goes went come
comes came say says said tell like just again our us do does is are was keep kept been can't don't
doesn't didn't won't wont whats what's where's how's why's there's that's it'd i'd we're you're they're
""".split())


def fail(errors, where, msg):
    errors.append(f"{where}: {msg}")


def load_json(path, errors):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        fail(errors, os.path.relpath(path, HERE), f"does not parse: {exc}")
        return None


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


# ------------------------------------------------------------------------------------------------
# graph format
# ------------------------------------------------------------------------------------------------

def check_graph(graph, kind, where, errors, now_ts, other_ids=frozenset(), project_path=None):
    if not isinstance(graph, dict) or list(graph.keys()) != ["nodes", "edges", "_meta"]:
        fail(errors, where, "top-level keys must be exactly nodes, edges, _meta (in that order)")
        return
    nodes, edges, meta = graph["nodes"], graph["edges"], graph["_meta"]
    for key, node in nodes.items():
        w = f"{where} node {key}"
        if not isinstance(node, dict):
            fail(errors, w, "not an object")
            continue
        if node.get("id") != key:
            fail(errors, w, "id field differs from its key")
        if not NODE_ID.match(key):
            fail(errors, w, "id breaks the node id pattern")
        if key != key.lower() or "--" in key or key.endswith("-"):
            fail(errors, w, "id is not kebab-case")
        order = [k for k in node]
        unknown = [k for k in order if k not in NODE_KEYS]
        if unknown:
            fail(errors, w, f"unknown fields {unknown}")
        if order != [k for k in NODE_KEYS if k in node]:
            fail(errors, w, f"field order {order} differs from the reference's")
        gist = node.get("gist")
        if not isinstance(gist, str) or not gist.strip() or "\n" in gist:
            fail(errors, w, "gist must be a non-empty single line")
        elif len(gist) > 200:
            fail(errors, w, f"gist is {len(gist)} chars (> 200)")
        for field in ("notes", "touches"):
            if field in node and (not isinstance(node[field], list) or not node[field]
                                  or not all(isinstance(s, str) and s.strip() for s in node[field])):
                fail(errors, w, f"{field} must be a non-empty list of strings when present")
        created = node.get("_created_ts")
        if not is_num(created) or created <= 0 or created >= now_ts:
            fail(errors, w, "_created_ts missing or outside (0, now)")
            continue
        read = node.get("_last_read_ts")
        if read is not None and (not is_num(read) or not created <= read < now_ts):
            fail(errors, w, "_last_read_ts must lie between creation and now")
        likes = node.get("_useful_ts")
        if likes is not None and (not isinstance(likes, list) or not likes
                                  or not all(is_num(t) and created <= t < now_ts for t in likes)):
            fail(errors, w, "_useful_ts must be a non-empty list of times between creation and now")
        for text in [gist if isinstance(gist, str) else ""] + list(node.get("notes", [])):
            for year, month in re.findall(r"\b(20[0-9]{2})-([01][0-9])\b", text):
                if created < calendar.timegm((int(year), int(month), 1, 0, 0, 0)):
                    fail(errors, w, f"created before {year}-{month}, a month its text reports on")
        if "_archived" in node and node["_archived"] is not True:
            fail(errors, w, "_archived present but not true")
        orphaned = node.get("_orphaned_ts")
        if orphaned is not None:
            if not is_num(orphaned) or not created < orphaned < now_ts:
                fail(errors, w, "_orphaned_ts must lie between creation and now")
            if node.get("_archived") is not True:
                fail(errors, w, "orphaned node should also carry _archived: true")
            if now_ts - orphaned > 365 * DAY:
                fail(errors, w, "orphaned for more than 365 days: the server would delete it")
    node_ids = set(nodes)
    for key, edge in edges.items():
        w = f"{where} edge {key}"
        if not isinstance(edge, dict) or [k for k in edge if k not in ("from", "to", "rel", "notes")]:
            fail(errors, w, "edge must hold only from, to, rel, notes")
            continue
        frm, to, rel = edge.get("from"), edge.get("to"), edge.get("rel")
        if key != f"{frm}->{to}:{rel}":
            fail(errors, w, "key is not '<from>-><to>:<rel>'")
        if not (isinstance(rel, str) and REL.match(rel)):
            fail(errors, w, "rel breaks the rel pattern")
        if "notes" in edge and (not isinstance(edge["notes"], list) or not edge["notes"]):
            fail(errors, w, "edge notes must be a non-empty list when present")
        if frm == to:
            fail(errors, w, "self-loop")
        for end in (frm, to):
            if not (isinstance(end, str) and ENDPOINT.match(end)):
                fail(errors, w, f"endpoint {end!r} breaks the endpoint pattern")
            elif end in node_ids or "/" in end or "~" in end:
                pass
            elif end in other_ids and kind == "project" and end == to:
                pass  # cross-level edge: project node -> user node
            else:
                fail(errors, w, f"endpoint {end!r} is no node, artifact path or user node: dropped on load")
    if not isinstance(meta, dict):
        fail(errors, where, "_meta is not an object")
        return
    expected = ["versions", "progress", "project_path", "namespace"]
    if [k for k in meta] != [k for k in expected if k in meta]:
        fail(errors, where, f"_meta keys {list(meta)} not in the reference's order / set")
    if meta.get("namespace") != {"kind": kind, "owner": None}:
        fail(errors, where, "_meta.namespace must be {kind, owner: null}")
    if kind == "project":
        if meta.get("project_path") != project_path:
            fail(errors, where, f"_meta.project_path must be the placeholder {project_path!r}")
    elif "project_path" in meta:
        fail(errors, where, "a user graph has no project_path")
    versions = meta.get("versions", {})
    wanted = {f"node:{k}" for k in nodes} | {f"edge:{k}" for k in edges}
    if set(versions) != wanted:
        fail(errors, where, f"versions must cover exactly every node and edge "
                            f"(missing {len(wanted - set(versions))}, extra {len(set(versions) - wanted)})")
    for key, ver in versions.items():
        if not (isinstance(ver, dict) and list(ver) == ["v", "ts", "session"] and isinstance(ver["v"], int)
                and ver["v"] >= 1 and is_num(ver["ts"]) and ver["ts"] < now_ts
                and (ver["session"] is None or isinstance(ver["session"], str))):
            fail(errors, where, f"version entry {key} malformed")
    for key in nodes:
        ver = versions.get(f"node:{key}")
        if ver and ver["ts"] < nodes[key]["_created_ts"] - 1e-6:
            fail(errors, where, f"version of {key} is older than the node")


# ------------------------------------------------------------------------------------------------
# rendered size (core.md §7.2-7.3): what the reference charges against the 17,500-char level budget
# ------------------------------------------------------------------------------------------------

def estimate(graph):
    nodes, edges = graph["nodes"], list(graph["edges"].values())
    orphaned = {k for k, v in nodes.items() if "_orphaned_ts" in v}
    renderable = [k for k, v in nodes.items() if not v.get("_archived") and k not in orphaned]
    rset = set(renderable)
    live = []
    for ed in edges:
        f, t = ed["from"], ed["to"]
        if f in orphaned or t in orphaned:
            continue
        present = lambda x: x in rset or x not in nodes  # noqa: E731
        if present(f) or present(t):
            live.append(ed)
    degree = {k: 0 for k in renderable}
    neigh = {k: set() for k in renderable}
    for ed in live:
        f, t = ed["from"], ed["to"]
        if f in rset:
            degree[f] += 1
        if t in rset and t != f:
            degree[t] += 1
        if f in rset and t in rset and f != t:
            neigh[f].add(t)
            neigh[t].add(f)
    placed, communities = set(), []
    while len(placed) < len(renderable):
        seed = max((k for k in renderable if k not in placed), key=lambda k: (degree[k], k))
        comm, queue = [seed], [seed]
        placed.add(seed)
        while queue:
            cur = queue.pop(0)
            for nb in sorted((x for x in neigh[cur] if x not in placed), key=lambda x: (-degree[x], x)):
                placed.add(nb)
                comm.append(nb)
                queue.append(nb)
        communities.append(comm)
    communities.sort(key=lambda c: (-len(c), -degree[c[0]], c[0]))
    order = [k for c in communities for k in c]
    pos = {k: i for i, k in enumerate(order)}
    cites = {k: [] for k in order}
    for ed in live:
        f, t, rel = ed["from"], ed["to"], ed["rel"]
        if f not in rset and t not in rset:
            continue
        if f in rset and (t not in rset or pos[f] <= pos[t]):
            cites[f].append(f"    \u2192 {rel} \u2192 {t}")
        else:
            cites[t].append(f"    \u2190 {rel} \u2190 {f}")
    lines = []
    if order:
        lines.append("ACTIVE:")
    for k in order:
        lines.append(f"  {k}: {nodes[k].get('gist', '')}")
        lines.extend(cites[k])
    anchors = [k for k, v in nodes.items() if v.get("_archived") and k not in orphaned and k not in rset]
    if anchors:
        lines.append("ARCHIVED (use kg_read with id to view full content):")
        lines.extend(f"  {k}" for k in anchors)
    return sum(len(line) + 1 for line in lines)


# ------------------------------------------------------------------------------------------------
# realism counts
# ------------------------------------------------------------------------------------------------

def check_realism(name, user, project, errors, now_ts, stats, notes):
    nodes, edges = project["nodes"], list(project["edges"].values())
    where = f"{name} project"
    count = len(nodes)
    if count < 150:
        fail(errors, where, f"{count} nodes (< 150)")
    degree = {k: 0 for k in nodes}
    for ed in edges:
        for end in (ed["from"], ed["to"]):
            if end in degree:
                degree[end] += 1
    with_edges = sum(1 for k in nodes if degree[k])
    with_notes = sum(1 for v in nodes.values() if "notes" in v)
    with_touches = sum(1 for v in nodes.values() if "touches" in v)
    archived = sum(1 for v in nodes.values() if v.get("_archived"))
    orphaned = sum(1 for v in nodes.values() if "_orphaned_ts" in v)
    hot = sum(1 for v in nodes.values() if not v.get("_archived") and max(
        [v.get("_last_read_ts", 0)] + v.get("_useful_ts", [0])) >= now_ts - 7 * DAY)
    grace = sum(1 for v in nodes.values() if now_ts - v["_created_ts"] < 5 * DAY)
    created = sorted(v["_created_ts"] for v in nodes.values())
    span_days = (created[-1] - created[0]) / DAY
    rels = {ed["rel"] for ed in edges}
    lives_in = sum(1 for ed in edges if ed["rel"] == "lives-in")
    artifact_edges = sum(1 for ed in edges if "/" in ed["to"] or "~" in ed["to"])
    user_ids = set(user["nodes"])
    cross = sum(1 for ed in edges if ed["to"] in user_ids)
    edge_notes = sum(1 for ed in edges if "notes" in ed)
    gists = [len(v["gist"]) for v in nodes.values()]
    rules = [
        (with_edges / count >= 0.95, f"only {with_edges}/{count} nodes have an edge"),
        (len(edges) >= count, f"{len(edges)} edges for {count} nodes (want >= 1 per node)"),
        (with_notes / count >= 0.25, f"notes on {with_notes}/{count} nodes (< 25 %)"),
        (with_touches / count >= 0.40, f"touches on {with_touches}/{count} nodes (< 40 %)"),
        (0.35 <= archived / count <= 0.45, f"archived share {archived}/{count} outside 35-45 %"),
        (3 <= orphaned <= 20, f"{orphaned} orphaned nodes (want a few: 3-20)"),
        (hot >= 10, f"only {hot} active nodes read or liked in the last 7 days"),
        (grace >= 2, f"only {grace} nodes inside the 5-day grace period"),
        (span_days >= 150, f"nodes created over {span_days:.0f} days only"),
        (not REQUIRED_RELS - rels, f"edge types missing: {sorted(REQUIRED_RELS - rels)}"),
        (lives_in >= 3, f"{lives_in} lives-in edges (< 3)"),
        (cross >= 3, f"{cross} cross-level edges to user nodes (< 3)"),
        (edge_notes >= 1, "no edge carries notes"),
    ]
    for ok, msg in rules:
        if not ok:
            fail(errors, where, msg)
    size = estimate(project)
    if size > MAX_LEVEL:
        notes.append(f"{name}: the project's active set renders at {size} chars, over the {MAX_LEVEL} level budget; "
                     f"a maintenance tick (or the first put_node) compacts it towards {FILL_CEILING} on load")
    elif size < FILL_CEILING:
        notes.append(f"{name}: the project renders at {size} chars, under {FILL_CEILING}: refill promotes on load")
    usize = estimate(user)
    uarch = [k for k, v in user["nodes"].items() if v.get("_archived") and "_orphaned_ts" not in v]
    if usize > MAX_LEVEL or (uarch and usize < FILL_CEILING):
        fail(errors, f"{name} user", "user graph over budget, or holding archived nodes a refill would promote")
    if len(user["nodes"]) < 24:
        fail(errors, f"{name} user", f"{len(user['nodes'])} user nodes (want a few dozen)")
    stats.append(
        f"{name}: project {count} nodes ({count - archived} active, {archived} archived of which {orphaned} orphaned,"
        f" {grace} in grace, {hot} read/liked in 7 days), {len(edges)} edges ({len(rels)} rel types, {lives_in} lives-in,"
        f" {artifact_edges} to files, {cross} cross-level, {edge_notes} with notes); notes on {with_notes}, touches on"
        f" {with_touches}, edges on {with_edges}; gist mean {sum(gists) / count:.0f} / max {max(gists)} chars;"
        f" created over {span_days:.0f} days; rendered size {size} (user graph {len(user_ids)} nodes,"
        f" {len(user['edges'])} edges, size {usize})")


# ------------------------------------------------------------------------------------------------
# prompts and searches
# ------------------------------------------------------------------------------------------------

def words(text):
    text = unicodedata.normalize("NFKC", text).lower()
    return [w for w in re.split(r"[^0-9a-z\u00c0-\u024f]+", text) if w]


def stem(word):
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_terms(text):
    return {stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1}


try:  # the README's second lexical check; the standard library has no stemmer
    import snowballstemmer
    SNOWBALL = [snowballstemmer.stemmer("english"), snowballstemmer.stemmer("porter")]
except ImportError:
    SNOWBALL = []


def shared_terms(text, node_text):
    """Content words `text` shares with a node: light stemming, plus Snowball and Porter when installed."""
    shared = content_terms(text) & content_terms(node_text)
    for stemmer in SNOWBALL:
        def stems(t):
            return {stemmer.stemWord(w) for w in words(t) if w not in STOPWORDS and len(w) > 1}
        shared |= {f"{s} ({stemmer.__class__.__name__})" for s in stems(text) & stems(node_text)}
    return shared


def label_groups(labels, adjacency):
    """How many groups the labels form when only edges between labels join them."""
    groups, left = 0, set(labels)
    while left:
        groups += 1
        todo = [left.pop()]
        while todo:
            for nb in adjacency.get(todo.pop(), ()):
                if nb in left:
                    left.discard(nb)
                    todo.append(nb)
    return groups


PATH_TOKEN = re.compile(r"[\w.~-]*/[\w./~\[\]()-]*|[\w-]+\.(?:rs|ts|tsx|js|py|c|h|toml|yml|yaml|json|md|conf|dts|sql|tf|ods)\b")


def check_prompts(name, path, ids, node_text, adjacency, touches_of, states, errors, stats):
    where = os.path.relpath(path, HERE)
    try:
        with open(path, encoding="utf-8") as f:
            lines = [ln for ln in f.read().split("\n") if ln.strip()]
    except OSError as exc:
        fail(errors, where, f"missing: {exc}")
        return
    seen_ids, seen_texts, by_kind = set(), set(), {k: [] for k in KINDS}
    labelled_kinds = {k: 0 for k in KINDS}
    overlaps = []
    for no, line in enumerate(lines, 1):
        w = f"{where}:{no}"
        try:
            rec = json.loads(line)
        except ValueError as exc:
            fail(errors, w, f"does not parse: {exc}")
            continue
        if list(rec) != ["id", "kind", "prompt", "relevant"]:
            fail(errors, w, "fields must be exactly id, kind, prompt, relevant (in that order)")
            continue
        pid, kind, prompt, relevant = rec["id"], rec["kind"], rec["prompt"], rec["relevant"]
        if pid in seen_ids:
            fail(errors, w, f"duplicate id {pid}")
        seen_ids.add(pid)
        norm = " ".join(prompt.lower().split())
        if not norm:
            fail(errors, w, "empty prompt")
        if norm in seen_texts:
            fail(errors, w, f"duplicate prompt {prompt!r}")
        seen_texts.add(norm)
        if kind not in KINDS:
            fail(errors, w, f"unknown kind {kind!r}")
            continue
        by_kind[kind].append(rec)
        if not isinstance(relevant, list) or len(set(relevant)) != len(relevant):
            fail(errors, w, "relevant must be a list without repeats")
            continue
        for rid in relevant:
            if rid not in ids:
                fail(errors, w, f"labelled id {rid!r} is not a node of {name}")
        if any(rid not in ids for rid in relevant):
            continue
        if relevant:
            labelled_kinds[kind] += 1
        if kind == "off-topic" and relevant:
            fail(errors, w, "off-topic prompts have no relevant ids")
        if kind not in ("off-topic", "short") and not relevant:
            fail(errors, w, f"{kind} prompt without relevant ids")
        if len(relevant) > MAX_LABELS:
            fail(errors, w, f"{len(relevant)} relevant ids (at most {MAX_LABELS})")
        if kind == "paraphrase":
            shared = shared_terms(prompt, node_text[relevant[0]])
            if shared:
                overlaps.append(f"{pid} shares {sorted(shared)} with {relevant[0]}")
        elif kind == "multi-hop":
            if len(relevant) < 2:
                fail(errors, w, "multi-hop prompts label the answer-bearing neighbour and the match")
            elif not any(other in adjacency.get(relevant[0], ()) for other in relevant[1:]):
                fail(errors, w, f"the first relevant id {relevant[0]} is no neighbour of another labelled id")
        elif kind == "multi-topic":
            if len(relevant) < 2:
                fail(errors, w, "multi-topic prompts label a node of each topic they name")
            elif label_groups(relevant, adjacency) < 2:
                fail(errors, w, "the labels of a multi-topic prompt are all joined by edges: one topic, not several")
        elif kind == "file-path":
            tokens = [t.strip("'\"`()[],:") for t in PATH_TOKEN.findall(prompt)]
            tokens = [t for t in tokens if t]
            if not tokens:
                fail(errors, w, "file-path prompt without a path")
            else:
                names = {t.rstrip("/").split("/")[-1].split(":")[0] for t in tokens}
                hit = any(
                    any(nm and (nm in touch or t.rstrip("/") in touch) for touch in touches_of.get(rid, ())
                        for nm in names for t in tokens)
                    for rid in relevant)
                if not hit:
                    fail(errors, w, f"no labelled node touches {sorted(names)}")
        elif kind == "short":
            if len(prompt.split()) > 3 or len(prompt) > 30:
                fail(errors, w, "short prompts have at most 3 words and 30 characters")
        elif kind == "mixed-language":
            if not re.search(r"[^\x00-\x7f]", prompt) and not re.search(
                    r"\b(warum|wieso|wie|geht|nicht|schon|immer|noch|bitte|porque|por|qué|cuando|sigue|fallando|"
                    r"pourquoi|encore|quand|toujours|avec|c'est|est-ce|merci|también|ahora|wird|hängt)\b",
                    prompt.lower()):
                fail(errors, w, "mixed-language prompt without a non-English word")
    total = len(seen_ids)
    if total < 120:
        fail(errors, where, f"{total} prompts (< 120)")
    for kind, target in KINDS.items():
        share = len(by_kind[kind]) / total if total else 0
        if len(by_kind[kind]) < 5 or abs(share - target) > SHARE_TOLERANCE:
            fail(errors, where, f"kind {kind}: {len(by_kind[kind])} prompts, share {share:.2f} (target {target:.2f})")
    if not SNOWBALL:
        stats.append(f"{name}: snowballstemmer is not installed, so paraphrases were checked with the light stemmer only")
    for msg in overlaps:
        fail(errors, where, f"paraphrase overlap: {msg}")
    label_counts = [len(r["relevant"]) for recs in by_kind.values() for r in recs if r["relevant"]]
    firsts = [r["relevant"][0] for recs in by_kind.values() for r in recs if r["relevant"] and r["relevant"][0] in ids]
    first_states = {s: sum(1 for rid in firsts if states.get(rid) == s) for s in ("active", "archived", "orphaned", "user")}
    stats.append(f"{name} prompts: {total} — " + ", ".join(
        f"{k} {len(v)}" + (f" ({labelled_kinds[k]} labelled)" if k == "short" else "") for k, v in by_kind.items())
        + f"; {sum(label_counts) / max(1, len(label_counts)):.2f} relevant ids per labelled prompt; first relevant is "
        + ", ".join(f"{k} {v}" for k, v in first_states.items()))


def check_searches(name, path, ids, node_text, errors, stats):
    where = os.path.relpath(path, HERE)
    try:
        with open(path, encoding="utf-8") as f:
            lines = [ln for ln in f.read().split("\n") if ln.strip()]
    except OSError as exc:
        fail(errors, where, f"missing: {exc}")
        return
    seen_q, seen_id, kinds = set(), set(), {}
    for no, line in enumerate(lines, 1):
        w = f"{where}:{no}"
        try:
            rec = json.loads(line)
        except ValueError as exc:
            fail(errors, w, f"does not parse: {exc}")
            continue
        if list(rec) != ["id", "kind", "query", "relevant"]:
            fail(errors, w, "fields must be exactly id, kind, query, relevant (in that order)")
            continue
        if rec["kind"] not in ("direct", "paraphrase"):
            fail(errors, w, "search kind must be direct or paraphrase")
        kinds[rec["kind"]] = kinds.get(rec["kind"], 0) + 1
        q = " ".join(rec["query"].lower().split())
        if not q or q in seen_q:
            fail(errors, w, f"empty or duplicate query {rec['query']!r}")
        seen_q.add(q)
        if rec["id"] in seen_id:
            fail(errors, w, f"duplicate id {rec['id']}")
        seen_id.add(rec["id"])
        rel = rec["relevant"]
        if not isinstance(rel, list) or not rel or len(set(rel)) != len(rel):
            fail(errors, w, "relevant must be a non-empty list without repeats")
            continue
        for rid in rel:
            if rid not in ids:
                fail(errors, w, f"labelled id {rid!r} is not a node of {name}")
        if rec["kind"] == "paraphrase" and rel[0] in ids:
            shared = shared_terms(rec["query"], node_text[rel[0]])
            if shared:
                fail(errors, w, f"paraphrase query shares {sorted(shared)} with {rel[0]}")
    if len(seen_q) < 40:
        fail(errors, where, f"{len(seen_q)} queries (< 40)")
    stats.append(f"{name} searches: {len(seen_q)} ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")


# ------------------------------------------------------------------------------------------------

def main():
    errors, stats, notes = [], [], []
    manifest = load_json(os.path.join(HERE, "manifest.json"), errors)
    if manifest is None:
        print("\n".join(errors))
        return 1
    now_ts = manifest["now_ts"]
    check = subprocess.run([sys.executable, os.path.join(HERE, "build_memories.py"), "--check"],
                           capture_output=True, text=True)
    if check.returncode != 0:
        fail(errors, "build_memories.py --check", (check.stdout + check.stderr).strip())
    for name, mem in manifest["memories"].items():
        root = os.path.join(HERE, mem["storage_root"])
        user = load_json(os.path.join(root, "user.json"), errors)
        project = load_json(os.path.join(root, "projects", mem["slug"], "graph.json"), errors)
        if user is None or project is None:
            continue
        expected_path = f"<HOME>/src/{mem['slug']}"
        if mem.get("project_path") != expected_path:
            fail(errors, "manifest.json", f"{name}: project_path must be {expected_path}")
        check_graph(user, "user", f"{name}/user.json", errors, now_ts)
        check_graph(project, "project", f"{name}/graph.json", errors, now_ts,
                    other_ids=frozenset(user["nodes"]), project_path=expected_path)
        both = set(user["nodes"]) & set(project["nodes"])
        if both:
            fail(errors, name, f"ids used in both levels (labels would be ambiguous): {sorted(both)}")
        check_realism(name, user, project, errors, now_ts, stats, notes)
        all_nodes = {**user["nodes"], **project["nodes"]}
        node_text = {k: " ".join([k.replace("-", " "), v.get("gist", "")] + v.get("notes", []) + v.get("touches", []))
                     for k, v in all_nodes.items()}
        adjacency, touches_of = {}, {k: list(v.get("touches", [])) for k, v in all_nodes.items()}
        for graph in (user, project):
            for ed in graph["edges"].values():
                adjacency.setdefault(ed["from"], set()).add(ed["to"])
                adjacency.setdefault(ed["to"], set()).add(ed["from"])
                if "/" in ed["to"] and ed["from"] in touches_of:
                    touches_of[ed["from"]].append(ed["to"])
        states = {k: "user" for k in user["nodes"]}
        states.update({k: "orphaned" if "_orphaned_ts" in v else "archived" if v.get("_archived") else "active"
                       for k, v in project["nodes"].items()})
        check_prompts(name, os.path.join(HERE, mem["prompts"]), set(all_nodes), node_text, adjacency,
                      touches_of, states, errors, stats)
        check_searches(name, os.path.join(HERE, mem["searches"]), set(all_nodes), node_text, errors, stats)
    for line in stats:
        print(line)
    for line in notes:
        print("note: " + line)
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for msg in errors:
            print("  " + msg)
        return 1
    print("\nrecall-eval: all checks pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
