#!/usr/bin/env python3
"""Run the public reference kg-memory 0.17.0 on the recall evaluation, as a black box.

    python3 -m venv /tmp/v017 && /tmp/v017/bin/pip install kg-memory==0.17.0
    python3 tests/recall-eval/run_reference_017.py --kg /tmp/v017/bin/kg \\
        --out tests/recall-eval/runs/kg-memory-0.17.0.json
    make eval EVAL_ARGS="--runs tests/recall-eval/runs/kg-memory-0.17.0.json"

Python 3 standard library only. The reference is used only through what it serves: its
HTTP hook endpoint, its REST session registry and its MCP tools. Per memory of the
manifest:

1. Copy the storage root to a scratch folder, replace `<HOME>` by a scratch home (JSON
   escaped), create `<home>/src/<slug>`, and shift every timestamp by (now - now_ts), so
   the data is as old, relative to the reference's clock, as it is to the frozen `now_ts`
   the in-process evaluation uses.
2. Settle: start `kg serve` (HOME, KG_STORAGE_ROOT, a free KG_HTTP_PORT,
   KG_UPDATE_CHECK=0, KG_SAVE_INTERVAL=1), load the project graph, wait until its first
   maintenance tick has saved the compacted graph, stop it. The in-process evaluation
   runs one tick too; the reference compacts to its own budget.
3. Write the session records the clean protocol needs into `sessions.json` (see below),
   then start `kg serve` again with ticks far apart, so the graph holds still.
4. Every prompt, once per protocol, each in its own session:
   - clean: a session that counts its full read as done and has seen nothing. The
     reference has no call that counts the full read without showing the graph (until
     then every prompt gets only the full-read nudge, which `first` measures), so these
     records are written into its `sessions.json` before it starts, bound to the hook's
     session id as its own bootstrap binds them;
   - live: `POST /api/sessions/register`, then `kg_read(session_id, cwd)` over MCP (the
     full read: every active gist seen), then the prompt, bound the way a Claude Code
     session binds: the hook's transcript holds the full read's `Session: <id>` line;
   - first: a registered session, no full read, bound the same way.
   The prompt goes to `POST /api/prompt_context` as the UserPromptSubmit hook payload
   (the route its installed `kg-remind.sh` hook posts to). The reply's additionalContext
   is stored as it came (empty for `{}`); recall-eval parses it with the same parser it
   uses for our own replies.
5. Every kg_search query over MCP, each with its own clean session.

The runs file it writes is scored by `recall-eval --runs FILE` with the very code that
scores our policies. Nothing of the reference is read or copied: only its answers.
"""

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM = "kg-memory 0.17.0"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shifted(value, shift, home_json):
    """The graph JSON with every timestamp moved by `shift` and `<HOME>` replaced."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            is_time = key == "ts" or key.endswith("_ts")
            if is_time and isinstance(item, (int, float)) and not isinstance(item, bool):
                out[key] = item + shift
            elif is_time and isinstance(item, list):
                out[key] = [t + shift if isinstance(t, (int, float)) else t for t in item]
            else:
                out[key] = shifted(item, shift, home_json)
        return out
    if isinstance(value, list):
        return [shifted(item, shift, home_json) for item in value]
    if isinstance(value, str):
        return value.replace("<HOME>", home_json)
    return value


def prepare(memory_dir, scratch, now_ts):
    home = os.path.realpath(os.path.join(scratch, "home"))
    root = os.path.join(scratch, "root")
    os.makedirs(home)
    shutil.copytree(memory_dir, root)
    # Inside a JSON string the home must be escaped like any other text.
    home_json = json.dumps(home)[1:-1]
    shift = time.time() - now_ts
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".json"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    data = json.load(f)
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(shifted(data, shift, home_json), f, ensure_ascii=False)
    return home, root


class Server:
    """`kg serve` on a free port over a scratch home and storage root."""

    def __init__(self, kg, home, root, save_interval, log):
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KG_", "CLAUDE"))}
        env.update(HOME=home, KG_STORAGE_ROOT=root, KG_HTTP_PORT=str(self.port),
                   KG_UPDATE_CHECK="0", KG_SAVE_INTERVAL=str(save_interval))
        self.proc = subprocess.Popen([kg, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 60
        while True:
            try:
                self.get("/health")
                break
            except (OSError, urllib.error.URLError):
                if self.proc.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"kg serve did not come up on port {self.port}; see its log")
                time.sleep(0.2)
        self.mcp_session = None
        self.mcp_id = 0

    def get(self, path):
        with urllib.request.urlopen(self.base + path, timeout=60) as r:
            return json.loads(r.read())

    def post(self, path, body):
        req = urllib.request.Request(self.base + path, json.dumps(body).encode(),
                                     {"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())

    def mcp(self, method, params=None, notify=False):
        """One JSON-RPC message over streamable HTTP (a JSON or an SSE answer)."""
        body = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        if not notify:
            self.mcp_id += 1
            body["id"] = self.mcp_id
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.mcp_session:
            headers["mcp-session-id"] = self.mcp_session
        req = urllib.request.Request(self.base + "/", json.dumps(body).encode(), headers)
        with urllib.request.urlopen(req, timeout=120) as r:
            self.mcp_session = r.headers.get("mcp-session-id") or self.mcp_session
            raw = r.read().decode("utf-8")
            kind = r.headers.get("content-type", "")
        if notify:
            return None
        messages = ([json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]
                    if kind.startswith("text/event-stream") else [json.loads(raw)])
        for message in messages:
            if message.get("id") == body["id"]:
                if "error" in message:
                    raise SystemExit(f"MCP {method} failed: {message['error']}")
                return message["result"]
        raise SystemExit(f"MCP {method}: no answer in {raw[:300]!r}")

    def connect(self):
        self.mcp("initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                "clientInfo": {"name": "recall-eval", "version": "1"}})
        self.mcp("notifications/initialized", notify=True)

    def tool(self, name, arguments):
        result = self.mcp("tools/call", {"name": name, "arguments": arguments})
        text = "".join(part.get("text", "") for part in result.get("content", []))
        if result.get("isError"):
            raise SystemExit(f"{name}({arguments}) failed: {text[:300]}")
        return text

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def settle(kg, home, root, project, graph_file, log):
    """Load the project graph and let one maintenance tick save it, then stop."""
    before = os.stat(graph_file).st_mtime_ns
    server = Server(kg, home, root, 1, log)
    try:
        server.get("/api/graph/read?" + urllib.parse.urlencode({"project_path": project}))
        deadline = time.time() + 30
        while os.stat(graph_file).st_mtime_ns == before and time.time() < deadline:
            time.sleep(0.2)
    finally:
        server.stop()
    return os.stat(graph_file).st_mtime_ns != before


def session_ids(count):
    ids = set()
    while len(ids) < count:
        ids.add(secrets.token_hex(4))
    return sorted(ids)


def write_clean_sessions(root, project, claude_ids):
    """Session records that count the full read as done and have seen nothing."""
    path = os.path.join(root, "sessions.json")
    sessions = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            sessions = json.load(f)
    now = time.time()
    out = {}
    for sid, claude in zip(session_ids(len(claude_ids)), claude_ids):
        sessions[sid] = {"start_ts": now, "project_path": project, "last_activity": now,
                         "op_count": 0, "full_read_ts": now, "claude_sid": claude}
        out[claude] = sid
    with open(path, "w", encoding="utf-8") as f:
        json.dump(sessions, f)
    return out


def hook_payload(claude, project, prompt, transcript=""):
    return {"session_id": claude, "transcript_path": transcript, "cwd": project,
            "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt}


def context_of(reply):
    return reply.get("hookSpecificOutput", {}).get("additionalContext", "") if reply else ""


def timed(call):
    start = time.perf_counter()
    value = call()
    return value, (time.perf_counter() - start) * 1e6


def median_ms(micros):
    values = sorted(micros)
    if not values:
        return None
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    return median / 1000


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def first_of_each_kind(items, limit):
    """The first `limit` items of each kind, in file order (recall-eval's --limit)."""
    taken, out = {}, []
    for item in items:
        taken[item["kind"]] = taken.get(item["kind"], 0) + 1
        if taken[item["kind"]] <= limit:
            out.append(item)
    return out


def run_memory(kg, name, spec, now_ts, limit, log):
    prompts = read_jsonl(os.path.join(HERE, spec["prompts"]))
    queries = read_jsonl(os.path.join(HERE, spec["searches"]))
    if limit:
        prompts, queries = first_of_each_kind(prompts, limit), first_of_each_kind(queries, limit)
    scratch = tempfile.mkdtemp(prefix="kg017-eval-")
    try:
        home, root = prepare(os.path.join(HERE, spec["storage_root"]), scratch, now_ts)
        project = os.path.join(home, "src", spec["slug"])
        os.makedirs(project)
        graph_file = os.path.join(root, "projects", spec["slug"], "graph.json")
        if not settle(kg, home, root, project, graph_file, log):
            print(f"  {name}: no maintenance tick saved the graph within 30 s; running as loaded",
                  file=sys.stderr)
        clean = write_clean_sessions(
            root, project,
            [f"eval-clean-{p['id']}" for p in prompts] + [f"eval-search-{q['id']}" for q in queries])
        transcripts = os.path.join(home, ".claude", "projects", "eval")
        os.makedirs(transcripts)
        server = Server(kg, home, root, 86400, log)
        try:
            server.connect()
            runs = {"clean": [], "live": [], "first_prompt": [], "searches": []}
            for p in prompts:
                claude = f"eval-clean-{p['id']}"
                reply, micros = timed(lambda: server.post(
                    "/api/prompt_context", hook_payload(claude, project, p["prompt"])))
                runs["clean"].append({"id": p["id"], "reply": context_of(reply), "micros": micros})
            for protocol in ("live", "first_prompt"):
                for p in prompts:
                    sid = server.post("/api/sessions/register", {"project_path": project})["session_id"]
                    if protocol == "live":
                        text = server.tool("kg_read", {"session_id": sid, "cwd": project})
                        # A long read comes in parts; it counts as done with the last one.
                        while f"session_id='{sid}', more=true" in text:
                            text = server.tool("kg_read", {"session_id": sid, "more": True})
                        if f"Session: {sid}" not in text:
                            raise SystemExit(f"the full read of {sid} did not name its session")
                    claude = f"eval-{protocol}-{p['id']}"
                    transcript = os.path.join(transcripts, claude + ".jsonl")
                    with open(transcript, "w", encoding="utf-8") as f:
                        f.write(json.dumps({"type": "user", "message": {"content": f"Session: {sid}"}}) + "\n")
                    reply, micros = timed(lambda: server.post(
                        "/api/prompt_context", hook_payload(claude, project, p["prompt"], transcript)))
                    runs[protocol].append({"id": p["id"], "reply": context_of(reply), "micros": micros})
            for q in queries:
                sid = clean[f"eval-search-{q['id']}"]
                text, micros = timed(lambda: server.tool("kg_search", {"query": q["query"], "session_id": sid}))
                runs["searches"].append({"id": q["id"], "text": text, "micros": micros})
        finally:
            server.stop()
        return {
            "memory": name,
            "runs": runs,
            "latency": {
                "prompt_recall_ms": median_ms(r["micros"] for r in runs["clean"]),
                "prompt_recall_live_ms": median_ms(r["micros"] for r in runs["live"]),
                "kg_search_ms": median_ms(r["micros"] for r in runs["searches"]),
                "measured": "over HTTP on 127.0.0.1 (client wall time of POST /api/prompt_context "
                            "and MCP tools/call)",
            },
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def write_runs(out, path):
    """The runs file, one prompt or query a line, so a new run reads well in a diff."""
    def line(value):
        return json.dumps(value, ensure_ascii=False)
    parts = [f'{{"system": {line(out["system"])}, "how": {line(out["how"])}, "memories": [']
    for i, memory in enumerate(out["memories"]):
        parts.append(f' {{"memory": {line(memory["memory"])}, "latency": {line(memory["latency"])}, "runs": {{')
        groups = list(memory["runs"].items())
        for j, (name, runs) in enumerate(groups):
            parts.append(f'  {line(name)}: [')
            parts.extend(f"   {line(run)}{',' if k + 1 < len(runs) else ''}" for k, run in enumerate(runs))
            parts.append(f"  ]{',' if j + 1 < len(groups) else ''}")
        parts.append(f" }}}}{',' if i + 1 < len(out['memories']) else ''}")
    parts.append("]}")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kg", required=True, help="the reference's `kg` command (0.17.0)")
    parser.add_argument("--out", required=True, help="the runs file to write")
    parser.add_argument("--memory", action="append", default=[], help="only this memory (repeatable)")
    parser.add_argument("--limit", type=int, help="only the first N prompts and queries of each kind")
    parser.add_argument("--log", default=os.devnull, help="where the servers' output goes")
    args = parser.parse_args()
    version = subprocess.run([args.kg, "version"], capture_output=True, text=True).stdout.strip()
    if "0.17.0" not in version:
        raise SystemExit(f"{args.kg} says {version!r}, not 0.17.0")
    with open(os.path.join(HERE, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    memories = []
    with open(args.log, "a", encoding="utf-8") as log:
        for name, spec in manifest["memories"].items():
            if args.memory and name not in args.memory:
                continue
            start = time.time()
            memories.append(run_memory(args.kg, name, spec, manifest["now_ts"], args.limit, log))
            print(f"{name}: done in {time.time() - start:.0f} s", file=sys.stderr)
    out = {
        "system": SYSTEM,
        "how": "tests/recall-eval/run_reference_017.py: kg serve over HTTP, hook payloads and MCP, "
               "timestamps shifted to the run's clock",
        "memories": memories,
    }
    write_runs(out, args.out)
    print(f"wrote {args.out}; score it with: make eval EVAL_ARGS=\"--runs {args.out}\"", file=sys.stderr)


if __name__ == "__main__":
    main()
