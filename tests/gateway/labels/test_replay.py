"""Replaying recorded traffic under a new label rule: the labels are rebuilt from the audit
log, and the report names exactly the calls the new rule would hold.

Real parts: the dataflow upstream over stdio, a gateway with an audit log recording the calls
under a policy without label rules, then ``lockgate policy replay`` with the trifecta policy.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dataflow_support import FETCH, READ, SEND, TRIFECTA_POLICY, agent, dataflow_config

from gateway.cli.main import build_parser
from gateway.gateway import Gateway

RECORDED_POLICY = "version: 1\ndefaults: {effect: allow}\n"
SEQUENCES = {
    "s-trifecta": [FETCH, READ, SEND],
    "s-send-only": [SEND],
    "s-private-then-send": [READ, SEND],
    "s-send-before-reading": [SEND, FETCH, READ],
}
ARGS = {
    FETCH: {"url": "https://x.example"},
    READ: {"path": "secrets.txt"},
    SEND: {"to": "a@b.c", "body": "x"},
}


@pytest.fixture
async def recorded(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The audit log of the `SEQUENCES`, each in its session, all allowed; the call id of each
    session's send."""
    audit = tmp_path / "audit.db"
    config = dataflow_config(tmp_path, RECORDED_POLICY, events={"audit": {"path": str(audit)}})
    sends: dict[str, str] = {}
    async with Gateway.from_config(config) as gateway:
        for session, tools in SEQUENCES.items():
            for name in tools:
                ctx = agent(session)
                result = await gateway.call_tool(name, ARGS[name], ctx)
                assert not result.is_error, result
                if name == SEND:
                    sends[session] = ctx.call_id
    return audit, sends


def _replay(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    args = build_parser().parse_args(["policy", "replay", *argv])
    assert args.func(args) == 0
    return capsys.readouterr().out


async def test_replay_under_a_label_rule_reports_exactly_the_calls_it_would_hold(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    audit, sends = recorded
    policy = tmp_path / "new.yaml"
    policy.write_text(TRIFECTA_POLICY, encoding="utf-8")
    data = json.loads(_replay(capsys, "--audit", str(audit), "--json", str(policy)))
    assert [(h["call_id"], h["tool"], h["session_id"]) for h in data["newly_held"]] == [
        (sends["s-trifecta"], SEND, "s-trifecta")
    ]
    [held] = data["newly_held"]
    assert held["reason"] == (
        "private data may leave after untrusted content (session labels: private via "
        "web__read_file and untrusted via web__fetch_page)"
    )
    text = _replay(capsys, "--audit", str(audit), str(policy))
    assert f"now held: {held['ts']} {SEND} (call {sends['s-trifecta']}, session s-trifecta)" in text
