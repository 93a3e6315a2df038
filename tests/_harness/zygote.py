"""A fork server for the test upstreams: imports the MCP SDK (and what the servers import with it)
once, then forks a child per server start that runs the server script in the launcher's place.

Run as ``python zygote.py SOCKET``, by tests/conftest.py once per pytest process (its stdin a pipe
from that process: EOF, and the zygote goes). A server script's `handoff.hand_off` connects to
SOCKET and sends its path, argv, environment, working directory, umask and its standard streams
(file descriptors); the zygote forks, answers ``pid N``, and when the child ends, ``status S``
(the wait status). The child (its own session, like the SDK's ``start_new_session``) takes the
streams as 0, 1 and 2, the environment and directory, and runs the script as ``__main__``; it
kills itself when the launcher's connection closes (the launcher died). Its command line (in
/proc) stays the zygote's: a test looking for a server by its arguments finds the launcher.

No threads and no event loop here (a fork copies only the forking thread): one selectors loop,
SIGCHLD through `signal.set_wakeup_fd`.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib.util
import io
import json
import locale
import os
import runpy
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

HANDOFF = Path(__file__).resolve().parent / "upstreams" / "handoff.py"
PRELOAD = (
    "argparse",
    "concurrent.futures.thread",
    "pkgutil",
    "anyio",
    "anyio._backends._asyncio",
    "anyio.streams.memory",
    "anyio.streams.text",
    "pydantic",
    "mcp",
    "mcp.types",
    "mcp_types",
    "mcp_types.version",
    "mcp.server.apps",
    "mcp.server.context",
    "mcp.server.lowlevel",
    "mcp.server.mcpserver",
    "mcp.server.mcpserver.exceptions",
    "mcp.server.mcpserver.prompts.base",
    "mcp.server.mcpserver.resources",
    "mcp.server.models",
    "mcp.server.runner",
    "mcp.server.sse",
    "mcp.server.stdio",
    "mcp.shared.exceptions",
    "starlette.applications",
    "starlette.requests",
    "starlette.responses",
    "starlette.routing",
    "uvicorn",
    "httpx",
    "requests",
    "rich.logging",
    "opentelemetry.context",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.sdk.resources",
    "opentelemetry.sdk.trace",
    "opentelemetry.sdk.trace.export",
    "opentelemetry.trace",
    "opentelemetry.trace.propagation.tracecontext",
)
"""What the test upstreams import at the top, and the asyncio backend anyio loads at ``run``."""
PRELOADED: set[str] = set()
STREAMS = (("stdin", "r"), ("stdout", "w"), ("stderr", "w"))
DEBUG = os.environ.get("LOCKGATE_ZYGOTE_DEBUG") == "1"
READY_WITHIN = 60.0
"""Seconds `start` waits for the zygote to listen (its imports take about 1 s)."""
LOG_FD = os.dup(2) if DEBUG else 2
STARTUP_PATH = sys.path[1:]
"""The interpreter's path but for the script's directory, before anything is imported."""


@dataclass(frozen=True, slots=True)
class Job:
    """A server to run in a forked child: what its launcher sent."""

    connection: socket.socket
    script: str
    argv: list[str]
    env: dict[str, str]
    cwd: str
    umask: int
    path: list[str]
    stdio: list[list[Any]]
    interpreter: dict[str, Any]


class Zygote:
    """The listening socket, the launchers whose children run, and the loop serving them."""

    def __init__(self, path: str, handoff: Any) -> None:
        self.path = path
        self.interpreter = json.loads(json.dumps(handoff.interpreter()))
        self.startup_path = STARTUP_PATH
        self.handlers = {
            signum: signal.getsignal(signum) for signum in (signal.SIGCHLD, signal.SIGTERM)
        }
        self.children: dict[int, socket.socket] = {}
        self.stopping = False
        self.selector = selectors.DefaultSelector()
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_read, False)
        os.set_blocking(self.wake_write, False)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        temporary = f"{path}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        self.listener.bind(temporary)
        self.listener.listen(64)
        os.rename(temporary, path)  # launchers find it listening or not at all
        os.write(1, b"listening\n")  # to `start`, waiting for it

    def serve(self) -> Job | None:
        """Serve until told to stop (None) or, in a forked child, return the child's job."""
        signal.set_wakeup_fd(self.wake_write, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, _ignore)
        signal.signal(signal.SIGTERM, _ignore)
        self.selector.register(self.listener, selectors.EVENT_READ, "listener")
        self.selector.register(self.wake_read, selectors.EVENT_READ, "signal")
        self.selector.register(0, selectors.EVENT_READ, "parent")
        while not self.stopping:
            for key, _events in self.selector.select():
                if key.data == "listener":
                    job = self._accept()
                    if job is not None:
                        return job
                elif key.data == "signal":
                    self._signalled()
                elif not os.read(0, 4096):  # the pytest process is gone
                    self.stopping = True
        self._stop()
        return None

    def _accept(self) -> Job | None:
        connection, _ = self.listener.accept()
        fds: list[int] = []
        try:
            connection.settimeout(10)
            job, fds = _receive(connection)
            refusal = self._refusal(job)
            if refusal is not None:
                _log(f"refused {job.script}: {refusal}")
                connection.sendall(f"refused {refusal}\n".encode())
                connection.close()
                _close(fds)
                return None
            connection.settimeout(None)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _log(f"request failed: {exc!r}")
            with contextlib.suppress(OSError):
                connection.sendall(f"refused {type(exc).__name__}\n".encode())
            connection.close()
            _close(fds)
            return None
        if pid == 0:
            self._become_child(job, fds)
            return job
        _close(fds)  # else the server's pipes never see EOF
        _log(f"forked {pid} for {job.script}")
        self.children[pid] = connection
        with contextlib.suppress(OSError):
            connection.sendall(f"pid {pid}\n".encode())
        return None

    def _refusal(self, job: Job) -> str | None:
        """Why the zygote cannot stand in for the interpreter the launcher started, if it cannot."""
        if threading.active_count() != 1:
            return "the zygote has threads"
        for key, value in self.interpreter.items():
            if job.interpreter.get(key) != value:
                return f"another {key}: {job.interpreter.get(key)!r}, not {value!r}"
        tail = len(self.startup_path)
        if job.path[len(job.path) - tail :] != self.startup_path or len(job.path) <= tail:
            return "another sys.path"
        return None

    def _become_child(self, job: Job, fds: list[int]) -> None:
        signal.set_wakeup_fd(-1)
        for signum, handler in self.handlers.items():
            signal.signal(signum, handler)
        self.selector.close()
        self.listener.close()
        os.close(self.wake_read)
        os.close(self.wake_write)
        for connection in self.children.values():
            connection.close()
        self.children.clear()
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        _close([fd for fd in fds if fd > 2])
        tail = len(self.startup_path)
        job.path[:] = [job.path[len(job.path) - tail - 1], *self.startup_path]

    def _signalled(self) -> None:
        signals = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.wake_read, 512):
                signals += chunk
        self.stopping = self.stopping or signal.SIGTERM in signals
        self._reap()

    def _reap(self, block: bool = False) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            connection = self.children.pop(pid, None)
            if connection is not None:
                with contextlib.suppress(OSError):
                    connection.sendall(f"status {status}\n".encode())
                connection.close()

    def _stop(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        for pid in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self._reap(block=True)


def _receive(connection: socket.socket) -> tuple[Job, list[int]]:
    data, fds, _flags, _address = socket.recv_fds(connection, 1 << 16, 3)
    try:
        if len(fds) != 3:
            raise ValueError(f"expected 3 file descriptors, got {len(fds)}")
        size = int.from_bytes(data[:4], "big")
        data = data[4:]
        while len(data) < size:
            chunk = connection.recv(size - len(data))
            if not chunk:
                raise ValueError("the launcher closed the connection mid-request")
            data += chunk
        request = json.loads(data)
        job = Job(
            connection=connection,
            script=request["script"],
            argv=request["argv"],
            env=request["env"],
            cwd=request["cwd"],
            umask=request["umask"],
            path=request["path"],
            stdio=request["stdio"],
            interpreter=request["interpreter"],
        )
    except BaseException:
        _close(fds)
        raise
    return job, fds


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _ignore(_signum: int, _frame: object) -> None:
    """A Python handler, so the signal reaches the wakeup fd."""


def _log(message: str) -> None:
    """With ``LOCKGATE_ZYGOTE_DEBUG=1``, a line on the zygote's stderr (a child's too)."""
    if DEBUG:
        os.write(LOG_FD, f"lockgate zygote {os.getpid()}: {message}\n".encode(errors="replace"))


def run_child(job: Job) -> NoReturn:
    """In the forked child: become the server the launcher would have been, run it, exit."""
    os.environ.clear()
    os.environ.update(job.env)
    with contextlib.suppress(locale.Error):
        locale.setlocale(locale.LC_CTYPE, "")
    os.chdir(job.cwd)
    os.umask(job.umask)
    sys.argv = job.argv
    sys.path = job.path
    _fresh_stdio(job.stdio)
    threading.Thread(
        target=_watch_launcher, args=(job.connection,), name="zygote-launcher-watch", daemon=True
    ).start()
    code = 0
    interrupted = False
    try:
        runpy.run_path(job.script, run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt as exc:
        _print_exception(exc, job.script)
        interrupted = True
    except BaseException as exc:
        _print_exception(exc, job.script)
        code = 1
    code = _finish(code)
    if DEBUG:  # what to add to PRELOAD
        imported = sorted(set(sys.modules) - PRELOADED - {"__main__"})
        _log(f"{job.script} imported {len(imported)} more: {' '.join(imported)}")
    if interrupted:  # as Python does: end by the signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def _print_exception(exc: BaseException, script: str) -> None:
    """The traceback as Python prints it for a script: from the script's frame on."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != script:
        tb = tb.tb_next
    if tb is not None:
        exc.__traceback__ = tb  # the hook prints the exception's own traceback
    sys.excepthook(type(exc), exc, exc.__traceback__)


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    with contextlib.suppress(Exception):
        print(value, file=sys.stderr)
    return 1


def _finish(code: int) -> int:
    """What the interpreter does at exit: wait for threads, run atexit, flush the streams."""
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            code = 120
    return code


def _fresh_stdio(stdio: list[list[Any]]) -> None:
    """Standard streams made as the interpreter makes them, over the launcher's descriptors, as
    the launcher's were made (encoding, errors, buffering: the zygote's were made for its own)."""
    for fd, ((name, mode), (encoding, errors, line_buffering, write_through)) in enumerate(
        zip(STREAMS, stdio, strict=True)
    ):
        raw_only = write_through and mode == "w"
        binary: Any = open(fd, mode + "b", buffering=0 if raw_only else -1, closefd=False)  # noqa: SIM115
        (binary if raw_only else binary.raw).name = f"<{name}>"
        text = io.TextIOWrapper(
            binary,
            encoding=encoding,
            errors=errors,
            newline="\n",
            line_buffering=line_buffering,
            write_through=write_through,
        )
        text.mode = mode  # type: ignore[misc]
        setattr(sys, name, text)
        setattr(sys, f"__{name}__", text)


def _watch_launcher(connection: socket.socket) -> None:
    """Kill this child when its launcher is gone (its connection closed): no orphans."""
    try:
        while connection.recv(64):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGKILL)


def start() -> subprocess.Popen[bytes] | None:
    """Start this pytest process's zygote (it listens once it has imported everything); None
    where there is none to start (``LOCKGATE_TEST_NO_ZYGOTE=1``, not Linux)."""
    if os.environ.get("LOCKGATE_TEST_NO_ZYGOTE") == "1" or sys.platform != "linux":
        return None
    handoff = _load_handoff()
    path = Path(handoff.socket_path(os.getpid()))
    path.parent.mkdir(mode=0o700, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a pytest process of the same pid that was killed
    # The servers start with a few variables only (the SDK's default environment): none of
    # pytest's PYTHON* ones, which would change the interpreter the zygote stands in for.
    env = {key: value for key, value in os.environ.items() if key[:6] != "PYTHON"}
    process = subprocess.Popen(
        [sys.executable, __file__, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    assert process.stdout is not None
    with process.stdout:  # until it listens (it says so), so every server started forks
        if select.select([process.stdout], [], [], READY_WITHIN)[0]:
            process.stdout.readline()  # "listening", or EOF: it failed, servers start alone
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a zygote: it kills the children still running and removes its socket."""
    assert process.stdin is not None
    process.stdin.close()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _load_handoff() -> Any:
    if "handoff" in sys.modules:
        return sys.modules["handoff"]
    spec = importlib.util.spec_from_file_location("handoff", HANDOFF)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["handoff"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    handoff = _load_handoff()
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    handoff._in_zygote_child = True
    PRELOADED.update(sys.modules)
    gc.collect()
    gc.freeze()  # the children share these pages: no collection writes to them
    zygote = Zygote(sys.argv[1], handoff)
    job = zygote.serve()
    if job is not None:
        del zygote
        run_child(job)


if __name__ == "__main__":
    main()
