#!/usr/bin/env python
"""The comparison of ``asynctm`` with other Tsetlin Machine libraries in docs/library.md: feature rows (declared
here, each with where it was checked) and speed rows rendered from one benchmark record of ``bench_tm.py``
(ours, pyTsetlinMachine, tmu and green-tsetlin timed side by side on one host), spliced between the markers
``<!-- library-comparison:start -->`` and ``<!-- library-comparison:end -->``.

    python benchmarks/library_table.py            # rewrite the block in docs/library.md from RECORD
    python benchmarks/library_table.py --check    # does the committed block match? (status 1 if not)
    python benchmarks/library_table.py --record benchmarks/results/other.json --doc /tmp/library.md

The record comes from (the peers' environments first: ``bash benchmarks/setup_tm_peers.sh``)::

    python benchmarks/bench_tm.py --settings apple --epochs 5 --seeds 0 \\
        --peers asynctm,pytm,tmu_cpu,green_tsetlin --data-dir <data> --name peers_apple_<commit>

No number in the block is typed by hand: the speed rows are the record's, and the feature rows name the library
versions they were checked against, which must be the versions the record ran.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RECORD = HERE / "results" / "peers_apple_5406257.json"
DOC = REPO / "docs" / "library.md"
START = "<!-- library-comparison:start -->"
END = "<!-- library-comparison:end -->"
SETTING = "apple"


class TableError(ValueError):
    """A record or document the table cannot be made from; the message is one line naming the fix."""


# --- the feature rows: checked by hand against these versions' API, each with where -------------------------

LIBRARIES = ("asynctm", "pyTsetlinMachine", "tmu", "green-tsetlin")
# The versions the feature rows describe; the record's peers must have run these.
CHECKED = {"pyTsetlinMachine": "0.6.6", "tmu": "0.8.3", "green-tsetlin": "1.1.0"}


SOURCE_PREFIX = {"asynctm": "asynctm: this page", "pyTsetlinMachine": "pyTsetlinMachine {v} `pyTsetlinMachine/tm.py`",
                 "tmu": "tmu {v} (PyPI wheel)", "green-tsetlin": "green-tsetlin {v} (PyPI sdist)"}

FEATURES = [
    {"feature": "scikit-learn estimator API",
     "asynctm": "yes: `TMClassifier`, `TMRegressor`, `Booleanizer`; scikit-learn's estimator checks pass",
     "pyTsetlinMachine": "no: `fit(X, Y, epochs, incremental)`, `predict`; no `get_params`",
     "tmu": "no: `fit(X, Y)` trains one epoch on a uint32 X; no `get_params`",
     "green-tsetlin": "no: `Trainer(tm)`, `set_train_data`, `set_eval_data`, `train()` runs all epochs",
     "source": {"asynctm": "[scikit-learn](#scikit-learn)", "pyTsetlinMachine": "`MultiClassTsetlinMachine`",
                "tmu": "`tmu/models/classification/vanilla_classifier.py`, `TMClassifier.fit` (asserts uint32)",
                "green-tsetlin": "`green_tsetlin/trainer.py`, `Trainer`"}},
    {"feature": "sparse input (scipy.sparse)",
     "asynctm": "yes: CSR packed as it is, never densified",
     "pyTsetlinMachine": "no: dense arrays (`X.flatten()`)",
     "tmu": "yes: the `platform=\"CPU_sparse\"` clause bank takes CSR",
     "green-tsetlin": "yes: `SparseTsetlinMachine`, CSR input",
     "source": {"asynctm": "[Quick start](#quick-start)", "pyTsetlinMachine": "`fit`, `predict`",
                "tmu": "`tmu/models/base.py`, `build_clause_bank` (platforms `CPU`, `CPU_sparse`, `CUDA`); tried "
                       "on CSR",
                "green-tsetlin": "`green_tsetlin/sparse_tsetlin_machine.py`; `green_tsetlin/trainer.py`, "
                                 "`_flexible_set_data`"}},
    {"feature": "NVIDIA GPU",
     "asynctm": "yes: `backend=\"cuda\"` (PyCUDA)",
     "pyTsetlinMachine": "no (PyTsetlinMachineCUDA is another package)",
     "tmu": "yes: `platform=\"CUDA\"` (PyCUDA; without it, the CPU clause bank and a warning)",
     "green-tsetlin": "no: C++ on the CPU (AVX2 or NEON)",
     "source": {"asynctm": "[Builds](#builds)", "pyTsetlinMachine": "no device code",
                "tmu": "`tmu/models/base.py`, `_build_gpu_bank`",
                "green-tsetlin": "`setup.py` (one C++ extension, `-mavx2`); `green_tsetlin/backend.py`"}},
    {"feature": "multithreaded CPU training",
     "asynctm": "yes: `n_threads` (OpenMP), clauses asynchronous",
     "pyTsetlinMachine": "no (pyTsetlinMachineParallel is another package)",
     "tmu": "no: its C clause bank is single-threaded",
     "green-tsetlin": "yes: `Trainer(n_jobs=)`, clause blocks on a thread pool, joined after every example",
     "source": {"asynctm": "[Hyperparameters](#hyperparameters)", "pyTsetlinMachine": "`fit`, one call into its C code",
                "tmu": "`tmu/clause_bank/clause_bank.py` calls `tmulib` through cffi; `tmulib` links no OpenMP or "
                       "pthread",
                "green-tsetlin": "`green_tsetlin/trainer.py`, `n_jobs`; `src/executor.hpp`, `MultiThreadExecutor`"}},
    {"feature": "regression",
     "asynctm": "yes: `TMRegressor`",
     "pyTsetlinMachine": "yes: `RegressionTsetlinMachine`",
     "tmu": "yes: `TMRegressor`",
     "green-tsetlin": "no: classification (and multi-label) only",
     "source": {"asynctm": "[Quick start](#quick-start)", "pyTsetlinMachine": "`RegressionTsetlinMachine`",
                "tmu": "`tmu/models/regression/vanilla_regressor.py`",
                "green-tsetlin": "`green_tsetlin/__init__.py` exports no regression machine"}},
    {"feature": "save and load a trained model",
     "asynctm": "yes: `save(path)`, `TMClassifier.load(path)` (.npz)",
     "pyTsetlinMachine": "state arrays: `get_state()`, `set_state()`; pickling",
     "tmu": "no save or load; pickling works, but an unpickled model fails to predict on an array it predicted "
            "before pickling (its encoding cache keeps the hash, not the data)",
     "green-tsetlin": "yes: `save_state(path)`, `load_state(path)` (.npz)",
     "source": {"asynctm": "[Quick start](#quick-start)", "pyTsetlinMachine": "`get_state`, `__getstate__`",
                "tmu": "`tmu/util/encoded_data_cache.py`, `__getstate__` drops `encoded_data`; tried",
                "green-tsetlin": "`green_tsetlin/tsetlin_machine.py`, `save_state`, `load_state`"}},
    {"feature": "readable rules and their export",
     "asynctm": "yes: `rules()`, `explain(x)`, `export_rules(path)` (JSON), a pure-Python `RuleModel`",
     "pyTsetlinMachine": "inspection only: `ta_action(class, clause, ta)`",
     "tmu": "inspection only: `get_ta_action`, `literal_importance`",
     "green-tsetlin": "yes: `get_ruleset()`, `Predictor` explanations, `export_as_program` (C code)",
     "source": {"asynctm": "[Readable models](#readable-models)", "pyTsetlinMachine": "`ta_action`",
                "tmu": "`tmu/models/classification/vanilla_classifier.py`, `literal_importance`",
                "green-tsetlin": "`green_tsetlin/predictor.py`, `green_tsetlin/ruleset.py`, `green_tsetlin/writers/`"}},
    {"feature": "seeded training",
     "asynctm": "yes: `seed` (any integer in [0, 2^64)); bit for bit on one thread",
     "pyTsetlinMachine": "no seed argument (libc `rand()`; its pcg32 stream is unseeded)",
     "tmu": "`seed`, but not 0: it leaves the xorshift128+ generator at state zero and the first Type I feedback "
            "never ends",
     "green-tsetlin": "`Trainer(seed=)`, but not 0: its clause blocks refuse to initialise",
     "source": {"asynctm": "[Determinism](#determinism)",
                "pyTsetlinMachine": "`fit` (and the mapping in `asynctm.peers`)",
                "tmu": "`tmu/clause_bank/clause_bank.py`, `xorshift128p_seed(seed)`; tried",
                "green-tsetlin": "`src/func_avx2.hpp`, `if(seed == 0) return false;`; tried"}},
]


# --- the record ----------------------------------------------------------------------------------------------

def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def load(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise TableError(f"{_rel(path)} does not exist: run the benchmark of this module's docstring, or pass "
                         "--record") from None
    except json.JSONDecodeError as exc:
        raise TableError(f"{_rel(path)} is not JSON ({exc.msg}, line {exc.lineno}): rewrite it with "
                         "benchmarks/bench_tm.py") from None


# How asynctm.benchmarking.planned_runners labels each peer's rows (a skipped row has its label only).
LABEL_PREFIX = {"asynctm": "asynctm cpu", "pytm": "pytm indexed", "tmu_cpu": "tmu", "green_tsetlin": "green-tsetlin"}


def _timed(r: dict) -> bool:
    return "median_epoch_s" in r and r.get("final_metric") is not None


def rows(record: dict, path: Path) -> dict:
    """The setting and its rows, by role: ``ours`` (CPU, by threads), ``pytm`` (indexed), ``pytm_unindexed``
    (optional), ``tmu``, ``green`` (by threads). A missing row is one line naming the peer and why."""
    where = _rel(path)
    if record.get("generated_by") != "benchmarks/bench_tm.py":
        raise TableError(f"{where}: not a bench_tm.py record (generated_by {record.get('generated_by')!r})")
    setting = next((s for s in record.get("settings", []) if s.get("setting") == SETTING), None)
    if setting is None:
        raise TableError(f"{where}: no '{SETTING}' setting: rerun bench_tm.py with --settings {SETTING}")
    results = [r for r in setting.get("results", []) if _timed(r)]
    skipped = {s["label"]: s.get("reason", "") for s in setting.get("skipped", [])}

    def need(peer: str, found: list[dict]) -> list[dict]:
        if found:
            return found
        why = "; ".join(f"{label}: {reason}" for label, reason in skipped.items()
                        if label.lower().startswith(LABEL_PREFIX[peer]))
        raise TableError(f"{where}: no timed '{peer}' row in setting '{SETTING}'"
                         + (f" (skipped, {why[:200]})" if why else "")
                         + f": rerun bench_tm.py with --peers including {peer}")

    ours = need("asynctm", sorted((r for r in results if r["peer"] == "asynctm"
                                   and r["options"].get("backend") == "cpu"),
                                  key=lambda r: r["options"].get("n_threads") or 0))
    pytm = need("pytm", [r for r in results if r["peer"] == "pytm" and r["options"].get("indexed") is True])
    tmu = need("tmu_cpu", [r for r in results if r["peer"] == "tmu_cpu"])
    green = need("green_tsetlin", sorted((r for r in results if r["peer"] == "green_tsetlin"),
                                         key=lambda r: r["options"].get("n_threads") or 0))
    unindexed = [r for r in results if r["peer"] == "pytm" and r["options"].get("indexed") is False]
    for name, r in (("pyTsetlinMachine", pytm[0]), ("tmu", tmu[0]), ("green-tsetlin", green[0])):
        version = (r.get("metadata") or {}).get("version")
        if version != CHECKED[name]:
            raise TableError(f"{where}: {name} ran version {version}, but the feature rows were checked against "
                             f"{CHECKED[name]}: check them again and update CHECKED in benchmarks/library_table.py")
    return {"setting": setting, "ours": ours, "pytm": pytm[0], "pytm_unindexed": unindexed[0] if unindexed else None,
            "tmu": tmu[0], "green": green}


# --- rendering -----------------------------------------------------------------------------------------------

def _threads(r: dict) -> int:
    return int((r.get("metadata") or {}).get("threads") or r["options"].get("n_threads") or 1)


def _name(r: dict) -> str:
    peer, n = r["peer"], _threads(r)
    if peer == "asynctm":
        return f"**asynctm** (CPU), {n} thread{'s' if n != 1 else ''}"
    if peer == "pytm":
        return "pyTsetlinMachine, " + ("indexed" if r["options"].get("indexed") else "no index")
    if peer == "tmu_cpu":
        return "tmu, `platform=\"CPU\"`"
    if peer == "green_tsetlin":
        return f"green-tsetlin, `n_jobs={n}`"
    return r["label"]


def speed_table(found: dict, record: dict, path: Path) -> list[str]:
    s = found["setting"]
    d, hp, ep = s["dataset"], s["hyperparameters"], s["epochs"]
    cpu = record.get("cpu") or {}
    ours = found["ours"]
    commit = (record.get("git") or {}).get("commit") or "?"
    loads = s.get("load_average_before") or [None], s.get("load_average_after") or [None]
    cores = cpu.get("usable_cores") or cpu.get("logical_cores")
    busy = cores and loads[0][0] is not None and max(loads[0][0], loads[1][0]) >= 0.5 * cores
    out = [f"Speed and accuracy, measured side by side on one host by `benchmarks/bench_tm.py` (record "
           f"[`{_rel(path)}`](../{_rel(path)}), {record.get('date_utc', '?')}, commit `{commit[:7]}`): "
           f"the `{d['source']['dataset']}` dataset (protocol `{d['source']['protocol']}`), {d['n_train']:,} "
           f"training / {d['n_test']:,} test examples, "
           f"{d['n_features']:,} features; {hp['n_clauses']} clauses per class, T = {hp['T']}, s = {hp['s']:g}; "
           f"{ep['warmup']} warm-up epoch, then {ep['timed']} timed epochs round-robin across the implementations, "
           f"seed{'s' if len(s.get('seeds', [])) != 1 else ''} {', '.join(map(str, s.get('seeds', [])))}; "
           f"{cpu.get('model', '?')}, {cores} usable cores, load average (1 min) {loads[0][0]:.2f} before and "
           f"{loads[1][0]:.2f} after"
           + (" (a shared host: the round-robin spreads the other load over every implementation alike)."
              if busy else "."),
           "",
           "| implementation | median s/epoch | CPU s / wall s | test accuracy % after "
           f"{ep['total_per_implementation']} epochs | "
           + " | ".join(f"asynctm {_threads(o)} thread{'s' if _threads(o) != 1 else ''}: speed-up" for o in ours)
           + " |",
           "|---|---|---|---|" + "---|" * len(ours)]
    table = [*ours, found["pytm"], *([found["pytm_unindexed"]] if found["pytm_unindexed"] else []), found["tmu"],
             *found["green"]]
    for r in table:
        ups = " | ".join("" if r["peer"] == "asynctm" else f"{r['median_epoch_s'] / o['median_epoch_s']:.1f}x"
                         for o in ours)
        out.append(f"| {_name(r)} | {r['median_epoch_s']:.3f} | {r['cpu_per_wall']:.2f} | "
                   f"{r['final_metric']:.2f} | {ups} |")
    green = found["green"][0]["metadata"]
    built = (green.get("built") or {}).get("machine") or {}
    trainer = (green.get("built") or {}).get("trainer") or {}
    seeds = ", ".join(map(str, s.get("seeds", [])))
    tmu_seed = (found["tmu"]["metadata"].get("library_arguments") or {}).get("seed")
    machine = ", ".join(f"{k}={v!r}" for k, v in built.items())
    per_class = hp["n_clauses"]
    out += ["",
            "A speed-up is the row's median seconds per epoch over ours"
            + (" (CPU s / wall s below a row's threads: the share of the cores it got on the shared host)" if busy
               else "")
            + ". Each library's epoch is its own call, timed around it: pyTsetlinMachine `fit(X, y, epochs=1, "
            "incremental=True)`, tmu `fit(X, y)` and green-tsetlin its executor's `train_epoch()` (the call "
            "`Trainer.train()` times), these two in worker processes of their own environments (`bash "
            "benchmarks/setup_tm_peers.sh`), the pipe round trip left out. Every library gets the hyperparameters "
            "above, the paper's for this dataset, tuned for none of them. green-tsetlin's machine is "
            f"`TsetlinMachine({machine})`: {per_class} clauses per class x {built.get('n_classes')} classes = "
            f"{built.get('n_clauses')} clauses shared by all classes, each with a learned weight per class (a "
            f"Coalesced Tsetlin Machine), where ours has {per_class} clauses per class of fixed polarity; its "
            f"`Trainer` uses `feedback_type={trainer.get('feedback_type')!r}`. Seeds: ours {seeds}; "
            + (f"tmu `seed={tmu_seed}` and green-tsetlin `Trainer(seed={trainer.get('seed')})`"
               if len(s.get("seeds", [])) == 1 else "tmu's and green-tsetlin's")
            + ": ours + 1, as neither accepts 0 (above)."]
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def feature_table(found: dict) -> list[str]:
    versions = {"asynctm": (found["ours"][0].get("metadata") or {}).get("version"), **CHECKED}
    out = ["| feature | " + " | ".join(f"{lib} {versions[lib]}" if lib != "asynctm" else "asynctm"
                                       for lib in LIBRARIES) + " |",
           "|---|" + "---|" * len(LIBRARIES)]
    for row in FEATURES:
        out.append(f"| {row['feature']} | " + " | ".join(_cell(row[lib]) for lib in LIBRARIES) + " |")
    out += ["", "Where each row was checked (the installed packages' code, and tried where it says so):", ""]
    for row in FEATURES:
        where = [SOURCE_PREFIX[lib].format(v=CHECKED.get(lib)) + ": " + row["source"][lib] for lib in LIBRARIES]
        out.append(f"- {row['feature']}: " + "; ".join(where) + ".")
    return out


def render(record: dict, path: Path) -> str:
    """The block between the markers (markers included), from a record alone."""
    found = rows(record, path)
    note = f"<!-- generated by benchmarks/library_table.py from {_rel(path)}: edit the generator, not this block -->"
    lines = [START, note, ""]
    lines += feature_table(found) + [""] + speed_table(found, record, path)
    lines += ["", END]
    return "\n".join(lines)


def splice(doc: str, block: str, where: str) -> str:
    if doc.count(START) != 1 or doc.count(END) != 1 or doc.index(START) > doc.index(END):
        raise TableError(f"{where}: needs one '{START}' line and one '{END}' line after it around the table")
    head, rest = doc.split(START, 1)
    tail = rest.split(END, 1)[1]
    return head + block + tail


def current_block(doc: str, where: str) -> str:
    splice(doc, "", where)  # the same marker checks
    return START + doc.split(START, 1)[1].split(END, 1)[0] + END


# --- command line ---------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--record", type=Path, default=RECORD, help=f"the benchmark record (default {_rel(RECORD)})")
    p.add_argument("--doc", type=Path, default=DOC, help=f"the page with the markers (default {_rel(DOC)})")
    p.add_argument("--check", action="store_true", help="write nothing; status 1 when the block differs")
    args = p.parse_args(argv)
    try:
        block = render(load(args.record), args.record)
        try:
            doc = args.doc.read_text()
        except FileNotFoundError:
            raise TableError(f"{_rel(args.doc)} does not exist: pass --doc with the page that holds the markers") \
                from None
        if args.check:
            same = current_block(doc, _rel(args.doc)) == block
            print(f"{_rel(args.doc)}: the library comparison {'matches' if same else 'differs from'} "
                  f"{_rel(args.record)}" + ("" if same else ": run python benchmarks/library_table.py"))
            return 0 if same else 1
        new = splice(doc, block, _rel(args.doc))
    except TableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if new != doc:
        from asynctm.io import atomic_open

        with atomic_open(args.doc) as fh:
            fh.write(new)
    print(f"wrote the library comparison into {_rel(args.doc)} from {_rel(args.record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
