"""The README's "See it work" commands run exactly as written, on a copy of the bundled config.

Each ``.venv/bin/lockgate ...`` line of the README's shell blocks is read from the README itself
(so an edit there is tested), run as a subprocess with the test interpreter's ``bin`` directory
standing in for ``.venv/bin``, from a directory holding a copy of ``configs/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from readme_support import BIN, ROOT, first_line_with, readme_commands, run
from support import free_port


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of the bundled ``configs/`` on a free port, with ``lockgate serve`` running on it
    (the quickstart's last command) until the module's tests are done."""
    here = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "configs", here / "configs")
    config = here / "configs" / "gateway.yaml"
    port = free_port()
    config.write_text(config.read_text().replace("port: 8765", f"port: {port}"))
    os.environ["LOCKGATE_URL"] = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [str(BIN / "lockgate"), "serve"], cwd=here, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stderr is not None
        assert "serving MCP at" in first_line_with(server.stderr, "lockgate: serving")
        yield here
    finally:
        server.terminate()
        server.communicate(timeout=10)
        del os.environ["LOCKGATE_URL"]


def test_the_see_it_work_commands_are_the_ones_this_test_runs() -> None:
    commands = readme_commands("See it work")
    assert [c.split()[1:2] for c in commands] == [
        ["tools"],
        ["call"],
        ["call"],
        ["call"],
        ["approvals"],
        ["approvals"],
        ["approvals"],
    ]


def test_tools_and_calls_do_what_the_readme_says(workdir: Path) -> None:
    tools, write, read, delete = readme_commands("See it work")[:4]
    listed = run(tools, workdir)
    assert listed.returncode == 0, listed.stderr
    assert "files__write_file" in listed.stdout
    assert "ops__ticket_summary" in listed.stdout
    wrote = run(write, workdir)
    assert wrote.returncode == 0, wrote.stderr
    got = run(read, workdir)
    assert got.returncode == 0, got.stderr
    assert "hi" in got.stdout
    denied = run(delete, workdir)
    assert denied.returncode != 0
    assert "Traceback" not in denied.stderr
    health = httpx2.get(os.environ["LOCKGATE_URL"] + "/healthz", timeout=10)
    assert health.status_code == 200


def test_a_held_call_is_approved_with_the_readme_commands_and_runs_once(workdir: Path) -> None:
    listing, show, approve = readme_commands("See it work")[4:]
    assert "no pending approvals" in run(listing, workdir).stdout
    argv = [str(BIN / "lockgate"), "call", "files__write_file"]
    argv += ["--args", json.dumps({"path": ".env", "content": "K=1"})]
    held = subprocess.Popen(
        argv, cwd=workdir, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    with held:
        assert held.stderr is not None
        line = first_line_with(held.stderr, "held for approval")
        id = re.search(r"ap_[A-Za-z0-9_-]+", line)
        assert id is not None, line
        assert id.group(0) in run(listing, workdir).stdout
        shown = run(show, workdir, **{"ap_...": id.group(0)})
        assert shown.returncode == 0, shown.stderr
        assert "files__write_file" in shown.stdout
        approved = run(approve, workdir, **{"ap_...": id.group(0)})
        assert approved.returncode == 0, approved.stderr
        out, _ = held.communicate(timeout=30)
    assert held.returncode == 0
    assert "wrote 3 bytes" in out
    assert (workdir / "var" / "workspace" / ".env").read_text() == "K=1"
