"""The GPU benchmark's comparisons over every benchmark record of one GPU and one code, seeds pooled.

A lease's benchmark step measures 3 seeds where PyTsetlinMachineCUDA is quick (WSD apple, Bike Sharing) but one
where it takes about a minute an epoch (SemEval, IMDb); the goals ask for the mean of 3. The ``goal_seeds`` step
of later leases adds the missing seeds of the goal settings, one (setting, seed) per benchmark process, each into
its own record. Here the per-seed rows of every record of the same GPU and the same code (the kernels and
backends, file for file: :func:`asynctm.provenance.code_digests`) are pooled, each seed once (from the newest
record that has it), and compared as one benchmark run would (:func:`asynctm.campaign.bench.aggregate` and
``compare``): ``benchmarks/results/goals_<gpu>_<code>.{json,md}``, rebuilt by ``unpack`` and by

    python -m asynctm.campaign goals
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from pathlib import Path

from ..io import atomic_open, write_json_atomic
from . import bench
from .choice import OTHER_GPU_FACTOR, bench_files, bench_started

# A benchmark process's seconds beyond its implementations' epochs: a Python process, PyCUDA's context, loading
# the dataset and making its dense copy for PyTsetlinMachineCUDA.
SEED_OVERHEAD_S = 30.0
SEED_MARGIN = 1.2


def slug(text: str) -> str:
    """``text`` (a GPU's name) as part of a file name: lower case, each run of other characters one underscore."""
    return re.sub(r"[^a-z0-9]+", "_", (text or "unknown").lower()).strip("_") or "unknown"


def code_key(code: dict | None) -> str:
    """A short name for a set of code digests (the same kernels and backends give the same key)."""
    if not code:
        return "unknown"
    return hashlib.sha256(json.dumps(code, sort_keys=True).encode()).hexdigest()[:10]


def _newest_first(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: (bench_started(r), r.get("name") or ""), reverse=True)


def merge(records: list[dict]) -> list[dict]:
    """Per setting (and hyperparameters): every implementation's per-seed rows of ``records``, each seed once
    (the newest record's), aggregated and compared as one benchmark run would; settings in the benchmark's order."""
    merged: dict[tuple[str, str], dict] = {}
    for rec in _newest_first(records):
        for s in rec["settings"]:
            if not s.get("results"):
                continue
            key = (s["setting"], json.dumps(s.get("hyperparameters"), sort_keys=True))
            m = merged.setdefault(key, {k: s.get(k) for k in ("setting", "task", "metric", "dataset",
                                                               "hyperparameters", "epochs")}
                                  | {"rows": {}, "skipped": {}, "sources": []})
            for impl, r in s["results"].items():
                for row in r.get("per_seed") or []:
                    m["rows"].setdefault(impl, {}).setdefault(row["seed"], row)
            for impl, why in (s.get("skipped") or {}).items():
                m["skipped"].setdefault(impl, why)
            m["sources"].append(rec.get("name"))
    order = list(bench.TIMED_EPOCHS)
    out = []
    for (name, _), m in sorted(merged.items(), key=lambda kv: (order.index(kv[0][0]) if kv[0][0] in order
                                                               else len(order), kv[0])):
        rows = m.pop("rows")
        results = {impl: bench.aggregate([by_seed[k] for k in sorted(by_seed)], m["metric"])
                   for impl, by_seed in rows.items()}
        seeds = sorted({k for by_seed in rows.values() for k in by_seed})
        out.append({**m, "seeds": seeds, "stopped": None, "results": results,
                    "skipped": {i: why for i, why in m["skipped"].items() if i not in results},
                    "sources": sorted(set(m["sources"])),
                    "comparison": bench.compare(name, m["task"], m["metric"], results)})
    return out


def seeds_done(folders, gpu: str, code: dict | None) -> dict[str, set[int]]:
    """Per setting, the seeds benchmarked on ``gpu`` with ``code``: our one-thread build timed, and
    PyTsetlinMachineCUDA timed beside it (or failed there: measuring that seed again would not help)."""
    out: dict[str, set[int]] = {}
    for rec in bench_files(folders):
        if (rec.get("gpu") or {}).get("name") != gpu or not code or rec.get("code") != code:
            continue
        for s in rec["settings"]:
            res = s.get("results") or {}
            ours = {row["seed"] for row in (res.get("tm_gpu") or {}).get("per_seed") or [] if row.get("epoch_s")}
            peer = {row["seed"] for row in (res.get("pytm_cuda") or {}).get("per_seed") or [] if row.get("epoch_s")}
            failed = "pytm_cuda" in (s.get("skipped") or {})
            out.setdefault(s["setting"], set()).update(ours if failed else ours & peer)
    return out


def seed_cost_s(folders, setting: str, gpu: str) -> float | None:
    """Seconds one more seed of ``setting`` should take in a benchmark process on ``gpu``: per earlier seed, every
    implementation's preparation, warm-up, timed epochs and evaluations, added up (median over seeds), plus a
    process's overhead, times a margin; from another GPU's records (where this one has none) times
    :data:`~.choice.OTHER_GPU_FACTOR`. None where no record has the setting."""
    for same in (True, False):
        totals = {}
        for rec in bench_files(folders):
            if ((rec.get("gpu") or {}).get("name") == gpu) != same:
                continue
            for s in rec["settings"]:
                if s.get("setting") != setting:
                    continue
                for r in (s.get("results") or {}).values():
                    for row in r.get("per_seed") or []:
                        cost = (row.get("prepare_s", 0.0) + row.get("warmup_s", 0.0) + sum(row.get("epoch_s", []))
                                + sum(row.get("eval_s", [])))
                        key = (rec.get("name"), row["seed"])
                        totals[key] = totals.get(key, 0.0) + cost
        if totals:
            return (1.0 if same else OTHER_GPU_FACTOR) * SEED_MARGIN * (SEED_OVERHEAD_S
                                                                        + statistics.median(totals.values()))
    return None


def summaries(tree: Path) -> dict[str, tuple[dict, str]]:
    """``{name: (record, markdown)}`` of ``goals_<gpu>_<code>``, one per GPU and code with benchmark records in
    ``tree``'s ``benchmarks/results``."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for rec in bench_files([Path(tree) / "benchmarks/results"]):
        groups.setdefault(((rec.get("gpu") or {}).get("name") or "unknown", code_key(rec.get("code"))), []).append(rec)
    out = {}
    for (gpu, key), records in sorted(groups.items()):
        newest = _newest_first(records)[0]
        name = f"goals_{slug(gpu)}_{key}"
        commits = sorted({(r.get("git") or {}).get("commit") or "?" for r in records})
        rec = {"generated_by": "python -m asynctm.campaign goals", "name": name, "gpu": newest.get("gpu"),
               "code_key": key, "code": newest.get("code"), "date_utc": newest.get("date_utc"),
               "git": newest.get("git") or {}, "commits": commits,
               "records": sorted(r.get("name") for r in records), "settings": merge(records)}
        text = bench.markdown(rec).replace(
            "\n- median over all seeds",
            f"\n- pooled from {len(records)} benchmark record(s) of this GPU and this code (kernels and backends "
            f"`{key}`), each seed once: {', '.join('`' + r + '`' for r in rec['records'])}"
            "\n- median over all seeds", 1)
        out[name] = (rec, text)
    return out


def write(tree: Path, say=print) -> list[Path]:
    """Write :func:`summaries` to ``benchmarks/results/goals_<gpu>_<code>.{json,md}``; the paths written."""
    folder = Path(tree) / "benchmarks/results"
    written = []
    for name, (rec, text) in summaries(tree).items():
        write_json_atomic(folder / f"{name}.json", rec, sort_keys=False)
        with atomic_open(folder / f"{name}.md") as fh:
            fh.write(text)
        written += [folder / f"{name}.json", folder / f"{name}.md"]
    say(f"wrote {len(written) // 2} goal summar{'y' if len(written) == 2 else 'ies'} under {folder}")
    return written
