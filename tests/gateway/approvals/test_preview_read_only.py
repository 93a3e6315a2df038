"""A rule's preview runs only a tool its server declares read-only (``readOnlyHint: true``,
``destructiveHint`` not true): a destructive or unannotated preview tool is shown as not run and
never reaches its upstream; and the preview is decided as the held session's next call, so a
rule reading the session's labels refuses it there. Both eras.

Real parts: the files server over stdio (it logs every call it answers), the gateway under
uvicorn, `mcp.Client`, the REST API and the CLI.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from gateway_faces import HTTP_FACES, Face, lockgate, open_client
from support import serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app

FILES_SERVER = str(Path(__file__).resolve().parents[2] / "_harness/upstreams/files_server.py")
ALICE = "preview-ro-alice-token"
PREVIEWS = {"delete": "delete_file", "stat": "stat", "peek": "peek", "read": "read_file"}
"""The held write's path -> the tool its rule previews it with."""


def _policy() -> str:
    rules = "".join(
        f"""
  - id: {path}-previewed
    tools: [files__write_file]
    when: 'args.path == "{path}"'
    effect: ask
    approval: {{hold: 0s}}
    preview: {{tool: files__{tool}, args: {{path: "{{args.path}}"}}}}"""
        for path, tool in PREVIEWS.items()
    )
    return f"""\
version: 1
defaults: {{effect: allow}}
rules:
  - id: secrets-are-private
    tools: [files__read_secret]
    labels: [private]
  - id: no-reads-after-private
    tools: [files__read_file]
    when: '"private" in session.labels'
    effect: deny
    reason: private data in the session{rules}
"""


def _config(directory: Path) -> tuple[Path, Path]:
    """The gateway config (the files server, the policy, one approver) and the server's log."""
    log = directory / "upstream-calls.log"
    policy = directory / "policy.yaml"
    policy.write_text(_policy(), encoding="utf-8")
    files = {
        "name": "files",
        "transport": "stdio",
        "command": sys.executable,
        "args": [FILES_SERVER, str(log)],
    }
    config = write_config(
        directory,
        [files],
        policies={"files": [str(policy)]},
        approvals={"store": "sqlite", "path": str(directory / "pending.db")},
        auth={"approvers": [{"id": "user:alice", "token": ALICE}]},
    )
    return config, log


def _seen(log: Path) -> list[str]:
    """The calls the upstream answered."""
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


@contextlib.asynccontextmanager
async def _served(
    config: Path, face: Face, session: str
) -> AsyncIterator[tuple[str, Any, httpx2.AsyncClient]]:
    """The gateway on ``config`` under uvicorn: its base URL, a client on ``face`` in
    ``session``, and the REST API as alice."""
    gateway = Gateway.from_config(config)
    async with (
        serve_asgi(build_app(gateway)) as base,
        open_client(
            face, config=config, url=f"{base}/mcp", headers={"Lockgate-Session": session}
        ) as client,
        httpx2.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {ALICE}"}) as api,
    ):
        yield base, client, api


async def _held(client: Any, path: str) -> str:
    result = await client.call_tool("files__write_file", {"path": path, "text": "new"})
    pending: str = (result.meta or {})["lockgate/pending"]["id"]
    return pending


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_preview_tool_not_declared_read_only_is_shown_as_not_run_and_never_called(
    tmp_path: Path, face: Face
) -> None:
    config, log = _config(tmp_path)
    async with _served(config, face, "preview-hints") as (base, client, api):
        held = {path: await _held(client, path) for path in PREVIEWS}
        shown: dict[str, dict[str, Any]] = {}
        for path, id in held.items():
            for _ in range(2):  # a second look runs nothing again
                got = await api.get(f"/api/approvals/{id}")
                assert got.status_code == 200, got.text
                shown[path] = got.json()["context"]["preview"]
        cli = await anyio.to_thread.run_sync(
            lambda: lockgate("approvals", "show", held["delete"], "--url", base, "--token", ALICE)
        )

    not_read_only = {
        "delete": "(its server says destructiveHint: true)",
        "stat": "(its server gives no hints)",
        "peek": "(its server says readOnlyHint: true, destructiveHint: true)",
    }
    for path, hints in not_read_only.items():
        tool = f"files__{PREVIEWS[path]}"
        assert shown[path] == {
            "tool": tool,
            "args": {"path": path},
            "ran": False,
            "text": f"Not run: {tool!r} is not declared read-only {hints}.",
        }
    assert shown["read"]["ran"] is True
    assert shown["read"]["text"] == "contents of read"
    assert _seen(log) == ["read_file read"]  # the writes wait; only the read-only preview ran
    assert "preview    files__delete_file: Not run: 'files__delete_file' is not declared" in (
        cli.stdout
    )


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_preview_is_decided_in_the_held_calls_session_so_its_labels_can_refuse_it(
    tmp_path: Path, face: Face
) -> None:
    config, log = _config(tmp_path)
    async with _served(config, face, "preview-labels") as (_base, client, api):
        secret = await client.call_tool("files__read_secret", {})
        assert not secret.is_error, secret
        id = await _held(client, "read")
        got = await api.get(f"/api/approvals/{id}")
        assert got.status_code == 200, got.text

    preview = got.json()["context"]["preview"]
    assert preview["ran"] is False
    assert preview["text"].startswith(
        "Not run: the policy says deny: private data in the session"
    ), preview
    assert _seen(log) == ["read_secret -"]  # the read-only preview tool was never called
