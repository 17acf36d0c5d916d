#!/usr/bin/env python
"""The verdicts and the Markdown of CPU benchmark records: speed-ups, the speed goals at equal accuracy, and
the tables (``benchmarks/results/<name>.md``), from the JSON that ``benchmarks/bench_tm.py`` writes.

    python benchmarks/report.py benchmarks/results/cpu_all_be4f755.json      # (re)writes cpu_all_be4f755.md
    python benchmarks/report.py --check benchmarks/results/*.json            # does every .md match its JSON?

``bench_tm.py`` runs and measures; everything that judges or shows the measurements is here, so a table is
rebuilt from its record without training anything. The comparison (:func:`compare`) is stored in the record
when it is written, so a record renders as it read when it was made. GPU benchmark records
(``benchmarks/bench_gpu.py``) render with that script's own table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# Equal accuracy (the speed goals' rule): within 1 point, or the MAE within 2 %, after the same epochs, mean over seeds.
ACCURACY_TOLERANCE_POINTS = 1.0
MAE_TOLERANCE_RELATIVE = 0.02
CPU_GENERATOR = "benchmarks/bench_tm.py"
# the GPU benchmark's, and the names it had in the records made before it moved to benchmarks/
GPU_GENERATORS = ("benchmarks/bench_gpu.py", "python -m gpu_host.bench", "python -m asynctm.campaign.bench")


# --- comparison -------------------------------------------------------------------------------------------

def metric_ok(task: str, ours: float | None, peer: float | None) -> bool | None:
    """Equal accuracy in the speed goals' sense, or better: accuracy at most 1 point below the peer's, or an MAE at
    most 2 % above it."""
    if ours is None or peer is None:
        return None
    if task == "classification":
        return ours >= peer - ACCURACY_TOLERANCE_POINTS
    return ours <= peer * (1.0 + MAE_TOLERANCE_RELATIVE)


def metric_within(task: str, ours: float | None, peer: float | None) -> bool | None:
    """Equal within the tolerance on both sides (neither better nor worse by more than it)."""
    if ours is None or peer is None:
        return None
    if task == "classification":
        return abs(ours - peer) <= ACCURACY_TOLERANCE_POINTS
    return abs(ours - peer) <= MAE_TOLERANCE_RELATIVE * abs(peer)


def _ours_cpu(results: list[dict]) -> list[dict]:
    return sorted((r for r in results if r["peer"] == "asynctm" and r["options"].get("backend") == "cpu"
                   and "median_epoch_s" in r), key=lambda r: r["options"].get("n_threads") or 0)


def goal_check(task: str, results: list[dict], goal: dict | None) -> dict | None:
    """The CPU speed goal for a setting: ours on all cores (the most threads run) at least ``min_speedup`` times
    faster per median epoch than ``peer``, at equal accuracy (:func:`metric_ok`). Every CPU row of ours is
    also checked (``by_implementation``); ``met`` is the all-cores row's verdict."""
    if not goal:
        return None
    out = {"peer": goal["peer"], "min_speedup": goal["min_speedup"],
           "rule": ("median epoch of ours on all cores vs the peer; accuracy at most "
                    f"{ACCURACY_TOLERANCE_POINTS:g} point below the peer's" if task == "classification" else
                    f"median epoch of ours on all cores vs the peer; MAE at most {MAE_TOLERANCE_RELATIVE:.0%} above "
                    "the peer's") + " (mean over seeds, after the same epochs)"}
    peer = next((r for r in results if r["label"] == goal["peer"] and "median_epoch_s" in r), None)
    ours = _ours_cpu(results)
    if peer is None or not ours:
        out.update(evaluated=False, met=None,
                   reason=f"no timed row for {goal['peer']}" if peer is None else "no timed CPU row of ours")
        return out
    rows = {}
    for r in ours:
        speedup = peer["median_epoch_s"] / r["median_epoch_s"]
        ok = metric_ok(task, r["final_metric"], peer["final_metric"])
        rows[r["label"]] = {"threads": r["options"].get("n_threads"), "speedup": speedup,
                            "speed_met": speedup >= goal["min_speedup"], "metric": r["final_metric"],
                            "metric_ok": ok, "metric_within_tolerance": metric_within(task, r["final_metric"],
                                                                                      peer["final_metric"]),
                            "met": bool(speedup >= goal["min_speedup"] and ok)}
    main = ours[-1]
    out.update(evaluated=True, ours_label=main["label"], peer_median_epoch_s=peer["median_epoch_s"],
               peer_metric=peer["final_metric"], by_implementation=rows, **{
                   k: rows[main["label"]][k] for k in ("speedup", "speed_met", "metric", "metric_ok", "met")})
    return out


def compare(task: str, results: list[dict], goal: dict | None = None) -> dict:
    """Speed-ups against pyTM indexed (or the RTM) by median epoch time, metric differences, and the goal."""
    by = {r["label"]: r for r in results if "median_epoch_s" in r}
    base_label = "pyTM indexed" if task == "classification" else "pyTM RTM (no index)"
    base = by.get(base_label)
    out = {"baseline": base_label, "speedup_vs_baseline": {}, "metric_minus_baseline": {}}
    out["goal"] = goal_check(task, results, goal)
    if base is None:
        return out
    for label, r in by.items():
        out["speedup_vs_baseline"][label] = base["median_epoch_s"] / r["median_epoch_s"]
        out["metric_minus_baseline"][label] = (None if r["final_metric"] is None or base["final_metric"] is None
                                               else r["final_metric"] - base["final_metric"])
    if task == "classification":
        # The first speed round's goals (apple: >= 4x), kept for the records that README.md quotes.
        ours = {r["label"]: r for r in _ours_cpu(results)}
        if ours:
            best = min(ours.values(), key=lambda r: r["median_epoch_s"])
            one = next((r for r in ours.values() if r["options"].get("n_threads") == 1), None)
            diff = (None if best["final_metric"] is None or base["final_metric"] is None
                    else best["final_metric"] - base["final_metric"])
            out["goals"] = {
                "cpu_at_least_4x_vs_pytm_indexed": base["median_epoch_s"] / best["median_epoch_s"] >= 4.0,
                "best_cpu_label": best["label"],
                "accuracy_minus_pytm_indexed": diff,
                "accuracy_within_1_point": None if diff is None else abs(diff) <= 1.0,
                "accuracy_not_more_than_1_point_lower": None if diff is None else diff >= -1.0,
                "single_thread_faster_than_pytm_indexed": (
                    None if one is None else one["median_epoch_s"] < base["median_epoch_s"]),
            }
    return out


# --- output -----------------------------------------------------------------------------------------------

def _fmt(v, spec: str, missing: str = "-") -> str:
    return missing if v is None else format(v, spec)


def print_table(setting: dict) -> None:
    task = setting["task"]
    m = "acc %" if task == "classification" else "MAE"
    cmp_ = setting["comparison"]["speedup_vs_baseline"]
    head = f"{'implementation':<22} {'warm-up s':>9} {'median s/ep':>11} {'min-max s':>15} {'x vs base':>9} " \
           f"{m + ' final':>10} {m + ' last3':>10} {'cpu/wall':>8}"
    seeds = setting.get("seeds", [None])
    print(f"\n{setting['setting']} ({setting['dataset']['n_train']} train, {setting['epochs']['timed']} timed epochs"
          f"{f' x {len(seeds)} seeds, metrics mean over seeds' if len(seeds) > 1 else ''}; "
          f"load avg before {setting['load_average_before'][0]:.2f}, after {setting['load_average_after'][0]:.2f}; "
          f"baseline {setting['comparison']['baseline']})")
    print(head)
    print("-" * len(head))
    for r in setting["results"]:
        if "median_epoch_s" not in r:
            continue
        sp_ = cmp_.get(r["label"])
        print(f"{r['label']:<22} {r['warmup_s']:>9.3f} {r['median_epoch_s']:>11.3f} "
              f"{r['min_epoch_s']:>7.3f}-{r['max_epoch_s']:<7.3f} {(f'{sp_:.2f}' if sp_ else '-'):>9} "
              f"{_fmt(r['final_metric'], '.2f'):>10} {_fmt(r['mean_metric_last3'], '.2f'):>10} "
              f"{r['cpu_per_wall']:>8.2f}")
    for s in setting["skipped"]:
        print(f"{s['label']:<22} skipped: {s['reason']}")
    goal = setting["comparison"].get("goal")
    if goal:
        if goal.get("evaluated"):
            print(f"goal: {goal['ours_label']} >= {goal['min_speedup']:g}x {goal['peer']}: {goal['speedup']:.1f}x "
                  f"({'met' if goal['speed_met'] else 'not met'}); metric {_fmt(goal['metric'], '.2f')} vs "
                  f"{_fmt(goal['peer_metric'], '.2f')} ({'ok' if goal['metric_ok'] else 'NOT equal'}) -> "
                  f"{'MET' if goal['met'] else 'NOT MET'}")
        else:
            print(f"goal: >= {goal['min_speedup']:g}x {goal['peer']}: not evaluated ({goal.get('reason')})")


def _row_name(r: dict) -> str:
    if r["peer"] == "asynctm" and r["options"].get("backend") == "cpu":
        n = r["options"].get("n_threads")
        return f"ours, {n} thread{'s' if n != 1 else ''}"
    if r["peer"] == "asynctm":
        return "ours, CUDA"
    if r["peer"] == "pytm_parallel":
        return "pyTMParallel"
    if r["peer"] == "tmu_cpu":
        return "tmu (CPU)"
    if r["peer"] == "green_tsetlin":
        n = r["options"].get("n_threads")
        return f"green-tsetlin, {n} thread{'s' if n != 1 else ''}"
    return r["label"]


def _row_order(r: dict) -> tuple:
    order = {"asynctm": 0, "pytm": 1, "pytm_parallel": 2, "tmu_cpu": 3, "green_tsetlin": 4, "pytm_cuda": 5}
    return (order.get(r["peer"], 9), r["options"].get("backend") == "cuda", r["options"].get("n_threads") or 0,
            not r["options"].get("indexed", False))


def markdown(record: dict) -> str:
    """The Markdown table of a benchmark record: per setting one row per implementation."""
    cpu, git = record.get("cpu") or {}, record.get("git") or {}
    commit = git.get("commit") or "?"
    dirty = git.get("tracked_files_modified")
    lines = [f"# CPU speed per epoch: `{record.get('name', '?')}`", ""]
    lines.append(f"- date (UTC): {record.get('date_utc', '?')}; commit `{commit[:12]}`"
                 + (f" ({dirty} tracked files modified)" if dirty else ""))
    lines.append(f"- CPU: {cpu.get('model', '?')}, {cpu.get('logical_cores', '?')} logical cores, "
                 f"{cpu.get('usable_cores', '?')} usable")
    lines.append(f"- load average (1/5/15 min): start {_loads(record.get('load_average_start'))}, end "
                 f"{_loads(record.get('load_average_end'))}")
    lines.append(f"- command: `{' '.join(record.get('command', []))}`")
    lines.append(f"- seeds {record.get('seeds', [record.get('seed')])}; median over all seeds' timed epochs "
                 "(after 1 warm-up epoch each); metrics are means over seeds after the same epochs")
    lines.append("- speed-up = the goal's peer's median s/epoch / this row's; goal and met? apply to our rows "
                 "(the goal reads the all-cores row); met? = speed-up >= goal and equal accuracy "
                 f"(at most {ACCURACY_TOLERANCE_POINTS:g} point below the peer, or MAE at most "
                 f"{MAE_TOLERANCE_RELATIVE:.0%} above it)")
    lines.append("")
    for s in record.get("settings", []):
        task = s["task"]
        goal = s["comparison"].get("goal") or {}
        peer_label = goal.get("peer") or s["comparison"].get("baseline")
        peer = next((r for r in s["results"] if r["label"] == peer_label and "median_epoch_s" in r), None)
        mname = "acc %" if task == "classification" else "MAE"
        hp = s["hyperparameters"]
        d = s["dataset"]
        lines += [f"## {s['setting']}", "",
                  f"{d['description']}. {d['n_train']:,} train / {d['n_test']:,} test examples"
                  + (" (subsampled)" if d.get("subsample") else "") + f", {d['n_features']:,} features; "
                  f"{hp['n_clauses']} clauses, T = {hp['T']}, s = {hp['s']}; 1 warm-up + {s['epochs']['timed']} "
                  f"timed epochs x {len(s.get('seeds', [0]))} seed(s); test metric after "
                  f"{'the last epoch only' if s.get('evaluate') == 'final' else 'every epoch'}; "
                  f"load average before {s['load_average_before'][0]:.2f}, after {s['load_average_after'][0]:.2f}.",
                  "",
                  (f"| implementation | threads | median s/epoch | speed-up vs {peer_label} | goal | met? | "
                   f"{mname} (mean over seeds) | vs {peer_label} |"),
                  "|---|---|---|---|---|---|---|---|"]
        for r in sorted(s["results"], key=_row_order):
            if "median_epoch_s" not in r:
                continue
            threads = r["metadata"].get("threads") or r["options"].get("n_threads") or "-"
            speedup = peer["median_epoch_s"] / r["median_epoch_s"] if peer else None
            g = (goal.get("by_implementation") or {}).get(r["label"])
            goal_txt = f">= {goal['min_speedup']:g}x" if g else ""
            if g:
                met = "**yes**" if g["met"] else "no (" + ", ".join(
                    w for w, bad in (("speed", not g["speed_met"]), ("accuracy" if task == "classification" else
                                                                       "MAE", g["metric_ok"] is False)) if bad) + ")"
            else:
                met = "(goal's peer)" if r["label"] == peer_label else ""
            m = r["final_metric"]
            if peer and r["label"] != peer_label and m is not None and peer["final_metric"] is not None:
                delta = m - peer["final_metric"]
                vs = f"{delta:+.2f}" if task == "classification" else f"{delta / peer['final_metric']:+.1%}"
            else:
                vs = ""
            spread = f" ± {r['final_metric_std']:.2f}" if r.get("final_metric_std") else ""
            lines.append(f"| {_row_name(r)} | {threads} | {r['median_epoch_s']:.3f} | "
                         f"{_fmt(speedup, '.2f')}x | {goal_txt} | {met} | {_fmt(m, '.2f')}{spread} | {vs} |")
        for sk in s["skipped"]:
            lines.append(f"| {sk['label']} | | skipped | | | | | {sk['reason'][:200].replace('|', '/')} |")
        if goal.get("evaluated"):
            main = next(r for r in s["results"] if r["label"] == goal["ours_label"])
            lines += ["", (f"Goal: {_row_name(main)} >= {goal['min_speedup']:g}x {goal['peer']} at equal accuracy: "
                           f"{goal['speedup']:.1f}x, {mname} {_fmt(goal['metric'], '.2f')} vs "
                           f"{_fmt(goal['peer_metric'], '.2f')}: **{'met' if goal['met'] else 'not met'}**.")]
        elif goal:
            lines += ["", f"Goal >= {goal['min_speedup']:g}x {goal['peer']}: not evaluated ({goal.get('reason')})."]
        lines.append("")
    return "\n".join(lines)


def _loads(v) -> str:
    return "-" if not v else " / ".join(f"{x:.2f}" for x in v)


def write_markdown(path: Path, record: dict) -> None:
    from asynctm.io import atomic_open

    with atomic_open(path) as fh:
        fh.write(render(record))


# --- command line -------------------------------------------------------------------------------------------

def render(record: dict) -> str:
    """The Markdown of a benchmark record, CPU (this module) or GPU (``bench_gpu.py`` beside it)."""
    if record.get("generated_by") in GPU_GENERATORS:
        here = str(Path(__file__).resolve().parent)
        if here not in sys.path:
            sys.path.insert(0, here)
        from bench_gpu import markdown as gpu_markdown

        return gpu_markdown(record)
    if record.get("generated_by") != CPU_GENERATOR:
        raise ValueError(f"not a benchmark record (generated_by {record.get('generated_by')!r})")
    return markdown(record)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("records", nargs="+", type=Path, help="benchmark JSON records")
    p.add_argument("--check", action="store_true",
                   help="write nothing: report every record whose .md differs from its rendering (status 1); "
                        "records without a .md are left out")
    args = p.parse_args(argv)
    stale = 0
    for path in args.records:
        record = json.loads(path.read_text())
        if record.get("generated_by") not in (CPU_GENERATOR, *GPU_GENERATORS):
            print(f"{path}: skipped, not a benchmark record")
            continue
        md = path.with_suffix(".md")
        if args.check:
            if not md.is_file():  # kept as JSON only (records older than the tables): nothing to compare
                print(f"{path}: no {md.name} to compare")
                continue
            same = md.read_text() == render(record)
            stale += not same
            print(f"{path}: {'matches' if same else 'differs from'} {md.name}")
        else:
            write_markdown(md, record)
            print(f"wrote {md}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
