"""Messages a person can act on, for the Snakemake workflow: one line naming the problem and the fix.

The Snakefile calls :func:`install` before anything else. Snakemake's own words for three everyday mistakes
say little about the fix:

- a problem in the configuration: :func:`refusing` prints the lines of a
  :class:`~asynctm.config_check.ConfigError` (each names the key, the closest valid one and where it was set)
  and ends the command with status 1, without Snakemake's "WorkflowError in file Snakefile" header and
  without the JSON schema that ``snakemake.utils.validate`` appends to its message;
- an unknown target (``snakemake exp_wsd_banana``): Snakemake's "No rule to produce ..." becomes one line
  naming the target and the closest valid ones, then a line with every valid target;
- Ctrl-C (SIGINT) or SIGTERM: the run ends with one line saying what stopped and how to resume, instead of
  an "Error in rule" block per stopped job, the job processes' stack frames and "At least one job did not
  complete successfully".
- a job paused at the deadline (exit status :data:`asynctm.jobs.EXIT_PAUSED`): its own line (where it stopped,
  that the same command resumes it), without Snakemake's ``CalledProcessError`` for its shell command.

How, in Snakemake 9: every message goes through the ``snakemake.logging`` logger, so :func:`install` adds a
filter to its stream handlers. The target names are those of Snakemake's own DAG settings once the DAG fails
(no parsing of the command line). A stop is known from :mod:`asynctm.jobs` (the signal handlers the workflow's
``onstart`` installs) or from an uncaught KeyboardInterrupt (before ``onstart``, while Snakemake plans); the
last line comes at exit, after every job process of this run has ended (they carry :data:`RUN_MARKER` in
their environment), so nothing prints after it.

Each step is guarded: should Snakemake change what it logs, its own message comes through unchanged.
"""

from __future__ import annotations

import atexit
import difflib
import logging
import os
import sys
import threading
import time
from contextlib import contextmanager

from . import jobs

#: Environment variable that marks the processes of one run: the main Snakemake process's id.
RUN_MARKER = "ASYNCTM_SNAKEMAKE_PID"

#: Seconds the last line waits for the stopped job processes to end (they get SIGKILL after jobs.GRACE_S).
WAIT_FOR_JOBS_S = jobs.GRACE_S + 2.0


def refuse(message: str):
    """Print ``message`` (one line per problem) to stderr and end the command with status 1: no traceback,
    no Snakemake header (a Snakefile raising SystemExit ends Snakemake as ``sys.exit`` does)."""
    for line in str(message).splitlines():
        print(line, file=sys.stderr, flush=True)
    raise SystemExit(1)


@contextmanager
def refusing(*errors: type[BaseException]):
    """``with refusing(ConfigError): ...``: an error of these types ends the command with its message only."""
    try:
        yield
    except errors as e:
        refuse(str(e))


# --- unknown targets ----------------------------------------------------------------------------------------


def target_names(workflow) -> list[str]:
    """The rules a command line may name (those without wildcards), sorted."""
    return sorted(rule.name for rule in workflow.rules if not rule.has_wildcards())


def _target_files(workflow) -> list[str]:
    return sorted({str(f) for rule in workflow.rules if not rule.has_wildcards() for f in rule.output})


def unknown_target_lines(unknown: list[str], names: list[str], files: list[str] = ()) -> list[str]:
    """One line per unknown target (its closest valid names, or files for a path), then the valid targets."""
    lines = []
    for target in unknown:
        is_path = "/" in target or "." in target
        close = difflib.get_close_matches(target, list(files) if is_path else names, n=3, cutoff=0.6)
        what = "no rule writes this file" if is_path else "no rule has this name"
        fix = (f"did you mean {' or '.join(close)}?" if close
               else "name one of the targets below, or the path of an output file")
        lines.append(f"Unknown target {target!r}: {what}; {fix}")
    lines.append(f"Valid targets: {', '.join(names)}")
    return lines


def _unknown_targets(workflow) -> list[str]:
    targets = getattr(getattr(workflow, "dag_settings", None), "targets", None) or ()
    return [str(t) for t in targets
            if not workflow.is_rule(t) and not os.path.exists(t)
            and not any(rule.is_producer(t) for rule in workflow.rules)]


# --- stops --------------------------------------------------------------------------------------------------


_uncaught_interrupt = threading.Event()  # Ctrl-C before the jobs' handlers were installed


def _jobs_stopping() -> bool:
    event = getattr(jobs, "_stopping", None)  # set by asynctm.jobs's SIGINT and SIGTERM handlers
    return bool(event is not None and event.is_set())


def stopping() -> bool:
    """Whether this run is stopping on SIGINT or SIGTERM (asynctm.jobs's handlers, or an uncaught Ctrl-C)."""
    return _jobs_stopping() or _uncaught_interrupt.is_set()


def stop_line(stopped_jobs: list[str], planning: bool) -> str:
    """The last line of a stopped run: what stopped, and how to resume."""
    if planning:
        return ("Interrupted while snakemake was planning: no job had started and nothing was changed; to resume, "
                "run the same command again.")
    if not stopped_jobs:
        return ("Interrupted: no job was running, nothing was left half-written; to resume, run the same command "
                "again (no --unlock needed).")
    counts = {}
    for name in stopped_jobs:
        counts[name] = counts.get(name, 0) + 1
    names = ", ".join(name if n == 1 else f"{name} x{n}" for name, n in sorted(counts.items()))
    n = len(stopped_jobs)
    jobs_ = "1 running job" if n == 1 else f"{n} running jobs"
    return (f"Interrupted: stopped {jobs_} ({names}), which left no output; to resume, run the same command again "
            "(no --unlock needed).")


def _run_processes(marker: str) -> list[int]:
    """Ids of the live processes (other than this one) whose environment carries ``RUN_MARKER=marker``."""
    needle = b"\0" + f"{RUN_MARKER}={marker}".encode() + b"\0"
    return [pid for pid, env in jobs.proc_files("environ") if pid != os.getpid() and needle in b"\0" + env]


class _Messages(logging.Filter):
    """The filter on Snakemake's stream handlers (see the module's docstring)."""

    def __init__(self, workflow, main: bool):
        super().__init__()
        self.workflow = workflow
        self.main = main
        self.stopped_jobs: list[str] = []
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            return self._filter(record)
        except Exception:  # never hide Snakemake's own message
            return True

    def _filter(self, record: logging.LogRecord) -> bool:
        if _paused_error(record):
            return False  # the job's own line says where it paused and that the same command resumes it
        if not self.main:
            return True
        if getattr(record, "exception", None) == "MissingRuleException":
            unknown = _unknown_targets(self.workflow)
            if unknown:
                record.msg = "\n".join(unknown_target_lines(unknown, target_names(self.workflow),
                                                            _target_files(self.workflow)))
                record.args = ()
            return True
        if stopping():
            if str(getattr(record, "event", "")) in ("job_error", "group_error"):  # LogEvent is a StrEnum
                with self.lock:
                    self.stopped_jobs.append(str(getattr(record, "rule_name", None) or "a group job"))
                return False
            if str(record.msg).startswith("Will exit after finishing currently running jobs"):
                return False  # its scheduler's graceful exit, which does not wait here: the jobs were stopped
            # Exceptions the stop caused ("At least one job did not complete successfully"): the last line says
            # it. Other errors (a cleanup that failed) still show.
            return not (record.levelno >= logging.ERROR and getattr(record, "exception", None))
        return True

    def last_line(self) -> None:
        """At exit: after a stop, wait for this run's job processes, then say what stopped and how to resume."""
        if not stopping():
            return
        deadline = time.monotonic() + WAIT_FOR_JOBS_S
        while _run_processes(str(os.getpid())) and time.monotonic() < deadline:
            time.sleep(0.1)
        planning = not _jobs_stopping()
        with self.lock:
            line = stop_line(list(self.stopped_jobs), planning)
        print(line, file=sys.stderr, flush=True)


def _paused_error(record: logging.LogRecord) -> bool:
    """Whether ``record`` is the error Snakemake logs for the shell command of a job paused at the deadline
    ("CalledProcessError in file ..., line N:", then "Command '...' returned non-zero exit status 75.")."""
    return (getattr(record, "exception", None) == "RuleException" and isinstance(record.msg, str)
            and record.msg.rstrip().endswith(f"returned non-zero exit status {jobs.EXIT_PAUSED}."))


def _stream_handlers(logger: logging.Logger) -> list[logging.Handler]:
    return [h for h in logger.handlers
            if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)]


_installed: list[_Messages] = []


def install(workflow) -> None:
    """Install the messages for this Snakemake process (once; see the module's docstring)."""
    if _installed:  # the Snakefile read again in this process: the same filter, for this workflow
        _installed[0].workflow = workflow
        return
    from snakemake.logging import logger

    main = bool(workflow.is_main_process)
    messages = _Messages(workflow, main)
    handlers = _stream_handlers(logger)
    for handler in handlers or [logger]:  # no stream handler (a logger plugin): filter the logger itself
        handler.addFilter(messages)
    _installed.append(messages)
    if not main:
        return
    os.environ[RUN_MARKER] = str(os.getpid())
    previous = sys.excepthook

    def excepthook(kind, value, tb):
        if issubclass(kind, KeyboardInterrupt):  # Ctrl-C before onstart: the last line says it
            _uncaught_interrupt.set()
            return
        previous(kind, value, tb)

    sys.excepthook = excepthook
    atexit.register(messages.last_line)
