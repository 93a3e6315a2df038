"""A gateway config for tests of what approvers see of held calls: the echo server over stdio,
a policy given as text, SQLite approvals and one approver (``user:alice``) with ``token``."""

from __future__ import annotations

from pathlib import Path

from support import echo_upstream, write_config


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
