#!/usr/bin/env python
"""The verdicts and the Markdown of CPU benchmark records: speed-ups, the speed goals at equal accuracy, and
the tables (``benchmarks/results/<name>.md``), from the JSON that ``benchmarks/bench_tm.py`` writes.

    python benchmarks/report.py benchmarks/results/cpu_all_be4f755.json      # (re)writes cpu_all_be4f755.md
    python benchmarks/report.py --check benchmarks/results/*.json            # does every .md match its JSON?
    python benchmarks/report.py --index       # (re)writes benchmarks/results/INDEX.md, the index of every record
    python benchmarks/report.py --check       # every .md and INDEX.md match their records? (status 1 if not)

``bench_tm.py`` runs and measures; everything that judges or shows the measurements is here, so a table is
rebuilt from its record without training anything. The comparison (:func:`compare`) is stored in the record
when it is written, so a record renders as it read when it was made. GPU benchmark records
(``benchmarks/bench_gpu.py``) render with that script's own table.

The index (``results/INDEX.md``, :func:`render_index`) lists every JSON record of the folder, whichever script
wrote it (:data:`GENERATORS`): the host, date and commit it names, what it covers and its headline (speed-ups,
goal verdicts), all read from the record; a file it cannot classify is listed as skipped.
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
    if r["peer"] == "tmu_cuda":
        return "tmu (CUDA)"
    if r["peer"] == "green_tsetlin":
        n = r["options"].get("n_threads")
        return f"green-tsetlin, {n} thread{'s' if n != 1 else ''}"
    return r["label"]


def _row_order(r: dict) -> tuple:
    order = {"asynctm": 0, "pytm": 1, "pytm_parallel": 2, "tmu_cpu": 3, "green_tsetlin": 4, "pytm_cuda": 5,
             "tmu_cuda": 6}
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


# --- the index of the records ----------------------------------------------------------------------------

RESULTS = Path(__file__).resolve().parent / "results"
INDEX = "INDEX.md"
INDEX_COMMAND = "python benchmarks/report.py --index"
KINDS = ("CPU benchmarks", "GPU benchmarks", "Cost model and limits", "Micro-benchmarks", "Other checks")
def generator(record: dict) -> str:
    """The generator a record names: its ``generated_by``, or the script its provenance's command ran."""
    text = record.get("generated_by") or (record.get("provenance") or {}).get("command") or ""
    words = text.split()
    if words[:1] == ["python"] and words[1:2] != ["-m"] and len(words) > 1:
        return words[1]  # "python benchmarks/x.py --flag ...": the script
    return text


def _host(r: dict) -> str:
    gpu = r.get("gpu") if isinstance(r.get("gpu"), dict) else {}
    cpu = r.get("cpu") or {}
    limits = r.get("host_limits") or {}
    parts = [gpu.get("name") or (r.get("gpu_limits") or {}).get("gpu")]
    model = cpu.get("model") or limits.get("cpu_model")
    if model:
        parts.append(f"{model}, {cpu.get('usable_cores') or limits.get('usable_cores')} cores")
    return "; ".join(p for p in parts if p) or "-"


def _commit(r: dict) -> str:
    git, prov = r.get("git") or {}, r.get("provenance") or {}
    commit = git.get("commit") or prov.get("git_commit") or r.get("source_commit")
    dirty = git.get("tracked_files_modified") or prov.get("git_dirty")
    return "-" if not commit else f"`{commit[:7]}`" + (" (modified)" if dirty else "")


def _date(r: dict) -> str:
    return r.get("date_utc") or (r.get("time_utc") or r.get("started_utc") or "-")[:10]


def _x(v: float) -> str:
    return f"{v:.1f}x"


def _cpu_bench(r: dict) -> tuple[str, str]:
    heads = []
    for s in r["settings"]:
        c = s["comparison"]
        g = c.get("goal") or {}
        ours = _ours_cpu(s["results"])
        if g.get("evaluated"):
            heads.append(f"{s['setting']} {_x(g['speedup'])} {g['peer']}, goal >= {g['min_speedup']:g}x "
                         f"{'met' if g['met'] else 'not met'}")
        elif ours and ours[-1]["label"] in c["speedup_vs_baseline"]:
            heads.append(f"{s['setting']} {_x(c['speedup_vs_baseline'][ours[-1]['label']])} {c['baseline']}")
    peers = dict.fromkeys(x["peer"] for s in r["settings"] for x in s["results"])
    seeds = r.get("seeds") or [r.get("seed")]
    return (f"{', '.join(s['setting'] for s in r['settings'])}; {len(seeds)} seed(s); {', '.join(peers)}",
            "; ".join(heads))


def _gpu_bench(r: dict) -> tuple[str, str]:
    heads = []
    for s in r["settings"]:
        c = s["comparison"]
        builds = [(b, v) for b, v in (("tm_gpu", c), *c.items())
                  if isinstance(v, dict) and v.get("speedup_vs_pytm_cuda")]  # tm_gpu's are the comparison's own
        text = ", ".join(f"{b} {_x(v['speedup_vs_pytm_cuda'])}"
                         + (f" (goal {'met' if v['goal']['met'] else 'not met'})" if v.get("goal") else "")
                         for b, v in builds)
        if text:
            heads.append(f"{s['setting']} vs PyTsetlinMachineCUDA: {text}")
        elif c.get("wide_speedup_vs_warp"):
            heads.append(f"{s['setting']} wide build {_x(c['wide_speedup_vs_warp'])} the warp build")
        elif c.get("wide_speedups_vs_warp"):  # several wide builds: the fastest
            best, x = max(c["wide_speedups_vs_warp"].items(), key=lambda item: item[1])
            heads.append(f"{s['setting']} fastest wide build {best} {_x(x)} the warp build")
    builds = dict.fromkeys(b for s in r["settings"] for b in s["results"])
    return f"{', '.join(s['setting'] for s in r['settings'])}; {', '.join(builds)}", "; ".join(heads)


def _goals(r: dict) -> tuple[str, str]:
    heads = [f"{s['setting']} {'met' if g['met'] else 'not met'} ({_x(s['comparison']['speedup_vs_pytm_cuda'])}, "
             f"{g['seeds']} seed(s))" for s in r["settings"] if (g := s["comparison"].get("goal"))]
    return (f"{', '.join(s['setting'] for s in r['settings'])}; {len(r['records'])} GPU benchmark record(s)",
            "; ".join(heads))


def _bound(r: dict) -> tuple[str, str]:
    limits = r.get("host_limits") or r.get("gpu_limits")
    fractions = [row["all_work"]["fraction"] for row in r["rows"]]
    rows = dict.fromkeys(f"{row['setting']} {row['label']}" for row in r["rows"])
    return (f"{r['benchmark']['name']} on {Path(limits['path']).name}: {', '.join(rows)}",
            f"all-work bound / achieved {min(fractions):.2%} to {max(fractions):.2%}" if fractions else "")


def _limits(r: dict) -> tuple[str, str]:
    m = r["measurements"]
    names = dict.fromkeys(k for v in m.values() for k in v if k.endswith("_s"))
    threads = [k for k in m if k.isdigit()]
    return ", ".join(names) + (f" at {', '.join(threads)} thread(s)" if threads else ""), ""


def _scaling(r: dict) -> tuple[str, str]:
    heads = [f"{s} {impl} {_x(rows[-1]['speedup_vs_1'])} at {rows[-1]['threads']} threads"
             for s, impls in r["settings"].items() for impl, rows in impls.items() if rows]
    threads = sorted({row["threads"] for impls in r["settings"].values() for rows in impls.values() for row in rows})
    return f"{', '.join(r['settings'])}; threads {', '.join(map(str, threads))}", "; ".join(heads)


def _micro_feedback(r: dict) -> tuple[str, str]:
    return (f"{r['hyperparameters']['n_clauses']} clauses, states after {r['state_after_epochs']} epochs: "
            + ", ".join(r["costs_ns"]), "")


def _micro_inference(r: dict) -> tuple[str, str]:
    return (f"{r['experiment']}, {r['hyperparameters']['n_clauses']} clauses, model after {r['model']['epochs']} "
            f"epoch(s), {r['threads']} thread(s)",
            f"compacted {_x(r['dense_over_compact'])} faster than the plane scan")


def _kernel_folders(folders) -> str:
    """Kernel folders as their checkout's name and folder (``run-after/kernels``), in the order timed."""
    return " then ".join(Path(f).parent.name + "/" + Path(f).name for f in dict.fromkeys(folders))


def _micro_setup(r: dict) -> tuple[str, str]:
    cells = {}
    for row in r["rows"]:
        cells.setdefault((row["threads"], row["case"]), []).append(f"{row['fastest_s']:.3g}")
    return (f"{r['experiment']}, {r['hyperparameters']['n_clauses']} clauses, {r['dataset']['n_train']:,} rows; "
            f"kernels {_kernel_folders(row['kernels'] for row in r['rows'])}",
            "; ".join(f"{case} {t}t {' / '.join(v)} s" for (t, case), v in cells.items()))


def _kernels_ab(r: dict) -> tuple[str, str]:
    return (f"{', '.join(s['setting'] for s in r['settings'])}; {r['threads']} thread(s); kernels "
            + _kernel_folders(row["kernels"] for s in r["settings"] for row in s["rows"]),
            "; ".join(f"{s['setting']} " + " / ".join(f"{row['median_s']:.3g}" for row in s["rows"])
                      + f" s{'' if s['same_automata'] else ' (automata differ)'}" for s in r["settings"]))


def _opcount(r: dict) -> tuple[str, str]:
    return "epochs " + ", ".join(str(s["counts_for_epoch"]) for s in r["snapshots"]), ""


def _pytm_versions(r: dict) -> tuple[str, str]:
    return (f"{r['experiment']}: {' and '.join(r['runs'])}, {r['epochs']} epochs",
            f"same run: {'yes' if r['same_run'] else 'no'}")


def _thundersvm(r: dict) -> tuple[str, str]:
    source = r.get("source_builds", [])
    runs = [f"{b['package']} {'yes' if b['runs_on_cuda_11_or_later'] else 'no'}" for b in r["builds"]]
    runs += [f"built from source {'yes' if b['runs_on_cuda_11_or_later'] else 'no'}" for b in source]
    return ", ".join(b["file"] for b in r["builds"] + source), "runs on CUDA 11 or later: " + ", ".join(runs)


# Per generator a record names (generator()): its kind (KINDS), what its records measure, and its summary, the
# (covers, headline) cells of its row read from the record.
GENERATORS = {
    CPU_GENERATOR: (KINDS[0], "s/epoch: ours against the CPU peers (bench_tm.py)", _cpu_bench),
    "benchmarks/scaling.py": (KINDS[0], "core scaling of our CPU build (scaling.py)", _scaling),
    **{g: (KINDS[1], "s/epoch: our GPU builds against PyTsetlinMachineCUDA (bench_gpu.py)", _gpu_bench)
       for g in GPU_GENERATORS},
    "python -m asynctm.campaign goals": (KINDS[1], "the GPU speed goals, seeds pooled per GPU and code", _goals),
    "benchmarks/host_limits.py": (KINDS[2], "a CPU host's limits (host_limits.py)", _limits),
    "benchmarks/gpu_limits.py": (KINDS[2], "a GPU's limits (gpu_limits.py)", _limits),
    "benchmarks/bound.py": (KINDS[2], "achieved epochs against the cost model's bound (bound.py)", _bound),
    "benchmarks/micro_feedback.py": (KINDS[3], "ns per clause evaluation and feedback event (micro_feedback.py)",
                                     _micro_feedback),
    "benchmarks/micro_inference.py": (KINDS[3], "inference: compacted includes against the plane scan "
                                                "(micro_inference.py)", _micro_inference),
    "benchmarks/kernels_ab.py": (KINDS[3], "s/epoch under two kernel folders, round-robin (kernels_ab.py)",
                                 _kernels_ab),
    "benchmarks/micro_setup.py": (KINDS[3], "set-up on new training data (micro_setup.py)", _micro_setup),
    "benchmarks/opcount_apple.py": (KINDS[3], "operation counts of apple epochs (opcount_apple.py)", _opcount),
    "benchmarks/pytm_versions.py": (KINDS[4], "one regression run under two pyTsetlinMachine releases "
                                              "(pytm_versions.py)", _pytm_versions),
    "benchmarks/thundersvm_gpu_builds.py": (KINDS[4], "what ThunderSVM's GPU builds link and call "
                                                      "(thundersvm_gpu_builds.py)", _thundersvm),
}


def index_entry(path: Path) -> tuple[str, list[str] | str]:
    """``(kind, cells)`` of a record's row in the index, or ``("skipped", reason)`` for a file it cannot classify."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return "skipped", f"not readable as JSON ({type(exc).__name__})"
    if not isinstance(record, dict):
        return "skipped", "not a JSON object"
    gen = generator(record)
    if gen not in GENERATORS:
        named = repr(gen[:60] + ("..." if len(gen) > 60 else "")) if gen else "none"
        return "skipped", f"generated_by names no generator of this folder ({named})"
    kind, what, summary = GENERATORS[gen]
    try:
        covers, headline = summary(record)
        cells = [_host(record), _date(record), _commit(record), covers, headline]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as exc:
        return "skipped", f"a {gen} record without the fields it should have ({type(exc).__name__}: {exc})"
    md = path.with_suffix(".md")
    link = f"[{path.stem}]({md.name if md.is_file() else path.name})"
    return kind, [link, what, *cells]


def render_index(results: Path) -> str:
    """The Markdown of ``<results>/INDEX.md``: one row per JSON record of the folder (top level), by kind."""
    rows: dict[str, list[list[str]]] = {k: [] for k in KINDS}
    skipped = []
    for path in sorted(results.glob("*.json")):
        kind, cells = index_entry(path)
        if kind == "skipped":
            skipped.append(f"- `{path.name}`: {cells}")
        else:
            rows[kind].append([c.replace("|", "/").replace("\n", " ") for c in cells])
    lines = ["# Benchmark records", "",
             f"Generated from the JSON records in this folder by `{INDEX_COMMAND}`; do not edit. "
             "`python benchmarks/report.py --check` fails when it is stale. What each script measures, and how to "
             "read a record: [benchmarks/README.md](../README.md). Headlines are read from each record as it "
             "was written; the record's own page has the rest.", ""]
    for kind, entries in rows.items():
        if not entries:
            continue
        lines += [f"## {kind}", "", "| record | measures | host | date | commit | covers | headline |",
                  "|---|---|---|---|---|---|---|", *("| " + " | ".join(e) + " |" for e in entries), ""]
    pages = sorted(p.name for p in results.glob("*.md")
                   if p.name not in (INDEX, "README.md") and not p.with_suffix(".json").is_file())
    if pages:
        lines += ["## Pages drawn from several records", "", *(f"- [{p}]({p})" for p in pages), ""]
    if skipped:
        lines += ["## Skipped (not classified)", "", *skipped, ""]
    return "\n".join(lines)


def write_index(results: Path = RESULTS) -> Path:
    from asynctm.io import atomic_open

    path = results / INDEX
    with atomic_open(path) as fh:
        fh.write(render_index(results))
    return path


def check_index(results: Path = RESULTS) -> bool:
    """Does ``<results>/INDEX.md`` match its rendering? Prints one line either way."""
    path = results / INDEX
    fix = INDEX_COMMAND + ("" if results.resolve() == RESULTS else f" --results {results}")
    if not path.is_file():
        print(f"{path}: missing; write it: {fix}")
        return False
    if path.read_text() != render_index(results):
        print(f"{path}: stale, its records changed; rebuild it: {fix}")
        return False
    print(f"{path}: matches its records")
    return True


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


def _read(path: Path) -> dict | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("records", nargs="*", type=Path,
                   help="benchmark JSON records (with --check and none: every record of --results)")
    p.add_argument("--index", action="store_true", help=f"(re)write --results' {INDEX} from its JSON records")
    p.add_argument("--check", action="store_true",
                   help=f"write nothing: report every record whose .md differs from its rendering, and a stale "
                        f"{INDEX} (status 1); records without a .md are left out")
    p.add_argument("--results", type=Path, default=RESULTS,
                   help="the folder of the records and of its index (default: benchmarks/results)")
    args = p.parse_args(argv)
    if not (args.records or args.index or args.check):
        p.error("nothing to do: give records to render, --index, or --check")
    records = args.records or (sorted(args.results.glob("*.json")) if args.check else [])
    stale = 0
    for path in records:
        record = _read(path)
        if record is None or record.get("generated_by") not in (CPU_GENERATOR, *GPU_GENERATORS):
            if args.records:  # named on the command line: say why it is left out
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
    if args.check:
        stale += not check_index(args.results)
    elif args.index:
        print(f"wrote {write_index(args.results)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
