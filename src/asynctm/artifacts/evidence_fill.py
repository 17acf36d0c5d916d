"""Evidence for the paper's "for sufficiently large clause numbers, computation time increases approximately
proportionally" (claim C4): how many GPU threads each of our GPU builds launches at each point of a clause sweep,
and where its time starts to grow with the clauses. An evidence record as :mod:`asynctm.artifacts.evidence`
(schema, kind, name, question, provenance; rendered by its ``render`` command), of kind ``gpu_fill``.

A training launch of our GPU builds runs one group of ``threads_per_clause`` threads for every clause of every class
(kernels/README.md), so it launches ``classes x clauses x threads_per_clause`` threads: the paper's design (tm_gpu)
one per clause, the warp build 32. While those threads leave the GPU's multiprocessors idle, more clauses add
threads that run beside the others and the epoch's time stays flat; once they fill it, more clauses queue and the
time grows with them. Per experiment, build and host (run records of one ``host_id``, as the claims pair them) the
record lists every sweep point's threads and steady per-epoch time (epoch 1 left out, as everywhere), the log-log
slope of each segment between neighbouring points, and the **onset**: the threads launched at the start of the
first segment whose slope reaches ``--proportional`` (default: the lower end of C4's "reproduced" range in
config/config.yaml). Where a measured limits record of the same GPU model is given (benchmarks/gpu_limits.py), each
point's threads are also shown as a share of the threads the GPU keeps resident.

    python -m asynctm.artifacts.evidence_fill --results results --data-dir data \\
        --limits benchmarks/results/host_limits_nvidia_h200_3dcd6188abeee810.json \\
        --out results/evidence/gpu_fill.json [--experiments semeval imdb] [--epochs 5]

Run records are read through the record store's gate; bad input stops with one line and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ..datasets import class_count
from ..experiments.plan import GPU_THREADS_PER_CLAUSE
from ..experiments.plan import experiment as plan_experiment
from ..store.frame import host_identity, steady_epoch_time
from ..store.gate import read_records
from ..store.layout import RecordError
from .evidence_common import HEADER, SCHEMA, EvidenceError, _sig, check_out, read_json_object, write_record
from .evidence_common import provenance as _provenance
from .render import dataset_label

NAME = "gpu_fill"
GPU_BUILDS = tuple(GPU_THREADS_PER_CLAUSE)
QUESTION = ("Where does the time of each of our GPU builds start to grow with the clauses, and how many GPU threads "
            "does each launch there? (The paper: time grows about proportionally for sufficiently large clause "
            "numbers.)")


def _slope(a: dict, b: dict) -> float:
    return math.log(b["s_per_epoch"] / a["s_per_epoch"]) / math.log(b["clauses"] / a["clauses"])


def sweep_groups(results: Path, experiments, epochs: int, classes: dict, resident: dict, proportional: float):
    """Per experiment, GPU build and host: the sweep's points (one per clause count: the mean over its seeds of the
    steady per-epoch time), each segment's log-log slope and the onset of proportional growth."""
    groups: dict = {}
    for path, rec in read_records(results, experiments=list(experiments)):
        hp = rec["hyperparameters"]
        if rec["impl"] not in GPU_BUILDS or int(hp["epochs"]) != epochs or rec.get("status", "complete") != "complete":
            continue
        key, label, _ = host_identity(rec["provenance"])
        gpu = (rec["provenance"].get("gpu") or {}).get("name", "")
        tpc = GPU_THREADS_PER_CLAUSE[rec["impl"]]  # the gate refuses a record whose own count differs
        g = groups.setdefault((rec["experiment"], rec["impl"], key), {
            "experiment": rec["experiment"], "impl": rec["impl"], "host": label, "gpu": gpu,
            "threads_per_clause": tpc, "points": {}})
        times = [float(e["train_s"]) for e in rec["epochs"]]
        g["points"].setdefault(int(hp["n_clauses"]), []).append((steady_epoch_time(times), path.as_posix()))
    out = []
    for (experiment, impl, _), g in sorted(groups.items()):
        if len(g["points"]) < 2:
            continue
        k = classes[experiment]
        cap = resident.get(g["gpu"])
        points = []
        for n, runs in sorted(g["points"].items()):
            threads = k * n * g["threads_per_clause"]
            points.append({"clauses": n, "threads": threads, "s_per_epoch": math.fsum(t for t, _ in runs) / len(runs),
                           "seeds": len(runs), "records": sorted(p for _, p in runs),
                           "resident_share": None if cap is None else threads / cap})
        segments = [{"from": a["clauses"], "to": b["clauses"], "slope": _slope(a, b)}
                    for a, b in zip(points, points[1:], strict=False)]
        onset = next((points[i] for i, s in enumerate(segments) if s["slope"] >= proportional), None)
        out.append({"experiment": experiment, "impl": impl, "host": g["host"], "gpu": g["gpu"], "classes": k,
                    "threads_per_clause": g["threads_per_clause"], "resident_threads": cap, "points": points,
                    "segments": segments,
                    "onset": None if onset is None else {"clauses": onset["clauses"], "threads": onset["threads"]},
                    "max_threads": points[-1]["threads"]})
    return out


def build(results: Path, data_dir: Path, config_path: Path, limits: list[Path], experiments, epochs: int,
          proportional: float | None) -> dict:
    from ..config_check import load_config

    config = load_config(config_path)
    if proportional is None:
        proportional = float(config["claims"]["proportional"]["slope"][0])
    resident = {}
    for p in limits:
        lim = read_json_object(p, "GPU limits record (benchmarks/gpu_limits.py)")
        try:
            att = lim["gpu"]["attributes"]
            resident[lim["gpu"]["name"]] = int(att["multiprocessors"]) * int(att["max_threads_per_multiprocessor"])
        except (KeyError, TypeError, ValueError):
            raise EvidenceError(f"{p}: gpu.attributes.multiprocessors / max_threads_per_multiprocessor missing; "
                                "this is not a benchmarks/gpu_limits.py record") from None
    try:
        classes = {e: class_count(data_dir, plan_experiment(config, e))[0] for e in experiments}
        groups = sweep_groups(results, experiments, epochs, classes, resident, proportional)
    except (RecordError, ValueError) as exc:
        raise EvidenceError(str(exc)) from None
    if not groups:
        raise EvidenceError(f"{results}: no GPU sweep of {', '.join(experiments)} with two or more {epochs}-epoch "
                            "points on one host; run the sweeps first (snakemake sweep_<experiment>)")
    return {"schema": SCHEMA, "kind": "gpu_fill", "name": NAME, "question": QUESTION,
            "rule": {"proportional_slope": proportional, "sweep_epochs": epochs,
                     "threads": "classes x clauses x threads_per_clause (one launch of the training kernel)",
                     "time": "steady per-epoch training time (epoch 1 left out), mean over seeds"},
            "groups": groups,
            "provenance": _provenance("GPU threads launched and per-epoch time along the clause sweeps",
                                      code=[Path(__file__)], program="asynctm.artifacts.evidence_fill"),
            "sources": {"results": results.as_posix(), "limits": [p.as_posix() for p in limits]}}


def render_gpu_fill(ev: dict, source: str) -> str:
    rule = ev["rule"]
    md = [HEADER.format(source=source), "", f"#### Evidence (C4): {ev['question']}", "",
          f"Threads: {rule['threads']}. Time: {rule['time']}; {rule['sweep_epochs']}-epoch sweep runs, one host per "
          "line. Slope: log-log slope of the time on the clauses from the row's point to the next. Onset: the "
          f"first point from which the slope reaches {rule['proportional_slope']:g} (the lower end of C4's "
          "'reproduced' range). Resident share: the threads over the threads the GPU keeps resident "
          "(multiprocessors x threads per multiprocessor, from a measured limits record of that GPU model; – where "
          "none is on record).", ""]
    for g in ev["groups"]:
        label = dataset_label(g["experiment"])
        onset = g["onset"]
        end = (f"onset at {onset['clauses']:,} clauses ({onset['threads']:,} threads)" if onset else
               f"no onset up to {g['points'][-1]['clauses']:,} clauses ({g['max_threads']:,} threads)")
        md += [f"**{label}, {g['impl']}** ({g['threads_per_clause']} thread(s) per clause, {g['classes']} classes; "
               f"{g['gpu']}, {g['host']}): {end}.", "",
               "| clauses | threads | resident share | s/epoch | slope to next |", "|---:|---:|---:|---:|---:|"]
        for i, p in enumerate(g["points"]):
            share = "–" if p["resident_share"] is None else f"{100 * p['resident_share']:.1f} %"
            slope = f"{g['segments'][i]['slope']:.2f}" if i < len(g["segments"]) else ""
            md.append(f"| {p['clauses']:,} | {p['threads']:,} | {share} | {_sig(p['s_per_epoch'])} | {slope} |")
        md.append("")
    return "\n".join(md)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctm.artifacts.evidence_fill", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help=f"the evidence record, named {NAME}.json")
    ap.add_argument("--results", default="results")
    ap.add_argument("--data-dir", default="data", help="processed datasets (for the number of classes)")
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--limits", action="append", default=[], help="a benchmarks/gpu_limits.py record (repeatable)")
    ap.add_argument("--experiments", nargs="+", default=["semeval", "imdb"])
    ap.add_argument("--epochs", type=int, default=5, help="the sweep runs' epochs (config sweeps)")
    ap.add_argument("--proportional", type=float, default=None,
                    help="the slope that counts as proportional growth (default: C4's threshold in the config)")
    args = ap.parse_args(argv)
    try:
        check_out(args.out, NAME)
        ev = build(Path(args.results), Path(args.data_dir), Path(args.config), [Path(p) for p in args.limits],
                   args.experiments, args.epochs, args.proportional)
    except (EvidenceError, ValueError, OSError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write_record(args.out, ev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
