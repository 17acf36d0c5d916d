#!/usr/bin/env python
"""Core scaling of our CPU build (and pyTsetlinMachineParallel) on one machine: the run, a record, a table and a figure.

Measuring (``--measure``): one ``bench_tm.py`` process per setting and thread count times our CPU build (and, on
apple where pyTsetlinMachineParallel's environment is given, that library at the same count), on as many logical CPUs
as it has threads, one per physical core first (its CPU affinity; ``--bind none``: all CPUs), so up to the physical
core count no two threads share a core. The counts are 1, the physical and the logical core counts, then 2, 4, 8, ...
between, in that order, so a run cut short still has its ends; each process is killed at ``--deadline`` (a setting
cut short keeps its printed epochs). ``measure.json`` says what each process was given and how busy the machine was
just before it.

Summarising (always): reads the files one scaling run left in a folder: ``bench_tm.py`` records named
``scaling_<setting>[_<peer>][_t<threads>].json`` and, for settings whose run ended before it wrote its record, the
run's printed log (``<name>.txt``: the summary table's median seconds per epoch per ``asynctm cpu <n>t`` row, else
the timed epochs it printed). Writes ``<out>.json`` (per setting and implementation: the median seconds per epoch at
each thread count, the speed-up over one thread, the parallel efficiency, speed-up / threads, and how busy the
machine was before the count's process: the cores in use that ``measure.json`` records, else the 1-minute load
average), ``<out>.md`` and ``<out>.png`` / ``.pdf`` (efficiency against threads).

    python benchmarks/scaling.py benchmarks/results/cpu_scaling_amd_epyc_2c --measure --data-dir data \\
        --out benchmarks/results/cpu_scaling_amd_epyc_2c_summary
    python benchmarks/scaling.py benchmarks/results/cpu_scaling_nvidia_h200_host \\
        --out benchmarks/results/cpu_scaling_nvidia_h200_host_summary \\
        --host-note "the GPU machine's own CPU, its GPU idle"

With ``--limits`` the measuring run first measures the host's limits at its thread counts (``host_limits.py``, into
the folder's ``host_limits.json``), and every summary of a folder that holds them bounds each row of our CPU build
read from a record as ``bound.py`` does (``asynctm.costmodel`` on those limits, the feedback events from the run
records under ``--results``): the fraction bound / achieved for the least and for all the work, and the efficiency
the limits allow, the one-thread bound over the threads times the row's bound (all work): below 1 where the limit
that binds grows more slowly than the threads (memory bandwidth, shared cores).

Every number comes from those files; a log read where no record was written is marked so in the record, and a count
timed while other work held cores its threads needed is marked busy (``asynctm.store.busy`` on the load before it
plus its threads).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORD = re.compile(r"^scaling_[a-z_]+?(?:_t\d+)?\.json$")
TABLE_ROW = re.compile(r"^(?P<label>asynctm cpu (?P<threads>\d+)t|pyTMParallel (?P<pthreads>\d+)t)\s+"
                       r"(?P<warm>[\d.]+)\s+(?P<median>[\d.]+)\s")
SETTING_HEAD = re.compile(r"^== (?P<setting>[a-z_]+): .*?(?P<train>\d+) train / (?P<test>\d+) test examples"
                          r"(?:.*; load (?P<load>[\d.]+)$)?")
EPOCH_LINE = re.compile(r"^\s+seed \d+ epoch (?P<k>\d+)/\d+: (?P<rest>.*)$")
EPOCH_ITEM = re.compile(r"asynctm cpu (?P<threads>\d+)t (?P<s>[\d.]+)s")
IMPLS = {"asynctm": "ours (CPU build, OpenMP threads)", "pytm_parallel": "pyTsetlinMachineParallel 0.2.1"}
BIND = ("cores", "none")  # measure(): each count's threads on cores of their own, or wherever the system puts them
# What a measuring run does per setting unless told otherwise: timed epochs after the warm-up, and the training and
# test rows of the large settings (a subsample, recorded; at full size IMDb's one-thread epochs take minutes).
EPOCHS = {"apple": 4, "semeval": 2, "imdb": 2}
ROWS = {"semeval": (5000, 1000), "imdb": (5000, 1000)}
KILL_GRACE_S = 5  # a process is killed this long before the deadline
MIN_START_S = 10  # no process starts with less time than this before the deadline
LIMITS = "host_limits.json"  # --limits: the host's limits at the run's thread counts, measured before the counts
LIMITS_REPS = 3  # host_limits.py passes per measurement (its default 5 takes longer on many cores)


class ScalingError(ValueError):
    pass


def from_records(folder: Path) -> tuple[dict, dict]:
    """{setting: {impl: {threads: median s}}} and the records' shared facts, from the bench_tm records."""
    out: dict = {}
    facts: dict = {}
    cpus: list[dict] = []
    for path in sorted(folder.glob("scaling_*.json")):
        if not RECORD.match(path.name):
            continue
        rec = json.loads(path.read_text(encoding="utf-8"))
        cpus.append(rec.get("cpu") or {})
        if rec.get("date_utc"):
            facts["date_utc"] = min(facts.get("date_utc", rec["date_utc"]), rec["date_utc"])
        facts.setdefault("gpu", rec.get("gpu"))
        env = (rec.get("threads") or {}).get("env", {})
        facts.setdefault("source_commit", env.get("ASYNCTM_SOURCE_COMMIT") or (rec.get("git") or {}).get("commit"))
        facts.setdefault("records", []).append(path.name)
        for st in rec["settings"]:
            load = (st.get("load_average_before") or rec.get("load_average_start") or [None])[0]
            for r in st["results"]:
                threads = int((r.get("options") or {}).get("n_threads") or r["metadata"].get("threads") or 0)
                entry = out.setdefault(st["setting"], {}).setdefault(r["peer"], {})
                entry[threads] = {"median_epoch_s": float(r["median_epoch_s"]), "timed_epochs": len(r["epoch_s"]),
                                  "cpu_per_wall": r.get("cpu_per_wall"), "source": path.name,
                                  "rows": st["dataset"]["n_train"], "load_before": load}
    if cpus:  # the machine as the process that could use most of its CPUs saw it
        facts["cpu"] = max(cpus, key=lambda c: c.get("usable_cores") or 0)
    return out, facts


def from_log(path: Path) -> dict:
    """{setting: {"asynctm": {threads: ...}}} from a bench_tm run's printed log: the summary table's median where
    the setting finished, else the median of the timed epochs it printed."""
    out: dict = {}
    setting, rows, load, epochs = None, None, None, {}
    for line in path.read_text(encoding="utf-8").splitlines():
        head = SETTING_HEAD.match(line)
        if head:
            setting, rows, epochs = head["setting"], int(head["train"]), {}
            load = float(head["load"]) if head["load"] else None
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
                                                          "record and summary were written)", "rows": rows,
                    "load_before": load}
            continue
        t = TABLE_ROW.match(line)
        if t and t["threads"]:
            out.setdefault(setting, {}).setdefault("asynctm", {})[int(t["threads"])] = {
                "median_epoch_s": float(t["median"]), "timed_epochs": len(epochs.get(int(t["threads"]), [])),
                "source": f"{path.name} (its printed summary table)", "rows": rows, "load_before": load}
    return out


def bounds(folder: Path, per: dict, results: Path, data_dir: Path | None) -> dict:
    """Where ``folder`` holds the host's limits (:data:`LIMITS`): each row of our CPU build read from a record gets
    ``bound`` (the least- and all-work bounds at its thread count and their fractions of its median epoch, by
    ``bound.bound_rows``); returns the facts for the page: the limits' path and what they measured, or a note where
    the bounds could not be computed."""
    path = folder / LIMITS
    if not path.is_file():
        return {}
    sys.path.insert(0, str(HERE))
    import bound

    try:
        limits = json.loads(path.read_text(encoding="utf-8"))
        counts = sorted(int(t) for t in limits.get("measurements") or {})
    except (OSError, ValueError) as exc:
        return {"bounds_note": f"No bounds: {path.name} cannot be read ({exc}); measure again with --limits."}
    skipped = []
    for setting, impls in per.items():
        for threads, r in (impls.get("asynctm") or {}).items():
            source = folder / r["source"]
            if not r["source"].endswith(".json") or threads not in counts:
                skipped.append(f"{setting} {threads}t")
                continue
            try:
                rows = bound.bound_rows(json.loads(source.read_text(encoding="utf-8")), source, limits, results,
                                        data_dir, {})
            except (bound.BoundError, OSError, ValueError) as exc:
                skipped.append(f"{setting} {threads}t ({exc})")
                continue
            row = next(x for x in rows if x["threads"] == threads)
            r["bound"] = {"least_work_s": row["least_work"]["bound_s"], "all_work_s": row["all_work"]["bound_s"],
                          "least_work_fraction": row["least_work"]["fraction"],
                          "all_work_fraction": row["all_work"]["fraction"], "limit": row["all_work"]["limit"]}
    facts = {"limits": {"path": f"{folder.name}/{LIMITS}", "sha256": bound._sha256(path),
                        "what": f"threads {', '.join(map(str, counts))}, by the CPU clock"}}
    if skipped:
        facts["bounds_note"] = ("No bound for: " + "; ".join(skipped) + " (no record, no limits at that thread "
                                "count, or no run records of the setting).")
    return facts


def summarise(per: dict, cores: int | None = None) -> dict:
    """Speed-up over one thread and parallel efficiency per thread count; with ``cores`` (logical), whether the
    count ran on a busy machine: the load before it plus its threads beyond the cores (asynctm.store.busy)."""
    from asynctm.store import busy

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
                one_bound = (by_threads.get(1, {}).get("bound") or {}).get("all_work_s")
                if one_bound and r.get("bound"):
                    r["bound"]["efficiency_allowed"] = one_bound / (threads * r["bound"]["all_work_s"])
                load = r.get("load_before")
                r["busy"] = busy(load + threads, cores) if load is not None and cores else None
                rows.append(r)
            out.setdefault(setting, {})[impl] = rows
    return out


def render(summary: dict, facts: dict) -> str:
    bounded = any(r.get("bound") for impls in summary.values() for rows in impls.values() for r in rows)
    cpu = facts.get("cpu") or {}
    physical, note = cpu.get("physical_cores"), facts.get("host_note")
    lines = ["<!-- generated by `python benchmarks/scaling.py` from the files named below; do not edit by hand -->",
             "", f"# Core scaling on {cpu.get('model')} ({cpu.get('logical_cores')} logical cores"
             + (f", {physical} physical" if physical else "") + (f"; {note}" if note else "") + ")", "",
             "Median seconds per training epoch after a warm-up epoch; speed-up over one thread; parallel efficiency "
             "= speed-up / threads. Our CPU build runs OpenMP threads over clauses; pyTsetlinMachineParallel 0.2.1 "
             "likewise over its own clause loop.", "",
             {"cores": f"Each thread count ran as its own process on that many logical CPUs, one per physical core "
                       f"first (its CPU affinity): up to {physical or 'the physical core count of'} threads no two "
                       "share a core, beyond that they do.",
              "none": "Each thread count ran as its own process on all logical CPUs (the operating system placed "
                      "its threads)."}.get(facts.get("bind"), "Threads not bound to cores (the operating system "
                                                               "placed them).")
             + ("" if physical else " The physical cores are not on record, so whether threads shared a core is "
                                    "not known."), "",
             f"load before: the {facts.get('load_measure', 'load')}. busy: the load before and the count's threads "
             "exceed the logical cores by more than one, so the count shared cores with other work.", "",
             "| setting | implementation | training rows | threads | s/epoch | speed-up | efficiency | load before "
             "| from |" + (" fraction of the bound, least / all work | limit (all work) | efficiency the limits allow |"
                           if bounded else ""),
             "|---|---|---:|---:|---:|---:|---:|---:|---|" + ("---:|---|---:|" if bounded else "")]
    for setting, impls in summary.items():
        for impl, rows in impls.items():
            for r in rows:
                load = r.get("load_before")
                load_cell = "–" if load is None else f"{load:.2f}" + (" (busy)" if r.get("busy") else "")
                line = (f"| {setting} | {IMPLS.get(impl, impl)} | {r['rows']} | {r['threads']} | "
                        f"{r['median_epoch_s']:.4g} | {r.get('speedup_vs_1', float('nan')):.2f}× | "
                        f"{r.get('efficiency', float('nan')):.2f} | {load_cell} | {r['source']} |")
                if bounded:
                    b = r.get("bound") or {}
                    allowed = b.get("efficiency_allowed")
                    line += (f" {b['least_work_fraction']:.1%} / {b['all_work_fraction']:.1%} | {b['limit']} | "
                             f"{'–' if allowed is None else f'{allowed:.2f}'} |" if b else " – | – | – |")
                lines.append(line)
    if bounded:
        lines += ["", f"Bound: the cost model's (`asynctm.costmodel`, as `bound.py` computes it) on the host's limits "
                      f"measured in this run ({facts['limits']['path']}: {facts['limits']['what']}); feedback events "
                      "estimated from the run records of the setting. fraction = bound / achieved. The efficiency "
                      "the limits allow: the one-thread bound over the threads times the row's bound (all work)."]
    if facts.get("bounds_note"):
        lines += ["", facts["bounds_note"]]
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


def cores_in_use(seconds: float = 1.0, stat: Path = Path("/proc/stat")) -> float | None:
    """Logical cores kept busy over ``seconds`` (from /proc/stat's first line: all but idle and iowait time), by
    whatever runs: unlike the 1-minute load average it does not lag the work that just ended. None where the file
    is not readable."""
    def sample():
        fields = [int(v) for v in stat.read_text().splitlines()[0].split()[1:]]
        return sum(fields), fields[3] + (fields[4] if len(fields) > 4 else 0)
    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0:
        return None
    return (1.0 - (idle1 - idle0) / (total1 - total0)) * (os.cpu_count() or 1)


def ladder(logical: int, physical: int | None) -> list[int]:
    """The thread counts, in the order they run: 1, the logical cores and the physical core count first (a run cut
    short still has its ends), then 2, 4, 8, ... between."""
    ends = [1, *([physical] if physical else []), logical]
    between, t = [], 2
    while t < logical:
        between.append(t)
        t *= 2
    return list(dict.fromkeys([*sorted(set(ends)), *between]))


def cpu_order(root: Path = Path("/sys/devices/system/cpu")) -> list[int]:
    """The usable logical CPUs, one per physical core first (the lowest of its threads), then the cores' other
    threads: the first n of them give n threads cores of their own wherever n is at most the physical cores."""
    usable = sorted(os.sched_getaffinity(0))
    cores: dict = {}
    for cpu in usable:
        try:
            key = tuple((root / f"cpu{cpu}/topology" / f).read_text().strip() for f in ("physical_package_id",
                                                                                       "core_id"))
        except OSError:
            key = ("cpu", str(cpu))  # topology not readable: every logical CPU its own core
        cores.setdefault(key, []).append(cpu)
    firsts = [c[0] for c in cores.values()]
    return sorted(firsts) + sorted(set(usable) - set(firsts))


def jobs(settings: list[str], threads: list[int], pytm_parallel_python: str | None) -> list[tuple[str, str, int,
                                                                                                  list]]:
    """(name, setting, threads, bench_tm options) per process, one per setting and thread count: our build and, on
    apple where pyTsetlinMachineParallel's python is given, that library at the same count."""
    out = []
    for setting in settings:
        for t in threads:
            peers = "asynctm,pytm_parallel" if setting == "apple" and pytm_parallel_python else "asynctm"
            out.append((f"scaling_{setting}_t{t}", setting, t,
                        ["--peers", peers, "--threads", str(t), "--parallel-threads", str(t),
                         *(["--pytm-parallel-python", pytm_parallel_python] if "parallel" in peers else [])]))
    return out


def measure(folder: Path, settings: list[str], threads: list[int], *, data_dir: str, config: str | None = None,
            bind: str = "cores", pytm_parallel_python: str | None = None, deadline: float | None = None,
            epochs: int | None = None, limits: bool = False, say=print) -> dict:
    """Run the scaling processes into ``folder`` (each killed at ``deadline``, a time.time()); returns and writes
    ``measure.json``: per process its command, the CPUs it was given, its exit status (None: killed at the deadline)
    and the cores in use just before it.

    ``bind="cores"``: a process of n threads may use only the first n CPUs of :func:`cpu_order` (its affinity, which
    its threads inherit), so up to the physical core count no two of its threads share a core. Not OpenMP's own
    binding (``OMP_PROC_BIND``): what it does depends on the order in which the process loads its OpenMP runtimes
    (:mod:`asynctm.affinity`), pyTsetlinMachineParallel's included, where an affinity holds for all of them.
    With ``limits`` the host's limits at the thread counts come first (``host_limits.py``, :data:`LIMITS`; its
    threads where the system puts them)."""
    folder.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))  # a stop still kills the child
    order = cpu_order()
    log: dict = {"bind": bind, "cpu_order": order, "threads": threads, "processes": {}}

    def write():
        (folder / "measure.json").write_text(json.dumps(log, indent=1, sort_keys=True) + "\n")

    def run(cmd: list[str], out: Path, timeout: float | None, cpus: list[int] | None = None) -> int | None:
        with open(out, "w") as sink:
            # its own process group, killed with its workers at the deadline, or when this process is told to stop
            proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, process_group=0,
                                    preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus))
            try:
                return proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                return None
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()

    if limits:
        left = None if deadline is None else deadline - time.time()
        cmd = [sys.executable, str(HERE / "host_limits.py"), "--threads", ",".join(map(str, sorted(set(threads)))),
               "--reps", str(LIMITS_REPS), "--out", str(folder / LIMITS)]
        if left is not None and left < MIN_START_S:
            log["limits"] = {"started": False, "reason": "no time left before the deadline"}
        else:
            say(f"host limits at {sorted(set(threads))} threads")
            rc = run(cmd, folder / "host_limits.txt", None if left is None else max(1.0, left - KILL_GRACE_S))
            log["limits"] = {"started": True, "command": cmd[1:], "returncode": rc}
            say(f"host limits: exit {rc if rc is not None else 'killed at the deadline'}")
        write()
    for name, setting, t, options in jobs(settings, threads, pytm_parallel_python):
        left = None if deadline is None else deadline - time.time()
        if left is not None and left < MIN_START_S:
            say(f"{name}: not started ({left:.0f} s left before the deadline)")
            log["processes"][name] = {"started": False, "reason": "no time left before the deadline"}
            continue
        cpus = order[:t] if bind == "cores" else order
        rows = ROWS.get(setting)
        cmd = [sys.executable, str(HERE / "bench_tm.py"), "--settings", setting, "--data-dir", data_dir,
               "--out-dir", str(folder), "--name", name, "--epochs", str(epochs or EPOCHS.get(setting, 2)),
               *(["--config", config] if config else []),
               *(["--max-train", str(rows[0]), "--max-test", str(rows[1])] if rows else []), *options]
        busy_before = cores_in_use()
        say(f"{name}: on CPUs {cpus}; {busy_before if busy_before is None else round(busy_before, 2)} cores in use "
            "before it")
        rc = run(cmd, folder / f"{name}.txt", None if left is None else max(1.0, left - KILL_GRACE_S), cpus)
        log["processes"][name] = {"started": True, "command": cmd[1:], "cpus": cpus, "returncode": rc,
                                  "cores_in_use_before": busy_before}
        say(f"{name}: exit {rc if rc is not None else 'killed at the deadline'}")
        write()
    write()
    return log


def collect(folder: Path) -> tuple[dict, dict]:
    """The records of a scaling run, its cut settings from their logs, and where the run measured the cores in use
    before each process (``measure.json``), that in place of the lagging load average."""
    if not folder.is_dir():
        raise ScalingError(f"{folder}: no such folder; pass the folder of a scaling run's files")
    per, facts = from_records(folder)
    for log in sorted(folder.glob("*.txt")):
        for setting, impls in from_log(log).items():
            if setting not in per:  # a record is the better source where both exist
                per[setting] = impls
                facts.setdefault("logs", []).append(log.name)
    if not per:
        raise ScalingError(f"{folder}: no scaling_<setting>.json record and no readable log there")
    measured = folder / "measure.json"
    if measured.is_file():
        run = json.loads(measured.read_text(encoding="utf-8"))
        processes = run.get("processes", {})
        for impls in per.values():
            for by_threads in impls.values():
                for r in by_threads.values():
                    stem = r["source"].split(" ", 1)[0].rsplit(".", 1)[0]
                    if (processes.get(stem) or {}).get("cores_in_use_before") is not None:
                        r["load_before"] = processes[stem]["cores_in_use_before"]
        facts["load_measure"] = "logical cores in use over 1 s before the process (/proc/stat)"
        facts["bind"] = run.get("bind")
    else:
        facts["load_measure"] = "1-minute load average before the setting's process (it lags work that just ended)"
    return per, facts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="the scaling run's files (--measure writes them there)")
    ap.add_argument("--out", required=True, help="output path without suffix (.json, .md, .png, .pdf are written)")
    ap.add_argument("--host-note", default=None, help="what the table's title says of the host besides its cores")
    m = ap.add_argument_group("measuring (--measure)")
    m.add_argument("--measure", action="store_true", help="run the scaling processes into the folder first")
    m.add_argument("--data-dir", default="data", help="the pipeline's data folder (bench_tm.py --data-dir)")
    m.add_argument("--config", default=None, help="the pipeline configuration (bench_tm.py --config)")
    m.add_argument("--settings", default="semeval,imdb,apple", help="comma-separated bench_tm settings, in order")
    m.add_argument("--threads", default=None, help="comma-separated thread counts (default: 1, 2, 4, ... up to the "
                                                   "logical cores, and the physical core count)")
    m.add_argument("--epochs", type=int, default=None,
                   help="timed epochs per count (default " + ", ".join(f"{k} {v}" for k, v in EPOCHS.items()) + ")")
    m.add_argument("--bind", choices=BIND, default="cores",
                   help="cores: a count of n threads runs on n CPUs, one per physical core first; none: on all")
    m.add_argument("--pytm-parallel-python", default=None,
                   help="python of pyTsetlinMachineParallel's environment: also time it on apple at each count")
    m.add_argument("--deadline", type=float, default=None, help="a time.time() at which a running process is killed")
    m.add_argument("--limits", action="store_true",
                   help=f"first measure the host's limits at the thread counts (host_limits.py, into {LIMITS})")
    ap.add_argument("--results", default="results",
                    help="the run records, for the bounds' feedback counts (where the folder holds the limits)")
    args = ap.parse_args(argv)
    folder = Path(args.folder)
    try:
        if args.measure:
            from asynctm.provenance import physical_cores

            logical = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
            threads = ([int(t) for t in args.threads.split(",") if t.strip()] if args.threads
                       else ladder(logical, physical_cores()))
            if not threads or min(threads) < 1:
                raise ScalingError(f"--threads {args.threads!r}: give positive thread counts, e.g. 1,2,4")
            settings = [s.strip() for s in args.settings.split(",") if s.strip()]
            measure(folder, settings, list(dict.fromkeys(threads)), data_dir=args.data_dir, config=args.config,
                    bind=args.bind, pytm_parallel_python=args.pytm_parallel_python, deadline=args.deadline,
                    epochs=args.epochs, limits=args.limits)
        per, facts = collect(folder)
        facts.update(bounds(folder, per, Path(args.results), Path(args.data_dir)))
    except (ScalingError, OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.host_note:
        facts["host_note"] = args.host_note
    summary = summarise(per, (facts.get("cpu") or {}).get("logical_cores"))
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
