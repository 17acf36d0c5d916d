"""Evidence on the paper's speed-ups read against its own times: what pyTsetlinMachine epoch does each speed-up imply,
and is that the epoch pyTsetlinMachine takes on one core? An evidence record as :mod:`asynctm.artifacts.evidence`
(schema, kind, name, question, provenance; rendered by its ``render`` command), of kind ``implied_times``.

A speed-up ``S`` of the CUDA TM over pyTsetlinMachine is the ratio of their per-epoch times, so a CUDA epoch of ``t``
seconds implies a pyTsetlinMachine epoch of ``S t``. Two CUDA times stand in for ``t``:

- the paper's own Table 4 time of its CUDA TM (on Google Colab's GPU, not the Tesla V100 of Tables 3 and 5);
- the authors' CUDA code (PyTsetlinMachineCUDA) timed on our GPUs on the same preparation
  (``results/evidence/table4_same_gpu.json``: the median over the GPUs). A newer GPU runs it faster than the paper's
  V100 did, so ``S t`` is then a lower bound of the epoch the speed-up implies.

Beside them, pyTsetlinMachine's epoch measured on one core: on a GPU machine's CPU in the same-host timing run
(``results/evidence/host_speedups.json``: the mean of its epochs after the first, the first epoch where fewer ran), and
in our main records (every quiet record of the baseline's main setting, the mean of each record's epochs after the
first, averaged over the records). The baseline is pyTsetlinMachine's indexed machine for Table 3 (its caption says
so) and its non-indexed machine for Table 5, which names none (pyTsetlinMachine's regression machine has no index).

Rule (the claims' factor for a ratio of times taken on other hardware, config ``claims.speedup.within_factor``, with
its reason): a speed-up *fits* where the epoch it implies with the authors' code lies within that factor of an epoch
measured; else it implies an epoch that many times longer (or shorter) than pyTsetlinMachine takes.

    python -m asynctm.artifacts.evidence_implied --results results \\
        --out results/evidence/paper_speedups_implied.json [--config config/config.yaml]

Bad input (a missing or unreadable evidence record, reference table or configuration) stops with one line naming the
file and the fix, and writes nothing.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

from ..store import busy, steady_epoch_time
from .evidence_common import (
    HEADER,
    SCHEMA,
    EvidenceError,
    _sha256,
    check_out,
    folder_records,
    main_params,
    read_config,
    read_json_object,
    read_reference,
    run_command,
    write_record,
)
from .evidence_common import provenance as _provenance
from .render import dataset_label

NAME = "paper_speedups_implied"
DEFAULT_REFERENCE = Path("paper_tables/reference/paper_numbers.csv")
BASELINE = {"Table 3": "pytm_indexed", "Table 5": "pytm_nonindexed"}
SOURCES = ("host_speedups", "table4_same_gpu")


def _sources(results: Path) -> tuple[dict, dict]:
    """The evidence records this one reads: their contents, and their paths (relative to ``results``) and sha256."""
    out, where = {}, {}
    for name in SOURCES:
        path = results / "evidence" / f"{name}.json"
        out[name] = read_json_object(path, "evidence record", fix=f"build {name} first (docs/results.md)")
        where[name] = {"path": f"evidence/{name}.json", "sha256": _sha256(path)}
    return out, where


def same_host_epoch(host_speedups: dict, experiment: str, baseline: str) -> dict | None:
    """The baseline's epoch in the same-host timing run on a GPU machine: the mean of its timed epochs after the first
    (the host with the most), or its first epoch where fewer than two were timed."""
    best = None
    for h in host_speedups.get("hosts", []):
        if not h.get("gpu"):  # a CPU machine's run: no GPU time beside it
            continue
        run = ((h.get("experiments") or {}).get(experiment) or {}).get(baseline) or {}
        epochs = [float(x) for x in run.get("epochs_s") or []]
        if len(epochs) >= 2:
            value, basis = steady_epoch_time(epochs), f"epochs 2-{len(epochs)}"
        elif run.get("first_epoch_s"):
            value, basis = float(run["first_epoch_s"]), f"epoch 1 ({run.get('first_epoch_basis') or 'timed'})"
        else:
            continue
        host = f"{h.get('cpu_model') or 'unknown CPU'} ({h.get('logical_cores')} cores, beside an {h.get('gpu')})"
        if best is None or len(epochs) > best["epochs"]:
            best = {"seconds": value, "basis": basis, "epochs": len(epochs), "host": host,
                    "host_id": str(h.get("host_id"))[:12]}
    return best


def records_epoch(results: Path, config: dict, config_path, experiment: str, baseline: str) -> dict | None:
    """The baseline's epoch in our main records: per quiet record, the mean of its epochs after the first; their mean
    over the records, with the hosts (CPU model and cores) they ran on."""
    params = main_params(config, config_path, experiment, baseline)
    folder = results / experiment / baseline / params
    if not folder.is_dir():
        return None
    values, hosts, left_out = [], set(), 0
    for _, rec in folder_records(folder, results):
        prov = rec.get("provenance") or {}
        times = [float(e["train_s"]) for e in rec["epochs"] if e.get("train_s") is not None]
        if len(times) < 2:  # no epoch after the first
            continue
        if busy(prov.get("load_average_1min_at_end"), prov.get("logical_cores")):
            left_out += 1
            continue
        values.append(steady_epoch_time(times))
        hosts.add(f"{prov.get('cpu_model') or 'unknown CPU'} ({prov.get('logical_cores')} cores)")
    if not values:
        return None
    return {"seconds": float(np.mean(values)), "records": len(values), "busy_left_out": left_out,
            "params": params, "hosts": sorted(hosts)}


def authors_epoch(same_gpu: dict, experiment: str) -> dict | None:
    """The authors' CUDA code's epoch on our GPUs (table4_same_gpu): the median over the GPUs, and each."""
    rows = [r for r in same_gpu.get("rows", []) if r.get("dataset") == experiment and r.get("pytm_cuda_s")]
    if not rows:
        return None
    return {"seconds": statistics.median(float(r["pytm_cuda_s"]) for r in rows),
            "gpus": {r["gpu"]: float(r["pytm_cuda_s"]) for r in rows}}


def judge(implied: float | None, measured: list[float], factor: float) -> dict:
    """Whether ``implied`` lies within ``factor`` of one of the ``measured`` epochs; the ratio to the nearest."""
    measured = [m for m in measured if m]
    if implied is None or not measured:
        return {"verdict": "not testable", "ratio": None}
    ratio = min((implied / m for m in measured), key=lambda r: abs(math.log(r)))
    return {"verdict": "fits" if 1 / factor <= ratio <= factor else "does not fit", "ratio": ratio}


def build_implied(results, reference=DEFAULT_REFERENCE, config="config/config.yaml") -> dict:
    """The ``implied_times`` evidence record (module docstring)."""
    results = Path(results)
    cfg = read_config(config)
    try:
        factor = float(cfg["claims"]["speedup"]["within_factor"])
        factor_reason = " ".join(str(cfg["claims"]["speedup"]["reason"]).split())
    except (KeyError, TypeError, ValueError):
        raise EvidenceError(f"{config}: claims.speedup.within_factor (and its reason) is missing or not a number; "
                            "pass --config config/config.yaml") from None
    frame = read_reference(reference, "; pass --reference paper_tables/reference/paper_numbers.csv")
    sources, where = _sources(results)
    table4 = {r.dataset: float(r.mean) for r in frame[(frame["implementation"] == "tm_gpu")
                                                      & (frame["metric"] == "train_time")].itertuples()}
    rows = []
    for r in frame[(frame["implementation"] == "tm_gpu") & (frame["metric"] == "speedup")].itertuples():
        if r.source not in BASELINE:
            continue
        experiment, baseline, speedup = r.dataset, BASELINE[r.source], float(r.mean)
        authors = authors_epoch(sources["table4_same_gpu"], experiment)
        same_host = same_host_epoch(sources["host_speedups"], experiment, baseline)
        recs = records_epoch(results, cfg, config, experiment, baseline)
        implied_t4 = speedup * table4[experiment] if experiment in table4 else None
        implied_authors = speedup * authors["seconds"] if authors else None
        measured = [m["seconds"] for m in (same_host, recs) if m]
        rows.append({"experiment": experiment, "source": r.source, "baseline": baseline, "speedup": speedup,
                     "paper_cuda_s": table4.get(experiment), "implied_by_paper_time_s": implied_t4,
                     "authors_cuda": authors, "implied_by_authors_code_s": implied_authors,
                     "measured_same_host": same_host, "measured_records": recs,
                     "with_paper_time": judge(implied_t4, measured, factor),
                     "with_authors_code": judge(implied_authors, measured, factor)})
    if not rows:
        raise EvidenceError(f"{reference}: no speed-up of tm_gpu from Table 3 or Table 5; pass the paper's numbers")
    return {"schema": SCHEMA, "kind": "implied_times", "name": NAME,
            "question": "What pyTsetlinMachine epoch does each of the paper's speed-ups imply, read against the "
                        "paper's own Table 4 CUDA time and against the authors' CUDA code timed on our GPUs, and is it "
                        "the epoch pyTsetlinMachine takes on one core?",
            "provenance": _provenance("the paper's speed-ups read against its Table 4 times, the authors' CUDA code "
                                      "on our GPUs and pyTsetlinMachine's measured epochs", None, (Path(__file__),),
                                      "asynctm.artifacts.evidence_implied"),
            "sources": where, "within_factor": factor,
            "within_factor_reason": factor_reason, "rows": rows}


def _s(x) -> str:
    if x is None:
        return "–"
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def _ratio(j: dict) -> str:
    return "–" if j["ratio"] is None else f"{j['ratio']:.2g}× ({j['verdict']})"


def render_implied(ev: dict, source: str) -> str:
    md = [HEADER.format(source=source), "", f"#### Evidence (the paper's speed-ups): {ev['question']}", "",
          "Per-epoch seconds. Implied: the paper's speed-up times a CUDA epoch (the paper's Table 4 time; the authors' "
          "code on our GPUs, a lower bound of the V100's). Measured: pyTsetlinMachine on one core, in the same-host "
          "timing run and in our main records. Implied over measured: against the nearer of the two measured epochs; "
          f"it fits within a factor of {ev['within_factor']:g} either way.", "",
          "| data | paper's speed-up (baseline) | paper's CUDA epoch (Table 4) | implied | authors' CUDA code on our "
          "GPUs | implied | pyTsetlinMachine measured: same host | our records | implied over measured: with Table 4 "
          "| with the authors' code |",
          "|---|---|---:|---:|---:|---:|---|---|---|---|"]
    for r in ev["rows"]:
        sh, rec, au = r["measured_same_host"], r["measured_records"], r["authors_cuda"]
        same = "–" if not sh else f"{_s(sh['seconds'])} ({sh['basis']}; {sh['host']})"
        ours = "–" if not rec else (f"{_s(rec['seconds'])} ({rec['records']} records, {rec['params']}; "
                                    f"{', '.join(rec['hosts'])})")
        gpus = "–" if not au else f"{_s(au['seconds'])} ({', '.join(au['gpus'])})"
        md.append(f"| {dataset_label(r['experiment'])} | {r['speedup']:g}× over {r['baseline']} ({r['source']}) | "
                  f"{_s(r['paper_cuda_s'])} | {_s(r['implied_by_paper_time_s'])} | {gpus} | "
                  f"{_s(r['implied_by_authors_code_s'])} | {same} | {ours} | {_ratio(r['with_paper_time'])} | "
                  f"**{_ratio(r['with_authors_code'])}** |")
    md += ["", f"The factor ({ev['within_factor']:g}), from the speed-up rule of the claims: "
           f"{ev['within_factor_reason']} Table 3's baseline is "
           "pyTsetlinMachine's indexed machine (its caption); Table 5 names none, and pyTsetlinMachine's regression "
           "machine has no index, so its non-indexed machine stands there. The paper's Table 4 times ran on Google "
           "Colab's GPU, its speed-ups on a Tesla V100 with a Xeon Platinum 8168. Nothing here is fitted or chosen.",
           ""]
    return "\n".join(md)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctm.artifacts.evidence_implied",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="our records, and the evidence records under <results>/evidence")
    ap.add_argument("--out", required=True, help=f"the evidence record, named {NAME}.json")
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--reference", default=str(DEFAULT_REFERENCE))
    return run_command(_command, ap.parse_args(argv))


def _command(args) -> None:
    check_out(args.out, NAME)
    write_record(args.out, build_implied(args.results, args.reference, args.config))


if __name__ == "__main__":
    sys.exit(main())
