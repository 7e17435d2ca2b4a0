"""End-to-end fixtures: a real `kg-memory serve` process per test.

Each server gets a fresh temporary root under /dev/shm (never /tmp: the server treats
`/tmp/` paths as noise for some features) holding `home/` (the server's $HOME, where
project folders must live) and `storage/` (KG_STORAGE_ROOT). It listens on a free
loopback port, is ready once `/health` answers, and is stopped with SIGTERM at teardown,
which must end in exit code 0.

Environment:
  KG_MEMORY_BIN   the binary to run (default <repo>/target/debug/kg-memory)
  KG_E2E_KEEP=1   keep the temporary folders (and the server log) after the test
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO / "target" / "debug" / "kg-memory"
SHM = Path("/dev/shm")

STARTUP_TIMEOUT = 10.0
SHUTDOWN_TIMEOUT = 10.0


def server_binary() -> Path:
    """The kg-memory binary under test; fails the test with a clear message if absent."""
    path = Path(os.environ.get("KG_MEMORY_BIN") or DEFAULT_BIN)
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(
            f"kg-memory binary not found or not executable at {path}. "
            "Build it with `cargo build -p kg-cli` in the repository root, "
            "or point KG_MEMORY_BIN at a built binary.",
            pytrace=False,
        )
    return path


def make_temp_root(prefix: str = "kg-e2e-") -> Path:
    """A unique temporary folder under /dev/shm (falls back to ~/.cache if /dev/shm is missing)."""
    base = SHM if SHM.is_dir() and os.access(SHM, os.W_OK) else Path.home() / ".cache"
    base.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=base)).resolve()
    assert "/tmp/" not in f"{root}/", f"test folders must not live under /tmp: {root}"
    return root


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 2.0) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, method="GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@dataclass
class KgServer:
    """A running `kg-memory serve` and the folders it owns."""

    port: int
    root: Path
    home: Path
    storage: Path
    log_path: Path
    proc: subprocess.Popen
    clock_file: Path | None = None
    exit_code: int | None = field(default=None)

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>` (no trailing slash); REST lives under /api."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        """The MCP endpoint, `http://127.0.0.1:<port>/`."""
        return f"{self.base_url}/"

    def make_project(self, name: str = "project") -> Path:
        """Create a project folder inside the server's HOME and return its real path."""
        path = self.home / name
        path.mkdir(parents=True, exist_ok=True)
        return path.resolve()

    def set_clock(self, epoch_seconds: float) -> None:
        """Move the server's "now" (only for servers started with `clock=`)."""
        assert self.clock_file is not None, "start the server with clock=<epoch seconds> to control time"
        write_clock(self.clock_file, epoch_seconds)

    def health(self) -> dict:
        status, _, body = http_get(f"{self.base_url}/health")
        assert status == 200, f"/health answered {status}: {body!r}"
        return json.loads(body)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return "<no server log>"

    def stop(self, timeout: float = SHUTDOWN_TIMEOUT) -> int:
        """SIGTERM, wait, and return the exit code (killing it if it hangs)."""
        if self.exit_code is not None:
            return self.exit_code
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.exit_code = -9
                raise AssertionError(
                    f"kg-memory did not stop within {timeout}s of SIGTERM (killed).\n"
                    f"--- server log ---\n{self.log()}"
                )
        self.exit_code = self.proc.returncode
        return self.exit_code


def write_clock(path: Path, epoch_seconds: float) -> None:
    """Atomically write the KG_CLOCK_FILE the server re-reads on every request."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(repr(float(epoch_seconds)))
    os.replace(tmp, path)


def _server_env(home: Path, storage: Path, extra: dict[str, str] | None) -> dict[str, str]:
    # Start from the caller's environment minus every KG_* knob, so a developer's own
    # settings (port, storage, clock) never leak into a test server.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env.update(
        HOME=str(home),
        KG_STORAGE_ROOT=str(storage),
        KG_AUTOCOMMIT_INTERVAL="0",
        KG_SAVE_INTERVAL="30",
        KG_LOG_LEVEL="info",
    )
    if extra:
        env.update(extra)
    return env


def start_server(
    root: Path,
    extra_env: dict[str, str] | None = None,
    clock: float | None = None,
    attempts: int = 3,
) -> KgServer:
    """Start kg-memory on a free port inside `root` (reusing its home/ and storage/ if they
    exist) and wait for /health. `clock` freezes the server's "now" at that epoch time
    through KG_CLOCK_FILE (move it with `KgServer.set_clock`)."""
    binary = server_binary()
    home = root / "home"
    storage = root / "storage"
    home.mkdir(parents=True, exist_ok=True)
    storage.mkdir(parents=True, exist_ok=True)
    clock_file = None
    if clock is not None:
        clock_file = root / "clock"
        write_clock(clock_file, clock)
        extra_env = {**(extra_env or {}), "KG_CLOCK_FILE": str(clock_file)}
    env = _server_env(home, storage, extra_env)

    last_log = ""
    for attempt in range(attempts):
        port = free_port()
        log_path = root / f"server-{time.monotonic_ns()}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [str(binary), "serve", "--port", str(port)],
                cwd=home,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server = KgServer(
            port=port, root=root, home=home, storage=storage, log_path=log_path, proc=proc, clock_file=clock_file
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                status, _, body = http_get(f"{server.base_url}/health", timeout=0.5)
                if status == 200 and json.loads(body).get("status") == "ok":
                    return server
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        if proc.poll() is None:  # alive but never healthy
            proc.kill()
            proc.wait()
            pytest.fail(
                f"kg-memory did not answer /health on port {port} within {STARTUP_TIMEOUT}s.\n"
                f"--- server log ---\n{server.log()}",
                pytrace=False,
            )
        last_log = server.log()
        if "already in use" not in last_log:  # a real start-up failure, not a port race
            break
    pytest.fail(
        f"kg-memory exited during start-up (code {proc.returncode}).\n--- server log ---\n{last_log}",
        pytrace=False,
    )


@pytest.fixture
def kg_server_factory() -> Iterator[Callable[..., KgServer]]:
    """Start as many servers as a test needs: `factory(extra_env=None, root=None, clock=None)`.

    Every server gets its own temporary root unless `root=` names an earlier server's root
    (restart on the same HOME and storage). `clock=` freezes "now" (epoch seconds). All are
    stopped with SIGTERM at teardown (if still running) and must have exited with code 0.
    """
    started: list[KgServer] = []
    roots: list[Path] = []

    def factory(
        extra_env: dict[str, str] | None = None, root: Path | None = None, clock: float | None = None
    ) -> KgServer:
        if root is None:
            root = make_temp_root()
            roots.append(root)
        server = start_server(root, extra_env, clock=clock)
        started.append(server)
        return server

    yield factory

    problems = []
    for server in started:
        try:
            code = server.stop()
        except AssertionError as e:
            problems.append(str(e))
            continue
        if code != 0:
            problems.append(
                f"kg-memory on port {server.port} exited with code {code} after SIGTERM "
                f"(expected a clean 0).\n--- server log ---\n{server.log()}"
            )
    if not os.environ.get("KG_E2E_KEEP"):
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
    assert not problems, "\n\n".join(problems)


@pytest.fixture
def kg_server(kg_server_factory) -> KgServer:
    """One fresh kg-memory server for this test (see KgServer)."""
    return kg_server_factory()


@pytest.fixture
def shm_dir() -> Iterator[Path]:
    """A scratch folder under /dev/shm, removed after the test."""
    root = make_temp_root("kg-e2e-scratch-")
    yield root
    if not os.environ.get("KG_E2E_KEEP"):
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
