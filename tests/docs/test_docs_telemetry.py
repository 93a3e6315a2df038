"""docs/telemetry.md's recipe runs as written: the stand-in collector, ``lockgate serve`` exporting
to it with JSON logs, the held call, its approval, and the trace read back with the hold in it.

The page's blocks run in order from a directory holding a copy of ``configs/`` and links to
``.venv`` and ``examples/``; the page's ports (4318 for the collector, 8765 for the gateway) stand
for free ones. The two blocks that keep running (the collector, ``lockgate serve``) run in
sessions of their own, ended when the test ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from readme_support import APPROVER_TOKEN, BIN, ROOT, first_line_with
from support import free_port

PAGE = (ROOT / "docs" / "telemetry.md").read_text(encoding="utf-8")


def blocks() -> dict[str, str]:
    """The page's ``sh`` and ``python`` blocks by their first line."""
    found = re.findall(r"^```(?:sh|python)\n(.*?)^```", PAGE, flags=re.S | re.M)
    return {text.splitlines()[0]: text for text in found}


def block(first: str) -> str:
    matching = [text for line, text in blocks().items() if line.startswith(first)]
    assert len(matching) == 1, f"one block must start with {first!r}"
    return matching[0]


@contextlib.contextmanager
def session(argv: list[str], cwd: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """``argv`` in a session of its own (what it starts in the background too), ended after."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=10)


def wait_for(command: list[str], cwd: Path, env: dict[str, str], wanted: str) -> str:
    """The output of ``command`` once it shows ``wanted`` (it is run again until then)."""
    # Polling: the collector and the approval store give a shell no other signal.
    deadline = time.monotonic() + 30
    while True:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=30, check=False
        )
        if wanted in done.stdout or time.monotonic() > deadline:
            return done.stdout
        time.sleep(0.2)


@pytest.fixture
def here(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    return tmp_path


def test_the_recipe_shows_the_trace_of_a_held_call_with_its_hold(here: Path) -> None:
    collector, port = free_port(), free_port()
    env = {**os.environ, "LOCKGATE_URL": f"http://127.0.0.1:{port}", "PYTHONPATH": str(ROOT)}

    def sh(text: str) -> list[str]:
        text = text.replace("127.0.0.1:8765", f"127.0.0.1:{port}")
        return ["bash", "-euo", "pipefail", "-c", text.replace("4318", str(collector))]

    config = here / "configs" / "gateway.yaml"
    config.write_text(config.read_text().replace("port: 8765", f"port: {port}"))
    curl = sh(block("curl -s http://127.0.0.1:4318/traces"))
    with (
        session(sh(block(".venv/bin/python examples/otlp_print.py")), here, env),
        session(sh(block("export OTEL_EXPORTER_OTLP_ENDPOINT")), here, env) as serve,
    ):
        assert serve.stderr is not None
        first_line_with(serve.stderr, "lockgate: serving MCP at")
        call = block("import anyio").replace("127.0.0.1:8765", f"127.0.0.1:{port}")
        held = subprocess.Popen(
            [str(BIN / "python"), "-c", call], cwd=here, env=env, stdout=subprocess.PIPE, text=True
        )
        listed = wait_for(
            [str(BIN / "lockgate"), "approvals", "list"],
            here,
            env | {"LOCKGATE_APPROVER_TOKEN": APPROVER_TOKEN},
            "ap_",
        )
        approval = re.search(r"ap_[A-Za-z0-9_-]+", listed)
        assert approval is not None, listed
        approve = block("export LOCKGATE_APPROVER_TOKEN").replace("ap_...", approval.group(0))
        subprocess.run(sh(approve), cwd=here, env=env, check=True, timeout=60)
        out, _ = held.communicate(timeout=60)
        assert "wrote 3 bytes to .env" in out
        # The call's server span ends last (after the hold and the upstream call), and the
        # exporter may send it in a later batch than theirs.
        tree = wait_for(curl, here, env, "tools/call files__write_file [server]")
        serve.send_signal(signal.SIGTERM)
        _, logs = serve.communicate(timeout=30)
    assert "tools/call files__write_file [server]" in tree, tree
    assert "lockgate.hold [internal]" in tree, tree
    assert "event " in tree, tree
    assert f"lockgate.approval.id={approval.group(0)}" in tree, tree
    lines = [line for line in logs.splitlines() if line.strip()]
    assert lines, "serve logged nothing"
    assert all(json.loads(line)["level"] for line in lines), lines
