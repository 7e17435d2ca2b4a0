"""Smoke test of the .deb that Tauri's bundler makes (scripts/package.sh).

There is no container or chroot to install into here, so the package is unpacked with
`dpkg-deb -x` and run from the unpacked tree: its `kg-memory --version`, its
`kg-memory install` (which must name the package's own path), and its tray app under
Xvfb, whose server must answer /health.

Run by scripts/test.sh, after `scripts/package.sh --debug` built the package from
this tree, as
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- .venv/bin/python -m pytest tests/package
KG_PACKAGE_DEB names another .deb (the release one of `make package`:
target/package/*.deb).
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
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from conftest import free_port, make_temp_root  # noqa: E402


def the_deb() -> Path:
    named = os.environ.get("KG_PACKAGE_DEB")
    if named:
        return Path(named)
    debs = sorted((REPO / "target" / "package-debug").glob("*.deb"))
    if len(debs) != 1:
        pytest.fail(
            f"expected one .deb in target/package-debug, found {[d.name for d in debs]}: "
            "run `scripts/package.sh --debug` first (scripts/test.sh does), or set KG_PACKAGE_DEB",
            pytrace=False,
        )
    return debs[0]


def cargo_version() -> str:
    for line in (REPO / "Cargo.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split('"')[1]
    raise AssertionError("no workspace version in Cargo.toml")


@pytest.fixture(scope="module")
def unpacked():
    deb = the_deb()
    assert deb.is_file(), f"{deb} is missing"
    root = make_temp_root("kg-package-")
    tree = root / "tree"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True)
    yield deb, root, tree
    shutil.rmtree(root, ignore_errors=True)


def field(deb: Path, name: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], check=True, capture_output=True, text=True).stdout.strip()


def test_the_deb_holds_both_programs_a_desktop_entry_and_an_icon(unpacked):
    deb, _, tree = unpacked
    assert field(deb, "Package") == "kg-memory"
    assert field(deb, "Version") == cargo_version()
    depends = field(deb, "Depends")
    assert "libwebkit2gtk-4.1-0" in depends and "libgtk-3-0" in depends, depends
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
