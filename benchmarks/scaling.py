#!/usr/bin/env python
"""Core scaling of our CPU build (and pyTsetlinMachineParallel) on one machine: a record, a table and a figure.

Reads the files one scaling run left in a folder: ``bench_tm.py`` records named ``scaling_<setting>_t<threads>.json``
(one per thread count: ours and pyTsetlinMachineParallel at that count) and, for settings whose run ended before
it wrote its record, the run's printed log (``<name>.txt``: the summary table's median seconds per epoch per
``asynctm cpu <n>t`` row, else the timed epochs it printed). Writes ``<out>.json`` (per setting and
implementation: the median seconds per epoch at each thread count, the speed-up over one thread and the parallel
efficiency, speed-up / threads), ``<out>.md`` and ``<out>.png`` / ``.pdf`` (efficiency against threads).

    python benchmarks/scaling.py benchmarks/results/cpu_scaling_nvidia_h200_host \\
        --out benchmarks/results/cpu_scaling_nvidia_h200_host_summary

Every number comes from those files; a log read where no record was written is marked so in the record.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

RECORD = re.compile(r"^scaling_(?P<setting>[a-z_]+)_t(?P<threads>\d+)\.json$")
TABLE_ROW = re.compile(r"^(?P<label>asynctm cpu (?P<threads>\d+)t|pyTMParallel (?P<pthreads>\d+)t)\s+"
                       r"(?P<warm>[\d.]+)\s+(?P<median>[\d.]+)\s")
SETTING_HEAD = re.compile(r"^== (?P<setting>[a-z_]+): .*?(?P<train>\d+) train / (?P<test>\d+) test examples")
EPOCH_LINE = re.compile(r"^\s+seed \d+ epoch (?P<k>\d+)/\d+: (?P<rest>.*)$")
EPOCH_ITEM = re.compile(r"asynctm cpu (?P<threads>\d+)t (?P<s>[\d.]+)s")
IMPLS = {"asynctm": "ours (CPU build, OpenMP threads)", "pytm_parallel": "pyTsetlinMachineParallel 0.2.1"}


class ScalingError(ValueError):
    pass


def from_records(folder: Path) -> tuple[dict, dict]:
    """{setting: {impl: {threads: median s}}} and the records' shared facts, from the bench_tm records."""
    out: dict = {}
    facts: dict = {}
    for path in sorted(folder.glob("scaling_*_t*.json")):
        m = RECORD.match(path.name)
        if not m:
            continue
        rec = json.loads(path.read_text(encoding="utf-8"))
        facts.setdefault("cpu", rec.get("cpu"))
        facts.setdefault("gpu", rec.get("gpu"))
        facts.setdefault("source_commit", (rec.get("threads") or {}).get("env", {}).get("ASYNCTM_SOURCE_COMMIT"))
        facts.setdefault("records", []).append(path.name)
        for st in rec["settings"]:
            for r in st["results"]:
                threads = int((r.get("options") or {}).get("n_threads") or r["metadata"].get("threads") or 0)
                entry = out.setdefault(st["setting"], {}).setdefault(r["peer"], {})
                entry[threads] = {"median_epoch_s": float(r["median_epoch_s"]), "timed_epochs": len(r["epoch_s"]),
                                  "cpu_per_wall": r.get("cpu_per_wall"), "source": path.name,
                                  "rows": st["dataset"]["n_train"]}
    return out, facts


def from_log(path: Path) -> dict:
    """{setting: {"asynctm": {threads: ...}}} from a bench_tm run's printed log: the summary table's median where
    the setting finished, else the median of the timed epochs it printed."""
    out: dict = {}
    setting, rows, epochs = None, None, {}
    for line in path.read_text(encoding="utf-8").splitlines():
        head = SETTING_HEAD.match(line)
        if head:
            setting, rows, epochs = head["setting"], int(head["train"]), {}
            continue
        if setting is None:
            continue
        e = EPOCH_LINE.match(line)
        if e:
            for item in EPOCH_ITEM.finditer(e["rest"]):
                epochs.setdefault(int(item["threads"]), []).append(float(item["s"]))
                entry = out.setdefault(setting, {}).setdefault("asynctm", {})
                times = sorted(epochs[int(item["threads"])])
                entry[int(item["threads"])] = {
                    "median_epoch_s": times[len(times) // 2] if len(times) % 2 else
                    (times[len(times) // 2 - 1] + times[len(times) // 2]) / 2,
                    "timed_epochs": len(times), "source": f"{path.name} (printed epochs: the run ended before its "
                                                          "record and summary were written)", "rows": rows}
            continue
        t = TABLE_ROW.match(line)
        if t and t["threads"]:
            out.setdefault(setting, {}).setdefault("asynctm", {})[int(t["threads"])] = {
                "median_epoch_s": float(t["median"]), "timed_epochs": len(epochs.get(int(t["threads"]), [])),
                "source": f"{path.name} (its printed summary table)", "rows": rows}
    return out


def summarise(per: dict) -> dict:
    """Speed-up over one thread and parallel efficiency per thread count."""
    out = {}
    for setting, impls in sorted(per.items()):
        for impl, by_threads in sorted(impls.items()):
            one = by_threads.get(1, {}).get("median_epoch_s")
            rows = []
            for threads in sorted(by_threads):
                r = dict(by_threads[threads])
                r["threads"] = threads
                if one:
                    r["speedup_vs_1"] = one / r["median_epoch_s"]
                    r["efficiency"] = r["speedup_vs_1"] / threads
                rows.append(r)
            out.setdefault(setting, {})[impl] = rows
    return out


def render(summary: dict, facts: dict) -> str:
    lines = ["<!-- generated by `python benchmarks/scaling.py` from the files named below; do not edit by hand -->",
             "", f"# Core scaling on {facts.get('cpu', {}).get('model')} ({facts.get('cpu', {}).get('logical_cores')} "
             f"logical cores; the GPU machine's own CPU, its GPU idle)", "",
             "Median seconds per training epoch after a warm-up epoch; speed-up over one thread; parallel efficiency "
             "= speed-up / threads. Our CPU build runs OpenMP threads over clauses; pyTsetlinMachineParallel 0.2.1 "
             "likewise over its own clause loop.", "",
             "| setting | implementation | training rows | threads | s/epoch | speed-up | efficiency | from |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for setting, impls in summary.items():
        for impl, rows in impls.items():
            for r in rows:
                lines.append(f"| {setting} | {IMPLS.get(impl, impl)} | {r['rows']} | {r['threads']} | "
                             f"{r['median_epoch_s']:.4g} | {r.get('speedup_vs_1', float('nan')):.2f}× | "
                             f"{r.get('efficiency', float('nan')):.2f} | {r['source']} |")
    return "\n".join(lines) + "\n"


def figure(summary: dict, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for setting, impls in summary.items():
        for impl, rows in impls.items():
            pts = [(r["threads"], r["efficiency"]) for r in rows if "efficiency" in r]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=f"{setting}: {IMPLS.get(impl, impl)}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("threads")
    ax.set_ylabel("parallel efficiency (speed-up / threads)")
    ax.set_ylim(0, 1.15)
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=120, metadata={"Software": None})
    fig.savefig(png.with_suffix(".pdf"), metadata={"CreationDate": None, "ModDate": None, "Producer": None,
                                                   "Creator": None})
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="the scaling run's files")
    ap.add_argument("--out", required=True, help="output path without suffix (.json, .md, .png, .pdf are written)")
    args = ap.parse_args(argv)
    folder = Path(args.folder)
    try:
        if not folder.is_dir():
            raise ScalingError(f"{folder}: no such folder; pass the folder of a scaling run's files")
        per, facts = from_records(folder)
        for log in sorted(folder.glob("*.txt")):
            for setting, impls in from_log(log).items():
                if setting not in per:  # a record is the better source where both exist
                    per[setting] = impls
                    facts.setdefault("logs", []).append(log.name)
        if not per:
            raise ScalingError(f"{folder}: no scaling_<setting>_t<threads>.json record and no readable log there")
    except (ScalingError, OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    summary = summarise(per)
    out = Path(args.out)
    record = {"generated_by": "python benchmarks/scaling.py", "folder": folder.as_posix(), **facts,
              "settings": {s: {impl: rows for impl, rows in impls.items()} for s, impls in summary.items()}}
    out.with_suffix(".json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    out.with_suffix(".md").write_text(render(summary, facts))
    figure(summary, out.with_suffix(".png"))
    print(out.with_suffix(".json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
