"""Session gates: unlock_after, lock_after, require_first, tool groups, and listing rules that
read the session, through the public engine, the CLI and case files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jsonschema_rs
import pytest
import yaml
from policy_support import FIXTURES, tool, who

from gateway.cli.policy import register
from policies import PolicyEngine, SessionState
from policies.cases import run_case_file
from policies.gates import require_first_message
from policies.schema import SCHEMA_FILES
from toolsets.errors import ConfigIssue, PolicyError

SESSION = FIXTURES / "session"
GATES = PolicyEngine.load([SESSION / "gates.yaml"])
GATES_FILE = str(SESSION / "gates.yaml")
POLICY_SCHEMA, CASES_SCHEMA = SCHEMA_FILES


def session(*calls: str | tuple[str, bool], groups: tuple[str, ...] = ()) -> SessionState:
    """A session where each call succeeded, or not when given as ``(name, False)``."""
    state = SessionState("s-1")
    for call in calls:
        name, ok = call if isinstance(call, tuple) else (call, True)
        state.record(name, {}, ok=ok)
    for group in groups:
        state.load_group(group)
    return state


def listing(name: str, state: SessionState | None = None, *roles: str) -> tuple[str, str | None]:
    decision = GATES.evaluate_visibility(tool(name), who("agent:t", *roles), state)
    return decision.effect, decision.rule_id


def calling(name: str, state: SessionState | None = None) -> tuple[str, str | None, str | None]:
    decision = GATES.evaluate_call(tool(name), {}, who(), state)
    return decision.effect, decision.rule_id, decision.message


def test_unlock_after_hides_until_a_listed_tool_succeeded() -> None:
    assert listing("web__search") == ("hide", "search-after-login")
    assert calling("web__search") == ("hide", "search-after-login", None)
    assert listing("web__search", session(("auth__login", False))) == ("hide", "search-after-login")
    assert listing("web__search", session("auth__login")) == ("allow", "search-after-login")
    assert calling("web__search", session("auth__login")) == ("allow", "search-after-login", None)


def test_a_locked_decision_says_which_gate_locks_it() -> None:
    decision = GATES.evaluate_call(tool("web__fetch"), {}, who(), session("other__tool"))
    assert decision.reason == (
        "locked by rule 'fetch-after-login' until one of 'auth__login', 'auth__sso' succeeds "
        "in this session"
    )
    assert decision.matched == ("fetch-after-login",)


def test_a_locked_rule_with_a_message_refuses_calls_with_it_and_hides_the_tool() -> None:
    message = "Log in first: call auth__login."
    assert calling("web__fetch") == ("deny", "fetch-after-login", message)
    assert listing("web__fetch") == ("hide", "fetch-after-login")
    unlocked = session("auth__sso")
    assert calling("web__fetch", unlocked) == ("ask", "fetch-after-login", message)


def test_lock_after_makes_a_one_shot_tool() -> None:
    assert listing("admin__setup", session()) == ("allow", "setup-once")
    assert calling("admin__setup", session(("admin__setup", False)))[0] == "allow"
    done = session("admin__setup")
    assert listing("admin__setup", done) == ("hide", "setup-once")
    assert calling("admin__setup", done) == ("hide", "setup-once", None)
    reason = GATES.evaluate_call(tool("admin__setup"), {}, who(), done).reason
    assert reason == "locked by rule 'setup-once': 'admin__setup' already succeeded in this session"


def test_lock_after_with_a_message_refuses_calls_once_locked() -> None:
    message = "A commit happened: resets are off."
    assert calling("repo__reset") == ("allow", "no-reset-after-commit", message)
    committed = session("repo__commit")
    assert calling("repo__reset", committed) == ("deny", "no-reset-after-commit", message)
    assert listing("repo__reset", committed) == ("hide", "no-reset-after-commit")


def test_require_first_lists_only_that_tool_and_refuses_the_others() -> None:
    assert listing("db__connect") == ("allow", "connect-first")
    assert listing("db__query") == ("hide", "connect-first")
    default = require_first_message("db__connect")
    assert default == (
        "Call db__connect first: it must succeed in this session before other tools can be used."
    )
    assert calling("db__query") == ("deny", "connect-first", default)
    assert calling("db__query", session(("db__connect", False)))[0] == "deny"
    connected = session("db__connect")
    assert listing("db__query", connected) == ("allow", "connect-first")
    assert calling("db__query", connected) == ("allow", "connect-first", None)


def test_require_first_uses_the_rule_message_and_then_the_rule_effect() -> None:
    message = "Open the store with kv__open before anything else."
    assert calling("kv__get") == ("deny", "open-first", message)
    assert calling("kv__open") == ("ask", "open-first", message)
    assert calling("kv__get", session("kv__open")) == ("ask", "open-first", message)


def test_grouped_tools_are_hidden_until_their_group_is_loaded() -> None:
    assert dict(GATES.groups) == {"math": ("math__add", "math__mul"), "text": ("text__upper",)}
    assert GATES.groups_of("math__mul") == ("math",)
    hidden = GATES.evaluate_call(tool("math__add"), {}, who(), session(groups=("text",)))
    assert (hidden.effect, hidden.rule_id, hidden.message) == ("hide", None, None)
    assert hidden.reason == (
        "tool 'math__add' is in group 'math', not loaded in this session "
        "(calling load_math loads it)"
    )
    assert listing("math__add") == ("hide", None)
    loaded = session(groups=("math",))
    assert listing("math__add", loaded) == ("allow", None)
    assert calling("math__mul", loaded) == ("allow", None, None)


def test_a_group_load_tool_is_subject_to_rules_like_any_tool() -> None:
    assert listing("load_math") == ("allow", None)
    refused = ("deny", "no-text-loading", "Guests cannot load the text tools.")
    assert GATES.evaluate_call(tool("load_text"), {}, who("g", "guest"), None).message == refused[2]
    assert listing("load_text", None, "guest") == ("deny", "no-text-loading")


def test_listing_in_a_session_counts_rules_that_read_only_the_session() -> None:
    assert listing("notes__purge", session()) == ("hide", "purge-after-read")
    assert listing("notes__purge", session("notes__read")) == ("allow", None)
    assert listing("notes__shout", session("a", "b")) == ("allow", None)
    assert listing("notes__shout", session("a", "b", ("c", False))) == (
        "hide",
        "quiet-after-three-calls",
    )


def test_listing_without_a_session_skips_rules_that_read_it() -> None:
    decision = GATES.evaluate_visibility(tool("notes__purge"), who())
    assert (decision.effect, decision.matched) == ("allow", ())


def test_rules_that_read_args_decide_calls_only_even_in_a_session() -> None:
    assert listing("notes__write", session()) == ("allow", None)
    decision = GATES.evaluate_call(tool("notes__write"), {"size": 11}, who(), session())
    assert (decision.effect, decision.rule_id) == ("hide", "big-notes")


def test_open_gates_and_rules_without_gates_keep_cached_decisions() -> None:
    plain = PolicyEngine.load([SESSION / "plain.yaml"])
    read = tool("files__read_file")
    assert plain.evaluate_call(read, {}, who(), None) is plain.evaluate_call(read, {}, who(), None)
    write, state = tool("files__write_file"), session("files__read_file")
    first = plain.evaluate_call(write, {}, who(), state)
    assert first is plain.evaluate_call(write, {}, who(), state)
    assert (first.effect, first.rule_id) == ("allow", "gated-write")


def test_layered_files_add_groups_and_may_repeat_one_with_the_same_tools() -> None:
    layered = PolicyEngine.load([SESSION / "base.yaml", SESSION / "more.yaml"])
    assert dict(layered.groups) == {"math": ("math__add", "math__mul"), "text": ("text__upper",)}


def test_a_group_redefined_with_other_tools_is_a_located_load_error() -> None:
    files = [SESSION / "base.yaml", SESSION / "more.yaml", SESSION / "conflict.yaml"]
    with pytest.raises(PolicyError) as raised:
        PolicyEngine.load(files)
    message = f"group 'math' is already defined with other tools at {SESSION / 'base.yaml'}:3"
    assert raised.value.issues == (
        ConfigIssue(str(SESSION / "conflict.yaml"), 4, 3, "groups.math", message),
    )


def test_invalid_gate_options_and_group_names_are_located_load_errors() -> None:
    with pytest.raises(PolicyError) as raised:
        PolicyEngine.load([SESSION / "invalid.yaml"])
    assert [(i.line, i.column, i.key) for i in raised.value.issues] == [
        (3, 3, "groups.Math"),
        (4, 3, "groups.text"),
        (8, 20, "rules.0.unlock_after.0"),
        (9, 5, "rules.0.require_first"),
        (13, 5, "rules.1.lock_after"),
    ]
    assert "invalid tool name" in raised.value.issues[2].message


KNOWN = {"auth__login", "admin__setup", "repo__commit", "db__connect", "kv__open", "math__add"}


def test_unknown_tool_names_are_reported_with_their_location() -> None:
    issues = GATES.check_tool_names(KNOWN)
    assert issues == [
        ConfigIssue(GATES_FILE, 5, 21, "groups.math.1", "unknown tool 'math__mul'"),
        ConfigIssue(GATES_FILE, 6, 10, "groups.text.0", "unknown tool 'text__upper'"),
        ConfigIssue(GATES_FILE, 14, 33, "rules.1.unlock_after.1", "unknown tool 'auth__sso'"),
    ]


def test_a_group_load_tool_counts_as_known() -> None:
    everything = KNOWN | {"math__mul", "text__upper", "auth__sso"}
    assert GATES.check_tool_names(everything) == []
    engine = PolicyEngine.load([SESSION / "plain.yaml"])
    assert engine.check_tool_names(["load_math"]) == [
        ConfigIssue(
            str(SESSION / "plain.yaml"),
            9,
            20,
            "rules.1.unlock_after.0",
            "unknown tool 'files__read_file'",
        )
    ]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="lockgate")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["policy", *argv])
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_check_with_a_catalogue_reports_unknown_tool_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    known = tmp_path / "tools.txt"
    known.write_text("# the catalogue\nmath__mul\ntext__upper  # text\n\n", encoding="utf-8")
    tools = ",".join(sorted(KNOWN))
    code, out, err = run(capsys, "check", GATES_FILE, "--tools", tools, "--tools-file", str(known))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"{GATES_FILE}:14:33: rules.1.unlock_after.1: unknown tool 'auth__sso'"
    ]
    code, out, err = run(
        capsys, "check", GATES_FILE, "--tools", f"{tools},auth__sso", "--tools-file", str(known)
    )
    assert (code, err) == (0, "")
    assert out.startswith("ok: 1 file, 10 rules")


def test_check_refuses_an_unreadable_tools_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "check", GATES_FILE, "--tools-file", str(tmp_path / "none"))
    assert (code, out) == (2, "")
    assert err.startswith("lockgate policy check: error: cannot read --tools-file")


def test_explain_replays_a_session_and_shows_the_gates(capsys: pytest.CaptureFixture[str]) -> None:
    state = '{"calls": [{"tool": "auth__login", "args": {"u": 1}, "ok": false}], "groups": []}'
    code, out, err = run(capsys, "explain", "--tool", "web__fetch", "--session", state, GATES_FILE)
    assert (code, err) == (0, "")
    assert out.splitlines()[:7] == [
        "effect:   deny",
        f"rule:     fetch-after-login ({GATES_FILE}:12)",
        "reason:   locked by rule 'fetch-after-login' until one of 'auth__login', 'auth__sso' "
        "succeeds in this session",
        "message:  Log in first: call auth__login.",
        "gates:",
        "  fetch-after-login  unlock_after auth__login, auth__sso: locked (none succeeded in "
        "this session)",
        "matched:",
    ]


def test_explain_list_tells_whether_a_grouped_tool_is_listed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(
        capsys,
        "explain",
        "--list",
        "--tool",
        "math__add",
        "--session",
        '{"groups": ["math"]}',
        GATES_FILE,
    )
    assert code == 0
    assert out.splitlines()[0] == "effect:   allow"
    assert "  (groups)  groups math: open ('math' loaded)" in out.splitlines()
    code, out, _ = run(capsys, "explain", "--json", "--list", "--tool", "math__add", GATES_FILE)
    assert code == 0
    assert '"locked": true' in out


def test_explain_refuses_a_session_that_is_not_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "explain", "--tool", "t", "--session", '{"calls": [{"args": {}}]}', GATES_FILE
    )
    assert (code, out) == (2, "")
    assert err == (
        "lockgate policy explain: error: --session is not a session: calls.0.tool: Field required\n"
    )


def test_case_files_give_sessions_per_case(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "test", str(SESSION / "gates.cases.yaml"))
    assert code == 0
    assert out.splitlines()[-1] == "14 passed, 0 failed"


def test_the_session_key_holds_what_this_policy_lists_by() -> None:
    plain = PolicyEngine.load([SESSION / "plain.yaml"])
    assert plain.reads_session
    read = session("files__read_file")
    assert plain.session_key(read) == plain.session_key(session("files__read_file", "x"))
    assert plain.session_key(read) != plain.session_key(None)
    assert plain.session_key(None) == plain.session_key(session(("files__read_file", False)))
    assert GATES.session_key(session("a")) != GATES.session_key(session("a", "b"))
    assert not PolicyEngine.load([FIXTURES / "effects.yaml"]).reads_session


def test_the_schemas_accept_gates_groups_and_case_sessions() -> None:
    def valid(schema: Path, document: Path) -> bool:
        validator = jsonschema_rs.validator_for(json.loads(schema.read_text(encoding="utf-8")))
        return validator.is_valid(yaml.safe_load(document.read_text(encoding="utf-8")))

    assert valid(POLICY_SCHEMA, SESSION / "gates.yaml")
    assert not valid(POLICY_SCHEMA, SESSION / "invalid.yaml")
    assert valid(CASES_SCHEMA, SESSION / "gates.cases.yaml")


@pytest.mark.parametrize(
    "session_yaml",
    [
        pytest.param("[{args: {}}]", id="calls"),
        pytest.param("{calls: [{args: {}}]}", id="mapping"),
    ],
)
def test_a_bad_case_session_is_a_located_error(tmp_path: Path, session_yaml: str) -> None:
    cases = tmp_path / "bad.cases.yaml"
    cases.write_text(
        f"policies: [{SESSION / 'gates.yaml'}]\n"
        "cases:\n"
        "  - name: x\n"
        f"    call: {{tool: a, session: {session_yaml}}}\n"
        "    expect: {effect: allow}\n",
        encoding="utf-8",
    )
    with pytest.raises(PolicyError) as raised:
        run_case_file(cases)
    [issue] = raised.value.issues
    assert (issue.line, issue.key, issue.message) == (
        4,
        "cases.0.call.session.calls.0.tool",
        "required key is missing",
    )


@pytest.mark.parametrize(
    ("files", "listings", "decisions"),
    [
        pytest.param(["effects.yaml"], False, False, id="no-session"),
        pytest.param(["session/plain.yaml"], True, True, id="gates"),
        pytest.param(["cel.yaml"], True, True, id="conditions"),
        pytest.param(["messages/messages.yaml"], False, True, id="messages"),
        pytest.param(["session/reads_elsewhere.yaml"], False, True, id="shadow-and-surface"),
    ],
)
def test_uses_session_says_whether_any_decision_reads_the_session(
    files: list[str], listings: bool, decisions: bool
) -> None:
    policy = PolicyEngine.load([FIXTURES / name for name in files])
    assert (policy.reads_session, policy.uses_session) == (listings, decisions)
