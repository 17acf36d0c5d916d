"""A clean stop of the pipeline on Ctrl-C (SIGINT) or SIGTERM.

Left to itself, Snakemake 9 stops badly. Its local executor runs each job of a ``run:`` rule in a
Snakemake subprocess (``/bin/sh -c 'python -m snakemake --target-jobs ...'``), which runs our
``python -m asynctm...`` process (workflow/rules/common.smk: ``package_cli``). On SIGTERM Snakemake waits
for the running jobs to finish (hours for a pyTsetlinMachine run); on SIGINT it cancels its thread pool,
which also waits for them unless the terminal happened to deliver the SIGINT to the whole process group,
and even then a pyTsetlinMachine epoch busy in C ignored it for minutes.

:func:`install_signal_handlers` (the workflow's ``onstart``, which runs in the main Snakemake process after
Snakemake has installed its own SIGTERM handler) makes both signals do the same thing: send SIGTERM to every
process below this one (the job shells, Snakemake subprocesses and our runs), kill those still alive
:data:`GRACE_S` seconds later, and interrupt Snakemake as Ctrl-C does, so that it marks the jobs failed,
removes their outputs and incomplete markers and releases its lock. A run writes its record last and
atomically, so an interrupted run leaves none (asynctm.baselines.pytm.interruptible keeps pyTsetlinMachine's
C epochs from delaying the signal).
"""

from __future__ import annotations

import os
import signal
import sys
import threading

GRACE_S = 5.0  # seconds the processes get between SIGTERM and SIGKILL

_stopping = threading.Event()


def descendants(pid: int) -> list[int]:
    """The process ids below ``pid`` (children first), read from /proc; empty where there is no /proc."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
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
        raise KeyboardInterrupt  # Snakemake's own Ctrl-C path: cancel, clean up, unlock


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM stop every job process, then interrupt Snakemake (call from the main thread, in
    the workflow's ``onstart``)."""
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
