#!/usr/bin/env python3
"""Build the evaluation memories (storage roots) from the hand-written data in src/.

    python3 tests/recall-eval/build_memories.py            # (re)write memories/
    python3 tests/recall-eval/build_memories.py --check    # exit 1 if memories/ differs from a fresh build

The node content (ids, gists, notes, touches, edges) is literal data in src/data_<memory>.py. This
script only adds what an agent's sessions would have left behind over months of use: creation, read
and usefulness timestamps, versions with session ids, the archived / orphaned flags, and the _meta
block. Everything derives from a fixed seed and a fixed "now" (NOW_TS), so every run writes
byte-identical files.

Output per memory (a storage root, the layout the server reads under KG_STORAGE_ROOT):
    memories/<memory>/user.json
    memories/<memory>/projects/<slug>/graph.json
`_meta.project_path` holds the placeholder `<HOME>/src/<slug>`; a harness substitutes the real home
directory (see README.md).
"""

import calendar
import json
import os
import re
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "src"))
sys.dont_write_bytecode = True  # keep src/ free of __pycache__

import data_loopdesk  # noqa: E402
import data_soilsense  # noqa: E402

DAY = 86400.0
# 2026-12-03T00:00:00Z. Every timestamp in the memories lies before this instant.
NOW_TS = 1796256000.0
SEED = 20261203
MEMORIES = {"loopdesk": data_loopdesk, "soilsense": data_soilsense}

# State letters used in the data files.
ACTIVE_STATES = {"a", "h", "n"}
ARCHIVED_STATES = {"x", "o"}


def ts(value):
    """A float timestamp with a realistic sub-second part, rounded to microseconds."""
    return round(value, 6)


def mentioned_month_start(spec):
    """Epoch of the latest YYYY-MM month a node's gist or notes mention (a node is written after what it
    reports), or 0."""
    latest = 0.0
    for text in [spec["gist"]] + spec["notes"]:
        for year, month in re.findall(r"\b(20[0-9]{2})-([01][0-9])\b", text):
            stamp = calendar.timegm((int(year), int(month), 1, 0, 0, 0))
            latest = max(latest, float(stamp))
    return latest


def node_times(rng, state, not_before=0.0):
    """Created / read / useful / orphaned timestamps for one node, by its state; the node is created no
    earlier than `not_before` (plus a few days)."""
    t = {}
    created = NOW_TS - {"h": rng.uniform(20, 200), "a": rng.uniform(8, 230), "n": rng.uniform(0.3, 4.0),
                        "x": rng.uniform(90, 260), "o": rng.uniform(200, 300)}[state] * DAY
    if created < not_before:
        created = not_before + rng.uniform(3, 25) * DAY
    if state == "h":  # curated, in use: read or liked within the last week
        t["read"] = NOW_TS - rng.uniform(0.1, 6.5) * DAY
        if rng.random() < 0.6:
            likes = [NOW_TS - rng.uniform(0.2, 6.8) * DAY]
            for _ in range(rng.randint(0, 2)):
                likes.append(rng.uniform(created + DAY, likes[0]))
            t["useful"] = sorted(likes)
    elif state == "a":
        if rng.random() < 0.45:
            t["read"] = rng.uniform(max(created, NOW_TS - 90 * DAY), NOW_TS - 8 * DAY)
        if rng.random() < 0.15:
            t["useful"] = [rng.uniform(max(created, NOW_TS - 120 * DAY), NOW_TS - 10 * DAY)]
    elif state == "n":  # written in the last days: still inside the 5-day grace period
        if rng.random() < 0.5:
            t["read"] = rng.uniform(created, NOW_TS - 0.05 * DAY)
    elif state == "x":
        if rng.random() < 0.5:
            t["read"] = rng.uniform(created, NOW_TS - 40 * DAY)
        if rng.random() < 0.1:
            t["useful"] = [rng.uniform(created, NOW_TS - 60 * DAY)]
    elif state == "o":
        if rng.random() < 0.3:
            t["read"] = rng.uniform(created, NOW_TS - 150 * DAY)
        t["orphaned"] = NOW_TS - rng.uniform(5, min(80, (NOW_TS - created) / DAY - 5)) * DAY
    t["created"] = created
    return t


def build_graph(rng, nodes, edges, sessions, kind, project_path=None, maintained_days_ago=None):
    """One graph file as a Python dict, keys in the reference's order."""
    records = []
    for spec in nodes:
        t = node_times(rng, spec["state"], mentioned_month_start(spec))
        node = {"id": spec["id"], "gist": spec["gist"]}
        if spec["notes"]:
            node["notes"] = spec["notes"]
        if spec["touches"]:
            node["touches"] = spec["touches"]
        node["_created_ts"] = ts(t["created"])
        if "read" in t:
            node["_last_read_ts"] = ts(t["read"])
        if "useful" in t:
            node["_useful_ts"] = [ts(x) for x in t["useful"]]
        if spec["state"] in ARCHIVED_STATES:
            node["_archived"] = True
        if "orphaned" in t:
            node["_orphaned_ts"] = ts(t["orphaned"])
        # last write: the creation or a later update by a session, never after archiving
        last_write = t["created"]
        writes = 1
        if rng.random() < (0.55 if spec["state"] == "h" else 0.3):
            writes += rng.randint(1, 3)
            ceiling = NOW_TS - (45 * DAY if spec["state"] in ARCHIVED_STATES else 0.5 * DAY)
            if ceiling > t["created"]:
                last_write = rng.uniform(t["created"], ceiling)
        records.append((node, last_write, writes))
    # insertion order = creation order, as a long-lived graph accumulates its nodes
    records.sort(key=lambda r: r[0]["_created_ts"])
    created_of = {r[0]["id"]: r[0]["_created_ts"] for r in records}

    node_map = {}
    versions = {}
    for node, last_write, writes in records:
        node_map[node["id"]] = node
        versions[f"node:{node['id']}"] = {"v": writes, "ts": ts(last_write), "session": rng.choice(sessions)}

    edge_records = []
    for spec in edges:
        ends = [created_of[x] for x in (spec["from"], spec["to"]) if x in created_of]
        born = max(ends) if ends else NOW_TS - 200 * DAY
        when = min(born + rng.uniform(0, 2) * DAY, NOW_TS - 0.01 * DAY)
        edge = {"from": spec["from"], "to": spec["to"], "rel": spec["rel"]}
        if spec["notes"]:
            edge["notes"] = spec["notes"]
        edge_records.append((edge, when))
    edge_records.sort(key=lambda r: r[1])
    edge_map = {}
    for edge, when in edge_records:
        key = f"{edge['from']}->{edge['to']}:{edge['rel']}"
        edge_map[key] = edge
        versions[f"edge:{key}"] = {"v": 1, "ts": ts(when), "session": rng.choice(sessions)}

    # versions keep first-creation order
    ordered_versions = dict(sorted(versions.items(), key=lambda kv: kv[1]["ts"]))
    meta = {"versions": ordered_versions}
    if maintained_days_ago is not None:
        meta["progress"] = {"maintain": {"last_ts": ts(NOW_TS - maintained_days_ago * DAY), "oversized_fixed": 0}}
    if kind == "project":
        meta["project_path"] = project_path
    meta["namespace"] = {"kind": kind, "owner": None}
    return {"nodes": node_map, "edges": edge_map, "_meta": meta}


def dump(obj):
    # Python's defaults, like the reference server: 2-space indent, non-ASCII escaped
    return json.dumps(obj, indent=2) + "\n"


def build(out_root):
    written = []
    for offset, (name, data) in enumerate(sorted(MEMORIES.items())):
        rng = random.Random(SEED + offset)
        sessions = [f"{rng.getrandbits(32):08x}" for _ in range(48)]
        user = build_graph(rng, data.USER_NODES, data.USER_EDGES, sessions, "user", maintained_days_ago=None)
        project = build_graph(rng, data.NODES, data.EDGES, sessions, "project",
                              project_path=data.PROJECT_PATH, maintained_days_ago=9.3)
        root = os.path.join(out_root, name)
        for rel, graph in (("user.json", user), (os.path.join("projects", data.SLUG, "graph.json"), project)):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(dump(graph))
            written.append(path)
    return written


def tree_bytes(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = f.read()
    return out


def main(argv):
    target = os.path.join(HERE, "memories")
    if "--check" in argv:
        with tempfile.TemporaryDirectory() as tmp:
            build(tmp)
            fresh, current = tree_bytes(tmp), tree_bytes(target)
        if fresh != current:
            diff = sorted(set(fresh) ^ set(current)) + sorted(k for k in fresh if k in current and fresh[k] != current[k])
            print("memories/ is not what build_memories.py writes; differing files:", ", ".join(diff))
            return 1
        print("memories/ matches a fresh build")
        return 0
    for path in build(target):
        print("wrote", os.path.relpath(path, HERE))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
