"""A scripted stand-in for the Anthropic Messages API, so the real Claude Code CLI runs
real tool calls (and so fires its PostToolUse hooks) without a model or a login.

Claude Code is pointed at it with `ANTHROPIC_BASE_URL`. Each request of the main
conversation (the one whose tool list holds `Read`) is answered by the next turn of the
script: the tool calls that turn makes, or, past the script's end, a short text that
ends the turn. Any other request Claude Code makes on the side (a title, a summary) gets
a short text. Every request body is kept, so a test can read what the model was shown:
the hooks' additional context arrives inside the messages.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedModel:
    def __init__(self, turns: list):
        """`turns`: for each model turn, the tool calls it makes, as
        `{"name": "Read", "input": {...}}`, or a function of the request body that
        returns them (to name a tool from the list Claude Code sent, or to act
        between two turns)."""
        self.turns = turns
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._answers = 0
        self.errors: list[str] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with model._lock:
                    model.requests.append({"path": self.path, "body": body})
                if "count_tokens" in self.path:
                    return self._json({"input_tokens": 100})
                try:
                    content = model._answer(body)
                except Exception as e:  # a script that fails ends the session, said
                    model.errors.append(repr(e))
                    content = [{"type": "text", "text": f"script error: {e!r}"}]
                if body.get("stream"):
                    self._stream(content)
                else:
                    stop = "tool_use" if any(c["type"] == "tool_use" for c in content) else "end_turn"
                    self._json(
                        {
                            "id": model._message_id(),
                            "type": "message",
                            "role": "assistant",
                            "model": body.get("model", "scripted"),
                            "content": content,
                            "stop_reason": stop,
                            "stop_sequence": None,
                            "usage": {"input_tokens": 10, "output_tokens": 10},
                        }
                    )

            def do_GET(self):
                self._json({})

            def _json(self, value):
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, content):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()

                def event(kind, data):
                    self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())

                event(
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {
                            # Each answer its own id: Claude Code joins the parts of
                            # one message id into one assistant turn.
                            "id": model._message_id(),
                            "type": "message",
                            "role": "assistant",
                            "model": "scripted",
                            "content": [],
                            "stop_reason": None,
                            "stop_sequence": None,
                            "usage": {"input_tokens": 10, "output_tokens": 1},
                        },
                    },
                )
                for i, block in enumerate(content):
                    if block["type"] == "tool_use":
                        start = dict(block, input={})
                        event("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})
                        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                    else:
                        event(
                            "content_block_start",
                            {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                        )
                        delta = {"type": "text_delta", "text": block["text"]}
                    event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
                    event("content_block_stop", {"type": "content_block_stop", "index": i})
                stop = "tool_use" if any(c["type"] == "tool_use" for c in content) else "end_turn"
                event(
                    "message_delta",
                    {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}},
                )
                event("message_stop", {"type": "message_stop"})
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _message_id(self) -> str:
        with self._lock:
            self._answers += 1
            return f"msg_scripted_{self._answers:04d}"

    def _answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        tools = {t.get("name") for t in body.get("tools") or []}
        if "Read" not in tools:
            return [{"type": "text", "text": "ok"}]
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if turn >= len(self.turns):
            return [{"type": "text", "text": "done."}]
        calls = self.turns[turn]
        if callable(calls):
            calls = calls(body)
        return [
            {"type": "tool_use", "id": f"toolu_{turn:02d}_{i:02d}", "name": call["name"], "input": call["input"]}
            for i, call in enumerate(calls)
        ]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "ScriptedModel":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def tool_named(body: dict[str, Any], suffix: str) -> str:
        """The full name Claude Code gave a tool ending in `suffix` (an MCP tool's name
        carries its server's prefix)."""
        names = [t.get("name", "") for t in body.get("tools") or []]
        found = [n for n in names if n.endswith(suffix)]
        assert found, f"no tool ending in {suffix} among {names}"
        return found[0]

    def conversation_text(self) -> str:
        """Everything the main conversation's last request showed the model, as text
        (tool results and the hooks' context included)."""
        main = [r for r in self.requests if any(t.get("name") == "Read" for t in r["body"].get("tools") or [])]
        if not main:
            return ""
        return json.dumps(main[-1]["body"].get("messages", []), ensure_ascii=False)
