"""The bundled example config runs out of the box: its files and tickets servers, on every face.

The config and its servers are copied into a temporary directory first, so the servers' data
(``../var`` relative to the config) lands there and not in the repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import mcp_types as types
import pytest
from gateway_faces import Face, text_of
from mcp import Client
from paths import REPO

from gateway import load_config

CONFIGS = REPO / "configs"


@pytest.fixture(scope="module")
def gateway_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("example")
    shutil.copytree(CONFIGS, root / "configs", ignore=shutil.ignore_patterns("__pycache__"))
    return root / "configs" / "gateway.yaml"


def test_the_example_config_is_valid_and_names_two_servers_and_a_script_server() -> None:
    config = load_config(CONFIGS / "gateway.yaml")

    assert [server.name for server in config.enabled_servers()] == ["files", "tickets", "ops"]


async def test_it_lists_the_files_and_tickets_tools(client: Client) -> None:
    listed = {tool.name for tool in (await client.list_tools()).tools}

    assert {name.split("__")[0] for name in listed} == {"files", "tickets", "ops"}
    assert {"files__read_file", "files__write_file", "files__list_directory"} <= listed
    assert {"tickets__create_ticket", "tickets__list_tickets"} <= listed


async def test_a_written_file_reads_back_and_stays_in_the_temporary_workspace(
    client: Client, face: Face, gateway_config: Path
) -> None:
    name = f"notes-{face.transport}-{face.mode}.txt"
    content = f"written through {face.transport} by a {face.mode} client\n"

    written = await client.call_tool("files__write_file", {"path": name, "content": content})
    read = await client.call_tool("files__read_file", {"path": name})

    assert not written.is_error, text_of(written)
    assert text_of(read) == content
    workspace = gateway_config.parent.parent / "var" / "workspace"
    assert (workspace / name).read_text(encoding="utf-8") == content
    assert not (CONFIGS.parent / "var" / "workspace" / name).exists()


async def test_a_path_outside_the_workspace_is_an_error_result(client: Client) -> None:
    result = await client.call_tool("files__read_file", {"path": "../../etc/passwd"})

    assert result.is_error
    assert "outside the workspace" in text_of(result)


async def test_the_example_script_tool_summarises_the_tickets(client: Client) -> None:
    result = await client.call_tool("ops__ticket_summary", {"status": "open"})

    assert not result.is_error
    assert result.structured_content is not None
    assert "Welcome to lockgate" in result.structured_content["titles"]


async def test_the_example_servers_serve_resources_prompts_and_completions(
    client: Client, face: Face
) -> None:
    name = f"resource-{face.transport}-{face.mode}.md"
    await client.call_tool("files__write_file", {"path": name, "content": "# hi\n"})
    templates = {
        t.name: t.uri_template for t in (await client.list_resource_templates()).resource_templates
    }
    file = templates["file"].replace("{+path}", name)
    ref = types.ResourceTemplateReference(type="ref/resource", uri=templates["file"])

    read = (await client.read_resource(file)).contents[0]
    paths = (await client.complete(ref, {"name": "path", "value": "resource-"})).completion.values
    review = await client.get_prompt("files__review_file", {"path": name})
    ticket = await client.read_resource(templates["ticket"].replace("{id}", "1"))

    assert templates["file"].startswith("lockgate://files/file:///")
    assert templates["ticket"] == "lockgate://tickets/tickets://ticket/{id}"
    assert isinstance(read, types.TextResourceContents)
    assert read.text == "# hi\n"
    assert name in paths
    assert isinstance(review.messages[1].content, types.EmbeddedResource)
    assert review.messages[1].content.resource.uri == file
    assert ticket.contents[0].uri == "lockgate://tickets/tickets://ticket/1"
