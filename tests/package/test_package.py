"""Smoke test of the .deb and the .rpm that Tauri's bundler makes (scripts/package.sh).

There is no container or chroot to install into here, so the .deb is unpacked
(`dpkg-deb -x`) and the .rpm installed by rpm itself into a temporary root (its own
database, dependencies not resolved, which the Debian machine cannot), and each is run
from its tree: its `kg-memory --version`, its `kg-memory install` (which must name the
package's own path), and its tray app under Xvfb, whose server must answer /health.

Run by scripts/test.sh, after `scripts/package.sh --debug` built the packages from
this tree, as
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- .venv/bin/python -m pytest tests/package
KG_PACKAGE_DEB and KG_PACKAGE_RPM name other packages (the release ones of `make
package`: target/package/*.deb, *.rpm).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from conftest import free_port, make_temp_root  # noqa: E402


def the_package(kind: str) -> Path:
    named = os.environ.get(f"KG_PACKAGE_{kind.upper()}")
    if named:
        return Path(named)
    found = sorted((REPO / "target" / "package-debug").glob(f"*.{kind}"))
    if len(found) != 1:
        pytest.fail(
            f"expected one .{kind} in target/package-debug, found {[f.name for f in found]}: "
            f"run `scripts/package.sh --debug` first (scripts/test.sh does), or set KG_PACKAGE_{kind.upper()}",
            pytrace=False,
        )
    return found[0]


def cargo_version() -> str:
    for line in (REPO / "Cargo.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split('"')[1]
    raise AssertionError("no workspace version in Cargo.toml")


def run(args: list[str], **kw) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout.strip()


@dataclass
class Package:
    kind: str  # "deb" or "rpm"
    path: Path

    def name(self) -> str:
        if self.kind == "deb":
            return run(["dpkg-deb", "-f", str(self.path), "Package"])
        return run(["rpm", "-qp", "--qf", "%{NAME}", str(self.path)])

    def version(self) -> str:
        if self.kind == "deb":
            return run(["dpkg-deb", "-f", str(self.path), "Version"])
        return run(["rpm", "-qp", "--qf", "%{VERSION}", str(self.path)])

    def requires(self) -> str:
        if self.kind == "deb":
            return run(["dpkg-deb", "-f", str(self.path), "Depends"])
        return run(["rpm", "-qp", "--requires", str(self.path)])

    def unpack(self, tree: Path) -> None:
        tree.mkdir(parents=True)
        if self.kind == "deb":
            subprocess.run(["dpkg-deb", "-x", str(self.path), str(tree)], check=True)
            return
        run(["rpm", "--root", str(tree), "--initdb"])
        run(["rpm", "--root", str(tree), "--install", "--nodeps", str(self.path)])
        installed = run(["rpm", "--root", str(tree), "--query", "kg-memory"])
        assert installed.startswith(f"kg-memory-{cargo_version()}-1."), installed


# What each package must ask its system for: the web view and GTK the tray app links
# (Debian's package names; the .rpm asks for the libraries themselves, which every
# rpm distribution resolves under its own names).
REQUIRED = {
    "deb": ("libwebkit2gtk-4.1-0", "libgtk-3-0"),
    "rpm": ("libwebkit2gtk-4.1.so.0", "libgtk-3.so.0"),
}


@pytest.fixture(scope="module", params=["deb", "rpm"])
def unpacked(request):
    package = Package(request.param, the_package(request.param))
    assert package.path.is_file(), f"{package.path} is missing"
    root = make_temp_root(f"kg-package-{package.kind}-")
    tree = root / "tree"
    package.unpack(tree)
    yield package, root, tree
    shutil.rmtree(root, ignore_errors=True)


def test_the_package_holds_both_programs_a_desktop_entry_and_an_icon(unpacked):
    package, _, tree = unpacked
    assert package.name() == "kg-memory"
    assert package.version() == cargo_version()
    requires = package.requires()
    for needed in REQUIRED[package.kind]:
        assert needed in requires, f"the .{package.kind} does not require {needed}: {requires}"
    for program in ("kg-memory", "kg-memory-app"):
        path = tree / "usr" / "bin" / program
        assert path.is_file() and os.access(path, os.X_OK), f"{path} missing or not executable"
    entries = list((tree / "usr" / "share" / "applications").glob("*.desktop"))
    assert len(entries) == 1, entries
    entry = entries[0].read_text()
    assert "Exec=kg-memory-app" in entry and "Name=KG Memory" in entry, entry
    icons = list((tree / "usr" / "share" / "icons").rglob("kg-memory-app.png"))
    assert icons, "no icon for the desktop entry"


def test_the_packaged_cli_runs_and_installs_naming_its_own_path(unpacked):
    _, root, tree = unpacked
    cli = tree / "usr" / "bin" / "kg-memory"
    version = subprocess.run([str(cli), "--version"], check=True, capture_output=True, text=True, timeout=30)
    assert version.stdout.strip() == f"kg-memory {cargo_version()}"

    home = root / "cli-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / ".state"))
    done = subprocess.run([str(cli), "install", "claude-code"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    programs = {
        shlex.split(hook["command"])[0]
        for groups in settings["hooks"].values()
        for group in groups
        for hook in group["hooks"]
    }
    # Outside a build folder the program names itself and copies nothing.
    assert programs == {str(cli)}, programs
    assert not (home / ".local" / "bin").exists()


def test_the_packaged_app_starts_under_xvfb_and_its_server_answers_health(unpacked):
    if not os.environ.get("DISPLAY"):
        pytest.fail(
            'DISPLAY unset: run inside `xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- …` (scripts/test.sh does)',
            pytrace=False,
        )
    _, root, tree = unpacked
    home, storage = root / "app-home", root / "storage"
    home.mkdir()
    storage.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        KG_STORAGE_ROOT=str(storage),
        KG_HTTP_PORT=str(port),
        KG_AUTOCOMMIT_INTERVAL="0",
    )
    log = root / "app.log"
    app = subprocess.Popen([str(tree / "usr" / "bin" / "kg-memory-app")], env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        health = None
        while time.monotonic() < deadline:
            assert app.poll() is None, f"the packaged app exited early:\n{log.read_text(errors='replace')}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    health = json.loads(r.read())
                break
            except OSError:
                time.sleep(0.1)
        assert health is not None, f"the packaged app's server never answered /health:\n{log.read_text(errors='replace')}"
        assert health["status"] == "ok", health
    finally:
        app.terminate()
        try:
            app.wait(timeout=20)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait()
