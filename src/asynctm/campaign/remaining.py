"""``remaining``: the GPU runs of the campaign's training steps (the sweeps, the paper runs and the tally
ablation's) that have no record yet (each in the build its step would run: tm_gpu with one thread per clause,
tm_gpu_warp with a warp), and the device time they should take, so that a lease (or a cluster
allocation) can be planned before it comes. An ablation run is estimated as a run of its setting: a synchronous
tally's two launches per example are not in that estimate.

    python -m asynctm.campaign remaining [--gpu NAME] [--threads-per-clause K|auto] [--config KEY=VALUE ...]

With ``auto`` (the command's default) the sweeps and paper runs are estimated at the threads per clause their
steps would choose from the GPU tests, benchmarks and records here (:func:`~.choice.choose_threads`); with a
number, at that many; the ablation's runs always at their variant's (one thread, or a warp for a ``_warp``
variant). Each missing run is estimated as the steps estimate it (:func:`~.steps.estimate_s`): from a record of
the same experiment, clauses and threads per clause, else from the GPU benchmark on the named GPU (default: the
GPU of the newest benchmark record here). Runs neither can estimate are counted apart, never guessed; so are runs
longer than a lease can give one run.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..experiments import plan
from ..provenance import REPO
from . import DEVICE_CALLS, TRAINING_CALLS
from .choice import KEEP_RECORDED, bench_files, bench_manifest_starts, bench_started, checkout_view, choose_threads


def _training_s(calls) -> int:
    return sum(seconds for seconds, steps in calls if {"sweeps", "paper"} & {s for s, _ in steps})


# Seconds of training a lease gives the sweeps and paper steps together: both calls where the code has passed the GPU
# tests and been benchmarked, else the second call.
TRAINING_S_PER_LEASE = _training_s(TRAINING_CALLS)
FIRST_LEASE_TRAINING_S = _training_s(DEVICE_CALLS)
# The longest paper run a lease can finish: it may pause at the first call's end and resume in the second (each
# call spends some 30 s on installing and packing).
LONGEST_RUN_S = sum(seconds - 30 for seconds, steps in TRAINING_CALLS if "paper" in {s for s, _ in steps})


def newest_bench_gpu(tree: Path) -> str | None:
    """The GPU of the newest GPU benchmark record in ``tree`` (by when it was made: :func:`.choice.bench_started`,
    then name)."""
    starts = bench_manifest_starts(tree / "benchmarks/results/campaign")
    found = [(bench_started(rec, starts), rec.get("name") or "", rec["gpu"]["name"])
             for rec in bench_files([tree / "benchmarks/results"]) if (rec.get("gpu") or {}).get("name")]
    return max(found)[2] if found else None


def remaining(config: dict, tree: Path = REPO, gpu: str | None = None, threads: int | str | None = None) -> dict:
    """``{"gpu", "threads", "chosen", "steps": {step: [row per experiment]}, "total_s", "unknown", "next_lease"}``;
    a row is ``{"experiment", "missing", "estimated", "seconds", "unknown", "first"}`` (``first``: the first missing
    run); ``threads``: None (one, tm_gpu), a number (1: tm_gpu, 32: tm_gpu_warp), or ``auto`` (``chosen``:
    ``{step: {experiment: threads}}``)."""
    from ..provenance import code_digests
    from .steps import ablation_runs, estimate_s, paper_runs, record_path, run_fields, run_impl, run_threads, sweep_runs

    tree = Path(tree)
    gpu = gpu or newest_bench_gpu(tree)
    auto = threads == "auto"
    default = 1 if threads is None or auto else int(threads)
    plan.gpu_impl(default)  # a number of threads per clause that no build runs: a clear error here
    # what the steps' estimates read: the checkout's records and benchmarks alone (checkout_view)
    from .lease import lease_calls

    code = code_digests() if auto else None  # the code the GPU tests and benchmarks here must be of
    out = {"gpu": gpu, "threads": "auto" if auto else default, "chosen": {},
           "steps": {}, "total_s": 0.0, "unknown": 0, "next_lease": lease_calls(tree)[1]}
    for step, runs in (("sweeps", sweep_runs(config)), ("paper", paper_runs(config)),
                       ("ablation", ablation_runs(config))):
        ctx = checkout_view(tree, step, config, gpu, code=code)
        ctx.default_threads = default
        if auto and step in KEEP_RECORDED:  # as the step would choose (an ablation run: its variant's threads)
            names = list(dict.fromkeys(run[0] for run in runs))
            ctx.threads = {n: c["threads"] for n, c in choose_threads(ctx, names, KEEP_RECORDED[step]).items()}
            out["chosen"][step] = ctx.threads
        rows: dict[str, dict] = {}
        for run in runs:
            name, params, _, variant = run_fields(run)
            threads = run_threads(ctx, name, variant)
            rel = record_path(config, run, run_impl(threads, variant))
            if (tree / rel).is_file():
                continue
            row = rows.setdefault(name, {"experiment": name, "missing": 0, "estimated": 0, "seconds": 0.0,
                                         "unknown": 0, "too_long": 0, "first": rel})
            row["missing"] += 1
            need = estimate_s(ctx, name, params, threads)
            if need is None:
                row["unknown"] += 1
            else:
                row["estimated"] += 1
                row["seconds"] += need
                row["too_long"] += need > LONGEST_RUN_S
        out["steps"][step] = list(rows.values())
        out["total_s"] += sum(r["seconds"] for r in rows.values())
        out["unknown"] += sum(r["unknown"] for r in rows.values())
    return out


def render(report: dict) -> str:
    k = report["threads"]
    if k == "auto":
        per_step = "; ".join(f"{step}: " + ", ".join(f"{n} {t}" for n, t in chosen.items())
                             for step, chosen in report["chosen"].items() if chosen)
        threads = f"threads per clause as the steps would choose them ({per_step}; the ablation: each variant's)"
    else:
        threads = f"{k} thread{'s' if k > 1 else ''} per clause ({plan.gpu_impl(k)})"
    lines = [f"Missing GPU runs of the campaign's training steps, {threads}; "
             f"estimates from records of equal clauses and build, else the GPU benchmark on "
             f"{report['gpu'] or '(no GPU benchmark here)'}.", ""]
    for step, rows in report["steps"].items():
        if not rows:
            lines += [f"{step}: every run is recorded.", ""]
            continue
        lines += [f"{step}:", "", "| experiment | missing runs | estimated | device hours (estimated runs) | "
                  f"longer than a lease can give one run ({LONGEST_RUN_S} s) | runs without an estimate |",
                  "|---|---:|---:|---:|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['experiment']} | {r['missing']} | {r['estimated']} | {r['seconds'] / 3600:.2f} | "
                         f"{r['too_long']} | {r['unknown']} |")
        lines.append("")
    total, unknown = report["total_s"], report["unknown"]
    if total or unknown:
        leases = math.ceil(total / TRAINING_S_PER_LEASE)
        parts = [f"Estimated: {total / 3600:.2f} device hours, about {leases} lease{'' if leases == 1 else 's'} at "
                 f"{TRAINING_S_PER_LEASE} s of training each (the first lease of code not yet tested on a GPU: "
                 f"{FIRST_LEASE_TRAINING_S} s)"] if total else []
        too_long = sum(r["too_long"] for rows in report["steps"].values() for r in rows)
        if too_long:
            parts.append(f"{too_long} of them longer than the {LONGEST_RUN_S} s a lease can give one run (no lease "
                         "finishes them)")
        if unknown:
            parts.append(f"{unknown} run{'' if unknown == 1 else 's'} without an estimate (no record of their clauses "
                         "and threads, no benchmark of their setting)")
        lines.append("; ".join(parts) + ".")
    else:
        lines.append("Nothing is missing.")
    if report.get("next_lease"):
        lines += ["", f"The next lease's calls: {report['next_lease']} (python -m asynctm.campaign commands)."]
    return "\n".join(lines) + "\n"
