"""How the pipeline runs a job with its log, and a clean stop on Ctrl-C (SIGINT) or SIGTERM.

Every rule of workflow/rules/*.smk is a ``shell:`` rule calling the console script, ``asynctm <subcommand> ...
--log LOG`` (asynctm.cli), so ``snakemake -p`` prints each job's command. Given ``--log``, the console script
runs its subcommand as a job (:func:`run_job`): it starts nothing once the deadline has passed, and ends a
failure with one line naming the log. The subcommand writes its own log with :class:`JobLog` (messages to the log
and to stderr, the traceback of an unexpected error to the log too): asynctm.datasets and asynctm.artifacts plain
lines, a run of asynctm.experiments its progress as timestamped lines tagged with the run, kept across a resumed
attempt.

Left to itself, Snakemake 9 stops badly: on SIGTERM it waits for the running jobs to finish (hours for a
pyTsetlinMachine run); on SIGINT it cancels its thread pool, which also waits for them unless the terminal
happened to deliver the SIGINT to the whole process group, and even then a pyTsetlinMachine epoch busy in C
ignored it for minutes.

:func:`install_signal_handlers` (the workflow's ``onstart``, which runs in the main Snakemake process after
Snakemake has installed its own SIGTERM handler) makes both signals do the same thing: send SIGTERM to every
process below this one (each job's shell and its ``asynctm`` process), kill those still alive :data:`GRACE_S`
seconds later, and end Snakemake as its own SIGTERM handler does (its scheduler starts no other job), which now
takes seconds: it marks the stopped jobs failed, removes their outputs and incomplete markers and releases its
lock. A run writes its record last and atomically, so an interrupted run leaves none
(asynctm.baselines.pytm.interruptible keeps pyTsetlinMachine's C epochs from delaying the signal).

A deadline (config ``deadline``: the end of a SLURM allocation, of a preemptible or time-boxed machine) is
resolved once, by the main Snakemake process (a duration counts from the start of the command), and reaches the
jobs through the environment (:func:`share_deadline`, :data:`DEADLINE_ENV`): Snakemake reads the Snakefile
again in a remote job's process, where the clock has moved on. :func:`run_job` starts no job after it, and a TM
run gets ``--stop-at`` :data:`DEADLINE_MARGIN_S` before it (:func:`stop_at_args`, added by asynctm.cli): it
pauses before an epoch that would end later, keeping its checkpoint, and the job ends with :data:`EXIT_PAUSED`
and one line saying so and that the same command resumes it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import sys
import threading
import time
import traceback
from datetime import datetime
from pathlib import Path

GRACE_S = 5.0  # seconds the processes get between SIGTERM and SIGKILL
#: The exit status of a TM run paused at its ``--stop-at`` (asynctm.experiments; sysexits' EX_TEMPFAIL: try again
#: later).
EXIT_PAUSED = 75
#: This invocation's deadline as a UNIX time, set by the main Snakemake process for its jobs (local job processes
#: inherit it; the SLURM executor plugin submits with ``--export=ALL``).
DEADLINE_ENV = "ASYNCTM_DEADLINE"
#: A TM run's ``--stop-at`` comes this long before the deadline: time for the pause's checkpoint write, the
#: process's exit and Snakemake's clean-up.
DEADLINE_MARGIN_S = 60.0

_stopping = threading.Event()


def run_job(what: str, main, argv: list[str], log) -> int:
    """Run ``main(argv)`` in this process as one job of the workflow (asynctm.cli, for a subcommand given
    ``--log LOG``; ``what`` names it: ``asynctm run tm``) and return its exit status. Starts nothing once the
    deadline has passed (one line, :data:`EXIT_PAUSED`); a run paused at the deadline (its status
    :data:`EXIT_PAUSED`) ends with one line saying where it stopped and that the same command resumes it, any
    other failure with one line naming the log. SIGINT or SIGTERM to snakemake stops it within seconds
    (:func:`install_signal_handlers`)."""
    due = deadline()
    if due is not None and time.time() >= due:
        print(f"{what} not started: the deadline ({_clock(due)}) had passed; rerun the same command to resume",
              file=sys.stderr, flush=True)
        return EXIT_PAUSED
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's usage error (already printed)
        status = exc.code if isinstance(exc.code, int) or exc.code is None else 1
    except Exception:  # noqa: BLE001 - the subcommand's log holds the traceback; it shows here too, then one line
        traceback.print_exc()
        status = 1
    if status == EXIT_PAUSED:
        print(f"{what} {paused_line(log)}; see {log}", file=sys.stderr, flush=True)
    elif status and status - 128 in signal.valid_signals():
        print(f"{what} stopped by {signal.Signals(status - 128).name}; see {log}", file=sys.stderr, flush=True)
    elif status:
        print(f"{what} failed; see {log}", file=sys.stderr, flush=True)
    return status or 0


def shell_word(value) -> str:
    """``value`` (a folder, the mirror, the artifacts' settings) as one word of a workflow rule's shell command, written
    in when the workflow is read: quoted for the shell, its braces doubled for Snakemake, which fills in the rest of
    the command per job."""
    return shlex.quote(str(value)).replace("{", "{{").replace("}", "}}")


def console_script_on_path(environ=None) -> str | None:
    """Put the folder of this interpreter first on the jobs' PATH (``environ``, default ``os.environ``): a virtual
    environment's bin/, where pip installs the console script ``asynctm``, so that ``.venv/bin/snakemake`` finds it
    without an activated environment. Returns where ``asynctm`` is found then (None: nowhere)."""
    environ = os.environ if environ is None else environ
    here, path = str(Path(sys.executable).parent), environ.get("PATH", "")
    if here not in path.split(os.pathsep):
        environ["PATH"] = os.pathsep.join(filter(None, [here, path]))
    return shutil.which("asynctm", path=environ["PATH"])


# -- the deadline ------------------------------------------------------------------------------------------

def share_deadline(due: float | None, environ=None) -> float | None:
    """Hand ``due`` (the main Snakemake process's deadline as a UNIX time, resolved once from config ``deadline``:
    asynctm.config_check.resolve_deadline; None: none) to its jobs through the environment (``environ``, default
    ``os.environ``), replacing whatever was there; a job process, which reads the Snakefile again later, takes it
    from there (:func:`deadline`). Returns ``due``."""
    environ = os.environ if environ is None else environ
    if due is None:
        environ.pop(DEADLINE_ENV, None)
    else:
        environ[DEADLINE_ENV] = repr(float(due))
    return due


def deadline(environ=None) -> float | None:
    """The deadline the main Snakemake process shared (:func:`share_deadline`), as a UNIX time; None: none."""
    raw = (os.environ if environ is None else environ).get(DEADLINE_ENV)
    try:
        return float(raw) if raw else None
    except ValueError:
        return None


def stop_at_args() -> list[str]:
    """A TM run's ``--stop-at`` under this invocation's deadline (nothing without one)."""
    due = deadline()
    return [] if due is None else ["--stop-at", f"{due - DEADLINE_MARGIN_S:.3f}"]


def deadline_note(due: float, now: float | None = None) -> str:
    """The line that says, at the start, when the command stops and what that means."""
    left = due - (time.time() if now is None else now)
    when = f"passed {_span(-left)} ago: no job will start" if left <= 0 else (
        f"in {_span(left)}: no job starts after it, and a TM run pauses with its checkpoint "
        f"{_span(DEADLINE_MARGIN_S)} before it")
    return f"Deadline {_clock(due)} (config deadline), {when}; the same command resumes what it stopped."


# run.py's line for a pause (asynctm.experiments.run.run_tm): "paused before epoch K/N: ...; checkpoint ... resumes
# it" or "...; no checkpoint: a rerun starts from epoch 1".
_PAUSED = re.compile(r"paused before epoch (\d+)/(\d+):.*")


def paused_line(log) -> str:
    """A paused run's state in one line, from the last pause its log records."""
    try:
        found = list(_PAUSED.finditer(Path(log).read_text(encoding="utf-8", errors="replace")))
    except OSError:
        found = []
    if not found:
        return "paused at the deadline; rerun the same command to resume"
    last = found[-1]
    done, n = int(last.group(1)) - 1, int(last.group(2))
    lost = "no checkpoint" in last.group(0)
    return (f"paused at the deadline after epoch {done} of {n}; rerun the same command to "
            + ("start it again (it has no checkpoint)" if lost else "resume"))


def _clock(t: float) -> str:
    """A UNIX time as this host's local date and time, with its offset."""
    return datetime.fromtimestamp(t).astimezone().isoformat(sep=" ", timespec="seconds")


def _span(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, s = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {s:02d} s" if minutes else f"{s} s"


class JobLog:
    """A job's messages: to its log when ``path`` is given, then to stderr (or ``stream``). One file per job,
    written line by line (jobs may run in threads of one Snakemake process, so no global logging handler is
    shared); the log comes first because it is what stays when the process is killed right after.

    ``tag``: each line reads ``HH:MM:SS [tag] message`` (local time; a run's progress, tagged with the run).
    ``append``: keep what an earlier, interrupted attempt wrote (a resumed run); otherwise the log starts
    afresh. Lines from several threads (a run's heartbeat) never interleave."""

    def __init__(self, path: str | os.PathLike | None, tag: str | None = None, append: bool = False):
        self.path = Path(path) if path else None
        self.tag = tag
        self._lock = threading.Lock()
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a" if append else "w", encoding="utf-8"):
                pass

    def __call__(self, msg: str, stream=None) -> None:
        line = msg if self.tag is None else f"{datetime.now().strftime('%H:%M:%S')} [{self.tag}] {msg}"
        with self._lock:
            self._append(line + "\n")
            print(line, file=sys.stderr if stream is None else stream, flush=True)

    def traceback(self) -> None:
        """The traceback of the exception being handled, to the log (re-raise it for stderr)."""
        with self._lock:
            self._append(traceback.format_exc())

    def _append(self, text: str) -> None:
        if self.path:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(text)


def proc_files(name: str):
    """``(pid, contents)`` of ``/proc/<pid>/<name>`` for every process whose file can be read (none without /proc)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in filter(str.isdigit, entries):
        try:
            with open(f"/proc/{entry}/{name}", "rb") as f:
                data = f.read()
        except OSError:  # gone meanwhile, or not ours
            continue
        yield int(entry), data


def descendants(pid: int) -> list[int]:
    """The process ids below ``pid`` (children first), read from /proc; empty where there is no /proc."""
    children: dict[int, list[int]] = {}
    for child, stat in proc_files("stat"):
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
        children.setdefault(int(stat[stat.rindex(b")") + 2:].split()[1]), []).append(child)
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(0), []):
            out.append(child)
            todo.append(child)
    return out


def signal_descendants(sig: int) -> int:
    """Send ``sig`` to every process below this one; returns how many were signalled."""
    n = 0
    for pid in descendants(os.getpid()):
        try:
            os.kill(pid, sig)
            n += 1
        except (ProcessLookupError, PermissionError):
            pass
    return n


def _kill_leftovers() -> None:
    signal_descendants(signal.SIGKILL)


_snakemake_exit = None  # Snakemake's own SIGTERM handler: its scheduler's graceful exit


def _on_signal(signum, frame):
    first = not _stopping.is_set()
    _stopping.set()
    n = signal_descendants(signal.SIGTERM)
    if first:
        timer = threading.Timer(GRACE_S, _kill_leftovers)
        timer.daemon = True
        timer.start()
        print(f"{signal.Signals(signum).name}: stopping the running jobs ({n} processes); interrupted runs write "
              "no record", file=sys.stderr, flush=True)
        if not callable(_snakemake_exit):
            raise KeyboardInterrupt  # no scheduler yet: Snakemake's own Ctrl-C path
        # Snakemake starts no other job and ends once the stopped ones have: it handles each as failed (removes its
        # outputs and incomplete marker), then releases its lock.
        _snakemake_exit(signum, frame)


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM stop every job process, then end Snakemake as its own SIGTERM handler does, without waiting
    for the jobs (call from the main thread, in the workflow's ``onstart``, after Snakemake installed that handler)."""
    global _snakemake_exit
    if signal.getsignal(signal.SIGTERM) is not _on_signal:
        _snakemake_exit = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
