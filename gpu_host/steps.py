"""``step <name>``: one step of a device call, within a time budget, packing what finished.

Every step installs the staged wheels into :data:`SITE` (pip, offline; ``--no-install`` skips it), asks PyCUDA for
the GPU (one clear line where there is none), runs its work in child processes (the pipeline's own runner,
``python -m asynctm.experiments tm --settings ... --stop-at``, for the training steps), each killed at the step's
deadline, and after every finished run rewrites ``<out>/<name>.tar.gz`` (``results/...``, ``benchmarks/results/...``
and a manifest ``benchmarks/results/campaign/<name>_<gpu>_<time>.json`` of what ran, was skipped and why) beside
``<out>/<name>.log``.

A run whose record is in the checkout (unpacked after an earlier call) is skipped. On a machine still warm from an
earlier call of the same step (same staged campaign) the step keeps that call's work folder: its records count as
done, its tarball holds only what this call adds, and a run that paused at that call's end (``--stop-at``: no time
for its next epoch) resumes from its checkpoint. ``--until`` ends a step at the device call's end (shared by its
steps), ``--budget`` after so many seconds, whichever comes first.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from asynctm.experiments import estimate, plan
from asynctm.experiments.run import EXIT_PAUSED, checkpoint_path, novelty_scores_path, read_checkpoint
from asynctm.provenance import REPO, code_digests, slug

from . import STAGE_DIR, benchmark
from .stage import StageError, load_campaign

DEFAULT_BUDGET_S = 480  # a device command may run 600 s; the rest is install, start-up and packing
SITE = Path("/tmp/asynctm-site")
EXTRA_SITE = Path("/tmp/asynctm-site-extra")  # jsonschema for the CPU benchmark (the scaling step)
PARALLEL_SITE = Path("/tmp/asynctm-site-parallel")  # pyTsetlinMachineParallel apart: its libTM is pyTM's name
SVM_SITE = Path("/tmp/asynctm-site-svm")  # ThunderSVM's GPU build apart (the step's runs only)
TMU_SITE = Path("/tmp/asynctm-site-tmu")  # tmu with its NumPy < 2, for tmu's worker only (the bench step's tmu_cuda)
SVM_STEP_LIBRARY = "thundersvm-gpu"  # the SVM library the svm step forces (asynctm.baselines.thundersvm.LIBRARIES)
WORK_ROOT = Path("/tmp/asynctm-campaign")  # the steps' work folders, one per step, kept while the machine is warm
PY = sys.executable
# The order in which the steps take the experiments (any other active experiment follows, by name).
PAPER_ORDER = ("wsd_apple", "semeval", "imdb", "bike_sharing", "bbc_sport", "wsd_java", "newsgroups20",
               "blogfeedback")
SWEEP_ORDER = ("semeval", "imdb", "bbc_sport", "bike_sharing")
# The tally ablation's GPU runs at each experiment's main setting (kernels/README.md, "Example order"), in this
# order, each group's variants seed by seed so that a step cut short leaves them with equal seeds.
GPU_ABLATION = (("bike_sharing", ("async_linear_warp", "async_linear_staggered_warp")),
                ("bike_sharing", ("async_linear_staggered", "async_linear")),
                ("bike_sharing", ("sync_linear", "sync_linear_staggered")),
                ("wsd_apple", ("async_linear_staggered", "async_linear")),
                ("wsd_apple", ("async_linear_warp", "async_linear_staggered_warp")))
MAX_FAILURES_IN_A_ROW = 3
LIMITS_MIN_S = 90  # the bench step measures the GPU's limits first (benchmarks/gpu_limits.py --quick, ~20 s)
# pytest processes sharing the GPU tests: on a bare machine most of a test's time is nvcc, which runs side by side.
# Each has its own PyCUDA compiler cache (PyCUDA writes a cache file in place); `device_wide` tests run alone after.
GPU_TEST_WORKERS = 8
KILL_GRACE_S = 10
NOT_PACKED = (".checkpoint.npz", ".damaged", ".partial", ".tmp")  # a run's resumable state stays on the machine
STOP_MARGIN_S = 20  # a run's --stop-at (and the benchmark's --deadline): this long before the step's deadline
WORK_MARKER = ".campaign-step.json"  # what a work folder was made for (a later call keeps it for the same campaign)
MANIFESTS = "benchmarks/results/campaign"

# What PyCUDA says of the GPU (and why not, where it fails), from a child with the step's environment.
PROBE = ("import json\ntry:\n    import pycuda.driver as d\n    d.init()\n    error = None\nexcept Exception as exc:\n"
         "    error = f'{type(exc).__name__}: {exc}'\nfrom asynctm.provenance import gpu_info, versions\n"
         "print(json.dumps({'error': error, 'gpu': gpu_info(), 'versions': versions()}))")


# -- the environment on the GPU machine -----------------------------------------------------------------------

def pip_target(wheels: list[Path], site: Path) -> str | None:
    """pip-install ``wheels`` into ``site``, offline; None where it worked, else pip's last words."""
    r = subprocess.run([PY, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
                        "--upgrade", "--target", str(site), *map(str, wheels)], capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr or r.stdout).strip()[-800:]


def install(campaign_dir: Path, campaign: dict, site: Path = SITE, say=print) -> None:
    """pip-install the staged wheels into ``site``, offline."""
    tag, here = campaign.get("python_tag", ""), f"cp{sys.version_info.major}{sys.version_info.minor}"
    if tag and tag != here:
        raise StageError(f"the staged PyCUDA wheel is for {tag} but this python ({PY}) is {here}: run the step with "
                         "the GPU machine's python3, or stage wheels built for this one")
    files = sorted((Path(campaign_dir) / "wheels").glob("*.whl"))
    failed = pip_target(files, site)
    if failed:
        raise StageError(f"installing the staged packages failed: {failed}")
    if str(site) not in sys.path:  # this process reads records through the gate too (its fastjsonschema is staged)
        sys.path.insert(0, str(site))
        importlib.invalidate_caches()
    say(f"installed {', '.join(f.name for f in files)} into {site}")


def child_env(campaign: dict, site: Path | None) -> dict:
    """The children's environment: the packages, ``src``, libcurand and curand_kernel.h where the CUDA toolkit lacks
    them (PyCUDA links the first, PyTsetlinMachineCUDA's kernels include the second), nvcc, the source commit."""
    env = dict(os.environ)

    def prepend(key, *values, sep=os.pathsep):
        env[key] = sep.join([*values, *([env[key]] if env.get(key) else [])])

    prepend("PYTHONPATH", *([str(site)] if site else []), str(REPO / "src"))
    libs = list(dict.fromkeys(str(p) for e in [*sys.path, "/opt/torch/.venv/lib/python3.12/site-packages"]
                              if ((p := Path(e or ".") / "nvidia" / "cu13" / "lib") / "libcurand.so.10").exists()))
    if libs:
        prepend("LD_LIBRARY_PATH", *libs)
    inc = [f"-I{i}" for lib in libs if ((i := Path(lib).parent / "include") / "curand_kernel.h").exists()][:1]
    if inc and not Path("/usr/local/cuda/include/curand_kernel.h").exists():
        prepend("PYCUDA_DEFAULT_NVCC_FLAGS", *inc, sep=" ")
    if shutil.which("nvcc", path=env.get("PATH")) is None and Path("/usr/local/cuda/bin/nvcc").exists():
        prepend("PATH", "/usr/local/cuda/bin")
    env.setdefault("PYCUDA_CACHE_DIR", "/tmp/asynctm-pycuda-cache")
    Path(env["PYCUDA_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)
    source = campaign.get("source") or {}  # the checkout there has no .git: provenance reads the commit from here
    env.setdefault("ASYNCTM_SOURCE_COMMIT", source.get("commit") or "")
    env.setdefault("ASYNCTM_SOURCE_DIRTY", str(source.get("tracked_files_modified", "")))
    env["PYTHONUNBUFFERED"] = "1"
    return env


# -- one step ---------------------------------------------------------------------------------------------------

class Step:
    """One step: its deadline, log, work folder (packed into the tarball) and manifest."""

    def __init__(self, name: str, campaign_dir: Path, out_dir: Path, budget_s: float, work_dir: Path | None,
                 tree: Path | None = None, until: float | None = None, later_s: float = 0.0):
        self.name, self.campaign_dir, self.out_dir = name, Path(campaign_dir), Path(out_dir)
        self.tree = Path(tree) if tree else REPO  # records here count as done
        self.started = time.time()
        self.deadline = min(self.started + budget_s, until if until is not None else math.inf)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.work = Path(work_dir) if work_dir else WORK_ROOT / name
        self.log_fh = open(self.out_dir / f"{name}.log", "a", buffering=1)  # noqa: SIM115 (closed by close)
        self.campaign = load_campaign(self.campaign_dir)
        self.config = self.campaign["config"]
        self.earlier = self._open_work()  # files an earlier call of this step left here: not packed again
        self.env: dict = {}
        self.gpu: dict | None = None
        self.later_s = float(later_s)  # seconds of this step in the lease's next call (--later)
        self.impl: str | None = None
        self.rerun = False  # --rerun: the checkout's records do not count as done (a sweep's points on one host)
        self.stamp = datetime.fromtimestamp(self.started, UTC).strftime("%Y%m%dT%H%M%SZ")
        self.manifest = {"step": name, "started_utc": self.stamp, "later_s": self.later_s, "gpu": None,
                         "budget_s": max(0.0, round(self.deadline - self.started, 1)), "code": code_digests(),
                         "source": self.campaign.get("source"), "done": [], "skipped": [], "stopped": None}
        self._manifest_rel: str | None = None
        self.failures_in_a_row = 0
        self.installed = False  # whether the staged wheels were installed (run_step: not with --no-install)

    def _open_work(self) -> dict[str, tuple[float, int]]:
        """Keep the work folder of an earlier call of this step for the same staged campaign (its files with their
        modification time and size are returned), else start it empty. A second turn of the step in one call finds
        the first turn's tarball in the call's folder, which its own replaces: those files are packed again."""
        staged = hashlib.sha256((self.campaign_dir / "campaign.json").read_bytes()).hexdigest()
        marker = json.loads(json.dumps({"step": self.name, "campaign": self.campaign.get("source"), "staged": staged}))
        try:
            kept = json.loads((self.work / WORK_MARKER).read_text()) == marker
        except (OSError, ValueError):
            kept = False
        if not kept:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work.mkdir(parents=True)
            (self.work / WORK_MARKER).write_text(json.dumps(marker))
            return {}
        earlier = {p.relative_to(self.work).as_posix(): (p.stat().st_mtime, p.stat().st_size)
                   for p in self.work.rglob("*") if p.is_file()}
        self.say(f"kept the work folder of an earlier call of this step on this machine ({len(earlier)} files)")
        try:
            with tarfile.open(self.out_dir / f"{self.name}.tar.gz") as tar:
                for name in tar.getnames():
                    earlier.pop(name, None)
        except (OSError, tarfile.TarError):
            pass
        return earlier

    def packable(self, path: Path) -> bool:
        """New or changed in this call, not a run's resumable state, not the log of a paused run."""
        rel, st = path.relative_to(self.work).as_posix(), path.stat()
        if path.is_symlink() or rel == WORK_MARKER or path.name.endswith(NOT_PACKED):
            return False
        if self.earlier.get(rel) == (st.st_mtime, st.st_size):
            return False
        stem = path.name.removesuffix(".log")
        return not (path.name.endswith(".log") and (path.parent / f"{stem}.checkpoint.npz").exists()
                    and not (path.parent / f"{stem}.json").exists())

    def say(self, msg: str) -> None:
        line = f"{datetime.now(UTC).strftime('%H:%M:%S')} [{self.name}] {msg}"
        print(line, flush=True)
        self.log_fh.write(line + "\n")

    def remaining(self) -> float:
        return self.deadline - time.time()

    def child(self, cmd: list[str], log_path: Path | None = None) -> int | None:
        """Run ``cmd`` until it ends or the deadline comes (then its process group is killed: None)."""
        return self.children([(cmd, log_path, None)])[0]

    def children(self, jobs: list[tuple[list[str], Path | None, dict | None]]) -> list[int | None]:
        """Run ``(cmd, log_path, env)`` jobs side by side until each ends or the deadline comes (those still running
        are then sent SIGTERM, a run's log then says "interrupted", and SIGKILL after a grace: None)."""
        if self.remaining() <= 0:
            return [None] * len(jobs)
        outs = [open(log, "a") if log else self.log_fh for _, log, _ in jobs]  # noqa: SIM115 (closed below)
        procs = []
        try:
            # Each in its own process group (to kill it with its children), not a new session: the device tool
            # ends a command's session when the command ends, so nothing outlives the step.
            procs = [subprocess.Popen(cmd, cwd=REPO, env=env or self.env, stdout=out, stderr=subprocess.STDOUT,
                                      process_group=0) for (cmd, _, env), out in zip(jobs, outs)]
            codes: list[int | None] = []
            for proc in procs:
                try:
                    codes.append(proc.wait(timeout=max(0.0, self.remaining())))
                except subprocess.TimeoutExpired:
                    codes.append(None)
                    os.killpg(proc.pid, signal.SIGTERM)
            for proc, rc in zip(procs, codes):
                try:
                    proc.wait(timeout=KILL_GRACE_S if rc is None else None)
                except subprocess.TimeoutExpired:
                    pass
            return codes
        finally:
            for proc in procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            for out, (_, log, _) in zip(outs, jobs):
                if log:
                    out.close()

    def exists(self, rel: str) -> bool:
        """Whether the run is recorded: in this machine's work folder, or in the checkout unless ``--rerun``."""
        return (not self.rerun and (self.tree / rel).is_file()) or (self.work / rel).is_file()

    def pack(self) -> Path:
        """Rewrite ``<out>/<name>.tar.gz`` from the work folder and the manifest, atomically."""
        if self._manifest_rel is None:  # beside no other turn's (an earlier one may have started in this second)
            device, n = slug((self.gpu or {}).get("name", "no_gpu")), 1
            while (self.work / (rel := f"{MANIFESTS}/{self.name}_{device}_{self.stamp}"
                                       f"{'' if n == 1 else f'_{n}'}.json")).exists():
                n += 1
            self._manifest_rel = rel
        self.manifest["elapsed_s"] = round(time.time() - self.started, 1)
        man = self.work / self._manifest_rel
        man.parent.mkdir(parents=True, exist_ok=True)
        man.write_text(json.dumps(self.manifest, indent=1, sort_keys=True) + "\n")
        target = self.out_dir / f"{self.name}.tar.gz"
        partial = target.with_name(target.name + ".partial")
        with tarfile.open(partial, "w:gz") as tar:
            for p in sorted(self.work.rglob("*")):
                if p.is_file() and self.packable(p):
                    tar.add(p, arcname=p.relative_to(self.work).as_posix(), recursive=False)
        os.replace(partial, target)
        return target

    def skip(self, what: str, reason: str) -> None:
        self.manifest["skipped"].append({"run": what, "reason": reason})
        self.say(f"skipped {what}: {reason}")

    def stop(self, reason: str) -> None:
        if not self.manifest["stopped"]:
            self.manifest["stopped"] = reason
            self.say(f"stopping: {reason}")

    def failed(self, what: str, detail: str) -> None:
        self.failures_in_a_row += 1
        self.skip(what, f"failed: {detail}")
        if self.failures_in_a_row >= MAX_FAILURES_IN_A_ROW:
            self.stop(f"{MAX_FAILURES_IN_A_ROW} runs in a row failed (see the log)")

    def close(self) -> None:
        self.log_fh.close()


def probe(step: Step) -> dict:
    try:
        r = subprocess.run([PY, "-c", PROBE], cwd=REPO, env=step.env, capture_output=True, text=True,
                           timeout=max(30.0, min(180.0, step.remaining())))
        return json.loads(r.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        raise StageError("the GPU probe (PyCUDA's driver and device query) did not answer in time") from None
    except (ValueError, IndexError):
        raise StageError(f"the GPU probe failed: {(r.stderr or r.stdout).strip()[-800:]}") from None


# -- gpu_tests, bench and host_peers -----------------------------------------------------------------------------------

def gpu_test_files() -> list[str]:
    """The test modules holding GPU tests (the `gpu` mark, or the backend_name fixture that carries it)."""
    return [str(p) for p in sorted((REPO / "tests").rglob("test_*.py"))
            if re.search(r"mark\.gpu|\bbackend_name\b", p.read_text())]


def collect_gpu_tests(step: Step, select: str | None = None) -> tuple[list[str], list[str]] | None:
    """The GPU tests' node ids: (those that may share the GPU, the ``device_wide`` ones); None where pytest could not
    collect them."""
    found = []
    for marks in ("gpu and not device_wide", "gpu and device_wide"):
        try:
            r = subprocess.run([PY, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marks,
                                *gpu_test_files(), *(["-k", select] if select else [])], cwd=REPO, env=step.env,
                               capture_output=True, text=True, timeout=max(1.0, min(120.0, step.remaining())))
        except subprocess.TimeoutExpired:
            return None
        if r.returncode not in (0, 5):  # 5: nothing collected
            return None
        found.append([ln.strip() for ln in r.stdout.splitlines() if "::" in ln and not ln.startswith(" ")])
    return found[0], found[1]


def merge_junit(parts: list[Path], target: Path) -> tuple[dict, list[dict]]:
    """One JUnit XML file of the suites in ``parts`` (those that exist), the totals on its root; returns the totals
    and the failed tests ``{"test", "learning"}`` (a learning bar, tests/conftest.py, or a broken rule)."""
    root = ET.Element("testsuites")
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for part in parts:
        try:
            tree = ET.parse(part).getroot()
        except (OSError, ET.ParseError):
            continue
        for suite in [tree] if tree.tag == "testsuite" else tree.findall("testsuite"):
            for key in totals:
                totals[key] += int(suite.get(key, 0))
            root.append(suite)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.ElementTree(root).write(target, encoding="utf-8", xml_declaration=True)
    failed = [{"test": f"{c.get('classname', '')}::{c.get('name', '')}",
               "learning": any(p.get("name") == "learning" for p in c.iter("property"))}
              for c in root.iter("testcase") if c.find("failure") is not None or c.find("error") is not None]
    return totals, failed


def step_gpu_tests(step: Step, select: str | None = None) -> None:
    """``pytest -m gpu``: the tests that may share the GPU in up to :data:`GPU_TEST_WORKERS` processes side by side,
    then the ``device_wide`` ones alone; one merged JUnit report and the output come back."""
    base = step.work / MANIFESTS / f"gpu_tests_{slug(step.gpu['name'])}_{step.stamp}"
    base.parent.mkdir(parents=True, exist_ok=True)
    shared, alone = collect_gpu_tests(step, select) or (gpu_test_files(), [])
    if not shared and not alone:
        shared = gpu_test_files()
    n = max(1, min(GPU_TEST_WORKERS, os.cpu_count() or 1, len(shared)))
    pytest = [PY, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs", "-m", "gpu",
              "--continue-on-collection-errors", *(["-k", select] if select else [])]
    cache = Path(step.env.get("PYCUDA_CACHE_DIR", "/tmp/asynctm-pycuda-cache"))
    step.say(f"running {len(shared)} GPU tests (or modules) in {n} pytest processes side by side"
             + (f", then {len(alone)} alone" if alone else ""))
    t0, parts, codes = time.time(), [], []
    for group in ([shared[i::n] for i in range(n)] if shared else [], [alone] if alone else []):
        if not group or None in codes:
            continue
        jobs = []
        for ids in group:
            part = base.with_name(f"{base.name}_part{len(parts)}")
            (cache / f"tests-{len(parts)}").mkdir(parents=True, exist_ok=True)
            jobs.append(([*pytest, f"--junitxml={part}.xml", *ids], part.with_suffix(".txt"),
                         {**step.env, "PYCUDA_CACHE_DIR": str(cache / f"tests-{len(parts)}")}))
            parts.append(part)
        codes += step.children(jobs)
    base.with_suffix(".txt").write_text("".join(f"==== pytest process {p.name.rsplit('_', 1)[-1]} ====\n"
                                                + p.with_suffix(".txt").read_text()
                                                for p in parts if p.with_suffix(".txt").exists()))
    totals, failed = merge_junit([p.with_suffix(".xml") for p in parts], base.with_suffix(".xml"))
    for p in parts:
        for ext in (".txt", ".xml"):
            p.with_suffix(ext).unlink(missing_ok=True)
    # None: one ran past the budget; else one that broke off (a crash: a negative signal), else 1 where tests failed
    rc = None if None in codes else next((c for c in codes if c not in (0, 1)), max(codes, default=0))
    counts = {"passed": totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"],
              "failed": totals["failures"], "errors": totals["errors"], "skipped": totals["skipped"]}
    summary = (", ".join(f"{v} {k}" for k, v in counts.items() if v) + f" in {time.time() - t0:.0f} s ({n} process"
               f"{'es' if n > 1 else ''} side by side" + (", then 1 alone)" if alone else ")")
               + "".join(f"; pytest process {p.name.rsplit('_', 1)[-1]} exited with {c}"
                         for p, c in zip(parts, codes) if c not in (0, 1, None)))
    step.manifest["pytest"] = {"returncode": rc, "summary": summary, "failed": failed}
    for f in failed:
        print(f"FAILED {f['test']}" + (" (a learning bar)" if f["learning"] else ""), flush=True)
    if rc is None:
        step.stop("pytest ran past the budget")
    else:
        step.say(f"pytest -m gpu: exit {rc}: {summary}")
        step.manifest["done"].append("pytest -m gpu")


def step_bench(step: Step, select: str | None = None) -> None:
    """Ours and PyTsetlinMachineCUDA on one GPU in one process (``benchmarks/bench_gpu.py``):
    ``benchmarks/results/gpu_<gpu>_<commit>.{json,md}`` (with ``--impl``, only those builds, named after them);
    no epoch starts after the step's end less a margin."""
    name = f"gpu_{slug(step.gpu['name'])}_{((step.campaign.get('source') or {}).get('commit') or 'unknown')[:7]}"
    name += "".join(f"_{impl}" for impl in (step.impl or "").split(",") if impl)  # --impl: some builds only
    out = step.work / "benchmarks" / "results"
    if not list(out.glob("host_limits_*.json")) and step.deadline - time.time() > LIMITS_MIN_S:
        # the GPU's own limits, once per machine, for the cost model's bounds (benchmarks/bound.py)
        rc = step.child([PY, str(REPO / "benchmarks" / "gpu_limits.py"), "--quick", "--out-dir", str(out)])
        if rc == 0:
            step.manifest["done"].extend(f"benchmarks/results/{p.name}" for p in out.glob("host_limits_*.json"))
        else:
            step.say(f"the GPU's limits were not measured (exit status {rc}; see the log); benchmarking on")
    tmu = tmu_python(step) if "tmu_cuda" in (step.impl or "").split(",") else None
    rc = step.child([PY, str(REPO / "benchmarks" / "bench_gpu.py"), "--campaign-dir", str(step.campaign_dir),
                     "--out-dir", str(out), "--name", name, "--deadline", f"{step.deadline - STOP_MARGIN_S:.0f}",
                     *(["--settings", select] if select else []), *(["--impls", step.impl] if step.impl else []),
                     *(["--tmu-python", str(tmu)] if tmu else [])])
    if rc is None:
        step.stop("the benchmark ran past the budget (what it wrote per setting is packed)")
    elif rc != 0:
        step.failed("benchmark", f"exit status {rc} (see the log)")
    else:
        step.manifest["done"].append(f"benchmarks/results/{name}.json")
    if (out / f"{name}.md").is_file():
        print((out / f"{name}.md").read_text(), flush=True)  # the device tool's reply shows the end of stdout


def tmu_python(step: Step) -> Path | None:
    """A python for tmu's worker: this machine's python with the staged tmu site (``stage --tmu``: tmu and its
    NumPy < 2) first and the staged PyCUDA after it; None, said, where none was staged (the benchmark then skips
    tmu_cuda with the setup line)."""
    packed = step.campaign_dir / "tmu" / "site.tar.xz"
    if not packed.is_file():
        step.say("tmu_cuda: no tmu staged (python -m gpu_host stage --tmu); the benchmark skips it")
        return None
    digest = hashlib.sha256(packed.read_bytes()).hexdigest()
    marker = TMU_SITE / ".staged-sha256"
    if not marker.is_file() or marker.read_text() != digest:  # none yet, or another staging's: unpack this one
        part = TMU_SITE.with_name(TMU_SITE.name + ".partial")  # beside it, renamed when complete: a call cut short
        shutil.rmtree(part, ignore_errors=True)              # leaves no half site
        with tarfile.open(packed) as tar:
            tar.extractall(part, filter="data")
        (part / marker.name).write_text(digest)
        shutil.rmtree(TMU_SITE, ignore_errors=True)
        os.replace(part, TMU_SITE)
    python = TMU_SITE.with_name(TMU_SITE.name + "-python")
    python.write_text(f'#!/bin/sh\nPYTHONPATH={TMU_SITE}:{SITE} exec {PY} -s "$@"\n')
    python.chmod(0o755)
    return python


def step_host_peers(step: Step, select: str | None = None, order=PAPER_ORDER,
                    stop_margin_s: float = STOP_MARGIN_S) -> None:
    """The same-host benchmark (``benchmarks/bench_host.py``): pyTsetlinMachine's runs side by side, each on a core of
    its own, meanwhile our GPU builds one after the other (in ``order``) on its GPU core, until the step's end less
    ``stop_margin_s``."""
    bench = benchmark("bench_host")
    experiments = [e for e in step.campaign.get("experiments") or sorted(step.config["experiments"])
                   if not select or e in select.split(",")]
    cpu_jobs, gpu_jobs = bench.jobs(step.config, experiments, order)
    cores = sorted(os.sched_getaffinity(0))
    free = [c for c in cores if c >= bench.FIRST_CPU_CORE]
    for job in cpu_jobs[len(free):]:
        step.skip("/".join(job), f"no core of its own ({len(cores)} logical cores)")
    cpu_jobs = cpu_jobs[: len(free)]
    folder = step.work / f"benchmarks/results/campaign/host_peers_{slug((step.gpu or {}).get('name', 'no_gpu'))}_" \
                         f"{step.stamp}"
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    until = step.deadline - stop_margin_s
    step.manifest["host_peers"] = {"folder": folder.relative_to(step.work).as_posix(), "cores": len(cores),
                                   "gpu_core": bench.GPU_CORE, "cpu_jobs": ["/".join(j) for j in cpu_jobs],
                                   "gpu_jobs": ["/".join(j) for j in gpu_jobs], "load_at_start": bench.load_now()}
    step.say(f"{len(cpu_jobs)} pyTsetlinMachine runs on cores {free[: len(cpu_jobs)]}, {len(gpu_jobs)} GPU runs on "
             f"core {bench.GPU_CORE}, until {until - time.time():.0f} s from now")

    def command(name: str, impl: str, core: int | None) -> list[str]:
        return [PY, str(REPO / "benchmarks" / "bench_host.py"), "--campaign-dir", str(step.campaign_dir),
                "--experiment", name, "--impl", impl, "--until", f"{until:.1f}", "--out",
                str(folder / f"{name}_{impl}.json"), *(["--cpu", str(core)] if core is not None else [])]

    def ended(name: str, impl: str, rc: int | None) -> None:
        step.say(f"{name}/{impl}: exit {rc}")
        if rc == 0:
            step.manifest["done"].append(f"{name}/{impl}")
        else:
            step.manifest["skipped"].append({"run": f"{name}/{impl}", "reason": f"exit {rc}"})

    logs = folder / "logs"
    with ThreadPoolExecutor(1) as pool:  # the CPU workers side by side, until the step's end, meanwhile the GPU's
        cpu = pool.submit(step.children, [(command(n, i, core), logs / f"{n}_{i}.log", None)
                                          for (n, i), core in zip(cpu_jobs, free)])
        for name, impl in gpu_jobs:
            if step.remaining() < stop_margin_s + 15:
                step.skip(f"{name}/{impl}", "no time left in the call")
            else:
                ended(name, impl, step.child(command(name, impl, bench.GPU_CORE if bench.GPU_CORE in cores else None),
                                             logs / f"{name}_{impl}.log"))
        step.pack()
        for (name, impl), rc in zip(cpu_jobs, cpu.result()):
            ended(name, impl, rc)
    step.manifest["host_peers"]["load_at_end"] = bench.load_now()


def step_scaling(step: Step, select: str | None = None) -> None:
    """Our CPU build's core scaling on the GPU machine's own CPU while its GPU idles (``benchmarks/scaling.py
    --measure --limits``): first the CPU's limits at the thread counts (``host_limits.py``, for the cost model's
    bounds), then threads bound one per physical core, 1, 2, 4, ... up to the logical cores and the physical count,
    on SemEval, IMDb and WSD apple (``--select``: some of them), pyTsetlinMachineParallel beside on apple where its
    wheel is staged, until the step's end less a margin; the run's files and their summary come back under
    ``benchmarks/results/``."""
    name = f"cpu_scaling_{slug(step.gpu['name'])}_host_{step.stamp}"
    folder = step.work / "benchmarks" / "results" / name
    env, parallel = dict(step.env), None
    if step.installed:  # bench_tm.py checks its configuration with jsonschema, which that python lacks
        for sub, site in (("extra", EXTRA_SITE), ("parallel", PARALLEL_SITE)):
            wheels = sorted((step.campaign_dir / sub).glob("*.whl"))
            failed = pip_target(wheels, site) if wheels else "none staged"
            if failed:
                step.say(f"{sub} wheels not installed ({failed})")
            elif sub == "extra":
                env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
            else:  # its own libTM would shadow pyTsetlinMachine's: a python that sees it first, for its worker only
                parallel = site.with_name(site.name + "-python")
                parallel.write_text(f'#!/bin/sh\nPYTHONPATH={site}:$PYTHONPATH exec {PY} "$@"\n')
                parallel.chmod(0o755)
    summary = folder.parent / f"{name}_summary"
    rc = step.children([([PY, str(REPO / "benchmarks" / "scaling.py"), str(folder), "--measure", "--data-dir",
                          str(step.campaign_dir / "data"), "--limits", "--out", str(summary), "--host-note",
                          "the GPU machine's own CPU, its GPU idle", "--deadline",
                          f"{step.deadline - STOP_MARGIN_S:.0f}", *(["--settings", select] if select else []),
                          *(["--pytm-parallel-python", str(parallel)] if parallel else [])],
                         step.work / f"{name}.log", env)])[0]
    if rc == 0:
        step.manifest["done"].append(f"benchmarks/results/{summary.name}.json")
        print(summary.with_suffix(".md").read_text(), flush=True)
    else:
        step.failed("scaling", "ran past the step's end" if rc is None else f"exit status {rc} (see {name}.log)")


def step_svm(step: Step, select: str | None = None, order=PAPER_ORDER) -> None:
    """ThunderSVM's GPU build (the wheel ``benchmarks/thundersvm_gpu_wheel.py`` builds from its source, staged with
    ``stage --thundersvm-wheel``) fitted on every SVM experiment of Table 4 (``--select``: some), seed by seed across
    the experiments, so that a step cut short has each experiment's first seeds: full run records of the pipeline's
    runner, the library forced (``$ASYNCTM_SVM_LIBRARY``), under
    ``benchmarks/results/campaign/svm_gpu_<gpu>_<time>/<experiment>/svm/<params>/``, beside, not in place of, the CPU
    fits under ``results/``."""
    wheels = sorted((step.campaign_dir / "svm").glob("thundersvm-*.whl"))
    if not wheels:
        step.stop("no ThunderSVM GPU wheel staged: build one with benchmarks/thundersvm_gpu_wheel.py and stage it "
                  "with `python -m gpu_host stage --thundersvm-wheel <wheel>`")
        return
    failed = pip_target(wheels, SVM_SITE)
    if failed:
        step.stop(f"installing {wheels[0].name} failed: {failed}")
        return
    env = {**step.env, "PYTHONPATH": os.pathsep.join([str(SVM_SITE), step.env.get("PYTHONPATH", "")]),
           "ASYNCTM_SVM_LIBRARY": SVM_STEP_LIBRARY}
    config = step.config
    staged = step.campaign.get("experiments") or plan.active_experiments(config)
    names = [n for n in [*order, *sorted(set(staged) - set(order))]
             if n in staged and plan.experiment(config, n)["svm"] and (not select or n in select.split(","))]
    folder = f"benchmarks/results/campaign/svm_gpu_{slug(step.gpu['name'])}_{step.stamp}"
    step.manifest["svm"] = {"folder": folder, "wheel": wheels[0].name, "library": SVM_STEP_LIBRARY}
    for seed in plan.seeds(config):
        for name in names:
            if step.remaining() < STOP_MARGIN_S:
                step.stop("the step's end came")
                return
            settings = plan.svm_run_settings(config, name, plan.svm_params(config, name), seed)
            settings.pop("library", None)  # the config's choice for CPU hosts; here the step's, by the environment
            rel = f"{folder}/{name}/svm/{settings['params']}/seed{seed}.json"
            out = step.work / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            rc = step.children([([PY, "-m", "asynctm.experiments", "svm", "--settings", json.dumps(settings),
                                  "--out", str(out), "--data-dir", str(step.campaign_dir / "data")],
                                 out.with_suffix(".log"), env)])[0]
            if rc == 0:
                step.failures_in_a_row = 0
                step.manifest["done"].append(rel)
            else:
                step.failed(rel, "ran past the step's end" if rc is None else f"exit status {rc} (see its log)")
            step.pack()
            if step.manifest["stopped"]:
                return


# -- the training steps: records the pipeline's runner makes, until the deadline ----------------------------------

def run(name: str, impl: str, params: str, seed: int, variant: str | None = None, kind: str = "tm") -> dict:
    """A run as :func:`asynctm.experiments.plan.requested_runs` lists it (``variant``: of the tally ablation)."""
    return {"experiment": name, "impl": impl, "params": params, "seed": int(seed), "kind": kind,
            **({"variant": variant} if variant else {})}


def ordered(config: dict, order: tuple[str, ...], names=None) -> list[str]:
    """The active experiments (of ``names``, if given) in ``order``, then any other, by name."""
    active = [n for n in plan.active_experiments(config) if names is None or n in names]
    return [n for n in order if n in active] + sorted(n for n in active if n not in order)


def gpu_impls(impls, only: str | None = None) -> list[str]:
    return [i for i in impls if i in plan.GPU_IMPLS and only in (None, i)]


def sweep_runs(config: dict, only: str | None = None) -> list[dict]:
    """The GPU points of the clause sweeps in :data:`SWEEP_ORDER`, per sweep and GPU build the smallest and the largest
    number of clauses first (the time ratio the paper's claim is about), then the rest ascending."""
    runs = []
    for name in ordered(config, SWEEP_ORDER, config.get("sweeps", {})):
        pts = plan.sweep_points(config, name)
        for impl in gpu_impls(pts["impls"], only):
            params = sorted(plan.sweep_params(pts, impl), key=lambda p: plan.parse_tm_params(p)["clauses"])
            for p in dict.fromkeys([*params[:1], *params[-1:], *params[1:-1]]):
                runs += [run(name, impl, p, seed) for seed in pts["seeds"]]
    return runs


def paper_runs(config: dict, only: str | None = None) -> list[dict]:
    """Each experiment's main setting, every seed, in :data:`PAPER_ORDER`, each GPU build the config lists; a novelty
    run is followed by the MLP stage on its class sums (Table 3's cell)."""
    runs = []
    for name in ordered(config, PAPER_ORDER):
        for impl in gpu_impls(config.get("impls", plan.GPU_IMPLS), only):
            params = plan.main_params(config, name, impl)
            for seed in plan.run_seeds(config, name, impl):
                runs.append(run(name, impl, params, seed))
                if plan.task(config, name) == "novelty":
                    runs.append(run(name, "mlp_novelty", f"{impl}.{params}", seed, kind="mlp_novelty"))
    return runs


def ablation_runs(config: dict) -> list[dict]:
    """The configured ablation's tm_gpu runs at each experiment's main setting, in :data:`GPU_ABLATION`'s order."""
    wanted = {(r["experiment"], r["variant"], r["seed"]): r["params"]
              for r in plan.ablation_runs({**config, "ablation": {**config["ablation"], "impl": "tm_gpu"}})
              if r["params"] == plan.main_params(config, r["experiment"])}
    active = plan.active_experiments(config)
    return [run(name, "tm_gpu", wanted[name, v, seed], seed, v) for name, variants in GPU_ABLATION if name in active
            for seed in sorted({s for n, _, s in wanted if n == name}) for v in variants if (name, v, seed) in wanted]


def record_path(config: dict, r: dict) -> str:
    return plan.ablation_record_path(config, r) if r.get("variant") else plan.record_path(config, r)


def resumable(step: Step, rel: str) -> dict | None:
    """The state of the checkpoint an earlier call on this machine left for the run ``rel``; None where none."""
    try:
        state = read_checkpoint(checkpoint_path(step.work / rel)) if checkpoint_path(step.work / rel).is_file() else {}
    except ValueError:
        return None
    return state if state.get("epochs") else None


def timings(step: Step) -> estimate.Timings:
    """The pipeline's references for estimates: the records in the checkout and the work folder, the data's sizes."""
    from asynctm.store import RecordError

    root = plan.results_root(step.config)
    try:
        out = estimate.load_timings(step.tree / root, None, step.campaign_dir / "data")
        for key, refs in estimate.load_timings(step.work / root).tm.items():
            out.tm.setdefault(key, []).extend(refs)
        return out
    except RecordError as exc:  # the runs still start, and pause at the step's end where they must
        step.say(f"no estimates: {exc}")
        return estimate.Timings()


def run_records(step: Step, runs: list[dict]) -> None:
    """Make the records of ``runs`` in order through ``python -m asynctm.experiments`` until the deadline. A run whose
    estimate (:func:`asynctm.experiments.estimate.estimate_run`) exceeds the time left and the next call's
    (``--later``) is passed over; an unestimated one starts. A TM run pauses (``--stop-at``) before an epoch that would
    end after the step; its checkpoint stays in the work folder, and the next call on this machine resumes it."""
    config, refs = step.config, timings(step)
    for r in runs:
        rel = record_path(config, r)
        if step.manifest["stopped"]:
            return
        if step.exists(rel):
            step.say(f"{rel}: recorded already")
            continue
        left = step.remaining()
        if left < STOP_MARGIN_S + 5:  # a run started now would have to pause before its first epoch
            return step.stop("the budget is spent")
        resume = resumable(step, rel)
        need = None if resume else estimate.estimate_run(config, r, refs).seconds
        if need is not None and need > left + step.later_s:
            step.skip(rel, f"would not fit: about {need:.0f} s needed (the pipeline's estimate), {left:.0f} s left"
                      + (f" (and {step.later_s:.0f} s in the next call)" if step.later_s else ""))
            continue
        out = step.work / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        log = out.with_suffix(".log")
        if r["kind"] == "mlp_novelty":
            tm_rel = plan.record_path(config, {**r, "impl": r["params"].split(".")[0],
                                               "params": r["params"].split(".", 1)[1]})
            scores = next((p for p in (novelty_scores_path(step.work / tm_rel), novelty_scores_path(step.tree / tm_rel))
                           if p.is_file()), None)
            if scores is None:
                step.skip(rel, "the TM run's class sums (scores.npz) are not here")
                continue
            settings = plan.mlp_run_settings(config, r["experiment"], r["params"], r["seed"])
            args = ["mlp", "--scores", str(scores)]
        else:
            settings = (plan.ablation_run_settings(config, r["experiment"], r["impl"], r["params"], r["variant"],
                                                   r["seed"]) if r.get("variant") else
                        plan.tm_run_settings(config, r["experiment"], r["impl"], r["params"], r["seed"]))
            args = ["tm", "--data-dir", str(step.campaign_dir / "data"),
                    "--stop-at", f"{step.deadline - STOP_MARGIN_S:.0f}"]
        step.say(f"{rel}: " + (f"resuming after epoch {len(resume['epochs'])}" if resume else "starting")
                 + f" ({left:.0f} s left" + (f", about {need:.0f} s needed)" if need else ")"))
        rc = step.child([PY, "-m", "asynctm.experiments", *args, "--settings", json.dumps(settings, sort_keys=True),
                         "--out", str(out), "--log", str(log)])
        state = resumable(step, rel) if rc == EXIT_PAUSED else None
        if state:
            per_epoch = statistics.median(e["train_s"] + e["eval_s"] for e in state["epochs"])
            step.manifest.setdefault("paused", []).append({
                "run": rel, "epochs_done": len(state["epochs"]), "epochs": settings["hyperparameters"]["epochs"],
                "s_per_epoch": round(per_epoch, 4), "gpu": (step.gpu or {}).get("name")})
            step.say(f"{rel}: paused after epoch {len(state['epochs'])} ({per_epoch:.3f} s per epoch); its checkpoint "
                     "stays on this machine for the next call")
        elif rc != 0 or not out.is_file():
            novelty_scores_path(out).unlink(missing_ok=True)
            if not checkpoint_path(out).is_file():  # a later call here resumes the run, appending to its log
                log.unlink(missing_ok=True)
            if rc is None:
                return step.stop(f"{rel} ran past the budget; not recorded")
            step.failed(rel, f"exit status {rc} (see the log)")
            continue
        else:
            step.failures_in_a_row = 0
            step.say(f"{rel}: final {json.loads(out.read_text()).get('final')}")
            step.manifest["done"].append(rel)
        step.pack()


def selected(runs: list[dict], select: str | None) -> list[dict]:
    """``runs`` narrowed by ``--select``: comma-separated terms, each an experiment (``semeval``) or one of its clause
    counts (``semeval:2560``), taken in the order of the terms (a run matching none is left out)."""
    if not select:
        return list(runs)
    terms = []
    for term in select.split(","):
        name, _, clauses = term.strip().partition(":")
        if clauses and not clauses.isdigit():
            raise StageError(f"--select {term!r}: the clauses after the colon must be a number, e.g. semeval:2560")
        terms.append((name, int(clauses) if clauses else None))

    def rank(r: dict) -> int | None:
        params = r["params"].split(".", 1)[1] if r.get("kind") == "mlp_novelty" else r["params"]
        clauses = plan.parse_tm_params(params)["clauses"] if any(c is not None for _, c in terms) else None
        return next((i for i, (name, c) in enumerate(terms)
                     if name == r["experiment"] and c in (None, clauses)), None)

    ranked = [(rank(r), i, r) for i, r in enumerate(runs)]
    return [r for k, _, r in sorted((x for x in ranked if x[0] is not None), key=lambda x: x[:2])]


def training(runs):
    """A training step: ``runs(config, impl)``, narrowed and ordered by ``--select`` (:func:`selected`)."""
    def step_runs(step: Step, select: str | None = None) -> None:
        todo = selected(runs(step.config, step.impl), select)
        step.say(f"{len(todo)} runs: " + ", ".join(record_path(step.config, r) for r in todo))
        run_records(step, todo)
    return step_runs


STEPS = {"gpu_tests": step_gpu_tests, "bench": step_bench, "sweeps": training(sweep_runs),
         "paper": training(paper_runs), "ablation": training(lambda config, _impl: ablation_runs(config)),
         "host_peers": step_host_peers, "scaling": step_scaling, "svm": step_svm}
IMPL_STEPS = ("sweeps", "paper")  # the steps that take --impl


def run_step(name: str, campaign_dir: Path | None = None, out_dir: Path | None = None,
             budget_s: float = DEFAULT_BUDGET_S, do_install: bool = True, work_dir: Path | None = None,
             select: str | None = None, tree: Path | None = None, impl: str | None = None,
             until: float | None = None, later_s: float = 0.0, rerun: bool = False) -> int:
    """Run one step; returns the exit status (0: it ran, even if it stopped at its budget)."""
    if name not in STEPS:
        raise StageError(f"unknown step {name!r}; the steps are, in order: {', '.join(STEPS)}")
    if impl is not None and name == "bench":
        builds = benchmark("bench_gpu").IMPLS
        if not impl or not set(impl.split(",")) <= set(builds):
            raise StageError(f"--impl of the bench step: a comma-separated list of {', '.join(builds)}; got {impl}")
    elif impl is not None and (name not in IMPL_STEPS or impl not in plan.GPU_IMPLS):
        raise StageError(f"--impl applies to the {', '.join(IMPL_STEPS)} and bench steps and must be one of "
                         f"{', '.join(plan.GPU_IMPLS)} (bench: a comma-separated list of its builds), got {impl} for "
                         f"step {name}")
    campaign_dir = Path(campaign_dir) if campaign_dir else REPO / STAGE_DIR
    out_dir = Path(out_dir or os.environ.get("OUT") or REPO / "campaign-out")
    step = Step(name, campaign_dir, out_dir, budget_s, work_dir, tree, until=until, later_s=later_s)
    step.impl = step.manifest["impl"] = impl
    step.rerun = step.manifest["rerun"] = bool(rerun)
    try:
        if do_install:
            install(campaign_dir, step.campaign, say=step.say)
            step.installed = True
        step.env = child_env(step.campaign, SITE if do_install else None)
        info = probe(step)
        step.gpu = info.get("gpu")
        step.manifest.update(gpu=step.gpu, versions=info.get("versions"))
        if not step.gpu or "name" not in step.gpu:
            why = info.get("error") or (step.gpu or {}).get("error") or "no device"
            raise StageError(f"no CUDA GPU found by PyCUDA ({why})")
        step.say(f"GPU: {step.gpu.get('name')}, driver {step.gpu.get('driver')}, CUDA {step.gpu.get('cuda')}; "
                 f"budget {step.remaining():.0f} s")
        STEPS[name](step, select)
        step.pack()
        step.say(f"packed {out_dir / (name + '.tar.gz')} after {time.time() - step.started:.0f} s "
                 f"({len(step.manifest['done'])} done, {len(step.manifest['skipped'])} skipped"
                 + (f"; stopped: {step.manifest['stopped']}" if step.manifest["stopped"] else "") + ")")
        return 0
    except StageError as exc:
        step.stop(str(exc))
        step.pack()
        print(f"gpu_host step {name}: {exc}", file=sys.stderr)
        return 1
    finally:
        step.close()
