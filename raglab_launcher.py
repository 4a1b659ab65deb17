"""The ``raglab`` console script: starts raglab's command line without importing raglab first.

CI reads exit 1 as a gate's "block", so nothing but a delivered decision may exit 0, 1 or 3. Two
things here make sure of it:

* A broken installation (a dependency that fails to import, memory exhausted while loading) exits 4
  with one line: importing ``raglab.cli`` happens inside a ``try``.
* On POSIX the command runs in a child process that reports, through a pipe, the exit code raglab
  itself chose (:func:`raglab.cli.entry`). A native library can end a process on its own: OpenBLAS
  calls ``exit(1)`` when it cannot allocate its buffers under a memory limit, a crash is a signal,
  the kernel's OOM killer a SIGKILL. An exit code the child did not report is therefore not raglab's,
  and becomes 4 with one line on stderr. Interrupts (SIGINT, SIGTERM, SIGHUP) are passed to the
  child, and the command exits as the shell would report it (128 + signal).
"""

from __future__ import annotations

import os
import sys

#: What a broken installation or environment raises at import: anything. A shared library that will not load
#: is an OSError, a memory limit a MemoryError or (inside an extension module's initialisation) a SystemError.
#: The same as ``raglab._optional.BROKEN_INSTALL`` (this script cannot import raglab before its ``try``;
#: tests/test_layering.py checks that the two agree).
BROKEN_INSTALL = (Exception,)

#: Signals that mean "stop" from the user or a CI runner: passed on to the command, reported as 128 + signal.
_STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


def _tell(line: str) -> None:
    """One line on stderr, if there is a stderr (it may be closed: ``2>&-``)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass


def cannot_start_line(exc: BaseException) -> str:
    """The one line that says why raglab cannot start (the same as ``raglab._optional.cannot_start_line``)."""
    return (f"raglab: cannot start: {type(exc).__name__}: {exc}. The installation or environment is broken "
            "(reinstall raglab, or raise the memory limit); exit 4 is not a gate decision.")


def cannot_start(exc: BaseException) -> int:
    """Say in one line why raglab cannot start, and return its exit code, 4 (never 1, a gate's "block")."""
    _tell(cannot_start_line(exc))
    return 4


def _run() -> int:
    """Run ``raglab`` in this process; exit 4 with one line when raglab or a dependency cannot be imported."""
    try:
        from raglab.cli import entry
    except BROKEN_INSTALL as exc:
        return cannot_start(exc)
    return entry()


def _child(report_fd: int) -> int:
    """The command, in the child process: run it, then write the exit code it chose to ``report_fd``."""
    os.set_inheritable(report_fd, False)  # processes the command starts must not hold the pipe open
    try:
        code = _run()
    except SystemExit as exc:  # argparse: 0 (--help, --version) or 2 (usage)
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 4)
    try:
        os.write(report_fd, str(code).encode())
        os.close(report_fd)
    except OSError:
        pass
    return code


def _high_fd(fd: int) -> int:
    """``fd`` moved to a number above 2: with stdout closed, os.pipe() may hand out 1, and the child must
    see its stdout closed, not our pipe."""
    import fcntl

    if fd > 2:
        return fd
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return high


def _supervise(argv: list[str]) -> int:
    """Run the command in a child process and return its exit code if raglab chose it, else 4 (or 128 + n
    for an interrupt)."""
    import signal
    import subprocess

    read_fd, write_fd = os.pipe()
    read_fd, write_fd = _high_fd(read_fd), _high_fd(write_fd)
    # The child imports raglab from where this process would: the same sys.path (-c alone would put the
    # current directory first, where the console script has its own folder), and the same interpreter flags.
    code = (f"import sys; sys.path[:] = {sys.path!r}; import raglab_launcher; "
            f"sys.exit(raglab_launcher._child({write_fd}))")
    command = [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", code, *argv]
    try:
        child = subprocess.Popen(command, pass_fds=(write_fd,))
    except OSError as exc:  # cannot start a process (no memory, no process slots): no command ran
        return cannot_start(exc)
    finally:
        os.close(write_fd)
    stops = [getattr(signal, name) for name in _STOP_SIGNALS if hasattr(signal, name)]
    previous = {signum: signal.signal(signum, lambda signum, frame: child.send_signal(signum)) for signum in stops}
    try:
        code = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    with os.fdopen(read_fd, "rb") as pipe:
        reported = pipe.read().decode(errors="replace")
    if reported == str(code):
        return code
    if code < 0 and -code in stops:
        return 128 - code  # interrupted, as a shell reports it
    try:
        what = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
    except ValueError:
        what = f"signal {-code}"
    _tell(f"raglab: the command ended without a result ({what}, not raglab's: a native library or the system "
          "ended it, e.g. OpenBLAS or the OOM killer when memory runs out). Exit 4 is not a gate decision.")
    return 4


def supervised() -> bool:
    """Whether ``raglab`` runs its command in a supervised child process here (POSIX only)."""
    return os.name == "posix"


def main() -> int:
    """Run ``raglab`` (the console script): supervised in a child process on POSIX, see the module docs."""
    if not supervised():
        return _run()
    return _supervise(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
