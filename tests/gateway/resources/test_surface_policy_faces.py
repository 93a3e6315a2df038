"""The policy over resources and prompts on every face (streamable HTTP and ``lockgate stdio``,
both eras): what it hides is not listed, and its read, subscription, get or completion is
answered exactly as one no upstream has (same code, message and data, under the name the client
used); what it denies is listed, and its read or get refused with the rule's message.

The module's gateway (the suite's ``served`` and ``watched``, on this module's
``surface_config``) serves the echo server, whose SDK answers an unknown prompt with an internal
error, and the strict one (``tests/upstreams/strict_server.py``), which answers whatever it lacks
as unknown. Policy: ``fixtures/unknowns_policy.yaml``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from support import echo_upstream, write_config
from surface_support import (
    MODERN,
    STARTUP_WAIT,
    STRICT_SERVER,
    Heard,
    all_resources,
    read_text,
    refused,
    subscribe,
    uri,
)

from gateway.mcp.errors import REFUSED

POLICY = Path(__file__).parent / "fixtures" / "unknowns_policy.yaml"
Watched = tuple[Client, Heard]
Shape = tuple[int, str, Any]
UNKNOWN_RESOURCE: Shape = (types.INVALID_PARAMS, "Unknown resource: {}", {"uri": "{}"})
UNKNOWN_PROMPT: Shape = (types.INVALID_PARAMS, "Unknown prompt: {}", None)
THING = uri("strict", "strict://things/7")


@pytest.fixture(scope="module")
def surface_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The echo server (with ``echo://items/000`` to ``003``) and the strict one, under
    ``unknowns_policy.yaml``."""
    echo = echo_upstream("echo")
    echo["args"] += ["--resources", "4"]
    strict: dict[str, Any] = {"name": "strict", "transport": "stdio", "command": sys.executable}
    strict["args"] = [STRICT_SERVER]
    directory = tmp_path_factory.mktemp("surface-faces")
    policies = {"files": [str(POLICY)]}
    return write_config(directory, [echo, strict], policies=policies, startup_wait=STARTUP_WAIT)


def shape(error: types.ErrorData, name: str) -> Shape:
    """``error`` with ``name`` (the URI or prompt name asked for) taken out: whatever else could
    tell one unknown thing from another."""
    data = error.data
    if isinstance(data, dict):
        data = {k: v.replace(name, "{}") if isinstance(v, str) else v for k, v in data.items()}
    return error.code, error.message.replace(name, "{}"), data


@pytest.mark.parametrize(
    ("hidden", "missing"),
    [
        pytest.param(uri("echo", "echo://items/001"), uri("echo", "echo://items/999"), id="echo"),
        pytest.param(uri("strict", "strict://known"), uri("strict", "strict://nope"), id="strict"),
    ],
)
async def test_a_hidden_resource_is_unlisted_and_reads_as_one_its_server_lacks(
    watched: Watched, hidden: str, missing: str
) -> None:
    client, _ = watched

    listed = [r.uri for r in await all_resources(client)]
    unseen = await refused(client.read_resource(hidden))
    absent = await refused(client.read_resource(missing))

    assert hidden not in listed
    assert uri("echo", "echo://items/000") in listed
    assert shape(unseen, hidden) == shape(absent, missing) == UNKNOWN_RESOURCE
    assert await read_text(client, THING) == "read strict://things/7"  # its server answers


@pytest.mark.parametrize(
    ("hidden", "missing"),
    [
        pytest.param("echo__hidden", "echo__nothing", id="echo"),
        pytest.param("strict__known", "strict__nope", id="strict"),
    ],
)
async def test_a_hidden_prompt_is_unlisted_and_gets_as_one_its_server_lacks(
    watched: Watched, hidden: str, missing: str
) -> None:
    client, _ = watched

    listed = [p.name for p in (await client.list_prompts()).prompts]
    unseen = await refused(client.get_prompt(hidden, {"topic": "alpha"}))
    absent = await refused(client.get_prompt(missing, {"topic": "alpha"}))

    assert "strict__known" not in listed
    assert "echo__summarize" in listed
    assert shape(unseen, hidden) == shape(absent, missing) == UNKNOWN_PROMPT


@pytest.mark.parametrize(
    ("hidden", "missing", "expected"),
    [
        pytest.param(
            types.PromptReference(type="ref/prompt", name="strict__known"),
            types.PromptReference(type="ref/prompt", name="strict__nope"),
            UNKNOWN_PROMPT,
            id="prompt",
        ),
        pytest.param(
            types.ResourceTemplateReference(
                type="ref/resource", uri=uri("strict", "strict://things/{id}")
            ),
            types.ResourceTemplateReference(
                type="ref/resource", uri=uri("strict", "strict://nope/{id}")
            ),
            UNKNOWN_RESOURCE,
            id="template",
        ),
    ],
)
async def test_completing_a_hidden_reference_is_refused_as_one_its_server_lacks(
    watched: Watched,
    hidden: types.PromptReference | types.ResourceTemplateReference,
    missing: types.PromptReference | types.ResourceTemplateReference,
    expected: Shape,
) -> None:
    client, _ = watched
    argument = {"name": "topic", "value": "a"}

    templates = [
        t.uri_template for t in (await client.list_resource_templates()).resource_templates
    ]
    unseen = await refused(client.complete(hidden, argument))
    absent = await refused(client.complete(missing, argument))

    assert uri("strict", "strict://things/{id}") not in templates
    assert shape(unseen, _name(hidden)) == shape(absent, _name(missing)) == expected


def _name(ref: types.PromptReference | types.ResourceTemplateReference) -> str:
    return ref.name if isinstance(ref, types.PromptReference) else ref.uri


async def test_subscribing_to_a_hidden_resource_is_refused_as_to_one_its_server_lacks(
    watched: Watched,
) -> None:
    client, _ = watched
    hidden, missing = uri("strict", "strict://known"), uri("strict", "strict://nope")

    if client.protocol_version == MODERN:  # acknowledged: only what it holds
        async with client.listen(resource_subscriptions=[hidden, missing, THING]) as listening:
            assert listening.honored.resource_subscriptions == [THING]
        return
    unseen = await refused(subscribe(client, hidden))
    absent = await refused(subscribe(client, missing))
    await subscribe(client, THING)
    await subscribe(client, THING, on=False)

    assert shape(unseen, hidden) == shape(absent, missing) == UNKNOWN_RESOURCE


async def test_a_denied_resource_is_listed_and_its_read_refused_with_the_rules_message(
    watched: Watched,
) -> None:
    client, _ = watched
    readme = uri("echo", "echo://readme")

    listed = [r.uri for r in await all_resources(client)]
    error = await refused(client.read_resource(readme))

    assert readme in listed
    assert (error.code, error.message) == (REFUSED, "The readme is for people, not agents.")
    assert isinstance(error.data, dict)
    decision = error.data["lockgate/decision"]
    assert (decision["effect"], decision["rule_id"]) == ("deny", "readme-denied")


async def test_a_denied_prompt_is_listed_and_its_get_refused_with_the_rules_message(
    watched: Watched,
) -> None:
    client, _ = watched

    error = await refused(client.get_prompt("echo__summarize", {"note": "x", "style": "long"}))
    allowed = await client.get_prompt("echo__summarize", {"note": "welcome"})

    assert (error.code, error.message) == (REFUSED, 'Long summaries of "x" are not allowed.')
    assert isinstance(error.data, dict)
    decision = error.data["lockgate/decision"]
    assert (decision["effect"], decision["rule_id"]) == ("deny", "no-long-summaries")
    assert len(allowed.messages) == 3
