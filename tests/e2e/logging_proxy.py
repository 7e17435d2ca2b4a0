"""A tiny recording HTTP proxy for end-to-end tests.

Runs in a background thread on a free loopback port, forwards every request to an upstream
server unchanged and records (method, path, request headers and body, status, response
headers and body). Used to see exactly what a real client (Claude Code) sends and what the
server answers.

`reject_methods` makes the proxy answer the listed JSON-RPC methods itself with
"Method not found" (-32601, HTTP 200) instead of forwarding them — e.g. `server/discover`,
to make a modern client fall back to the classic `initialize` handshake, as it would with a
server that predates the 2026-07-28 protocol.
"""

from __future__ import annotations

import http.client
import http.server
import json
import threading
from dataclasses import dataclass, field

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "upgrade"}


@dataclass
class Exchange:
    method: str
    path: str
    request_headers: dict[str, str]
    request_body: bytes
    status: int
    response_headers: dict[str, str]
    response_body: bytes
    synthetic: bool = False

    @property
    def rpc(self) -> dict | None:
        """The JSON-RPC message of a POST, if any."""
        try:
            value = json.loads(self.request_body)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    @property
    def rpc_method(self) -> str | None:
        rpc = self.rpc
        return rpc.get("method") if rpc else None

    @property
    def reply(self) -> dict | None:
        try:
            value = json.loads(self.response_body)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def header(self, name: str) -> str | None:
        for k, v in self.request_headers.items():
            if k.lower() == name.lower():
                return v
        return None

    def summary(self) -> str:
        what = self.rpc_method or ("<response>" if self.rpc else "")
        tag = " (answered by the proxy)" if self.synthetic else ""
        hdrs = {k: v for k, v in self.request_headers.items() if k.lower() in ("accept", "mcp-protocol-version", "mcp-method", "mcp-session-id", "user-agent")}
        return (
            f"{self.method} {self.path} {what} -> {self.status}{tag}\n"
            f"    request headers: {hdrs}\n"
            f"    request body: {self.request_body[:200].decode(errors='replace')}\n"
            f"    response body: {self.response_body[:200].decode(errors='replace')}"
        )


@dataclass
class LoggingProxy:
    upstream_port: int
    reject_methods: tuple[str, ...] = ()
    exchanges: list[Exchange] = field(default_factory=list)

    def __post_init__(self) -> None:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request_headers = dict(self.headers.items())
                method = _rpc_method(body)
                if method is not None and method in proxy.reject_methods:
                    rpc = json.loads(body)
                    data = json.dumps(
                        {"jsonrpc": "2.0", "id": rpc.get("id"), "error": {"code": -32601, "message": "Method not found"}}
                    ).encode()
                    status, headers = 200, {"Content-Type": "application/json"}
                    synthetic = True
                else:
                    conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=30)
                    fwd = {k: v for k, v in request_headers.items() if k.lower() not in HOP_BY_HOP}
                    fwd["Host"] = f"127.0.0.1:{proxy.upstream_port}"
                    conn.request(self.command, self.path, body=body or None, headers=fwd)
                    resp = conn.getresponse()
                    data = resp.read()
                    status = resp.status
                    headers = {k: v for k, v in resp.getheaders()}
                    conn.close()
                    synthetic = False
                proxy.exchanges.append(
                    Exchange(self.command, self.path, request_headers, body, status, headers, data, synthetic)
                )
                self.send_response(status)
                for k, v in headers.items():
                    if k.lower() not in HOP_BY_HOP and k.lower() not in ("date", "server"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = _handle

            def log_message(self, *args) -> None:  # quiet
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address) -> None:  # clients hang up abruptly; fine
                pass

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="logging-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def __enter__(self) -> "LoggingProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def transcript(self) -> str:
        return "\n".join(e.summary() for e in self.exchanges) or "<no requests>"


def _rpc_method(body: bytes) -> str | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value.get("method") if isinstance(value, dict) else None
