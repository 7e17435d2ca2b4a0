"""A scripted stand-in for the Gemini API, so the real Gemini CLI runs real tool calls
(and so fires its AfterTool hooks) without a model or a login.

Gemini CLI is pointed at it with `GOOGLE_GEMINI_BASE_URL` and any `GEMINI_API_KEY`.
Each request of the main conversation (the one whose tool list holds `read_file`) is
answered by the next turn of the script: the function calls that turn makes, or, past
the script's end, a short text that ends the turn. Any other request (Gemini CLI's
routing or next-speaker checks, token counts) gets a short answer of its kind. Every
request body is kept, so a test can read what the model was shown: the hooks' context
arrives inside the contents, wrapped in `<hook_context>`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_names(body: dict) -> set[str]:
    names = set()
    for tool in body.get("tools") or []:
        for decl in tool.get("functionDeclarations") or []:
            names.add(decl.get("name"))
    return names


class ScriptedGemini:
    def __init__(self, turns: list):
        """`turns`: for each model turn, the function calls it makes, as
        `{"name": "read_file", "args": {...}}`, or a function of the request body that
        returns them (to name a tool from the list Gemini CLI sent, or to use what the
        hooks told the model)."""
        self.turns = turns
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._answers = 0
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
                if ":countTokens" in self.path:
                    return self._json({"totalTokens": 42})
                parts = model._answer(body)
                response = {
                    "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                }
                if ":streamGenerateContent" in self.path:
                    data = f"data: {json.dumps(response)}\r\n\r\n".encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    self._json(response)

            def _json(self, value: dict):
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _answer(self, body: dict) -> list[dict]:
        if "read_file" not in tool_names(body):
            # A side request: Gemini CLI's checks ask for JSON, and an empty object or a
            # plain word is an answer each of them takes without acting on it.
            config = body.get("generationConfig") or {}
            text = "{}" if config.get("responseMimeType") == "application/json" else "ok"
            return [{"text": text}]
        with self._lock:
            turn = self._answers
            self._answers += 1
        if turn < len(self.turns):
            calls = self.turns[turn]
            if callable(calls):
                calls = calls(body)
            return [{"functionCall": call} for call in calls]
        return [{"text": "Done."}]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def main_requests(self) -> list[dict]:
        """The main conversation's requests, in order."""
        return [r["body"] for r in self.requests if "read_file" in tool_names(r["body"])]

    def shown(self) -> str:
        """Everything the main conversation's last request showed the model, as text."""
        requests = self.main_requests()
        return json.dumps(requests[-1]["contents"]) if requests else ""

    def __enter__(self) -> "ScriptedGemini":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
