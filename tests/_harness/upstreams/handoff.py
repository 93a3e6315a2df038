"""Start a test upstream as a fork of the test run's zygote (tests/_harness/zygote.py) instead of
importing the MCP SDK afresh: most of a test server's start-up is ``import mcp``.

A server script calls `hand_off()` first thing, before its heavy imports. Run as ``__main__``
under a pytest process that has a zygote (found by walking up the parent processes: the SDK's
stdio client passes on only a few environment variables), the script sends its path, argv,
environment, working directory and its stdin, stdout and stderr to the zygote, which forks a
child that runs the script with them. This process stays as a thin launcher: the one its caller
started, waited for and signalled. It forwards SIGTERM, SIGINT and SIGHUP to the child and ends
as the child ended (the same exit code, or killed by the same signal); when it dies (SIGKILL),
the child kills itself. Anywhere else (imported, no zygote, the zygote refuses, or
``LOCKGATE_TEST_NO_ZYGOTE=1``) `hand_off` returns and the script starts as usual.

A server serving HTTP (``--http``) starts as usual: a killed launcher's child goes a moment
later, and a test that kills an HTTP server and starts another on its port needs it gone then.

Standard library only: this runs before anything else in a server.
"""

from __future__ import annotations

import _locale
import codecs
import contextlib
import json
import os
import signal
import socket
import sys
from types import FrameType
from typing import Any, NoReturn

__all__ = ["hand_off", "socket_path"]

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
MAX_ANCESTORS = 32
_in_zygote_child = False
"""Set in the zygote: a child it forked runs the script, whose `hand_off` must then return."""


def socket_path(pid: int) -> str:
    """Where the zygote of the pytest process ``pid`` listens."""
    return f"/tmp/lockgate-zygote-{os.getuid()}/{pid}.sock"


def hand_off() -> None:
    """Run the calling ``__main__`` script in a child of the zygote and exit as it exits; return
    at once where there is no zygote to run it (the script then starts as usual)."""
    caller = sys._getframe(1).f_globals
    if (
        _in_zygote_child
        or caller.get("__name__") != "__main__"
        or os.environ.get("LOCKGATE_TEST_NO_ZYGOTE") == "1"
        or any(arg == "--http" or arg.startswith("--http=") for arg in sys.argv[1:])
        or sys.platform != "linux"
    ):
        return
    path = _zygote_socket()
    if path is None:
        return
    pending: list[int] = []

    def remember(signum: int, _frame: FrameType | None) -> None:
        pending.append(signum)

    before = {signum: signal.signal(signum, remember) for signum in FORWARDED}
    try:
        connection, pid = _request(path, os.path.abspath(caller["__file__"]))
    except (OSError, ValueError):
        connection = None
    if connection is None:  # start as usual, with any signal that came meanwhile
        for signum, handler in before.items():
            signal.signal(signum, handler)
        for came in pending:
            os.kill(os.getpid(), came)
        return
    _relay(connection, pid, pending)


def _zygote_socket() -> str | None:
    pid = os.getppid()
    for _ in range(MAX_ANCESTORS):
        if pid <= 1:
            return None
        path = socket_path(pid)
        if os.path.exists(path):
            return path
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return None
    return None


def _request(path: str, script: str) -> tuple[socket.socket | None, int]:
    """Ask the zygote to run ``script``; the connection and the child's pid, or ``None`` if the
    zygote refused (it runs a different interpreter set-up, say)."""
    for fd in (0, 1, 2):
        os.fstat(fd)  # a closed standard stream: start as usual (OSError)
    streams: list[Any] = [sys.stdin, sys.stdout, sys.stderr]
    umask = os.umask(0)
    os.umask(umask)
    request = {
        "script": script,
        "argv": sys.argv,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "umask": umask,
        "path": sys.path,
        "stdio": [
            [stream.encoding, stream.errors, stream.line_buffering, stream.write_through]
            for stream in streams
        ],
        "interpreter": interpreter(),
    }
    data = json.dumps(request).encode()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
        socket.send_fds(connection, [len(data).to_bytes(4, "big") + data], [0, 1, 2])
        reply = _line(connection)
    except OSError:
        connection.close()
        raise
    word, _, value = reply.partition(" ")
    if word != "pid":
        connection.close()
        return None, 0
    return connection, int(value)


def interpreter() -> dict[str, object]:
    """What a forked child shares with its zygote and must match this process's start-up:
    the same interpreter, flags, warning options and ``PYTHON*`` environment."""
    flags = {name: getattr(sys.flags, name) for name in sys.flags.__match_args__}
    # UTF-8 mode (on by itself in the C locale: the SDK passes no LANG) matters only for the
    # encoding it gives text files, compared as such.
    del flags["utf8_mode"]
    return {
        "executable": sys.executable,
        "flags": flags,
        "encoding": "utf-8" if sys.flags.utf8_mode else codecs.lookup(_locale.getencoding()).name,
        "warnoptions": sys.warnoptions,
        "xoptions": {str(key): str(value) for key, value in sys._xoptions.items()},
        "filesystem": [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()],
        "environment": {key: value for key, value in os.environ.items() if key[:6] == "PYTHON"},
    }


def _line(connection: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(64)
        if not chunk:
            raise ConnectionResetError("the zygote closed the connection")
        data += chunk
    return data.decode().strip()


def _relay(connection: socket.socket, pid: int, pending: list[int]) -> NoReturn:
    """Be the child's stand-in until it ends, then end the same way."""

    def forward(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    for came in pending:
        forward(came, None)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the child holds the pipes: their ends see EOF when it ends, not us
    os.dup2(null, 1)
    os.close(null)
    try:
        word, _, value = _line(connection).partition(" ")
        status = int(value) if word == "status" else None
    except (OSError, ValueError):
        status = None
    if status is None:
        forward(signal.SIGKILL, None)
        sys.stderr.write("lockgate test zygote: lost the zygote; the server's exit is unknown\n")
        sys.stderr.flush()
        os._exit(1)
    if os.WIFSIGNALED(status):
        killed_by = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the child dumped its own core
            signal.signal(killed_by, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [killed_by])
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), killed_by)
        os._exit(128 + killed_by)
    sys.stderr.flush()
    os._exit(os.waitstatus_to_exitcode(status))
