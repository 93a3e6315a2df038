"""``lockgate policy check | explain | test``: validate, explain and unit-test policy files."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TypeAlias

from policies.cases import CallSpec, evaluate, run_case_file
from policies.engine import PolicyEngine
from policies.explain import decision_json, decision_text
from toolsets.errors import ConfigError
from toolsets.flags import FLAGS

__all__ = ["main", "register"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class _UsageError(Exception):
    """A command-line value is unusable; reported as one line."""


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
        raise _UsageError(f"{option} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _UsageError(f"{option} must be a JSON object, got {type(value).__name__}")
    return value


def _check(args: argparse.Namespace) -> int:
    try:
        engine = PolicyEngine.load(args.files)
    except ConfigError as exc:
        return _report(exc)
    count = len(engine.files)
    print(
        f"ok: {count} file{'s'[: count != 1]}, {len(engine.rules)} rules, version {engine.version}"
    )
    return EXIT_OK


def _call_spec(args: argparse.Namespace) -> CallSpec:
    return CallSpec(
        tool=args.tool,
        server=args.server,
        annotations=_json_object(args.annotations, "--annotations"),
        args=_json_object(args.args, "--args") or {},
        principal=args.principal,
        roles=args.roles,
        claims=_json_object(args.claims, "--claims") or {},
        flags=args.flags,
        stage="list" if args.list else "call",
    )


def _explain(args: argparse.Namespace) -> int:
    try:
        call = _call_spec(args)
        engine = PolicyEngine.load(args.files)
    except _UsageError as exc:
        print(f"lockgate policy explain: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:
        return _report(exc)
    decision = evaluate(engine, call)
    if args.json:
        print(json.dumps(decision_json(engine, decision, call.flags), indent=2))
    else:
        print(decision_text(engine, decision, call.flags))
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
        "explain", help="show the decision for one call and every rule that matched"
    )
    explain.add_argument("files", nargs="+", metavar="FILE", help="policy files, in layer order")
    explain.add_argument("--tool", required=True, help="exposed tool name, e.g. files__write_file")
    explain.add_argument("--args", default="{}", help="call arguments as a JSON object")
    explain.add_argument("--server", help="server name (default: the tool name's prefix)")
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
    explain.add_argument("--list", action="store_true", help="decide listing instead of a call")
    explain.add_argument("--json", action="store_true", help="print JSON")
    explain.set_defaults(func=_explain)


Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def register(subparsers: Subparsers) -> None:
    """Add the ``policy`` command with its ``check``, ``explain`` and ``test`` sub-commands.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.

    Each sub-command parser sets ``func``; ``args.func(args)`` runs it and returns the exit code
    (0 success, 1 invalid policy or failing cases, 2 unusable command-line values).
    """
    policy = subparsers.add_parser("policy", help="check, explain and test policy files")
    commands = policy.add_subparsers(dest="policy_command", metavar="COMMAND", required=True)
    check = commands.add_parser("check", help="validate policy files; list every error")
    check.add_argument("files", nargs="+", metavar="FILE", help="policy files, in layer order")
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``policy`` sub-commands standalone (``python -m policies.cli policy check FILE``)."""
    parser = argparse.ArgumentParser(prog="lockgate", description="lockgate policy tools")
    register(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
