"""The device calls of a lease: which steps, with what budgets and flags (``python -m asynctm.campaign commands``
prints them; ``remaining`` counts leases by them).

A lease runs :data:`~asynctm.campaign.DEVICE_CALLS` (the GPU tests and the benchmark, then training) until the code
it runs (the kernels and backends, file for file: :func:`asynctm.provenance.code_digests`) has passed the GPU tests
and been benchmarked with both builds at an earlier lease, whose results are unpacked in the checkout; from then on
:data:`~asynctm.campaign.TRAINING_CALLS` (both calls train).
"""

from __future__ import annotations

from pathlib import Path

from ..provenance import REPO
from . import DEVICE_CALLS, STEP_OPTIONS, TRAINING_CALLS
from .choice import checkout_view, failed_gpu_tests, gpu_tests_verdict, warp_evidence

DEVICE_COMMAND_LIMIT_S = 600  # the device tool runs one command for at most this long


def device_command(seconds: int, calls, commit: str | None, dirty: int | None, later: dict | None = None) -> str:
    """One device call: its steps, sharing its end; ``later``: per step, seconds it gets in the next call."""
    env = f" ASYNCTM_SOURCE_COMMIT={commit} ASYNCTM_SOURCE_DIRTY={dirty}" if commit else ""
    later = later or {}
    return f"export PYTHONPATH=src{env}; END=$(( $(date +%s) + {seconds} )); " + "; ".join(
        f"python3 -m asynctm.campaign step {step}" + (f" --budget {budget}" if budget else "") + " --until $END"
        + (f" --later {later[step]}" if later.get(step) else "")
        + (f" {STEP_OPTIONS[step]}" if step in STEP_OPTIONS else "") for step, budget in calls)


def call_commands(calls_of_lease, commit: str | None = None, dirty: int | None = None) -> list[tuple[int, str]]:
    """``(timeout_s, command)`` of each device call of a lease. A step that opens the next call too gets
    ``--later`` with that call's seconds: it may start runs that continue there."""
    out = []
    for i, (seconds, calls) in enumerate(calls_of_lease):
        nxt = calls_of_lease[i + 1] if i + 1 < len(calls_of_lease) else None
        later = {nxt[1][0][0]: nxt[0]} if nxt else {}
        # the last step's children are killed at the call's end; then packing, and a margin (steps that start
        # after the end stop at once: a few seconds each)
        out.append((min(seconds + 30 * len(calls), DEVICE_COMMAND_LIMIT_S),
                    device_command(seconds, calls, commit, dirty, later)))
    return out


def lease_calls(tree: Path = REPO) -> tuple[tuple, str]:
    """The lease's device calls and why: :data:`TRAINING_CALLS` where this code (its kernels and backends, file for
    file: :func:`asynctm.provenance.code_digests`) passed the GPU tests and was benchmarked with both builds, in the
    results unpacked into ``tree``, as the training steps' choice of threads per clause reads them (:mod:`.choice`);
    else :data:`DEVICE_CALLS`."""
    from ..provenance import code_digests

    view = checkout_view(tree, code=code_digests())
    verdict = gpu_tests_verdict(view)
    settings = sorted(warp_evidence(view)) if verdict is True else []
    if settings:
        missed = failed_gpu_tests(view, sound=True)
        return TRAINING_CALLS, (f"this code (kernels and backends) passed the GPU tests and was benchmarked with "
                                f"both builds (on {', '.join(settings)}): both calls train"
                                + (f" (learning bars missed: {', '.join(missed)})" if missed else ""))
    why = ("this code (kernels and backends) has no GPU tests that passed and benchmark of both builds here yet: the "
           "first call runs them")
    if verdict is False:
        failed = failed_gpu_tests(view, sound=False)
        why += (" (an earlier lease's GPU tests of this code did not pass: " +
                (", ".join(failed) if failed else "see benchmarks/results/campaign/gpu_tests_*.txt") + ")")
    return DEVICE_CALLS, why
