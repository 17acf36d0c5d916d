"""Speed-ups on one host: pyTsetlinMachine on a core of a machine, timed beside our builds on that machine.

The paper's speed-ups divide pyTsetlinMachine's time on one core of a machine by its GPU's. Our main records
cannot always give that ratio: every pyTsetlinMachine record ran on a CPU machine and every GPU record on a GPU
machine, and some experiments' CPU-build records ran on other CPU machines than their pyTsetlinMachine records. The
same-host benchmark (``benchmarks/bench_host.py``) times both on one machine: on a GPU machine, in one lease (the GPU
campaign's ``host_peers`` step), our GPU builds while pyTsetlinMachine runs on the other cores; on a CPU machine
(``--cpu-host``), our CPU build on every core once pyTsetlinMachine's runs have ended. Its raw files are
``benchmarks/results/campaign/host_peers_<gpu or cpu_<cpu>>_<time>/<experiment>_<impl>.json``. This module turns them
into one evidence record, ``results/evidence/host_speedups.json`` (its table
``paper_tables/evidence_host_speedups.md``), which the claims (C2) and the speed-up cells of Tables 3 and 5 read
where the main records hold no pair of one host.

Rule (fixed here, before any ratio is read): per experiment, a build of ours (a GPU build, or the CPU build) and a
pyTsetlinMachine run of one host (the runs' ``host_id``), with ``k`` the full epochs both have, the speed-up is
pyTsetlinMachine's mean time over epochs 2 to ``k`` divided by our build's over the same epochs (the first epoch is
left out as everywhere in our tables: config ``claims.warm_up_epochs``); where either has fewer than two full
epochs, the two first epochs are compared, pyTsetlinMachine's estimated from the consecutive parts of it that were
timed (their time per example times the training examples). A run that finished no unit is listed with the step's
reason and gives no ratio.

    python -m asynctm.artifacts.evidence_host --campaign benchmarks/results/campaign \\
        --out results/evidence/host_speedups.json
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from .evidence_common import HEADER, SCHEMA, EvidenceError, _num, _sha256, read_json_object, run_command, write_record
from .evidence_common import provenance as _provenance
from .render import dataset_label

NAME = "host_speedups"
GPU_BUILDS = ("tm_gpu", "tm_gpu_warp")
BUILDS = (*GPU_BUILDS, "tm_cpu")  # ours: the GPU builds on a GPU machine, the CPU build on a CPU machine
CPU_PEERS = ("pytm_indexed", "pytm_nonindexed")
QUESTION = ("How much faster than pyTsetlinMachine (one core) is each build of ours when both run on one machine, "
            "as the paper's speed-ups are measured?")


def _runs(campaign: Path) -> tuple[list[tuple[Path, dict]], list[tuple[Path, dict]]]:
    """(worker records, step manifests) of every host_peers call under ``campaign``."""
    fix = "unpack the GPU campaign's host_peers files again, or move this one out of the campaign folder"
    runs = [(p, read_json_object(p, "host_peers run", fix=fix)) for p in sorted(campaign.glob("host_peers_*/*.json"))]
    manifests = [(p, read_json_object(p, "host_peers manifest", fix=fix))
                 for p in sorted(campaign.glob("host_peers_*.json"))]
    for p, r in runs:
        for key in ("experiment", "impl", "host_id", "units", "parts", "dataset"):
            if key not in r:
                raise EvidenceError(f"{p}: field {key!r} is missing; this is not a host_peers run "
                                    "(benchmarks/bench_host.py)")
    return runs, manifests


def timing(run: dict) -> dict:
    """One run's times: its full epochs' seconds, and its first epoch (estimated from parts where it ran parts)."""
    units = run["units"]
    n_train = int(run["dataset"]["n_train"])
    if int(run["parts"]) > 1:
        rows = sum(int(u["rows"]) for u in units)
        wall = math.fsum(float(u["wall_s"]) for u in units)
        first = wall / rows * n_train if rows else None
        return {"epochs_s": [], "first_epoch_s": first, "parts_timed": len(units), "parts": int(run["parts"]),
                "rows_timed": rows,
                "first_epoch_basis": (f"timed in {len(units)} consecutive parts" if rows == n_train else
                                      f"estimated from {len(units)} of {run['parts']} parts ({rows} of {n_train} "
                                      "examples)") if units else "no part finished"}
    epochs = [float(u["wall_s"]) for u in units]
    return {"epochs_s": epochs, "first_epoch_s": epochs[0] if epochs else None, "parts_timed": None,
            "parts": 1, "rows_timed": None, "first_epoch_basis": "timed" if epochs else "no epoch finished"}


def pair(base: dict, ours: dict) -> dict:
    """The speed-up of ``ours`` over ``base`` by the module's rule."""
    k = min(len(base["epochs_s"]), len(ours["epochs_s"]))
    if k >= 2:
        b = math.fsum(base["epochs_s"][1:k]) / (k - 1)
        o = math.fsum(ours["epochs_s"][1:k]) / (k - 1)
        basis = f"epochs 2-{k}" if k > 2 else "epoch 2"
    else:
        b, o = base["first_epoch_s"], ours["first_epoch_s"]
        basis = "epoch 1" + (f" (pyTsetlinMachine's {base['first_epoch_basis']})" if base["parts"] > 1 else "")
    value = b / o if b and o else None
    return {"value": value, "base_s": b, "ours_s": o, "basis": basis, "epochs_compared": k if k >= 2 else 1}


def build(campaign, reference, config=None) -> dict:
    from ..experiments import plan
    from .reference import load_reference, paper_value

    campaign = Path(campaign)
    runs, manifests = _runs(campaign)
    if not runs:
        raise EvidenceError(f"{campaign}: no host_peers runs (host_peers_*/*.json); run the GPU campaign's host_peers "
                            "step and unpack it")
    try:
        ref = load_reference(reference)
    except (OSError, ValueError) as exc:
        raise EvidenceError(f"{reference}: the paper's numbers cannot be read ({exc}); pass --reference") from None
    hosts: dict[str, dict] = {}
    sources = []
    for p, r in runs:
        if r["experiment"] not in config["experiments"]:
            raise EvidenceError(f"{p}: experiment {r['experiment']!r} is not in the config; pass the campaign's config "
                                "with --config")
        sources.append({"path": p.as_posix(), "sha256": _sha256(p)})
        h = hosts.setdefault(r["host_id"], {"host_id": r["host_id"], "cpu_model": None, "logical_cores": None,
                                            "gpu": None, "calls": set(), "experiments": {}})
        h["calls"].add(p.parent.name)
        h["cpu_model"] = h["cpu_model"] or (r.get("cpu") or {}).get("model")
        h["logical_cores"] = h["logical_cores"] or r.get("logical_cores")
        if r.get("gpu"):
            h["gpu"] = r["gpu"].get("name")
        t = timing(r)
        t.update(path=p.as_posix(), params=r.get("params"), cpu_asked=r.get("cpu_asked"),
                 cpu_affinity=r.get("cpu_affinity"), backend=r.get("backend"),
                 cpu_over_wall=(math.fsum(float(u["cpu_s"]) for u in r["units"])
                                / math.fsum(float(u["wall_s"]) for u in r["units"])) if r["units"] else None,
                 max_load_1min=max((u["load"][0] for u in r["units"] if u.get("load")), default=None),
                 stopped=r.get("stopped") or (
                     "stopped at the call's end in epoch {epoch}{part}, started {started_utc}".format(
                         epoch=r["unit_running"].get("epoch"), started_utc=r["unit_running"].get("started_utc"),
                         part=f" part {r['unit_running'].get('part')}" if int(r["parts"]) > 1 else "")
                     if isinstance(r.get("unit_running"), dict) else None))
        runs_of = h["experiments"].setdefault(r["experiment"], {})
        earlier = runs_of.get(r["impl"])
        # Of two calls' runs of one host, the one with more units timed
        if earlier is None or len(r["units"]) > earlier["units"]:
            runs_of[r["impl"]] = {**t, "units": len(r["units"])}
    for p, m in manifests:
        sources.append({"path": p.as_posix(), "sha256": _sha256(p)})
        folder = (m.get("host_peers") or {}).get("folder", "")
        for skipped in m.get("skipped") or []:
            name, _, impl = str(skipped.get("run", "")).partition("/")
            if name not in config["experiments"]:
                raise EvidenceError(f"{p}: skipped run {skipped.get('run')!r} names no experiment of the config; pass "
                                    "the campaign's config with --config")
            for h in hosts.values():
                if Path(folder).name in h["calls"]:
                    h["experiments"].setdefault(name, {}).setdefault(impl, {
                        "epochs_s": [], "first_epoch_s": None, "parts": None, "path": p.as_posix(), "units": 0,
                        "stopped": f"not timed: {skipped.get('reason')} (stopped at the call's end before its first "
                                   "unit ended)"})
    out_hosts = []
    for h in hosts.values():
        h["calls"] = sorted(h["calls"])
        for name, impls in h["experiments"].items():
            source = "Table 5" if plan.task(config, name) == "regression" else "Table 3"
            speedups = {}
            for build_ in BUILDS:
                for base in CPU_PEERS:
                    if build_ in impls and base in impls and impls[base].get("parts") is not None:
                        speedups[f"{build_}/{base}"] = pair(impls[base], impls[build_])
            impls["speedups"] = speedups
            paper = paper_value(ref, source, name, "tm_gpu", "speedup")[0]
            impls["paper_speedup"] = float(paper) if math.isfinite(paper) else None
            impls["paper_source"] = source
        out_hosts.append(h)
    return {"schema": SCHEMA, "kind": "host_speedups", "name": NAME, "question": QUESTION,
            "rule": __doc__.split("\n\n")[2].replace("\n", " "),
            "provenance": {**_provenance("host_speedups", None, (Path(__file__),),
                                         program="asynctm.artifacts.evidence_host"), "sources": sources},
            "hosts": out_hosts}


def load(results_dir) -> dict | None:
    """``<results>/evidence/host_speedups.json``, or None where there is none (the smoke scale's records)."""
    path = Path(results_dir) / "evidence" / f"{NAME}.json"
    fix = f"rebuild it (python -m asynctm.artifacts.evidence_host --out {path})"
    return read_json_object(path, "evidence record", fix=fix) if path.is_file() else None


def lookup(ev: dict | None, experiment: str, build_: str, baseline: str) -> dict | None:
    """The same-host speed-up of ``build_`` over ``baseline`` on ``experiment`` (the host with the most timed
    epochs of the two), with the host's words, or None."""
    best = None
    for h in (ev or {}).get("hosts", []):
        s = ((h.get("experiments") or {}).get(experiment) or {}).get("speedups", {}).get(f"{build_}/{baseline}")
        if s and s.get("value"):
            host = (f"{h.get('cpu_model') or 'unknown CPU'} ({h.get('logical_cores')} cores, "
                    f"{h.get('gpu') or 'no GPU'}, host {str(h.get('host_id'))[:12]})")
            if best is None or s.get("epochs_compared", 0) > best.get("epochs_compared", 0):
                best = {**s, "host": host}
    return best


def untimed(ev: dict | None, experiment: str, build_: str, baseline: str) -> str:
    """Where :func:`lookup` found no such speed-up: why the same-host timing run has none of ``build_`` over
    ``baseline`` on ``experiment`` where it ran that experiment ('' where it did not)."""
    for h in (ev or {}).get("hosts", []):
        runs = (h.get("experiments") or {}).get(experiment)
        if not runs:
            continue
        missing = [impl for impl in (baseline, build_) if not (runs.get(impl) or {}).get("first_epoch_s")]
        if missing:
            why = " or ".join(f"{impl} ({(runs.get(impl) or {}).get('stopped') or 'not run'})" for impl in missing)
            return f"the same-host timing run (evidence_{NAME}.md) has no time of {why}"
    return ""


def render_host_speedups(ev: dict, source: str) -> str:
    lines = [HEADER.format(source=source), "", "# Speed-ups on one host: pyTsetlinMachine beside our builds", "",
             ev["question"], "", ev["rule"], ""]
    for h in ev["hosts"]:
        if h.get("gpu"):
            lines += [f"## {h['gpu']} with {h['cpu_model']} ({h['logical_cores']} logical cores)", "",
                      "pyTsetlinMachine ran one process per core, each pinned to a core of its own, all at once, while "
                      "the GPU builds trained one after the other on another core.", ""]
        else:
            lines += [f"## {h['cpu_model']} ({h['logical_cores']} logical cores, no GPU)", "",
                      "pyTsetlinMachine ran one process per core, each pinned to a core of its own, as many at once as "
                      f"the machine has cores; then our CPU build trained alone on all {h['logical_cores']}, one "
                      "experiment after the other.", ""]
        lines += ["| dataset | run | epochs timed | epoch 1 (s) | epochs 2 to last, mean (s) | note |",
                  "|---|---|---:|---:|---:|---|"]
        for name in sorted(h["experiments"], key=dataset_label):
            impls = h["experiments"][name]
            for impl in (*CPU_PEERS, *BUILDS):
                t = impls.get(impl)
                if not t:
                    continue
                later = t["epochs_s"][1:]
                note = t.get("first_epoch_basis", "") if t.get("parts") and t["parts"] > 1 else ""
                if not t["epochs_s"] and not t.get("first_epoch_s"):
                    note = t.get("stopped") or "not timed"
                elif t.get("stopped", "").startswith("stopped at the call's end"):
                    note = "; ".join(n for n in (note, t["stopped"]) if n)
                lines.append(f"| {dataset_label(name)} | {impl} | {len(t['epochs_s'])} | "
                             f"{_num(t.get('first_epoch_s'), 3)} | "
                             f"{_num(math.fsum(later) / len(later), 3) if later else '–'} | {note} |")
        lines += ["", "| dataset | build | over | speed-up | basis | paper (its CUDA TM) |",
                  "|---|---|---|---:|---|---:|"]
        for name in sorted(h["experiments"], key=dataset_label):
            impls = h["experiments"][name]
            for key, s in impls["speedups"].items():
                build_, base = key.split("/")
                paper = impls.get("paper_speedup")
                lines.append(f"| {dataset_label(name)} | {build_} | {base} | "
                             f"{_num(s['value'], 1) + '×' if s['value'] else '–'} | {s['basis']} | "
                             f"{_num(paper, 1) + '× (' + impls['paper_source'] + ')' if paper else '–'} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctm.artifacts.evidence_host", description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", default="benchmarks/results/campaign",
                    help="the GPU campaign's unpacked files (host_peers_*/ folders)")
    ap.add_argument("--reference", default="paper_tables/reference/paper_numbers.csv")
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--out", required=True, help=f"the evidence record, named {NAME}.json")
    return run_command(_command, ap.parse_args(argv))


def _command(args) -> None:
    if Path(args.out).stem != NAME:
        raise EvidenceError(f"--out {args.out}: the file must be named {NAME}.json")
    from ..config_check import load_config

    write_record(args.out, build(args.campaign, args.reference, load_config(args.config)))


if __name__ == "__main__":
    sys.exit(main())
