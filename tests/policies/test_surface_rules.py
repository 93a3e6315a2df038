"""Rules over resources and prompts: URI globs, normal forms, defaults, scoping and load errors."""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs
import pytest
import yaml
from policy_support import FIXTURES, engine, tool, who

from policies import FAIL_CLOSED_MESSAGE, PolicyEngine
from policies.cases import run_case_file
from policies.schema import SCHEMA_FILES
from policies.uri_globs import compile_uri_globs, normalize_uri
from toolsets.errors import PolicyError

SURFACE = FIXTURES / "surface"
POLICY = engine("surface/surface.yaml")
STRICT = engine("surface/surface.yaml", "surface/strict.yaml")


@pytest.mark.parametrize(
    ("uri", "server", "roles", "effect", "rule"),
    [
        pytest.param("file:///etc/passwd", "files", (), "deny", "no-etc", id="deny"),
        pytest.param("file:///etc/ssl/ca.pem", "files", (), "deny", "no-etc", id="star-crosses-/"),
        pytest.param("file:///etcetera", "files", (), "allow", None, id="glob-matches-whole"),
        pytest.param("file:///tmp/../etc/passwd", "files", (), "deny", "no-etc", id="dot-dot"),
        pytest.param("FILE:///etc/passwd", "files", (), "deny", "no-etc", id="scheme-case"),
        pytest.param("file:///%65tc/passwd", "files", (), "deny", "no-etc", id="percent"),
        pytest.param("file:////etc//passwd", "files", (), "deny", "no-etc", id="slashes"),
        pytest.param("file:/etc/passwd", "files", (), "deny", "no-etc", id="file-scheme"),
        pytest.param("file:%2F%2F%2Fetc%2Fpasswd", "files", (), "deny", "no-etc", id="%2F-all"),
        pytest.param("file:///%2Fetc/passwd", "files", (), "deny", "no-etc", id="%2F-leading"),
        pytest.param(
            "file:///srv/public/..%2F..%2Fetc/passwd", "files", (), "deny", "no-etc", id="..%2F"
        ),
        pytest.param("file:///srv/%2e%2e/etc/passwd", "files", (), "deny", "no-etc", id="%2e%2e"),
        pytest.param("file:///etc%252Fpasswd", "files", (), "deny", None, id="double-escape"),
        pytest.param("file:///srv%3F/../etc/passwd", "files", (), "deny", None, id="escaped-?"),
        pytest.param("file:///srv/%00/x", "files", (), "deny", None, id="escaped-control"),
        pytest.param("file:///srv/%ff", "files", (), "deny", None, id="not-utf-8"),
        pytest.param("file:///srv/caf%C3%A9", "files", (), "allow", None, id="utf-8-allowed"),
        pytest.param("memo://secrets/key", "memo", (), "hide", "hide-secrets", id="hide"),
        pytest.param("memo://SECRETS/key", "memo", (), "hide", "hide-secrets", id="host-case"),
        pytest.param("file:///var/log/syslog", "files", (), "ask", "ask-logs", id="ask"),
        pytest.param("file:///var/log/syslog", "other", (), "allow", None, id="servers"),
        pytest.param("memo://notes/a", "memo", ("intern",), "deny", "interns-no-notes", id="?"),
        pytest.param("memo://notes/ab", "memo", ("intern",), "allow", None, id="?-is-one"),
        pytest.param("memo://notes/ab", "archive", (), "deny", "big-notes", id="cel-resource"),
        pytest.param("file:///home/me", "files", (), "allow", None, id="tool-rule-ignored"),
    ],
)
def test_a_read_is_decided_by_the_resource_rules_that_match_its_uri(
    uri: str, server: str, roles: tuple[str, ...], effect: str, rule: str | None
) -> None:
    decision = POLICY.resources.evaluate_resource(uri, server, who("agent:a", *roles))
    assert (decision.effect, decision.rule_id) == (effect, rule)
    assert decision.policy_version == POLICY.version


@pytest.mark.parametrize(
    ("name", "args", "roles", "effect", "rule"),
    [
        pytest.param("ops__run", {"command": "rm -rf /"}, (), "deny", "no-rm", id="deny"),
        pytest.param("ops__run", {"command": "ls"}, (), "allow", None, id="condition-false"),
        pytest.param("x__internal_debug", {}, (), "hide", "internal-prompts", id="hide"),
        pytest.param("x__internal_debug", {}, ("admin",), "allow", None, id="unless"),
        pytest.param("files__summary", {}, (), "allow", None, id="tool-rule-ignored"),
    ],
)
def test_a_prompt_get_is_decided_by_the_prompt_rules_that_match_its_name(
    name: str, args: dict[str, Any], roles: tuple[str, ...], effect: str, rule: str | None
) -> None:
    server = name.partition("__")[0]
    decision = POLICY.resources.evaluate_prompt(name, server, args, who("agent:a", *roles))
    assert (decision.effect, decision.rule_id) == (effect, rule)


def test_a_deny_message_names_the_uri_and_the_prompt_arguments_with_redaction() -> None:
    read = POLICY.resources.evaluate_resource("file:///etc/hosts", "files", who())
    assert read.message == 'Reading "file:///etc/hosts" is not allowed through this gateway.'
    args = {"command": "rm -r x", "token": "s3cret"}
    got = POLICY.resources.evaluate_prompt("ops__run", "ops", args, who())
    assert got.message == 'Prompt "ops__run" refused for "rm -r x" (token <redacted args.token>).'
    assert got.redact == ("args.token",)


def test_a_condition_that_cannot_be_evaluated_fails_closed() -> None:
    decision = POLICY.resources.evaluate_prompt("ops__broken", "ops", {}, who())
    assert (decision.effect, decision.rule_id) == ("deny", "broken-condition")
    assert decision.message == FAIL_CLOSED_MESSAGE
    assert "no such key 'missing'" in decision.reason


def test_a_shadow_rule_is_recorded_on_a_read_but_never_enforced() -> None:
    decision = POLICY.resources.evaluate_resource("file:///tmp/x", "files", who())
    assert decision.effect == "allow"
    assert [(m.rule_id, m.effect) for m in decision.shadow] == [("try-hiding-tmp", "hide")]


@pytest.mark.parametrize(
    ("kind", "name", "effect", "rule"),
    [
        pytest.param("resource", "memo://secrets/{id}", "hide", "hide-secrets", id="template"),
        pytest.param("resource", "file:///var/log/{name}", "ask", "ask-logs", id="ask-is-listed"),
        pytest.param("prompt", "ops__run", "allow", None, id="args-rules-skipped"),
        pytest.param("prompt", "ops__broken", "allow", None, id="failing-rule-skipped"),
        pytest.param("prompt", "x__internal_a", "hide", "internal-prompts", id="hidden-prompt"),
    ],
)
def test_listings_hide_what_hide_rules_match_and_skip_rules_reading_arguments(
    kind: str, name: str, effect: str, rule: str | None
) -> None:
    surface = POLICY.resources
    if kind == "resource":
        decision = surface.evaluate_resource(name, "files", who(), listing=True)
    else:
        decision = surface.evaluate_prompt(name, "x", None, who(), listing=True)
    assert (decision.effect, decision.rule_id) == (effect, rule)


def test_rules_over_resources_and_prompts_never_decide_tool_calls() -> None:
    decision = POLICY.evaluate_call(tool("memo__read"), {}, who())
    assert (decision.effect, decision.matched) == ("allow", ())
    files = POLICY.evaluate_call(tool("files__read"), {}, who())
    assert files.matched == ("files-tools-closed",)


@pytest.mark.parametrize(
    ("uri", "effect", "rule"),
    [
        pytest.param("file:///public/readme", "allow", "public-files", id="allowed"),
        pytest.param("file:///home/me", "hide", None, id="default"),
        pytest.param("file:///public/../home/me", "hide", None, id="no-way-out-of-allow-list"),
        pytest.param("file:///public/../etc/x", "deny", "no-etc", id="earlier-layer-deny"),
    ],
)
def test_layered_defaults_close_resources_and_the_most_restrictive_reading_wins(
    uri: str, effect: str, rule: str | None
) -> None:
    decision = STRICT.resources.evaluate_resource(uri, "files", who())
    assert (decision.effect, decision.rule_id) == (effect, rule)


def test_a_default_names_itself_in_the_reason() -> None:
    denied = STRICT.resources.evaluate_prompt("y__review", "y", {}, who())
    assert (denied.effect, denied.rule_id) == ("deny", None)
    assert denied.reason == "no prompt rule matched; defaults.prompts is 'deny'"
    allowed = STRICT.resources.evaluate_prompt("y__hello", "y", {}, who())
    assert allowed.rule_id == "hello-prompts"


def test_without_a_policy_file_resources_and_prompts_are_allowed() -> None:
    empty = PolicyEngine.empty("deny")
    assert empty.resources.evaluate_resource("file:///x", "s", who()).effect == "allow"
    assert empty.resources.evaluate_prompt("s__p", "s", {}, who()).effect == "allow"


@pytest.mark.parametrize(
    ("pattern", "uri", "matches"),
    [
        pytest.param("file:///etc/*", "file:///etc/a/b", True, id="star-crosses-/"),
        pytest.param("*://secrets/*", "memo://secrets/x", True, id="any-scheme"),
        pytest.param("memo://n/?", "memo://n/ab", False, id="?-one-char"),
        pytest.param("memo://a\\*b", "memo://a*b", True, id="escaped-star"),
        pytest.param("memo://a\\*b", "memo://axxb", False, id="escaped-star-literal"),
        pytest.param("memo://[x]", "memo://[x]", True, id="brackets-literal"),
        pytest.param("memo://x", "memo://x/", False, id="whole-uri"),
    ],
)
def test_uri_globs_match_whole_uris_with_star_crossing_slashes(
    pattern: str, uri: str, matches: bool
) -> None:
    assert compile_uri_globs([pattern])(uri) is matches


@pytest.mark.parametrize(
    ("uri", "normal"),
    [
        pytest.param("FILE:///a/./b/../c", "file:///a/c", id="dots"),
        pytest.param("https://User@EXAMPLE.com/%7euser/%2f", "https://User@example.com/~user/%2F"),
        pytest.param("file:///a//b/", "file:///a/b/", id="slashes"),
        pytest.param("file:/etc/x", "file:///etc/x", id="file-no-authority"),
        pytest.param("file://LOCALHOST/etc/x", "file:///etc/x", id="file-localhost"),
        pytest.param("file://host/etc/x", "file://host/etc/x", id="file-remote-host"),
        pytest.param("memo:x/../y?q=/../#f", "memo:x/../y?q=/../#f", id="opaque-and-query"),
        pytest.param("not a uri", "not a uri", id="no-scheme"),
    ],
)
def test_the_normal_form_resolves_dots_case_and_escapes(uri: str, normal: str) -> None:
    assert normalize_uri(uri) == normal


ERRORS = [
    (4, "defaults.resources", "Input should be 'allow', 'ask', 'deny' or 'hide'"),
    (5, "defaults.prompts", "Input should be 'allow', 'deny' or 'hide'"),
    (9, "rules.0.resources", "names tools and resources (split it into one rule per kind)"),
    (12, "rules.1.resources.0", "'\\' escapes only '*', '?' and '\\'"),
    (16, "rules.2.effect", "effect 'ask' is not for prompts: a prompt get is never held"),
    (19, "rules.3.effect", "effect 'defer' is not for resources"),
    (22, "rules.4.when", "a rule over resources cannot read 'tool' in conditions"),
    (26, "rules.5.when", "a rule over tools cannot read 'resource' in conditions"),
    (31, "rules.6.approval", "prompts are never held for approval"),
    (35, "rules.7.approval", "never asked of the caller: use role:NAME or user:ID"),
    (39, "rules.8.approval", "a resource read can only be approved or denied"),
    (43, "rules.9.redact", "a resource read has no arguments to redact"),
    (47, "rules.10.unlock_after", "unlock_after applies to tool rules only"),
    (49, "rules.11.resources", "at least 1 item"),
]


def test_every_misuse_of_a_resource_or_prompt_rule_is_a_located_load_error() -> None:
    with pytest.raises(PolicyError) as caught:
        engine("surface/errors.yaml")
    issues = caught.value.issues
    assert [(i.line, i.key) for i in issues] == [(line, key) for line, key, _ in ERRORS]
    for issue, (*_, fragment) in zip(issues, ERRORS, strict=True):
        assert issue.file == str(SURFACE / "errors.yaml")
        assert fragment in issue.message


def test_case_files_assert_resource_and_prompt_decisions() -> None:
    _, results = run_case_file(SURFACE / "surface.cases.yaml")
    assert [r.failures for r in results if not r.passed] == []
    assert len(results) == 9


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        pytest.param("surface.yaml", True, id="policy"),
        pytest.param("strict.yaml", True, id="layer"),
        pytest.param("surface.cases.yaml", True, id="cases"),
        pytest.param("errors.yaml", False, id="errors"),
    ],
)
def test_editors_validate_resource_and_prompt_rules_with_the_schema(name: str, valid: bool) -> None:
    policy_schema, cases_schema = SCHEMA_FILES
    schema = cases_schema if name.endswith(".cases.yaml") else policy_schema
    validator = jsonschema_rs.validator_for(json.loads(schema.read_text(encoding="utf-8")))
    document = yaml.safe_load((SURFACE / name).read_text(encoding="utf-8"))
    assert validator.is_valid(document) is valid
