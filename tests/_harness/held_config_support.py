"""A gateway config for tests of what approvers see of held calls: the echo server over stdio,
a policy given as text, SQLite approvals and one approver (``user:alice``) with ``token``."""

from __future__ import annotations

from pathlib import Path

from support import echo_upstream, write_config

SECRET_ECHO_POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: secrets-need-a-look
    tools: [echo__echo]
    when: 'args.text.startsWith("secret")'
    effect: ask
    reason: echoing a secret
    approval: {hold: 0s, expires: 5m}
"""
"""Asks about (and holds at once) an ``echo__echo`` call whose text starts with ``secret``."""


def held_config(directory: Path, policy: str, token: str) -> Path:
    """Write ``policy`` and the config beside it; the config's path."""
    file = directory / "policy.yaml"
    file.write_text(policy, encoding="utf-8")
    return write_config(
        directory,
        [echo_upstream()],
        policies={"files": [str(file)]},
        approvals={"store": "sqlite", "path": str(directory / "pending.db")},
        auth={"approvers": [{"id": "user:alice", "token": token}]},
        startup_wait=60,
    )
