"""A script tool's call in traces: its run is a ``lockgate.script`` span in place of an upstream
call, and each sub-call it makes (``tools.NAME(...)``, ``async_tools.NAME(...)``) a
``lockgate.sub_call`` span under the run, with the sub-call's own chain below it and its own
decision on it (the script's call keeps its own), on every face in both eras."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from gateway_faces import FACES, Face, open_face
from otlp_receiver import OTLPReceiver
from support import echo_upstream
from trace_tree_support import CHAIN_STEPS, call_tree, chain_below, children, traced_config

PAIR = '''
import asyncio

async def run(text: str) -> list:
    """Echo a text once, then twice at once."""
    first = tools.echo__echo(text=text)
    rest = await asyncio.gather(*[async_tools.echo__echo(text=text) for _ in range(2)])
    return [first, *rest]
'''
POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - {id: scripts-run, tools: ["ops__*"], effect: allow}
  - {id: echo-runs, tools: [echo__echo], effect: allow}
"""


@pytest.mark.parametrize("face", FACES)
async def test_a_script_run_and_each_of_its_sub_calls_are_spans_of_the_calls_trace(
    face: Face, tmp_path: Path
) -> None:
    value = f"scripted-{uuid.uuid4().hex}"
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    scripts = {"name": "ops", "transport": "script", "scripts": [{"name": "pair", "source": PAIR}]}
    async with OTLPReceiver() as receiver:
        config = traced_config(
            tmp_path,
            receiver.endpoint,
            [echo_upstream(), scripts],
            policies={"files": [str(tmp_path / "policy.yaml")]},
            approvals={"store": "memory"},
            sandbox={"min_workers": 1, "max_workers": 2},
        )
        async with open_face(face, config) as client:
            result = await client.call_tool("ops__pair", {"text": value})
            assert not result.is_error, result.content
        root, spans = await call_tree(receiver, "tools/call ops__pair")
    step = root
    for name in CHAIN_STEPS:  # the script's call passes the chain, one step under the other
        (step,) = children(spans, step)
        assert step["name"] == name
    (run,) = children(spans, step)
    assert (run["name"], run["kind"]) == ("lockgate.script ops__pair", "INTERNAL")
    assert all(s["kind"] != "CLIENT" or s["name"] == "tools/call echo" for s in spans)
    sub_calls = children(spans, run)
    assert [s["name"] for s in sub_calls] == ["lockgate.sub_call echo__echo"] * 3
    for sub in sub_calls:
        assert chain_below(spans, sub) == [*CHAIN_STEPS, "tools/call echo"]
        assert sub["attributes"]["lockgate.rule"] == "echo-runs"
        assert sub["attributes"]["lockgate.decision.effect"] == "allow"
        assert sub["attributes"]["lockgate.parent_call_id"] != ""
    assert root["attributes"]["lockgate.rule"] == "scripts-run"  # not a sub-call's
    assert value.encode() not in receiver.payload
