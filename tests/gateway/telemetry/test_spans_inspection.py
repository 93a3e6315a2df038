"""Content inspection is a step of its own in a traced call: ``lockgate.inspect_arguments``
above the approval step, ``lockgate.inspect_results`` above the upstream's span (so the
upstream's span times the upstream alone); in both eras, through the real OTLP receiver."""

from __future__ import annotations

from pathlib import Path

import pytest
from gateway_faces import HTTP_FACES, Face, open_face
from otlp_receiver import OTLPReceiver
from trace_tree_support import CHAIN_STEPS, call_tree, chain_below, traced_config

INSPECTORS = {"pii": {"type": "builtin", "detectors": ["email"], "tools": ["echo__*"]}}


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_inspection_steps_have_spans_of_their_own(face: Face, tmp_path: Path) -> None:
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint, inspectors=INSPECTORS)
        async with open_face(face, config) as client:
            result = await client.call_tool("echo__echo", {"text": "hello"})
            assert not result.is_error
        root, spans = await call_tree(receiver, "tools/call echo__echo")

    assert chain_below(spans, root) == [
        *CHAIN_STEPS,
        "lockgate.inspect_arguments",
        "lockgate.inspect_results",
        "tools/call echo",
    ]


@pytest.mark.parametrize("face", HTTP_FACES[:1])
async def test_without_inspectors_no_inspection_span_is_made(face: Face, tmp_path: Path) -> None:
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint)
        async with open_face(face, config) as client:
            await client.call_tool("echo__echo", {"text": "hello"})
        root, spans = await call_tree(receiver, "tools/call echo__echo")

    assert chain_below(spans, root) == [*CHAIN_STEPS, "tools/call echo"]
