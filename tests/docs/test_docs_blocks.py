"""Every ``sh`` and ``python`` block of the README and of ``docs/*.md`` runs as a test, or is
listed in ``NOT_RUN`` with the reason it cannot run here.

A block is named by its page and a stable snippet of its first line (not by its index), and
must match exactly one entry of ``RUN`` or ``NOT_RUN``: a block added to the docs without being
run or listed fails ``test_every_block_is_run_or_listed_with_a_reason``.

The blocks of ``RUN`` run as written, from a directory holding a copy of ``configs/`` and a
``.venv`` link to this interpreter's environment, against ``lockgate serve`` running there on a
free port (the pages' ``127.0.0.1:8765`` stands for it). ``ap_...`` stands for the id of a call
this test holds for approval first; a streaming command (``approvals watch``, ``events tail``)
runs for two seconds. Python blocks with a top-level ``await`` run inside one event loop.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from readme_support import APPROVER_TOKEN, BIN, ROOT, first_line_with
from support import free_port

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = ("sh", "python")
STREAMS = ("approvals watch", "events tail")
CLI_TIMEOUT = 90
"""Seconds a block or CLI command may take: each `lockgate` process imports the gateway (about
3 s of CPU), so a block of four commands needs real headroom at load average 6 on 2 cores."""


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: str
    language: str
    line: int
    text: str

    @property
    def first_line(self) -> str:
        return self.text.splitlines()[0] if self.text else ""


@dataclass(frozen=True)
class Run:
    """How a block is run.

    ``holds``: calls held for its ``ap_...`` (each ``ap_...`` in turn gets the next, the last
    one the rest); ``expect``: texts its output shows; ``given``: code run before a Python
    block; ``fails``: texts of the lines that must fail (``# denied by policy``); ``replace``:
    edits the test makes (each says why); ``approves``: the test approves the call the block
    holds while it runs.
    """

    expect: tuple[str, ...] = ()
    fails: tuple[str, ...] = ()
    holds: int = 0
    given: str = ""
    replace: tuple[tuple[str, str], ...] = ()
    approves: bool = False


_TRIFECTA_HELD = (
    "reason:   private data may leave after untrusted content (session labels: private via "
    "files__read_file and untrusted via web__fetch)"
)
_TRIFECTA_POLICY = (
    "import pathlib, re\n"
    f"page = pathlib.Path({str(ROOT / 'docs' / 'data-flow.md')!r}).read_text()\n"
    "policy = re.search(r\"<<'EOF'\\n(.*?\\n)EOF\", page, re.S).group(1)\n"
    "pathlib.Path('trifecta.yaml').write_text(policy)\n"
)
RUN: dict[tuple[str, str], Run] = {
    ("README.md", ".venv/bin/lockgate tools"): Run(
        expect=("files__write_file", "hi"), fails=("files__delete_file",)
    ),
    ("README.md", ".venv/bin/lockgate policy check"): Run(expect=("sensitive-writes",)),
    ("README.md", "export LOCKGATE_APPROVER_TOKEN"): Run(holds=1),
    ("docs/getting-started.md", ".venv/bin/lockgate tools"): Run(
        expect=("files__write_file", "hi"), fails=("files__delete_file",)
    ),
    ("docs/getting-started.md", "export LOCKGATE_APPROVER_TOKEN"): Run(holds=1),
    ("docs/getting-started.md", ".venv/bin/lockgate policy check"): Run(),
    ("docs/approvals.md", "export LOCKGATE_APPROVER_TOKEN"): Run(holds=1),
    ("docs/approvals.md", "curl -s -H"): Run(holds=1, expect=("approve",)),
    ("docs/approvals.md", ".venv/bin/lockgate approvals stats"): Run(
        holds=1, expect=("waiting now:", '"suggestions"')
    ),
    ("docs/authentication.md", ".venv/bin/python -c 'import hashlib"): Run(expect=("sha256:",)),
    ("docs/events.md", ".venv/bin/lockgate events tail"): Run(expect=("ok",)),
    ("docs/operations.md", ".venv/bin/lockgate doctor"): Run(),
    ("docs/operations.md", "curl -s http://127.0.0.1:8765/healthz"): Run(expect=("ok",)),
    ("docs/operations.md", ".venv/bin/lockgate audit verify"): Run(expect=("ok",)),
    ("docs/operations.md", "mkdir -p backup"): Run(),
    ("docs/operations.md", "systemctl stop lockgate"): Run(
        expect=("ok",),
        # no systemd here: stopping and starting the unit are no-ops (nothing calls meanwhile);
        # a call first, so the log has entries and a head, and the folder of the block before
        replace=(
            (
                "systemctl stop lockgate",
                "mkdir -p backup; .venv/bin/lockgate call files__write_file"
                ' --args \'{"path": "b.md", "content": "b"}\'',
            ),
            ("systemctl", ": systemctl"),
        ),
    ),
    ("docs/policies.md", ".venv/bin/lockgate policy check"): Run(),
    ("docs/policies.md", ".venv/bin/lockgate policy replay"): Run(),
    ("docs/scripts.md", ".venv/bin/lockgate scripts check"): Run(),
    ("docs/security.md", ".venv/bin/lockgate pins list"): Run(),
    ("README.md", "import anyio"): Run(approves=True, expect=("wrote 3 bytes",)),
    ("docs/getting-started.md", "import anyio"): Run(approves=True),
    ("README.md", "from gateway.adapters.pydantic_ai"): Run(),
    ("docs/policies.md", ".venv/bin/lockgate approvals approve ap_... --grant"): Run(
        holds=2,
        expect=("gr_",),
        # the grant's id, which the page leaves to the reader, from the list before it:
        replace=(("gr_...", "$(.venv/bin/lockgate grants list | grep -o 'gr_[A-Za-z0-9_-]*')"),),
    ),
    ("docs/clients.md", "import anyio"): Run(expect=("files__write_file",)),
    ("docs/data-flow.md", "cat > trifecta.yaml"): Run(
        expect=("effect:   ask", _TRIFECTA_HELD, "session: untrusted via web__fetch (call ")
    ),
    ("docs/data-flow.md", "from policies import PolicyEngine"): Run(
        # the policy the block before writes, for this block alone:
        given=_TRIFECTA_POLICY,
        expect=("web__fetch allow", f"web__post ask {_TRIFECTA_HELD.removeprefix('reason:   ')}"),
    ),
    ("docs/clients.md", "from lockgate import GatewayToolkit"): Run(),
    ("docs/tasks.md", "from typing import Any"): Run(
        approves=True,
        expect=("input_required Waiting for approval ap_", "completed wrote 3 bytes to .env"),
    ),
    ("docs/protocol.md", 'TICKET = "lockgate://tickets/'): Run(
        given="from mcp import Client\n"  # and the notes.md the README's calls write:
        "import pathlib; pathlib.Path('var/workspace/notes.md').write_text('hi')",
        expect=("ResourceUpdated",),
    ),
}

_TELEMETRY = (
    "the recipe needs its own gateway exporting to its own collector: test_docs_telemetry.py "
    "runs the page's blocks in order"
)
NOT_RUN: dict[tuple[str, str], str] = {
    ("docs/credentials.md", "export LOCKGATE_VAULT_KEY"): "its own config (a secret-mode "
    "server); served in process by tests/gateway/credentials/test_docs_recipe.py",
    ("docs/credentials.md", "printf '%s\\n' \"$TRACKER_API_KEY\""): "run by "
    "tests/gateway/credentials/test_docs_recipe.py against the recipe's gateway",
    ("docs/credentials.md", "LOCKGATE_TOKEN=$ALICE_TOKEN .venv/bin/lockgate connections list"): (
        "run by tests/gateway/credentials/test_docs_recipe.py against the recipe's gateway"
    ),
    ("README.md", "python3 -m venv .venv"): "creates a venv and installs the package; "
    "its last command, `lockgate serve`, is the server every block here runs against",
    ("docs/getting-started.md", "python3 -m venv .venv"): "the README's quickstart, as above",
    ("README.md", "export LOCKGATE_AGENT_TOKEN"): "needs the `claude` CLI; the command's URL "
    "and header are checked by test_docs_clients.py",
    ("docs/clients.md", "export LOCKGATE_AGENT_TOKEN"): "`lockgate serve` runs until stopped; "
    "served with agent tokens by test_docs_clients.py",
    ("docs/clients.md", "claude mcp add"): "needs the `claude` CLI; its URL and header are "
    "checked by test_docs_clients.py",
    ("docs/clients.md", "npx @modelcontextprotocol/inspector"): "the MCP Inspector is a "
    "browser UI that runs until stopped",
    ("docs/clients.md", "from pydantic_ai import Agent"): "needs an OpenAI API key",
    ("docs/approvals.md", "from langchain.agents import create_agent"): "needs a chat model "
    "that calls tools (`model` is the reader's); the same agent runs with a scripted model in "
    "tests/e2e/langgraph/test_hitl_middleware.py",
    ("docs/approvals.md", "from langgraph.checkpoint.memory import InMemorySaver"): "needs a "
    "model node and a router (`call_model`, `needs_tools` are the reader's); the same tool and "
    "review nodes run in tests/e2e/langgraph/test_tool_node_turn.py",
    ("docs/clients.md", "from gateway.adapters import RemoteGateway"): "needs an OpenAI "
    "client and key (`openai_client`, `MODEL`, `messages` are the reader's)",
    ("docs/getting-started.md", "./scripts/test"): "runs the whole suite, this test among it",
    ("docs/operations.md", "pg_dump"): "needs a PostgreSQL server and its client tools",
    ("docs/postgres.md", ".venv/bin/pip install"): "run by test_readme_replicas.py",
    ("docs/postgres.md", "export LOCKGATE_APPROVER_TOKEN"): "run by test_readme_replicas.py",
    ("docs/postgres.md", ".venv/bin/lockgate audit verify -c"): "needs PostgreSQL; "
    "run by test_readme_replicas.py",
    ("docs/protocol.md", "async def answer"): "needs an upstream that elicits (`notes`), "
    "not in configs/",
    ("docs/service.md", "LOCKGATE_AGENT_TOKEN=..."): "the content of a systemd EnvironmentFile, "
    "with placeholders",
    ("docs/service.md", "useradd --system"): "needs root and systemd",
    ("docs/telemetry.md", ".venv/bin/pip install -e"): "installs the otel extra, which the "
    "test environment has",
    ("docs/telemetry.md", ".venv/bin/python examples/otlp_print.py"): _TELEMETRY,
    ("docs/telemetry.md", "export OTEL_EXPORTER_OTLP_ENDPOINT"): _TELEMETRY,
    ("docs/telemetry.md", "import anyio"): _TELEMETRY,
    ("docs/telemetry.md", "export LOCKGATE_APPROVER_TOKEN"): _TELEMETRY,
    ("docs/telemetry.md", "curl -s http://127.0.0.1:4318/traces"): _TELEMETRY,
}


def doc_blocks() -> list[Block]:
    """Every ``sh`` and ``python`` block of the pages, in order."""
    found: list[Block] = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"^```(\w+)\n(.*?)^```", text, flags=re.S | re.M):
            if match.group(1) in LANGUAGES:
                line = text[: match.start()].count("\n") + 1
                page = str(path.relative_to(ROOT))
                found.append(Block(page, match.group(1), line, match.group(2)))
    return found


def keys_of(block: Block) -> list[tuple[str, str]]:
    return [
        key
        for key in (*RUN, *NOT_RUN)
        if key[0] == block.page and block.first_line.startswith(key[1])
    ]


def test_every_block_is_run_or_listed_with_a_reason() -> None:
    unmatched = [f"{b.page}:{b.line} {b.first_line!r}" for b in doc_blocks() if not keys_of(b)]
    assert not unmatched, "blocks neither in RUN nor in NOT_RUN:\n" + "\n".join(unmatched)
    twice = [f"{b.page}:{b.line}" for b in doc_blocks() if len(keys_of(b)) > 1]
    assert not twice, f"blocks matched by more than one entry: {twice}"


def test_every_entry_names_a_block_of_the_docs() -> None:
    used = {key for b in doc_blocks() for key in keys_of(b)}
    assert not set(RUN) & set(NOT_RUN)
    assert not {*RUN, *NOT_RUN} - used, "entries that match no block (stale)"
    assert all(reason.strip() for reason in NOT_RUN.values())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """A copy of ``configs/`` with a ``.venv`` link, served on a free port."""
    here = tmp_path_factory.mktemp("blocks")
    shutil.copytree(ROOT / "configs", here / "configs")
    (here / ".venv").symlink_to(Path(sys.prefix))
    (here / "bench").symlink_to(ROOT / "bench")
    policy = here / "configs" / "policies" / "default.yaml"
    decisions = "      decisions: [approve, deny]\n"
    # the grants and break-glass docs/policies.md approves with, offered by the held rule:
    offered = "      grants: [once, session, tool]\n      break_glass: role:security\n"
    policy.write_text(policy.read_text().replace(decisions, decisions + offered, 1))
    config = here / "configs" / "gateway.yaml"
    port = free_port()
    config.write_text(config.read_text().replace("port: 8765", f"port: {port}"))
    server = subprocess.Popen(
        [str(BIN / "lockgate"), "serve"],
        cwd=here,
        env=env_for(port),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        assert "serving MCP at" in first_line_with(server.stderr, "lockgate: serving")
        yield here, port
    finally:
        server.terminate()
        server.communicate(timeout=10)


def env_for(port: int) -> dict[str, str]:
    return {
        **os.environ,
        "LOCKGATE_URL": f"http://127.0.0.1:{port}",
        "LOCKGATE_APPROVER_TOKEN": APPROVER_TOKEN,
        "TOKEN": "a-token",
        "PYTHONPATH": str(ROOT),
    }


HOLDS = itertools.count()


def hold(here: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    """A call held for approval (each on a file of its own), and its id."""
    argv = [str(BIN / "lockgate"), "call", "files__write_file"]
    argv += ["--args", json.dumps({"path": f".env.{next(HOLDS)}", "content": "K=1"})]
    held = subprocess.Popen(
        argv,
        cwd=here,
        env=env_for(port),
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert held.stderr is not None
    line = held.stderr.readline()
    while line and "held for approval" not in line:
        line = held.stderr.readline()
    found = re.search(r"ap_[A-Za-z0-9_-]+", line)
    if found is None:
        out, err = held.communicate(timeout=10)
        raise AssertionError(f"not held: {out}{err}")
    return held, found.group(0)


def shell(text: str, port: int, ids: list[str], how: Run) -> list[str]:
    lines, used = [], 0
    for old, new in how.replace:
        text = text.replace(old, new)
    for written in text.replace("127.0.0.1:8765", f"127.0.0.1:{port}").splitlines():
        line = written
        while "ap_..." in line:
            line = line.replace("ap_...", ids[min(used, len(ids) - 1)], 1)
            used += 1
        if any(stream in line for stream in STREAMS):
            line = f"{{ timeout 2 {line.split('  #')[0]} || [ $? = 124 ]; }}"
        if any(text in line for text in how.fails):
            line = f"! {line}"
        lines.append(line)
    return ["bash", "-euo", "pipefail", "-c", "\n".join(lines)]


def approve_the_held_call(here: Path, port: int) -> None:
    """Approve the one call held while a block runs, as an approver would."""
    lockgate = str(BIN / "lockgate")
    for _ in range(20):
        listed = subprocess.run(
            [lockgate, "approvals", "list"],
            cwd=here,
            env=env_for(port),
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT,
            check=True,
        )
        found = re.search(r"ap_[A-Za-z0-9_-]+", listed.stdout)
        if found:
            approve = [lockgate, "approvals", "approve", found.group(0)]
            subprocess.run(approve, cwd=here, env=env_for(port), timeout=CLI_TIMEOUT, check=True)
            return
        time.sleep(0.2)
    raise AssertionError("the block held no call")


PYTHON = """\
import ast, asyncio, sys
source = sys.argv[1]
code = compile(source, "<block>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if result is not None:
    asyncio.run(result)
"""


def runnable() -> dict[tuple[str, str], tuple[list[Block], Run]]:
    """The blocks of ``RUN`` by language and text: a block copied on two pages runs once."""
    found: dict[tuple[str, str], tuple[list[Block], Run]] = {}
    for b in doc_blocks():
        keys = [k for k in keys_of(b) if k in RUN]
        if keys:
            found.setdefault((b.language, b.text), ([], RUN[keys[0]]))[0].append(b)
    return found


RUNNABLE = list(runnable().values())


@pytest.mark.parametrize(
    ("block", "how"),
    [(blocks[0], how) for blocks, how in RUNNABLE],
    ids=[" ".join(f"{b.page}:{b.line}" for b in blocks) for blocks, _ in RUNNABLE],
)
def test_the_block_runs_as_written(block: Block, how: Run, served: tuple[Path, int]) -> None:
    here, port = served
    holds = [hold(here, port) for _ in range(how.holds)]
    try:
        if block.language == "sh":
            argv = shell(block.text, port, [id for _, id in holds], how)
        else:
            source = block.text.replace("127.0.0.1:8765", f"127.0.0.1:{port}")
            argv = [str(BIN / "python"), "-c", PYTHON, f"{how.given}\n{source}"]
        block_run = subprocess.Popen(
            argv,
            cwd=here,
            env=env_for(port),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if how.approves:
            approve_the_held_call(here, port)
        out, err = block_run.communicate(timeout=CLI_TIMEOUT)
        done = subprocess.CompletedProcess(argv, block_run.returncode, out, err)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        for text in how.expect:
            assert text in done.stdout, done.stdout
    finally:
        for held, _ in holds:
            try:
                held.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                held.kill()
                held.communicate(timeout=10)
