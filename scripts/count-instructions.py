#!/usr/bin/env python3
"""Instructions a `kg-memory serve` executes per request, for two builds side by side.

    scripts/count-instructions.py <before kg-memory> <after kg-memory> [requests]

Wall-clock benches on a shared two-core machine move by ±20 % between runs at
0.2–2 ms a call; instruction counts do not. Each build serves, under
`valgrind --tool=callgrind`, a copy of one seeded storage root and answers a fixed
sequence of requests of one kind (`requests` of them, default 100) on one
keep-alive connection after opening a session; the same run with no requests is
subtracted, the rest divided by the requests, and the median of three such pairs
kept (the server's timers run by wall time, and show in the cheapest requests). The
count covers the whole process (every thread), so it is what the machine pays per
request, whatever the scheduler does.

Needs valgrind (`sudo apt-get install valgrind`). Takes about ten minutes;
KG_COUNT_ONLY=<part of a phase's name> runs the phases so named alone.
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# Each count is the median of this many pairs of runs: the server's timers (the
# clock watch, maintenance ticks) run by wall time, and a run under valgrind is slow
# enough for them to show in the cheapest requests.
REPEATS = 3

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`kg-memory serve` on a storage root, under callgrind when `out` is given."""

    def __init__(self, binary, home, storage, out=None):
        self.port = free_port()
        env = dict(os.environ)
        for key in ("KG_HTTP_PORT", "KG_HTTP_HOST", "KG_CLOCK_FILE", "KG_GRACE_PERIOD_DAYS",
                    "KG_ORPHAN_GRACE_DAYS", "XDG_STATE_HOME"):
            env.pop(key, None)
        env.update(HOME=home, KG_STORAGE_ROOT=storage, KG_SAVE_INTERVAL="3600",
                   KG_AUTOCOMMIT_INTERVAL="0", KG_UPDATE_CHECK="0", KG_LOG_LEVEL="warn")
        command = [binary, "serve", "--port", str(self.port)]
        if out:
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                       "--dump-instr=no", "--collect-jumps=no"] + command
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        # Wait with bare connects: a refused connect costs the server nothing, so the
        # count does not depend on how long start-up took.
        deadline = time.time() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"{binary} did not start")
                time.sleep(0.2)
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)

    def post(self, message):
        self.conn.request("POST", "/", json.dumps(message), HEADERS)
        response = self.conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise SystemExit(f"HTTP {response.status}: {body[:200]!r}")
        return json.loads(body)

    def call(self, tool, arguments):
        answer = self.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": tool, "arguments": arguments}})
        result = answer.get("result") or {}
        if result.get("isError"):
            raise SystemExit(f"{tool} failed: {result['content'][0]['text'][:300]}")
        return result["content"][0]["text"]

    def get(self, path):
        self.conn.request("GET", path)
        response = self.conn.getresponse()
        response.read()
        return response.status

    def stop(self):
        self.conn.close()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=300)


def session_of(text):
    found = re.search(r"Session: (\S+)", text)
    if not found:
        raise SystemExit(f"no Session footer in: {text[-300:]}")
    return found.group(1)


def seed(binary, home, storage, project):
    """A user and a project graph of 150 nodes each, with edges, written through MCP."""
    server = Server(binary, home, storage)
    sid = session_of(server.call("kg_read", {"cwd": project}))
    for level in ("user", "project"):
        for i in range(150):
            server.call("kg_put_node", {
                "session_id": sid, "level": level, "id": f"{level}-insight-{i:03}",
                "gist": f"Insight {i} of the {level} level: how the parser treats token {i} "
                        f"when the lexer sees a backslash before a quote",
                "notes": [f"Found while reading the tokenizer, case {i}."],
                "touches": [f"src/module_{i % 17}.rs"],
            })
        for i in range(1, 150):
            server.call("kg_put_edge", {
                "session_id": sid, "level": level, "from": f"{level}-insight-{i:03}",
                "to": f"{level}-insight-{(i * 7) % i:03}", "rel": "relates_to",
            })
    server.stop()


def phases(project):
    """(name, preparation on a running server → state, one request given that state)."""
    def new_session(server):
        return session_of(server.call("kg_read", {"cwd": project}))

    def seen_session(node):
        # A session writes over a node only once it has read it.
        def prepare(server):
            sid = new_session(server)
            server.call("kg_read", {"session_id": sid, "id": node})
            return sid
        return prepare

    return [
        ("full kg_read", new_session,
         lambda s, sid, n: s.call("kg_read", {"session_id": sid})),
        ("kg_read one id", new_session,
         lambda s, sid, n: s.call("kg_read", {"session_id": sid, "id": "project-insight-042"})),
        ("kg_search two terms", new_session,
         lambda s, sid, n: s.call("kg_search", {"session_id": sid, "query": "lexer backslash"})),
        ("kg_put_node update", seen_session("project-insight-007"),
         lambda s, sid, n: s.call("kg_put_node", {
             "session_id": sid, "level": "project", "id": "project-insight-007",
             "gist": f"Insight 7, revised {n()}: the parser treats a doubled quote as one"})),
        ("kg_put_node create", new_session,
         lambda s, sid, n: s.call("kg_put_node", {
             "session_id": sid, "level": "project", "id": f"fresh-insight-{n():04}",
             "gist": "A fresh insight about the tokenizer's handling of raw strings"})),
        ("kg_put_edge", new_session,
         lambda s, sid, n: s.call("kg_put_edge", {
             "session_id": sid, "level": "project", "from": "project-insight-010",
             "to": f"project-insight-{n() % 140 + 2:03}", "rel": "relates_to"})),
        ("GET /health", lambda server: None, lambda s, sid, n: s.get("/health")),
    ]


# Start-up itself varies by a few million instructions between runs (work the
# server's timers do, by wall time), which is noise of ~40,000 a request over 100
# requests: the cheapest request is asked fifty times as often.
REQUESTS_SCALE = {"GET /health": 50}


def total_instructions(out):
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise SystemExit(f"no totals in {out}")


def measure(binary, seeded_home, phase, requests, scratch):
    """Instructions of one run: start, prepare (a new session), `requests` requests,
    stop."""
    name, prepare, request = phase
    # Every run at the same path: the project graph is found by its folder's path.
    home = os.path.join(scratch, "home")
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(seeded_home, home, symlinks=True)
    out = os.path.join(scratch, "callgrind.out")
    server = Server(binary, home, os.path.join(home, ".knowledge-graph"), out)
    state = prepare(server)
    n = counter()
    for _ in range(requests):
        request(server, state, n)
    server.stop()
    return total_instructions(out)


def counter():
    count = [0]

    def next_id():
        count[0] += 1
        return count[0]
    return next_id


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    builds = [("before", os.path.abspath(sys.argv[1])), ("after", os.path.abspath(sys.argv[2]))]
    requests = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    if not shutil.which("valgrind"):
        raise SystemExit("needs valgrind: sudo apt-get install valgrind")
    scratch = tempfile.mkdtemp(prefix="kg-instructions-")
    try:
        # Seeded at the path the runs use, then kept aside.
        home = os.path.join(scratch, "home")
        project = os.path.join(home, "project")
        os.makedirs(os.path.join(project, ".git"))
        seed(builds[1][1], home, os.path.join(home, ".knowledge-graph"), project)
        seeded_home = os.path.join(scratch, "seeded")
        shutil.move(home, seeded_home)
        print(f"instructions per request (callgrind, whole process): a run of {requests} "
              f"requests (/health: {REQUESTS_SCALE['GET /health'] * requests}) less a run of none, over the requests; "
              f"median of {REPEATS}")
        print()
        print("| phase | before | after | change |")
        print("|---|---|---|---|")
        only = os.environ.get("KG_COUNT_ONLY", "")
        for phase in phases(project):
            if only not in phase[0]:
                continue
            per = {}
            asked = requests * REQUESTS_SCALE.get(phase[0], 1)
            for label, binary in builds:
                tries = []
                for _ in range(REPEATS):
                    ran = measure(binary, seeded_home, phase, asked, scratch)
                    idle = measure(binary, seeded_home, phase, 0, scratch)
                    tries.append((ran - idle) / asked)
                per[label] = statistics.median(tries)
            print(f"| {phase[0]} | {per['before']:,.0f} | {per['after']:,.0f} | "
                  f"{100.0 * (per['after'] / per['before'] - 1):+.1f} % |", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
