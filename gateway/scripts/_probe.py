"""What the sandbox offers, asked of Monty itself: which imports work and which builtins exist.

No user code runs here: the probe feeds a throwaway Monty session import statements and bare
builtin names, rebuilt from the sources' syntax trees. Answers are kept for the life of the
process, so each statement and name is asked once; when Monty cannot start, the probe says so
once and the checks that need it are skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic_monty import MontySession

__all__ = ["SandboxSupport", "probe_sandbox"]

log = logging.getLogger("lockgate")

_PROBE_TIMEOUT = 10.0  # seconds: a worker stuck longer is killed and the probe given up

_imports: dict[str, str | None] = {}  # statement -> None when it works, else Monty's error
_names: dict[str, bool] = {}  # builtin name -> defined in the sandbox
_unavailable: str | None = None  # why Monty could not be asked; never retried


@dataclass(frozen=True, slots=True)
class SandboxSupport:
    """The sandbox's answers about some import statements and builtin names.

    Attributes:
        import_errors: Each statement that fails, with Monty's error message.
        missing_names: The names that are not defined in the sandbox.
    """

    import_errors: Mapping[str, str]
    missing_names: frozenset[str]


def probe_sandbox(statements: Collection[str], names: Collection[str]) -> SandboxSupport | None:
    """Which of ``statements`` fail in the sandbox, and which ``names`` it lacks.

    Args:
        statements: Import statements, e.g. ``import json`` or ``from json import loads``.
        names: Bare identifiers, e.g. ``eval``.

    Returns:
        The answers, or None when Monty cannot be started (nothing can be said).
    """
    global _unavailable
    if _unavailable is not None:
        return None
    new_statements = sorted({s for s in statements if s not in _imports})
    new_names = sorted({n for n in names if n not in _names})
    if new_statements or new_names:
        try:
            _ask(new_statements, new_names)
        except Exception as exc:  # whatever stops Monty means "cannot tell", not a config error
            _unavailable = f"{type(exc).__name__}: {exc}"
            log.warning(
                "cannot probe the sandbox (%s): its imports and builtins are not checked",
                _unavailable,
            )
            return None
    return SandboxSupport(
        import_errors={s: error for s in statements if (error := _imports[s]) is not None},
        missing_names=frozenset(n for n in names if not _names[n]),
    )


def _ask(statements: list[str], names: list[str]) -> None:
    from pydantic_monty import Monty  # only when a source needs it: the gateway starts without

    pool = Monty(min_processes=1, max_processes=1, request_timeout=_PROBE_TIMEOUT)
    with pool, pool.checkout(script_name="probe.py") as session:
        # names first: an import binds names, which would then look defined
        answers = {name: _error(session, name, NameError) is None for name in names}
        errors = {statement: _error(session, statement, ImportError) for statement in statements}
    _names.update(answers)
    _imports.update(errors)


def _error(session: MontySession, code: str, kind: type[Exception]) -> str | None:
    """Monty's message when ``code`` raises ``kind`` in the sandbox, else None."""
    from pydantic_monty import MontyRuntimeError

    try:
        session.feed_run(code)
    except MontyRuntimeError as exc:
        inner = exc.exception()
        return str(inner) if isinstance(inner, kind) else None
    return None
