"""Helpers of the scripts suite: a gateway with script tools and hooks in front of the echo
server (imported as ``script_support``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support import echo_upstream, write_config

from toolsets.context import CallContext, Principal

OPS = Principal(id="user:ops", roles=frozenset({"ops"}))
AGENT = Principal(id="agent:a")
POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: weather-needs-ops
    tools: [echo__weather]
    effect: ask
    approval: {approvers: ["role:ops"], hold: 20s}
  - id: no-fail
    tools: [echo__fail]
    effect: deny
    message: "echo__fail is not allowed here."
  - id: no-forbidden-echo
    tools: [echo__echo]
    when: args.text == "forbidden"
    effect: deny
    message: "That text may not be echoed."
"""


def ctx(session: str = "s1") -> CallContext:
    return CallContext(principal=AGENT, session_id=session)


def scripts_config(
    tmp_path: Path,
    scripts: dict[str, str],
    *,
    hooks: list[dict[str, Any]] | None = None,
    limits: dict[str, Any] | None = None,
    workers: int = 4,
) -> Path:
    """A config: the echo server, a script server ``ops`` with ``scripts`` (name -> source),
    the suite's policy, memory approvals."""
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    entries = [
        {"name": name, "source": source, **({"limits": limits} if limits else {})}
        for name, source in scripts.items()
    ]
    server = {"name": "ops", "transport": "script", "scripts": entries}
    return write_config(
        tmp_path,
        [echo_upstream(), server],
        policies={"files": [str(tmp_path / "policy.yaml")]},
        approvals={"store": "memory"},
        hooks=hooks or [],
        sandbox={"min_workers": 1, "max_workers": workers},
    )
