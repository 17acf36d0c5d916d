"""What the GPU machine has measured, read back for the training steps: threads per clause and run times.

``--threads-per-clause auto`` (the ``sweeps`` and ``paper`` steps) chooses, per experiment, between one thread
per clause (the paper's design, implementation ``tm_gpu``) and a warp of 32 (``tm_gpu_warp``; kernels/README.md,
"Threads per clause"), whose runs go to their own record folders, from the GPU tests
and the benchmark of the same code: of this commit, or of another whose kernels and backends are the same file
for file (:func:`asynctm.provenance.code_digests`, which the GPU tests' manifests and the benchmark's records
keep). The first call of a lease has just run them on that machine (their work folders stay there while it is
warm), or an earlier lease did and they were unpacked into the checkout:

1. No evidence (neither the tests nor the benchmark of this code are found): the step's default (one thread,
   ``tm_gpu``, unless ``--threads-per-clause`` names a number).
2. The GPU tests of this code did not pass (or did not finish): one thread everywhere. A missed ``learning`` bar
   alone (a threshold on how well a small model learns, not a rule) does not count as failing here
   (:func:`tests_sound`): rule 3 then compares the builds' accuracy on real data.
3. The warp build's accuracy (or F1) after the benchmark's epochs, mean over seeds, was more than
   :data:`ACCURACY_POINTS` below both the one-thread build's and PyTsetlinMachineCUDA's on some setting: one thread
   everywhere, as its result is then suspect. Regression settings (MAE oscillates) count for speed only.
4. Otherwise an experiment the benchmark measured takes the warp where its median epoch was shorter. One it did
   not measure takes the warp where a measured setting with as few literal words per example or fewer was
   faster with it and none with as many or more was slower (a warp splits a clause's words: it pays off as
   they grow). A setting where the warp build failed and the one-thread build ran counts as slower.
5. The ``paper`` step keeps an experiment's main setting on the build of its recorded seeds (the folder they are
   in: ``tm_gpu`` or ``tm_gpu_warp``), so that the table cell that has seeds is completed first; the ``sweeps``
   step keeps a sweep on the build of its recorded points (the most common where they differ), so that the points
   still missing join the line that has the most (each build is a line of its own). A tie goes to one thread, in
   every call. Rule 5 comes first, and it holds without ``--threads-per-clause`` as well (then rules 1-4 give way
   to the default, one thread): a call that names no build never starts a second copy of a recorded cell in the
   other build. Only a number (``--threads-per-clause 1`` or ``32``) overrides it.

:func:`bench_estimate_s` estimates a run's seconds from the benchmark (of the same GPU where there is one), for
runs no record of the same threads per clause can estimate.
"""

from __future__ import annotations

import json
import math
import statistics
import types
from collections import Counter
from datetime import datetime
from pathlib import Path

from ..experiments import plan

ACCURACY_POINTS = 1.0
WARP = plan.WARP
# The benchmark's name for our build at k threads per clause (asynctm.campaign.bench.OURS_GPU, inverted).
BENCH_IMPL = {1: "tm_gpu", WARP: "tm_gpu_warp"}
# A run's seconds beyond its epochs: a Python process, PyCUDA's context, the dataset's load.
RUN_OVERHEAD_S = 10.0
ESTIMATE_MARGIN = 1.15
# An estimate from another GPU's benchmark (an H100's memory is slower than an H200's): only to decide whether a
# run is started; a run that proves slower pauses at the step's end (asynctm.experiments.run, stop_at).
OTHER_GPU_FACTOR = 1.5


def bench_started(rec: dict, manifests: dict[str, str] | None = None) -> str:
    """When a GPU benchmark record was made, as ``YYYY-MM-DDTHH:MM:SSZ``, for ordering records: its
    ``started_utc``; for a record older than that field, the start of the bench step that lists it in ``manifests``
    (:func:`bench_manifest_starts`), else its date (which sorts before every time of that day)."""
    return rec.get("started_utc") or (manifests or {}).get(rec.get("name") or "") or rec.get("date_utc") or ""


def bench_manifest_starts(folder: Path) -> dict[str, str]:
    """``{record name: start of the bench step that made it}`` from the bench steps' manifests in ``folder``
    (``benchmarks/results/campaign``)."""
    out = {}
    for _, man in json_files([folder], "bench_*.json"):
        try:  # the step's stamp, e.g. 20261126T114258Z
            iso = datetime.strptime(str(man.get("started_utc")), "%Y%m%dT%H%M%SZ").strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            continue
        for done in man.get("done") or []:
            out.setdefault(Path(done).stem, iso)
    return out


def json_files(folders, pattern: str) -> list[tuple[Path, dict]]:
    """``(path, parsed JSON)`` of the files matching ``pattern`` in each folder, in reverse order of their names (the
    newest stamp first among files of one GPU: a stamp follows the GPU's name); unreadable files are passed over."""
    out = []
    for folder in folders:
        for path in sorted(Path(folder).glob(pattern), reverse=True):
            try:
                out.append((path, json.loads(path.read_text())))
            except (OSError, ValueError):
                continue
    return out


def sibling_work(step, name: str) -> Path:
    """Where the step ``name`` of this lease left its files on this machine (the work folders share a parent)."""
    return step.work.parent / name


def checkout_view(tree: Path, name: str = "", config: dict | None = None, gpu: str | None = None,
                  code: dict | None = None):
    """A stand-in for a step that reads only the checkout ``tree`` (here, not on the GPU machine): what this module
    and the steps' estimates read. Its work folder, and the sibling folders where a GPU machine's steps leave their
    results, lie in a folder that does not exist; its staged folder is the checkout's (the datasets' sizes)."""
    from . import STAGE_DIR

    return types.SimpleNamespace(name=name, work=Path(tree) / ".campaign-checkout-none" / (name or "step"),
                                 campaign_dir=Path(tree) / STAGE_DIR,
                                 tree=Path(tree), config=config or {}, gpu={"name": gpu} if gpu else None,
                                 threads={}, campaign={"source": {}}, code=code)


def source_commit(step) -> str | None:
    """The commit the staged campaign was made from (None: unknown)."""
    return (step.campaign.get("source") or {}).get("commit") or None


def same_code(step, commit: str | None, code: dict | None) -> bool:
    """Whether results made at ``commit`` with the code digests ``code`` are of the code this step runs: the
    same commit, or the same kernels and backends file for file."""
    mine = getattr(step, "code", None)
    return bool(commit and commit == source_commit(step)) or bool(code and mine and code == mine)


def gpu_tests_results(step) -> list[dict]:
    """The ``pytest`` entries of the GPU tests' manifests of this code (this machine's first)."""
    folders = [sibling_work(step, "gpu_tests"), step.tree]
    return [m["pytest"] for _, m in json_files([f / "benchmarks/results/campaign" for f in folders],
                                                  "gpu_tests_*.json")
            if same_code(step, (m.get("source") or {}).get("commit"), m.get("code")) and "pytest" in m]


def tests_sound(result: dict) -> bool:
    """Whether one ``pytest -m gpu`` run (a manifest's ``pytest``) vouches for the GPU builds: it passed, or only
    ``learning`` bars failed (a threshold on how well a small model learns, ``pyproject.toml``), each on its
    assertion, with every process finished. A broken rule, an exception, an error or a crash never counts."""
    if result.get("returncode") == 0:
        return True
    failed = result.get("failed") or []
    return (result.get("returncode") == 1 and bool(failed)
            and all(f.get("learning") and f.get("kind") == "assertion" for f in failed))


def gpu_tests_verdict(step) -> bool | None:
    """True: ``pytest -m gpu`` of this code passed, learning bars aside (:func:`tests_sound`); False: it ran and
    did not; None: not found."""
    found = gpu_tests_results(step)
    if not found:
        return None
    return any(tests_sound(r) for r in found)


def failed_gpu_tests(step, sound: bool) -> list[str]:
    """The tests that failed in this code's GPU test runs that vouch for the builds (``sound``: only learning bars
    were missed there) or that do not; their ids, each once, sorted."""
    return sorted({f["test"] for r in gpu_tests_results(step) if tests_sound(r) == sound
                   for f in r.get("failed") or []})


def bench_files(folders) -> list[dict]:
    """The GPU benchmark's records (``gpu_*.json`` of :mod:`.bench`) in ``folders``, each once (by name: the first
    folder's)."""
    out: dict[str, dict] = {}
    for path, rec in json_files(folders, "gpu_*.json"):
        if isinstance(rec, dict) and isinstance(rec.get("settings"), list):
            out.setdefault(rec.get("name") or path.stem, rec)
    return list(out.values())


def bench_records(step, this_code: bool = True) -> list[dict]:
    """The GPU benchmark's records (``asynctm.campaign.bench``), this machine's first; with ``this_code`` only
    those of this code (:func:`same_code`), else those of every code, this GPU's first."""
    gpu = (step.gpu or {}).get("name")
    out = bench_files([sibling_work(step, "bench") / "benchmarks/results", step.tree / "benchmarks/results"])
    if this_code:
        return [rec for rec in out if same_code(step, (rec.get("git") or {}).get("commit"), rec.get("code"))]
    return sorted(out, key=lambda rec: not gpu or (rec.get("gpu") or {}).get("name") != gpu)  # stable


def literal_words(step, name: str) -> int | None:
    """32-bit words of literals per example in an experiment (its features, and their negations where
    appended), from the dataset's meta.json: the staged one, else the one the config's ``data_dir`` holds (so that
    ``remaining`` run before ``stage`` chooses as the steps will); None where neither is there."""
    try:
        exp = plan.experiment(step.config, name)
    except (plan.PlanError, KeyError, TypeError):
        return None
    rel = Path("processed") / exp["dataset"] / exp["protocol"] / "meta.json"
    data_dir = Path(step.config.get("data_dir") or "data")
    for meta in (step.campaign_dir / "data" / rel, Path(step.tree) / data_dir / rel):
        try:
            features = int(json.loads(meta.read_text())["n_features"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        return math.ceil(features * (2 if exp.get("append_negated", True) else 1) / 32)
    return None


def warp_evidence(step) -> dict[str, dict]:
    """Per benchmarked setting of this code (the newest record that compared both builds there): whether the
    warp build was faster, whether its metric was acceptable, and the numbers."""
    out: dict[str, dict] = {}
    for rec in bench_records(step):
        for s in rec["settings"]:
            res = s.get("results") or {}
            one, warp = res.get("tm_gpu"), res.get("tm_gpu_warp")
            if s.get("setting") in out or not one or not one.get("median_epoch_s"):
                continue
            failed = (s.get("skipped") or {}).get("tm_gpu_warp")
            if failed:  # the warp build failed where the one-thread build ran: slower, as far as choosing goes
                out[s["setting"]] = {"one_s": one["median_epoch_s"], "warp_s": None, "faster": False,
                                     "accurate": True, "metric": s.get("metric"), "failed": failed}
                continue
            if not warp or not warp.get("median_epoch_s"):
                continue
            entry = {"one_s": one["median_epoch_s"], "warp_s": warp["median_epoch_s"],
                     "faster": warp["median_epoch_s"] < one["median_epoch_s"], "accurate": True,
                     "metric": s.get("metric")}
            if s.get("task") != "regression" and warp.get("final_metric") is not None:
                refs = [r["final_metric"] for r in (one, res.get("pytm_cuda"))
                        if r and r.get("final_metric") is not None]
                floor = min(refs) - ACCURACY_POINTS
                entry.update(warp_metric=warp["final_metric"], floor=floor, accurate=warp["final_metric"] >= floor)
            out[s["setting"]] = entry
    return out


def recorded_threads(step, name: str, params: list[str]) -> int | None:
    """Threads per clause of the recorded GPU seeds of an experiment's settings ``params``, by the build whose
    folder holds them (tm_gpu: one, tm_gpu_warp: a warp; None: no record; the most common if they differ, one
    thread on a tie)."""
    root = Path(plan.results_root(step.config)) / name
    found: dict[str, int] = {}  # a record unpacked into the checkout and left in the work folder counts once
    for base in (step.tree, step.work):
        for impl, k in plan.GPU_THREADS_PER_CLAUSE.items():
            for p in params:
                for path in sorted((base / root / impl / p).glob("seed*.json")):
                    found[f"{impl}/{p}/{path.name}"] = k
    counts = Counter(found.values())
    return max(counts, key=lambda k: (counts[k], -k)) if counts else None


def kept_settings(config: dict, name: str, keep: str) -> tuple[list[str], str]:
    """The settings whose recorded build an experiment keeps (``keep``: ``main``, its main setting; ``sweep``,
    its sweep's GPU points), and their words for the log."""
    if keep == "main":
        return [plan.main_params(config, name, "tm_gpu")], "as its recorded seeds of the main setting"
    if keep == "sweep":
        if name not in config.get("sweeps", {}):
            return [], ""
        return plan.sweep_params(plan.sweep_points(config, name), "tm_gpu"), "as the recorded points of its sweep"
    raise ValueError(f"keep must be 'main' or 'sweep', got {keep!r}")


# Which recorded settings each training step keeps its experiments' threads per clause from (rule 5).
KEEP_RECORDED = {"paper": "main", "sweeps": "sweep"}


def choose_threads(step, experiments, keep: str | None = None, rules: bool = True) -> dict[str, dict]:
    """``{experiment: {"threads": k, "reason": text}}`` by the rules of this module's docstring (``keep``: rule 5's
    ``main`` or ``sweep``; None: rules 1-4 alone). ``rules`` False (a step called without
    ``--threads-per-clause``): rule 5, else the step's default, without rules 1-4."""
    default = getattr(step, "default_threads", 1)
    out = {}
    for name in experiments:
        if keep:
            params, why = kept_settings(step.config, name, keep)
            k = recorded_threads(step, name, params)
            if k is not None:
                out[name] = {"threads": k, "reason": why}
    if not rules:
        return {name: out.get(name) or {"threads": default, "reason": "no recorded seeds of its setting and no "
                                        "--threads-per-clause: the default"} for name in experiments}
    tests, evidence = gpu_tests_verdict(step), warp_evidence(step)
    words = {name: literal_words(step, name) for name in set(experiments) | set(evidence)}
    bad = [f"{n}: {e['metric']} {e['warp_metric']:.2f} with a warp, below {e['floor']:.2f}"
           for n, e in sorted(evidence.items()) if not e["accurate"]]
    for name in experiments:
        if name in out:
            continue
        if tests is None and not evidence:
            out[name] = {"threads": default, "reason": "no GPU tests or benchmark of this code: the default"}
        elif tests is not True:
            out[name] = {"threads": 1, "reason": "the GPU tests of this code did not pass" if tests is False
                         else "no GPU tests of this code found"}
        elif bad:
            out[name] = {"threads": 1, "reason": "the warp build's accuracy is suspect (" + "; ".join(bad) + ")"}
        elif name in evidence:
            e = evidence[name]
            out[name] = {"threads": WARP if e["faster"] else 1,
                         "reason": f"benchmarked with this code: {e['one_s']:.4g} s per epoch with one thread, " +
                                   (f"{e['warp_s']:.4g} s with a warp" if e["warp_s"] is not None else
                                    f"the warp build failed ({str(e['failed'])[:120]})")}
        else:
            w = words.get(name)
            known = {n: e for n, e in evidence.items() if words.get(n) is not None}
            faster_below = [n for n, e in known.items() if e["faster"] and w is not None and words[n] <= w]
            slower_above = [n for n, e in known.items() if not e["faster"] and w is not None and words[n] >= w]
            k = WARP if faster_below and not slower_above else 1
            out[name] = {"threads": k, "reason": (
                f"not benchmarked; {w} literal word{'' if w == 1 else 's'} per example: " +
                (f"a warp was faster on {', '.join(sorted(faster_below))}" if k == WARP else
                 f"slower with a warp on {', '.join(sorted(slower_above))}" if slower_above else
                 "no benchmarked setting with as few words was faster with a warp"))}
    return {name: out[name] for name in experiments}  # in the order asked (the log's)


def bench_estimate_s(step, name: str, params: str, threads: int, eval_s: float | None = None) -> float | None:
    """Seconds a GPU run should take, from the GPU benchmark at the same clauses, T and s and threads per
    clause (its build, tm_gpu or tm_gpu_warp): its set-up and warm-up epoch, then median epochs, each with an
    evaluation (the benchmark's evaluation time; where it has none, ``eval_s``, else an epoch's), plus a process's
    start, times a margin; from another GPU's benchmark (where this one's has none), times
    :data:`OTHER_GPU_FACTOR` as well."""
    impl = BENCH_IMPL.get(threads)
    if impl is None:
        return None
    want = plan.parse_tm_params(params)
    gpu = (step.gpu or {}).get("name")
    for rec in bench_records(step, this_code=False):
        for s in rec["settings"]:
            h, r = s.get("hyperparameters") or {}, (s.get("results") or {}).get(impl)
            if s.get("setting") != name or not r or not r.get("median_epoch_s") or (h.get("n_clauses"), h.get("T"),
                                                                                    h.get("s")) != (
                    want["clauses"], want["T"], want["s"]):
                continue
            rows = r.get("per_seed") or []
            epoch = float(r["median_epoch_s"])
            evals = [t for row in rows for t in row.get("eval_s", [])]
            ev = statistics.median(evals) if evals else (eval_s if eval_s is not None else epoch)
            setup = statistics.median([row.get("prepare_s", 0.0) + row.get("warmup_s", epoch) for row in rows]
                                      or [epoch])
            other = OTHER_GPU_FACTOR if not gpu or (rec.get("gpu") or {}).get("name") != gpu else 1.0
            return other * ESTIMATE_MARGIN * (RUN_OVERHEAD_S + setup + want["epochs"] * ev
                                              + (want["epochs"] - 1) * epoch)
    return None
