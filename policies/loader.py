"""Reading policy files: every error of every file, located, before anything is compiled."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies.groups import group_conflicts
from policies.model import PolicyFile
from policies.yamlfile import Located, load_yaml_with_issues, parse_model
from toolsets.errors import ConfigError, ConfigIssue, PolicyError

__all__ = ["LoadedFile", "load_files", "policy_version"]


@dataclass(frozen=True, slots=True)
class LoadedFile:
    """One valid policy file.

    Attributes:
        file: The path as given.
        text: Its content.
        policy: The validated model.
        located: The parsed YAML with key positions (to locate rules in explanations).
    """

    file: str
    text: str
    policy: PolicyFile
    located: Located

    def position(self, *loc: int | str) -> tuple[int | None, int | None]:
        """Line and column of a key, e.g. ``position("rules", 3)``."""
        issue = self.located.issue(loc, "")
        return issue.line, issue.column


def _raw_rule_ids(located: Located) -> list[tuple[int, str]]:
    """``(index, id)`` of every rule with a string id, read before validation."""
    rules: Any = located.data.get("rules") if isinstance(located.data, dict) else None
    if not isinstance(rules, list):
        return []
    return [
        (index, rule["id"])
        for index, rule in enumerate(rules)
        if isinstance(rule, dict) and isinstance(rule.get("id"), str)
    ]


def _duplicate_ids(located: Located, seen: dict[str, str]) -> list[ConfigIssue]:
    """Issues for rule ids already used in this or an earlier file; records the new ones."""
    issues = []
    for index, rule_id in _raw_rule_ids(located):
        loc = ("rules", index, "id")
        if rule_id in seen:
            message = f"duplicate rule id {rule_id!r} (first defined at {seen[rule_id]})"
            issues.append(located.issue(loc, message))
        else:
            first = located.issue(loc, "")
            seen[rule_id] = f"{first.file}:{first.line}" if first.line else first.file
    return issues


def _missing_effects(located: Located) -> list[ConfigIssue]:
    """A rule needs ``effect`` unless it only sets labels (checked on the raw rules, so the
    issue is reported beside the others)."""
    rules: Any = located.data.get("rules") if isinstance(located.data, dict) else None
    if not isinstance(rules, list):
        return []
    message = "required key is missing (a rule without effect only sets labels or sink_labels)"
    return [
        located.issue(("rules", index, "effect"), message)
        for index, rule in enumerate(rules)
        if isinstance(rule, dict) and not {"effect", "labels", "sink_labels"} & rule.keys()
    ]


def _load_one(path: str | Path, seen_ids: dict[str, str]) -> LoadedFile | list[ConfigIssue]:
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
        located, duplicate_keys = load_yaml_with_issues(text, file)
    except OSError as exc:
        return [ConfigIssue(file, None, None, "", f"cannot read: {exc.strerror or exc}")]
    except UnicodeDecodeError as exc:
        return [ConfigIssue(file, None, None, "", f"cannot read: not UTF-8 ({exc.reason})")]
    except ConfigError as exc:
        return list(exc.issues)
    issues = [*duplicate_keys, *_duplicate_ids(located, seen_ids), *_missing_effects(located)]
    try:
        policy = parse_model(located, PolicyFile, PolicyError)
    except PolicyError as exc:
        issues = [*exc.issues, *issues]
    if issues:
        return sorted(issues, key=lambda i: (i.line or 0, i.column or 0))
    return LoadedFile(file, text, policy, located)


def load_files(paths: Sequence[str | Path]) -> list[LoadedFile]:
    """Read and validate policy files in layer order.

    Raises:
        PolicyError: With every issue of every file (syntax, unknown keys, types, duplicate rule
            ids across files, bad globs, CEL that does not compile or reads unknown variables,
            a group defined again with other tools).
    """
    if not paths:
        raise PolicyError([ConfigIssue("", None, None, "", "no policy files given")])
    seen_ids: dict[str, str] = {}
    loaded: list[LoadedFile] = []
    issues: list[ConfigIssue] = []
    for path in paths:
        result = _load_one(path, seen_ids)
        if isinstance(result, LoadedFile):
            loaded.append(result)
        else:
            issues.extend(result)
    issues.extend(group_conflicts(loaded))
    if issues:
        raise PolicyError(issues)
    return loaded


def policy_version(files: Sequence[LoadedFile]) -> str:
    """A short hash over the contents of the loaded files, in layer order."""
    digest = hashlib.sha256()
    for loaded in files:
        data = loaded.text.encode()
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:16]
