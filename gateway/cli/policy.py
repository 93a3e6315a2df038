"""``lockgate policy check | explain | test``: validate, explain and unit-test policy files."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from pydantic import ValidationError

from gateway.cli.errors import UsageError
from policies.cases import (
    CallSpec,
    SessionSpec,
    evaluate,
    run_case_file,
    session_state,
    tool_for,
)
from policies.engine import PolicyEngine
from policies.explain import call_trace, decision_json, decision_text
from policies.explain_gates import gate_statuses
from policies.explain_labels import label_json, label_lines
from toolsets.errors import ConfigError
from toolsets.upstream.flags import FLAGS

__all__ = ["Registrar", "Subparsers", "main", "register"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def _report(exc: ConfigError) -> int:
    for issue in exc.issues:
        print(issue, file=sys.stderr)
    return EXIT_FAILED


def _json_object(text: str | None, option: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{option} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{option} must be a JSON object, got {type(value).__name__}")
    return value


def _known_tools(args: argparse.Namespace) -> list[str] | None:
    """The catalogue ``--tools`` and ``--tools-file`` give (None when neither is given)."""
    if args.tools is None and args.tools_file is None:
        return None
    names = [name.strip() for name in (args.tools or "").split(",")]
    if args.tools_file is not None:
        try:
            text = Path(args.tools_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read --tools-file {args.tools_file!r}: {exc}") from None
        names.extend(line.partition("#")[0].strip() for line in text.splitlines())
    return [name for name in names if name]


def _check(args: argparse.Namespace) -> int:
    try:
        known = _known_tools(args)
        engine = PolicyEngine.load(args.files)
    except UsageError as exc:
        print(f"lockgate policy check: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:
        return _report(exc)
    unknown = engine.check_tool_names(known) if known is not None else []
    if unknown:
        return _report(ConfigError(unknown))
    count, labelling = len(engine.files), len(engine.labels.labeller.rules)
    labels = f", {labelling} labelling" if labelling else ""
    print(
        f"ok: {count} file{'s'[: count != 1]}, {len(engine.rules)} rules{labels}, "
        f"version {engine.version}"
    )
    for rule in engine.rules:
        if rule.limit is not None:
            mode = " (shadow)" if rule.shadow else ""
            print(f"limit: {rule.id}{mode}: {rule.limit.describe()} ({rule.file}:{rule.line})")
    for labelled in engine.labels.labeller.rules:
        got = labelled.labels
        print(
            f"labels: {labelled.id}: sources {sorted(got.sources)}, sinks {sorted(got.sinks)} "
            f"({labelled.file}:{labelled.line})"
        )
    return EXIT_OK


def _session_spec(text: str | None) -> dict[str, SessionSpec]:
    """``{"session": spec}`` for ``--session``, or nothing when it is not given."""
    value = _json_object(text, "--session")
    if value is None:
        return {}
    try:
        return {"session": SessionSpec.model_validate(value)}
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc'])) or '(top)'}: {error['msg']}"
            for error in exc.errors()
        )
        raise UsageError(f"--session is not a session: {problems}") from None


def _call_spec(args: argparse.Namespace) -> CallSpec:
    if args.resource is not None and args.server is None:
        raise UsageError("--resource needs --server (a URI names no server)")
    session: dict[str, Any] = dict(_session_spec(args.session))
    return CallSpec(
        tool=args.tool,
        resource=args.resource,
        prompt=args.prompt,
        server=args.server,
        annotations=_json_object(args.annotations, "--annotations"),
        args=_json_object(args.args, "--args") or {},
        principal=args.principal,
        roles=args.roles,
        claims=_json_object(args.claims, "--claims") or {},
        flags=args.flags,
        stage="list" if args.list else "call",
        **session,
    )


def _explain(args: argparse.Namespace) -> int:
    try:
        call = _call_spec(args)
        engine = PolicyEngine.load(args.files)
    except UsageError as exc:
        print(f"lockgate policy explain: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:
        return _report(exc)
    decision = evaluate(engine, call)
    session = session_state(call.session, engine) if args.session is not None else None
    gates = gate_statuses(engine, call.tool, decision, session) if call.tool is not None else []
    tool = tool_for(call.tool, call.server, call.annotations, call.flags) if call.tool else None
    trace = call_trace(engine, call, decision)
    if args.json:
        shown = decision_json(engine, decision, call.flags, gates=gates, trace=trace)
        if tool is not None:
            shown["labels"] = label_json(engine, tool, session)
        print(json.dumps(shown, indent=2))
    else:
        print(decision_text(engine, decision, call.flags, gates=gates, trace=trace))
        for line in label_lines(engine, tool, session) if tool is not None else ():
            print(line)
    return EXIT_OK


def _test(args: argparse.Namespace) -> int:
    passed = failed = 0
    for case_file in args.case_files:
        try:
            engine, results = run_case_file(case_file, args.policies)
        except ConfigError as exc:
            _report(exc)
            failed += 1
            continue
        for result in results:
            status = "PASS" if result.passed else "FAIL"
            print(f"{status} {result.case.name} ({result.where})")
            for failure in result.failures:
                print(f"     {failure}")
            passed, failed = passed + result.passed, failed + (not result.passed)
        print(f"policy version {engine.version}: {', '.join(engine.files)}")
    print(f"{passed} passed, {failed} failed")
    return EXIT_OK if failed == 0 else EXIT_FAILED


def _add_explain(commands: Subparsers) -> None:
    explain = commands.add_parser(
        "explain",
        help="show the decision for one call, resource read or prompt get, and every rule that "
        "matched",
    )
    explain.add_argument("files", nargs="+", metavar="FILE", help="policy files, in layer order")
    subject = explain.add_mutually_exclusive_group(required=True)
    subject.add_argument("--tool", help="exposed tool name, e.g. files__write_file")
    subject.add_argument(
        "--resource", metavar="URI", help="a resource URI (or, with --list, a URI template)"
    )
    subject.add_argument("--prompt", help="exposed prompt name, e.g. files__review")
    explain.add_argument("--args", default="{}", help="tool or prompt arguments as a JSON object")
    explain.add_argument(
        "--server",
        help="server name (default: the tool or prompt name's prefix; needed with --resource)",
    )
    explain.add_argument("--annotations", help="tool annotations as a JSON object")
    explain.add_argument("--principal", default="anonymous", help="caller id")
    explain.add_argument(
        "--role", dest="roles", action="append", default=[], help="caller role (repeatable)"
    )
    explain.add_argument("--claims", help="caller claims as a JSON object")
    explain.add_argument(
        "--flag",
        dest="flags",
        action="append",
        default=[],
        choices=FLAGS,
        help="a warning flag the tool carries, e.g. injection-marker (repeatable)",
    )
    explain.add_argument(
        "--session",
        help=(
            'the session as a JSON object, e.g. \'{"calls": [{"tool": "t", "args": {}, '
            '"ok": true}], "groups": ["math"]}\' (default: a fresh session)'
        ),
    )
    explain.add_argument(
        "--list",
        action="store_true",
        help="decide listing (is it listed?) instead of a call, read or get",
    )
    explain.add_argument("--json", action="store_true", help="print JSON")
    explain.set_defaults(func=_explain)


Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Registrar: TypeAlias = Callable[[Subparsers], None]
"""Adds more ``policy`` sub-commands (the gateway's ``replay``, which reads its audit log)."""


def register(subparsers: Subparsers, extra: Sequence[Registrar] = ()) -> None:
    """Add the ``policy`` command with its ``check``, ``explain`` and ``test`` sub-commands.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
        extra: Each is called with the ``policy`` command's sub-parsers to add its own.

    Each sub-command parser sets ``func``; ``args.func(args)`` runs it and returns the exit code
    (0 success, 1 invalid policy or failing cases, 2 unusable command-line values).
    """
    policy = subparsers.add_parser("policy", help="check, explain and test policy files")
    commands = policy.add_subparsers(dest="policy_command", metavar="COMMAND", required=True)
    check = commands.add_parser("check", help="validate policy files; list every error")
    check.add_argument("files", nargs="+", metavar="FILE", help="policy files, in layer order")
    check.add_argument(
        "--tools",
        metavar="NAME,NAME...",
        help="the tool catalogue: report tool names the policy's options name that are not in it",
    )
    check.add_argument(
        "--tools-file",
        metavar="FILE",
        help="like --tools, one name per line ('#' starts a comment)",
    )
    check.set_defaults(func=_check)
    _add_explain(commands)
    test = commands.add_parser("test", help="run policy case files (policy tests as data)")
    test.add_argument("case_files", nargs="+", metavar="CASES", help="YAML case files")
    test.add_argument(
        "--policy",
        dest="policies",
        action="append",
        metavar="FILE",
        help="policy file to test instead of the case file's 'policies' (repeatable)",
    )
    test.set_defaults(func=_test)
    for add in extra:
        add(commands)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``policy`` sub-commands standalone (``python -m gateway.cli.policy policy check F``)."""
    parser = argparse.ArgumentParser(prog="lockgate", description="lockgate policy tools")
    register(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
