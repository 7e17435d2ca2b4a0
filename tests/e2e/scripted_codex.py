"""A scripted stand-in for the OpenAI Responses API, so the real Codex CLI runs real tool
calls (and so fires its PostToolUse hooks) without a model or a login.

Codex is pointed at it with a model provider of its own (`-c model_providers.<name>=…`, no
key). Codex 0.169 offers the model one freeform tool, `exec`, whose JavaScript calls the
nested tools (`await tools.apply_patch(…)`, `await tools.exec_command(…)`). Each request of
the conversation is answered by the next turn of the script: the `exec` source that turn
runs, or, past the script's end, a short text that ends the turn. Every request body is
kept, so a test can read what the model was shown (the hooks' context arrives as developer
messages).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


class ScriptedCodexModel:
    def __init__(self, turns: list[str]):
        """`turns`: the JavaScript each model turn hands to Codex's `exec` tool."""
        self.turns = turns
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                with model._lock:
                    model.requests.append({"path": self.path, "body": body})
                    turn = len(model.requests) - 1
                n = turn + 1
                if turn < len(model.turns):
                    item = {
                        "type": "custom_tool_call",
                        "id": f"ctc_{n}",
                        "call_id": f"call_{n}",
                        "name": "exec",
                        "input": model.turns[turn],
                        "status": "completed",
                    }
                else:
                    item = {
                        "type": "message",
                        "id": f"msg_{n}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
                    }
                usage = {
                    "input_tokens": 10,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 5,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 15,
                }
                data = b"".join(
                    [
                        _event("response.created", response={"id": f"resp_{n}"}),
                        _event("response.output_item.done", output_index=0, item=item),
                        _event("response.completed", response={"id": f"resp_{n}", "usage": usage}),
                    ]
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def provider_flags(self) -> list[str]:
        """Codex's `-c` flags that make this server its model."""
        return [
            "-c",
            "model_provider=scripted",
            "-c",
            f'model_providers.scripted={{name="scripted",base_url="{self.base_url}",wire_api="responses",'
            "request_max_retries=0,stream_max_retries=0,supports_websockets=false}",
        ]

    def __enter__(self) -> "ScriptedCodexModel":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
