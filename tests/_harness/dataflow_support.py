"""Support for the data-flow label tests: the dataflow upstream, a trifecta policy, the config.

Imported by module name (``import dataflow_support``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final

from support import write_config

from toolsets.context import CallContext, Principal

DATAFLOW_SERVER: Final = str(Path(__file__).parent / "upstreams" / "dataflow_server.py")
FETCH: Final = "web__fetch_page"
READ: Final = "web__read_file"
SEND: Final = "web__send"
SECRET: Final = "db-password: hunter2"

TRIFECTA_POLICY: Final = """\
version: 1
defaults: {effect: allow}
rules:
  - id: workspace-is-private
    tools: [web__read_file]
    labels: [private]
  - id: no-exfiltration
    tools: ["*"]
    when: '"egress" in tool.labels && "private" in session.labels && "untrusted" in session.labels'
    effect: ask
    reason: private data may leave after untrusted content
    approval: {hold: 0s, approvers: ["role:approver"]}
"""


def dataflow_upstream(root: Path, *, era: str = "dual", **extra: Any) -> dict[str, Any]:
    """Config entry for the dataflow server over stdio, reading and sending under ``root``."""
    args = [DATAFLOW_SERVER, "--era", era, "--name", "web", "--root", str(root)]
    return {"name": "web", "transport": "stdio", "command": sys.executable, "args": args, **extra}


def dataflow_config(
    tmp_path: Path,
    policy: str = TRIFECTA_POLICY,
    *,
    store: str = "memory",
    server: dict[str, Any] | None = None,
    **sections: Any,
) -> Path:
    """A gateway config with the dataflow upstream and ``policy``; ``store`` memory or sqlite."""
    root = tmp_path / "workspace"
    root.mkdir(exist_ok=True)
    (root / "secrets.txt").write_text(SECRET, encoding="utf-8")
    (tmp_path / "policy.yaml").write_text(policy, encoding="utf-8")
    approvals: dict[str, Any] = {"store": store}
    if store == "sqlite":
        approvals["path"] = str(tmp_path / "pending.db")
    return write_config(
        tmp_path,
        [dataflow_upstream(root, **(server or {}))],
        policies={"files": [str(tmp_path / "policy.yaml")]},
        approvals=sections.pop("approvals", approvals),
        **sections,
    )


def agent(session: str) -> CallContext:
    """A call context of the agent in ``session``."""
    return CallContext(principal=Principal(id="agent:bot"), session_id=session)


def sent(tmp_path: Path) -> str:
    """What the dataflow server's ``send`` tool sent so far."""
    path = tmp_path / "workspace" / "sent.txt"
    return path.read_text(encoding="utf-8") if path.exists() else ""


AGENT_TOKEN: Final = "dataflow-agent-token"
APPROVER: Final = "user:alice"
APPROVER_TOKEN: Final = "dataflow-approver-token"
OTHER_TENANT_TOKEN: Final = "dataflow-globex-approver-token"


def served_config(tmp_path: Path, policy: str = TRIFECTA_POLICY) -> Path:
    """`dataflow_config` with tokens (agent ``agent:bot`` and approver ``user:alice`` of
    tenant acme, approver ``user:eve`` of tenant globex), SQLite approvals and the audit log in
    ``tmp_path``."""
    return dataflow_config(
        tmp_path,
        policy,
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
        auth={
            "agents": [{"id": "agent:bot", "token": AGENT_TOKEN, "tenant": "acme"}],
            "approvers": [
                {"id": APPROVER, "token": APPROVER_TOKEN, "roles": ["approver"], "tenant": "acme"},
                {"id": "user:eve", "token": OTHER_TENANT_TOKEN, "tenant": "globex"},
            ],
        },
        events={"audit": {"path": str(tmp_path / "audit.db")}},
    )
