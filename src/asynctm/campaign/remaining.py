"""``remaining``: the tm_gpu runs of the campaign's training steps that have no record yet, and the device time
they should take, so that a lease (or a cluster allocation) can be planned before it comes.

    python -m asynctm.campaign remaining [--gpu NAME] [--threads-per-clause K] [--config KEY=VALUE ...]

Each missing run is estimated as the steps estimate it (:func:`~.steps.estimate_s`): from a record of the same
experiment, clauses and threads per clause, else from the GPU benchmark on the named GPU (default: the GPU of
the newest benchmark record here). Runs neither can estimate are counted apart, never guessed.
"""

from __future__ import annotations

import json
import math
import types
from pathlib import Path

from ..experiments import plan
from ..provenance import REPO
from . import DEVICE_CALLS

# Seconds of training a lease gives the sweeps and paper steps together: the device call that runs them.
TRAINING_S_PER_LEASE = sum(seconds for seconds, steps in DEVICE_CALLS if {"sweeps", "paper"} & {s for s, _ in steps})


def newest_bench_gpu(tree: Path) -> str | None:
    """The GPU of the newest GPU benchmark record in ``tree`` (by its date, then name)."""
    found = []
    for path in (tree / "benchmarks/results").glob("gpu_*.json"):
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        name = (rec.get("gpu") or {}).get("name")
        if name and isinstance(rec.get("settings"), list):
            found.append((rec.get("date_utc") or "", path.name, name))
    return max(found)[2] if found else None


def remaining(config: dict, tree: Path = REPO, gpu: str | None = None, threads: int | None = None) -> dict:
    """``{"gpu", "threads", "steps": {step: [row per experiment]}, "total_s", "unknown"}``; a row is
    ``{"experiment", "missing", "estimated", "seconds", "unknown", "first"}`` (``first``: the first missing run)."""
    from .steps import estimate_s, paper_runs, sweep_runs

    tree = Path(tree)
    gpu = gpu or newest_bench_gpu(tree)
    if threads is not None:
        config = {**config, "gpu_threads_per_clause": threads}
    # what the steps' estimates read: the checkout's records and benchmarks alone. The work folder, and the
    # sibling folders where a GPU machine's steps leave their results, lie in a folder that does not exist.
    ctx = types.SimpleNamespace(work=tree / ".campaign-remaining-none" / "remaining", tree=tree, config=config,
                                gpu={"name": gpu} if gpu else None, threads={}, campaign={"source": {}})
    out = {"gpu": gpu, "threads": plan.gpu_threads_per_clause(config), "steps": {}, "total_s": 0.0, "unknown": 0}
    for step, runs in (("sweeps", sweep_runs(config)), ("paper", paper_runs(config))):
        rows: dict[str, dict] = {}
        for name, params, seed in runs:
            rel = plan.record_path(config, {"experiment": name, "impl": "tm_gpu", "params": params, "seed": seed})
            if (tree / rel).is_file():
                continue
            row = rows.setdefault(name, {"experiment": name, "missing": 0, "estimated": 0, "seconds": 0.0,
                                         "unknown": 0, "first": rel})
            row["missing"] += 1
            need = estimate_s(ctx, name, params)
            if need is None:
                row["unknown"] += 1
            else:
                row["estimated"] += 1
                row["seconds"] += need
        out["steps"][step] = list(rows.values())
        out["total_s"] += sum(r["seconds"] for r in rows.values())
        out["unknown"] += sum(r["unknown"] for r in rows.values())
    return out


def render(report: dict) -> str:
    k = report["threads"]
    lines = [f"Missing tm_gpu runs of the campaign's training steps, {k} thread{'s' if k > 1 else ''} per clause; "
             f"estimates from records of equal clauses and threads, else the GPU benchmark on "
             f"{report['gpu'] or '(no GPU benchmark here)'}.", ""]
    for step, rows in report["steps"].items():
        if not rows:
            lines += [f"{step}: every run is recorded.", ""]
            continue
        lines += [f"{step}:", "", "| experiment | missing runs | estimated | device hours (estimated runs) | "
                  "runs without an estimate |", "|---|---:|---:|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['experiment']} | {r['missing']} | {r['estimated']} | {r['seconds'] / 3600:.2f} | "
                         f"{r['unknown']} |")
        lines.append("")
    total, unknown = report["total_s"], report["unknown"]
    if total or unknown:
        leases = math.ceil(total / TRAINING_S_PER_LEASE)
        parts = [f"Estimated: {total / 3600:.2f} device hours, about {leases} lease{'' if leases == 1 else 's'} at "
                 f"{TRAINING_S_PER_LEASE} s of training each"] if total else []
        if unknown:
            parts.append(f"{unknown} run{'' if unknown == 1 else 's'} without an estimate (no record of their clauses "
                         "and threads, no benchmark of their setting)")
        lines.append("; ".join(parts) + ".")
    else:
        lines.append("Nothing is missing.")
    return "\n".join(lines) + "\n"
