"""Script and hook sources read and checked without running them: the schema of ``run(...)``
from its annotations, and every problem at start-up as a config error naming file and line."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from support import write_config

from gateway import load_config
from gateway.scripts.source import (
    ScriptSource,
    check_sources,
    read_source,
    run_description,
    run_schema,
)
from toolsets.errors import ConfigError, ConfigIssue


def _source(text: str) -> ScriptSource:
    text = textwrap.dedent(text)
    return ScriptSource(text=text, filename="tool.py", key="servers.0.scripts.0", file="tool.py")


def _property(annotation: str) -> dict[str, Any]:
    schema = run_schema(_source(f"def run(x: {annotation}):\n    return x\n"))
    assert schema["required"] == ["x"]
    return schema["properties"]["x"]  # type: ignore[no-any-return]


STRING, INTEGER, NUMBER, NULL = (
    {"type": "string"},
    {"type": "integer"},
    {"type": "number"},
    {"type": "null"},
)
ANNOTATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "str": ("str", STRING),
    "int": ("int", INTEGER),
    "float": ("float", NUMBER),
    "bool": ("bool", {"type": "boolean"}),
    "list": ("list[int]", {"type": "array", "items": INTEGER}),
    "List": ("List[str]", {"type": "array", "items": STRING}),
    "bare-list": ("list", {"type": "array", "items": {}}),
    "bare-dict": ("dict", {"type": "object"}),
    "dict": ("dict[str, float]", {"type": "object", "additionalProperties": NUMBER}),
    "nullable": ("int | None", {"anyOf": [INTEGER, NULL]}),
    "Optional": ("Optional[str]", {"anyOf": [STRING, NULL]}),
    "Union": ("typing.Union[int, str]", {"anyOf": [INTEGER, STRING]}),
    "Literal": ('Literal["fast", "slow"]', {"enum": ["fast", "slow"], "type": "string"}),
    "Literal-int": ("Literal[1, -1]", {"enum": [1, -1], "type": "integer"}),
    "Any": ("Any", {}),
    "string": ('"list[str]"', {"type": "array", "items": STRING}),
}


@pytest.mark.parametrize(
    ("annotation", "expected"), [pytest.param(*case, id=id) for id, case in ANNOTATIONS.items()]
)
def test_each_annotation_becomes_its_json_schema(annotation: str, expected: Any) -> None:
    assert _property(annotation) == expected


def test_defaults_are_optional_and_shown_and_unannotated_takes_anything() -> None:
    source = _source(
        """
        def run(text: str, times: int = 2, sep=None, *, mode: str = "plain", ref=object()):
            return text
        """
    )

    schema = run_schema(source)

    assert schema == {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "times": {"type": "integer", "default": 2},
            "sep": {"default": None},
            "mode": {"type": "string", "default": "plain"},
            "ref": {},  # optional, but its default is not JSON: left out
        },
        "required": ["text"],
        "additionalProperties": False,
    }


def test_the_docstring_gives_the_description_and_the_parameter_descriptions() -> None:
    source = _source(
        '''
        def run(city: str, days: int = 1):
            """Forecast the weather
            of a city.

            Asks the weather tool once per day.

            Args:
                city: Where.
                days: How many days ahead.
            """
            return city
        '''
    )

    schema = run_schema(source)

    assert run_description(source) == "Forecast the weather of a city."
    assert schema["properties"]["city"] == {"type": "string", "description": "Where."}
    assert schema["properties"]["days"]["description"] == "How many days ahead."
    assert run_description(_source("def run():\n    return 1\n")) is None


@pytest.mark.parametrize(
    ("signature", "message"),
    [
        pytest.param("x: set[int]", "unsupported annotation 'set[int]'", id="set"),
        pytest.param("x: dict[int, str]", "JSON object keys are str", id="dict-key"),
        pytest.param("x: Path", "unsupported annotation 'Path'", id="class"),
        pytest.param('x: Literal[b"x"]', "is not JSON", id="literal-bytes"),
        pytest.param("*xs: int", "'xs' is variadic", id="variadic"),
        pytest.param("x, /", "positional-only", id="positional-only"),
    ],
)
def test_a_parameter_without_json_schema_is_an_error_at_its_line(
    signature: str, message: str
) -> None:
    source = _source(f"import json\n\ndef run({signature}):\n    return 1\n")

    with pytest.raises(ConfigError) as caught:
        run_schema(source)

    [issue] = caught.value.issues
    assert (issue.file, issue.line, issue.key) == ("tool.py", 3, "servers.0.scripts.0")
    assert message in issue.message


def _script_config(tmp_path: Path, scripts: dict[str, str], **sections: Any) -> Path:
    """A config with a script server ``ops``: each script a file ``NAME.py`` next to it."""
    for name, text in scripts.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    entries = [{"name": name, "file": f"{name}.py"} for name in scripts]
    server = {"name": "ops", "transport": "script", "scripts": entries}
    return write_config(tmp_path, [server], **sections)


def _issues(config: Path) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    return list(caught.value.issues)


def _where(issue: ConfigIssue) -> tuple[str, int | None, int | None, str]:
    return Path(issue.file).name, issue.line, issue.column, issue.key


def test_good_scripts_and_hooks_load(tmp_path: Path) -> None:
    script = """
        import asyncio
        import json
        from re import fullmatch

        def run(texts: list[str]) -> str:
            found = [t for t in texts if fullmatch(r"\\w+", t)]
            echoed = tools.echo__echo(text=json.dumps(found))
            return echoed + str(len(sorted(found)))
        """
    hook = "def after_call(tool, args, result, ctx):\n    return None\n"
    config = _script_config(tmp_path, {"words": script}, hooks=[{"name": "h", "source": hook}])

    loaded = load_config(config)

    assert check_sources(loaded) == []


def test_a_syntax_error_names_the_file_line_and_column(tmp_path: Path) -> None:
    config = _script_config(tmp_path, {"broken": "def run():\n    return (1,\n\nx = 2 +\n"})

    [issue] = _issues(config)

    assert _where(issue)[:2] == ("broken.py", 2)
    assert issue.key == "servers.0.scripts.0"
    assert issue.message.startswith("invalid Python:")


def test_a_script_without_run_is_an_error(tmp_path: Path) -> None:
    config = _script_config(tmp_path, {"norun": "def main(x: int):\n    return x\n"})

    [issue] = _issues(config)

    assert _where(issue) == ("norun.py", 1, None, "servers.0.scripts.0")
    assert "def run(...)" in issue.message


@pytest.mark.parametrize("module", ["os", "socket", "subprocess", "os.path", "pathlib"])
def test_a_module_the_sandbox_does_not_provide_is_an_error_at_its_import(
    tmp_path: Path, module: str
) -> None:
    script = f"""
        import json

        def run() -> str:
            import {module}
            return "x"
        """
    config = _script_config(tmp_path, {"reach": script})

    [issue] = _issues(config)

    assert _where(issue) == ("reach.py", 5, 5, "servers.0.scripts.0")
    assert repr(module.partition(".")[0]) in issue.message
    assert "sandbox" in issue.message


def test_from_imports_of_missing_names_and_relative_imports_are_errors(tmp_path: Path) -> None:
    script = "from json import nothere\nfrom . import sibling\n\ndef run():\n    return 1\n"
    config = _script_config(tmp_path, {"imports": script})

    first, second = _issues(config)

    assert (first.line, second.line) == (1, 2)
    assert "'from json import nothere' does not work in the sandbox" in first.message
    assert "relative imports" in second.message


@pytest.mark.parametrize("builtin", ["compile", "__import__", "globals"])
def test_a_builtin_the_sandbox_lacks_is_an_error_where_it_is_used(
    tmp_path: Path, builtin: str
) -> None:
    script = f"def run(code: str):\n    return {builtin}(code)\n"
    config = _script_config(tmp_path, {"sneaky": script})

    [issue] = _issues(config)

    assert _where(issue) == ("sneaky.py", 2, 12, "servers.0.scripts.0")
    assert f"{builtin!r} is not available in the sandbox" in issue.message


def test_a_name_the_source_defines_itself_is_not_a_missing_builtin(tmp_path: Path) -> None:
    script = "def compile(x):\n    return x\n\ndef run(x: int):\n    return compile(x)\n"

    load_config(_script_config(tmp_path, {"own": script}))


def test_a_tool_attribute_no_tool_name_can_match_is_an_error(tmp_path: Path) -> None:
    script = "def run():\n    tools.echo__echo(text='ok')\n    return async_tools._private()\n"
    config = _script_config(tmp_path, {"calls": script})

    [issue] = _issues(config)

    assert _where(issue)[:3] == ("calls.py", 3, 12)
    assert "async_tools._private cannot name a tool" in issue.message


HOOK_PROBLEMS = {
    "parameter-name": ("def before_call(tool, arguments, ctx):", 1, "not (tool, arguments, ctx)"),
    "missing-parameter": (
        "x = 1\n\ndef after_call(tool, args, ctx):",
        3,
        "(tool, args, result, ctx)",
    ),
    "async": ("async def before_call(tool, args, ctx):", 1, "write 'def', not 'async def'"),
    "no-hook-function": ("def run():", 1, "found neither"),
}


@pytest.mark.parametrize(
    ("hook", "line", "message"), [pytest.param(*case, id=id) for id, case in HOOK_PROBLEMS.items()]
)
def test_a_hook_needs_before_call_or_after_call_with_their_parameters(
    tmp_path: Path, hook: str, line: int, message: str
) -> None:
    (tmp_path / "hook.py").write_text(f"{hook}\n    return None\n", encoding="utf-8")
    config = write_config(tmp_path, [], hooks=[{"name": "audit", "file": "hook.py"}])

    [issue] = _issues(config)

    assert _where(issue)[:2] == ("hook.py", line)
    assert issue.key == "hooks.0"
    assert message in issue.message


INLINE = """\
version: 1
servers:
  - name: ops
    transport: script
    scripts:
      - name: fine
        source: |
          def run(a: int, b: int) -> int:
              return a + b
      - name: leaky
        source: |

          import json
          def run(path: str):
              import socket
              return path
      - name: short
        source: "def go(): return 1"
hooks:
  - name: folded
    source: >
      def before_call(tool, args):
        return None
"""


def test_an_inline_source_points_into_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(INLINE, encoding="utf-8")

    leaky, short, folded = _issues(config)

    assert _where(leaky) == ("gateway.yaml", 15, 15, "servers.0.scripts.1")
    assert "'import socket' does not work in the sandbox" in leaky.message
    assert _where(short) == ("gateway.yaml", 18, None, "servers.0.scripts.2")
    assert "def run(...)" in short.message
    # a folded block joins lines: the issue is where the text starts, naming the source's line
    assert _where(folded) == ("gateway.yaml", 22, None, "hooks.0")
    assert folded.message.startswith("source line 1: before_call() takes (tool, args, ctx)")


def test_a_missing_script_file_names_the_key_and_the_path(tmp_path: Path) -> None:
    server = {"name": "ops", "transport": "script", "scripts": [{"name": "a", "file": "a.py"}]}
    config = write_config(tmp_path, [server])

    [issue] = _issues(config)

    assert issue.key == "servers.0.scripts.0.file"
    assert (Path(issue.file).name, issue.line) == ("gateway.yaml", 7)
    assert str(tmp_path / "a.py") in issue.message
    assert "not found" in issue.message


def test_a_disabled_script_server_is_not_checked(tmp_path: Path) -> None:
    server = {
        "name": "ops",
        "transport": "script",
        "enabled": False,
        "scripts": [{"name": "a", "file": "missing.py"}],
    }

    load_config(write_config(tmp_path, [server]))


def test_a_given_input_schema_spares_run_its_annotations(tmp_path: Path) -> None:
    (tmp_path / "typed.py").write_text("def run(x: set[int]):\n    return 1\n", encoding="utf-8")
    entry = {"name": "typed", "file": "typed.py", "input_schema": {"type": "object"}}
    server = {"name": "ops", "transport": "script", "scripts": [entry]}

    load_config(write_config(tmp_path, [server]))


def test_every_issue_of_every_source_is_reported_at_once(tmp_path: Path) -> None:
    config = _script_config(
        tmp_path,
        {"one": "import socket\n\ndef run():\n    return 1\n", "two": "def nope():\n    pass\n"},
    )

    issues = _issues(config)

    assert [(Path(i.file).name, i.line) for i in issues] == [("one.py", 1), ("two.py", 1)]
    assert str(issues[0]).startswith(f"{tmp_path / 'one.py'}:1:1: servers.0.scripts.0: ")


def test_a_quoted_inline_source_is_placed_where_its_text_starts(tmp_path: Path) -> None:
    script = "import json\n\ndef run():\n    import socket\n    return 1\n"
    server = {"name": "ops", "transport": "script", "scripts": [{"name": "s", "source": script}]}
    config = write_config(tmp_path, [server])  # PyYAML writes it as one quoted scalar
    assert '"import json' in config.read_text(encoding="utf-8")

    [issue] = _issues(config)

    assert _where(issue) == ("gateway.yaml", 7, None, "servers.0.scripts.0")
    assert issue.message.startswith("source line 4: 'import socket' does not work")


def test_read_source_reads_files_next_to_the_config_and_names_inline_sources(
    tmp_path: Path,
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.py").write_text("def run():\n    return 1\n", encoding="utf-8")
    entries = [{"name": "a", "file": "lib/a.py"}, {"name": "b", "source": "def run(): ..."}]
    server = {"name": "ops", "transport": "script", "scripts": entries}
    config = load_config(write_config(tmp_path, [server]))
    first, second = config.servers[0].scripts

    from_file = read_source(config, first, "servers.0.scripts.0")
    inline = read_source(config, second, "servers.0.scripts.1")

    assert from_file.text == "def run():\n    return 1\n"
    assert from_file.filename == from_file.file == str(tmp_path / "lib" / "a.py")
    assert (inline.text, inline.filename) == ("def run(): ...", "<servers.0.scripts.1>")
    assert str(inline.issue("boom", 1, 5)) == "<servers.0.scripts.1>:1:5: servers.0.scripts.1: boom"
