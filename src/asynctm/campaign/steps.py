"""``step <name>``: one device command of the GPU campaign, within a time budget, packing what finished.

Every step

1. installs PyCUDA and PyTsetlinMachineCUDA (the staged wheels) into ``/tmp/asynctm-site`` with pip,
   offline (``--no-install`` skips this where they are importable already);
2. asks PyCUDA for the GPU (name, NVIDIA driver, CUDA) and stops with a clear line if there is none;
3. runs its work in child processes whose environment has the packages, the checkout's ``src`` and the
   CUDA library and header paths, each child killed at the step's deadline;
4. after every finished unit rewrites ``<out>/<name>.tar.gz`` (``results/...`` and ``benchmarks/results/...``,
   plus a manifest ``benchmarks/results/campaign/<name>_<gpu>_<time>.json`` of what ran, what was skipped and
   why); ``<out>/<name>.log`` is the step's log, written as it goes.

Runs whose record already exists in the checkout (unpacked from an earlier call) are skipped, so a step that
ran out of time is continued by calling it again after ``unpack``. On a machine still warm from an earlier call of
the same step (same staged campaign), the step keeps that call's work folder: its records count as done without
an ``unpack`` in between, its tarball holds only what this call adds, and a run that paused at that call's end
(``--stop-at``: no time for its next epoch) resumes from its checkpoint. ``--until`` ends a step at a given time (the
device call's end, shared by its steps: what one step leaves unused goes to the next), ``--budget`` after a given
number of seconds, whichever comes first. The ``sweeps`` and ``paper`` steps run every GPU implementation the
config lists for an experiment (``impls``; a sweep's own ``impls``), each into its own record folder: ``tm_gpu``
(the paper's design, one thread per clause) and ``tm_gpu_warp`` (a warp per clause); ``--impl`` narrows them to one.
"""

from __future__ import annotations

import hashlib
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
from datetime import UTC, datetime
from pathlib import Path

from ..experiments import estimate, plan
from ..experiments.run import EXIT_PAUSED, checkpoint_path, read_checkpoint
from ..provenance import REPO, code_digests
from . import STAGE_DIR, slug
from .stage import StageError, load_campaign

DEFAULT_BUDGET_S = 480  # a device command may run 600 s; the rest is install, start-up and packing
SITE = Path("/tmp/asynctm-site")
WORK_ROOT = Path("/tmp/asynctm-campaign")  # the steps' work folders, one per step, kept while the machine is warm
# The order in which the steps take the experiments (any other active experiment follows, by name).
PAPER_ORDER = ("wsd_apple", "semeval", "imdb", "bike_sharing", "bbc_sport", "wsd_java", "newsgroups20",
               "blogfeedback")
SWEEP_ORDER = ("semeval", "imdb", "bbc_sport", "bike_sharing")
# The tally ablation's GPU runs (config ablation, at each experiment's main setting; kernels/README.md, "Example
# order"), in this order, each group's variants seed by seed so that a step cut short leaves them with equal seeds.
GPU_ABLATION = (("bike_sharing", ("async_linear_warp", "async_linear_staggered_warp")),
                ("bike_sharing", ("async_linear_staggered", "async_linear")),
                ("bike_sharing", ("sync_linear", "sync_linear_staggered")),
                ("wsd_apple", ("async_linear_staggered", "async_linear")),
                ("wsd_apple", ("async_linear_warp", "async_linear_staggered_warp")))
MAX_FAILURES_IN_A_ROW = 3
# pytest processes that share the GPU tests (the GPU machine has 16 cores): most of a test's time on a bare
# machine is nvcc compiling its kernels (about a second each), which then runs side by side. Each process has a
# PyCUDA compiler cache of its own (PyCUDA writes a cache file in place: a process reading it while another
# writes it could load half a module). Tests marked `device_wide` (they read the whole device's free memory) run
# alone afterwards.
GPU_TEST_WORKERS = 8
KILL_GRACE_S = 10
# Not packed: a run's resumable state (large, and only useful on the machine that wrote it).
NOT_PACKED = (".checkpoint.npz", ".damaged", ".partial", ".tmp")  # .damaged: a checkpoint a run set aside
# A run's --stop-at: this long before the step's deadline (its checkpoint's write, then the kill's grace).
STOP_MARGIN_S = 20
# The benchmark's --deadline (no epoch starts after it): this long before the step's deadline.
BENCH_END_MARGIN_S = 20
# What a work folder was made for (kept by a later call of its step only if that names the same staged campaign).
WORK_MARKER = ".campaign-step.json"

PROBE = r"""
import json, sys
out = {}
try:
    import pycuda.driver as drv
    drv.init()
    out["device_count"] = drv.Device.count()
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
from asynctm.provenance import gpu_info, versions
out["gpu"] = gpu_info()
v = versions()
out["versions"] = {k: v.get(k) for k in ("python", "numpy", "scipy", "pycuda", "pyTsetlinMachineCUDA")}
print(json.dumps(out))
"""


def steps() -> tuple[str, ...]:
    return tuple(STEPS)


# -- the environment on the GPU machine -----------------------------------------------------------------------

def install(campaign_dir: Path, campaign: dict, site: Path = SITE, say=print) -> None:
    """pip-install the staged wheels into ``site``, offline."""
    tag = campaign.get("python_tag", "")
    here = f"cp{sys.version_info.major}{sys.version_info.minor}"
    if tag and tag != here:
        raise StageError(f"the staged PyCUDA wheel is for {tag} but this python ({sys.executable}) is {here}: run "
                         "the step with the GPU machine's python3, or stage wheels built for this one")
    files = sorted((campaign_dir / "wheels").glob("*.whl"))  # PyTsetlinMachineCUDA's too, built by stage
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
           "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, files)]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise StageError(f"installing the staged packages failed: {(r.stderr or r.stdout).strip()[-800:]}")
    say(f"installed {', '.join(f.name for f in files)} into {site} in {time.time() - t0:.1f} s")


def _cuda_lib_dirs() -> list[str]:
    """Folders holding libcurand.so.10 (PyCUDA links it; PyTsetlinMachineCUDA uses curand), if not on the path."""
    out = []
    for entry in sys.path + ["/opt/torch/.venv/lib/python3.12/site-packages"]:
        lib = Path(entry or ".") / "nvidia" / "cu13" / "lib"
        if (lib / "libcurand.so.10").exists() and str(lib) not in out:
            out.append(str(lib))
    return out


def _curand_include() -> list[str]:
    """``-I`` for curand_kernel.h where the CUDA toolkit lacks it (PyTsetlinMachineCUDA's kernels include it)."""
    if Path("/usr/local/cuda/include/curand_kernel.h").exists():
        return []
    for lib in _cuda_lib_dirs():
        inc = Path(lib).parent / "include"
        if (inc / "curand_kernel.h").exists():
            return [f"-I{inc}"]
    return []


def child_env(campaign: dict, site: Path | None) -> dict:
    env = dict(os.environ)
    paths = ([str(site)] if site else []) + [str(REPO / "src")]
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    libs = _cuda_lib_dirs()
    if libs:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(libs + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH")
                                                         else []))
    flags = _curand_include()
    if flags:
        env["PYCUDA_DEFAULT_NVCC_FLAGS"] = " ".join([env.get("PYCUDA_DEFAULT_NVCC_FLAGS", ""), *flags]).strip()
    if shutil.which("nvcc", path=env.get("PATH")) is None and Path("/usr/local/cuda/bin/nvcc").exists():
        env["PATH"] = os.pathsep.join(["/usr/local/cuda/bin", env.get("PATH", "")])  # PyCUDA runs nvcc
    env.setdefault("PYCUDA_CACHE_DIR", "/tmp/asynctm-pycuda-cache")
    Path(env["PYCUDA_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)
    source = campaign.get("source") or {}
    # The checkout on the GPU machine may have no .git: provenance then reads the commit from here.
    env.setdefault("ASYNCTM_SOURCE_COMMIT", source.get("commit") or "")
    env.setdefault("ASYNCTM_SOURCE_DIRTY", str(source.get("tracked_files_modified", "")))
    env["PYTHONUNBUFFERED"] = "1"
    return env


# -- one step ---------------------------------------------------------------------------------------------------

class Step:
    """The state of one step: its deadline, log, work folder (packed into the tarball) and manifest."""

    def __init__(self, name: str, campaign_dir: Path, out_dir: Path, budget_s: float, work_dir: Path | None,
                 tree: Path | None = None, until: float | None = None, later_s: float = 0.0):
        self.name, self.campaign_dir, self.out_dir = name, Path(campaign_dir), Path(out_dir)
        self.tree = Path(tree) if tree else REPO  # records here count as done
        self.started = time.time()
        self.deadline = min(self.started + budget_s, until if until is not None else math.inf)
        budget_s = max(0.0, round(self.deadline - self.started, 1))
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.work = Path(work_dir) if work_dir else WORK_ROOT / name
        self.log_fh = open(self.out_dir / f"{name}.log", "a", buffering=1)
        self.campaign = load_campaign(self.campaign_dir)
        self.earlier = self._open_work()  # files an earlier call of this step left here: not packed again
        self._carry_this_calls_tarball()
        self.config = self.campaign["config"]
        self.env: dict = {}
        self.gpu: dict | None = None
        self.later_s = float(later_s)  # seconds of this step in the lease's next call (--later): runs may continue
        self.impl: str | None = None  # --impl: the one GPU implementation the sweeps and paper steps run
        stamp = datetime.fromtimestamp(self.started, UTC).strftime("%Y%m%dT%H%M%SZ")
        self.code = code_digests()  # the kernels' and backends' digests, kept in the manifest
        self.manifest = {"step": name, "started_utc": stamp, "budget_s": budget_s, "later_s": self.later_s,
                         "gpu": None, "source": self.campaign.get("source"), "code": self.code, "done": [],
                         "skipped": [], "stopped": None}
        self.stamp = stamp
        self._manifest_rel: str | None = None
        self.failures_in_a_row = 0

    def _open_work(self) -> dict[str, tuple[float, int]]:
        """Keep the work folder of an earlier call of this step for the same staged campaign (its files, with
        their modification time and size, are returned); anything else there is removed."""
        marker = {"step": self.name, "campaign": self.campaign.get("source"),
                  "staged": hashlib.sha256((self.campaign_dir / "campaign.json").read_bytes()).hexdigest()}
        try:
            kept = json.loads((self.work / WORK_MARKER).read_text()) == json.loads(json.dumps(marker))
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
        return earlier

    def _carry_this_calls_tarball(self) -> None:
        """A step may run twice in one device call (a second turn takes the time the steps after its first left
        unused). The call's folder then holds the first turn's tarball, which this turn's would replace: the files
        it carries are packed again, so that the call brings back both turns' results."""
        try:
            with tarfile.open(self.out_dir / f"{self.name}.tar.gz") as tar:
                names = tar.getnames()
        except (OSError, tarfile.TarError):
            return
        for name in names:
            self.earlier.pop(name, None)
        self.say(f"packs again the {len(names)} file(s) of this step's earlier turn in this call")

    def packable(self, path: Path) -> bool:
        """A file of the work folder that this call's tarball carries: new or changed in this call, not a run's
        resumable state, and not the log of a paused run (it comes with the run's record)."""
        rel = path.relative_to(self.work).as_posix()
        st = path.stat()
        if path.is_symlink() or rel == WORK_MARKER or path.name.endswith(NOT_PACKED):
            return False
        if self.earlier.get(rel) == (st.st_mtime, st.st_size):
            return False
        stem = path.name.removesuffix(".log")
        return not (path.name.endswith(".log") and (path.parent / f"{stem}.checkpoint.npz").exists()
                    and not (path.parent / f"{stem}.json").exists())

    # progress
    def say(self, msg: str) -> None:
        line = f"{datetime.now(UTC).strftime('%H:%M:%S')} [{self.name}] {msg}"
        print(line, flush=True)
        self.log_fh.write(line + "\n")

    def remaining(self) -> float:
        return self.deadline - time.time()

    @property
    def data_dir(self) -> Path:
        return self.campaign_dir / "data"

    @property
    def python(self) -> str:
        return sys.executable

    def child(self, cmd: list[str], log_path: Path | None = None) -> int | None:
        """Run ``cmd`` until it ends or the deadline comes (then its process group is killed: None)."""
        return self.children([(cmd, log_path, None)])[0]

    def children(self, jobs: list[tuple[list[str], Path | None, dict | None]]) -> list[int | None]:
        """Run ``(cmd, log_path, env)`` jobs side by side (``env`` None: the step's) until each ends or the
        deadline comes (then the process groups still running are killed: None)."""
        if self.remaining() <= 0:
            return [None] * len(jobs)
        outs = [open(log, "a") if log else self.log_fh for _, log, _ in jobs]
        procs = []
        try:
            for (cmd, _, env), out in zip(jobs, outs):
                # Its own process group (to kill it with its children), but not a new session: the device tool
                # ends a command's session when the command ends, so nothing outlives the step.
                procs.append(subprocess.Popen(cmd, cwd=REPO, env=env or self.env, stdout=out,
                                              stderr=subprocess.STDOUT, process_group=0))
            codes: list[int | None] = []
            for proc in procs:
                try:
                    codes.append(proc.wait(timeout=max(0.0, self.remaining())))
                except subprocess.TimeoutExpired:
                    codes.append(None)
            late = [proc for proc, rc in zip(procs, codes) if rc is None]
            # SIGTERM first: a run then ends with "interrupted" in its log; SIGKILL if it does not.
            for proc in late:
                os.killpg(proc.pid, signal.SIGTERM)
            for proc in late:
                try:
                    proc.wait(timeout=KILL_GRACE_S)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            return codes
        finally:
            for proc in procs:
                if proc.poll() is None:  # an exception above: nothing outlives the step
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            for out, (_, log, _) in zip(outs, jobs):
                if log:
                    out.close()

    # results
    def exists(self, rel: str) -> bool:
        return (self.tree / rel).is_file() or (self.work / rel).is_file()

    def manifest_rel(self) -> str:
        """Where this turn's manifest goes in the work folder: chosen at its first pack, beside no other turn's
        (an earlier call or turn of this step on this machine may have started in the same second)."""
        if self._manifest_rel is None:
            device = slug((self.gpu or {}).get("name", "no_gpu"))
            rel, n = f"benchmarks/results/campaign/{self.name}_{device}_{self.stamp}.json", 1
            while (self.work / rel).exists():
                n += 1
                rel = f"benchmarks/results/campaign/{self.name}_{device}_{self.stamp}_{n}.json"
            self._manifest_rel = rel
        return self._manifest_rel

    def pack(self) -> Path:
        """Rewrite ``<out>/<name>.tar.gz`` from the work folder and the manifest, atomically."""
        self.manifest["elapsed_s"] = round(time.time() - self.started, 1)
        man = self.work / self.manifest_rel()
        man.parent.mkdir(parents=True, exist_ok=True)
        man.write_text(json.dumps(self.manifest, indent=1, sort_keys=True) + "\n")
        target = self.out_dir / f"{self.name}.tar.gz"
        partial = self.out_dir / f"{self.name}.tar.gz.partial"
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
        r = subprocess.run([step.python, "-c", PROBE], cwd=REPO, env=step.env, capture_output=True, text=True,
                           timeout=max(30.0, min(180.0, step.remaining())))
    except subprocess.TimeoutExpired:
        raise StageError("the GPU probe (PyCUDA's driver and device query) did not answer in time") from None
    if r.returncode != 0 or not r.stdout.strip():
        raise StageError(f"the GPU probe failed: {(r.stderr or r.stdout).strip()[-800:]}")
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except ValueError:
        raise StageError(f"the GPU probe printed no JSON: {r.stdout.strip()[-400:]}") from None


# -- the steps ----------------------------------------------------------------------------------------------------

def gpu_test_files() -> list[Path]:
    """The test modules that hold GPU tests (the `gpu` mark, or the backend_name fixture that carries it), in every
    folder of tests/: the kernels' in tests/gpu/, the estimators' beside their CPU tests in tests/unit/."""
    return [p for p in sorted((REPO / "tests").rglob("test_*.py"))
            if re.search(r"mark\.gpu|\bbackend_name\b", p.read_text())]


def collect_gpu_tests(step: Step, select: str | None = None) -> tuple[list[str], list[str]] | None:
    """The GPU tests' node ids: (those that may share the GPU, those marked ``device_wide``); None where pytest
    could not collect them (then one pytest runs them all and reports the errors)."""
    found = []
    for marks in ("gpu and not device_wide", "gpu and device_wide"):
        cmd = [step.python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marks,
               *map(str, gpu_test_files())] + (["-k", select] if select else [])
        try:
            r = subprocess.run(cmd, cwd=REPO, env=step.env, capture_output=True, text=True,
                               timeout=max(1.0, min(120.0, step.remaining())))
        except subprocess.TimeoutExpired:
            return None
        if r.returncode not in (0, 5):  # 5: nothing collected
            return None
        found.append([ln.strip() for ln in r.stdout.splitlines() if "::" in ln and not ln.startswith(" ")])
    return found[0], found[1]


def merge_junit(parts: list[Path], target: Path) -> None:
    """One JUnit XML file of the test suites in ``parts`` (those that exist), with the totals on its root."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites")
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for part in parts:
        try:
            tree = ET.parse(part).getroot()
        except (OSError, ET.ParseError):
            continue
        for suite in ([tree] if tree.tag == "testsuite" else tree.findall("testsuite")):
            for key in totals:
                totals[key] += int(suite.get(key, 0))
            root.append(suite)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.ElementTree(root).write(target, encoding="utf-8", xml_declaration=True)


def _junit_cases(path: Path) -> list[tuple[str, object]]:
    """``(test id, <testcase> element)`` of every test in a JUnit XML file (none where it is missing or broken)."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    return [(f"{case.get('classname', '')}::{case.get('name', '')}", case) for case in root.iter("testcase")]


def junit_failures(path: Path) -> list[dict]:
    """The tests of a JUnit XML file that failed or broke: ``{"test": id, "kind": "assertion" (an assert did not
    hold) | "failure" (another exception in the test) | "error" (in its set-up or tear-down), "learning": whether
    the test is a learning bar (the property tests/conftest.py records), "message": its first line}``."""
    out = []
    for test, case in _junit_cases(path):
        found = next((case.find(k) for k in ("failure", "error") if case.find(k) is not None), None)
        if found is None:
            continue
        message = found.get("message") or ""
        kind = "error" if found.tag == "error" else "assertion" if message.startswith("AssertionError") else "failure"
        out.append({"test": test, "kind": kind,
                    "learning": any(p.get("name") == "learning" for p in case.iter("property")),
                    "message": message.splitlines()[0][:200] if message else ""})
    return out


def junit_scores(path: Path) -> dict[str, dict]:
    """The scores that learning tests recorded in a JUnit XML file (the property ``scores``, JSON, that
    tests/conftest.py's ``record_scores`` writes), passed or failed: ``{test id: {name: [score per seed]}}``."""
    out = {}
    for test, case in _junit_cases(path):
        for prop in case.iter("property"):
            if prop.get("name") == "scores":
                try:
                    out[test] = json.loads(prop.get("value") or "")
                except ValueError:
                    pass
    return out


def _pytest_counts(text: str) -> dict[str, int]:
    """The counts of pytest's last summary line(s) of each process in ``text``, added up."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if re.match(r"^=*\s*\d+ (passed|failed|skipped|errors?|deselected|xfailed|xpassed)\b", line.strip("= ")):
            for n, what in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)", line):
                what = "errors" if what == "error" else what
                counts[what] = counts.get(what, 0) + int(n)
    return counts


def step_gpu_tests(step: Step, select: str | None = None) -> None:
    """(a) ``pytest -m gpu`` on the GPU test modules, in :data:`GPU_TEST_WORKERS` processes side by side, then
    the ``device_wide`` ones alone; the JUnit XML (merged) and the output come back."""
    base = step.work / "benchmarks" / "results" / "campaign" / f"gpu_tests_{slug(step.gpu['name'])}_{step.stamp}"
    base.parent.mkdir(parents=True, exist_ok=True)
    pytest_cmd = [step.python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs"]
    collected = collect_gpu_tests(step, select)
    t0 = time.time()
    if collected is None or not collected[0]:
        cmd = [*pytest_cmd, "-m", "gpu", "--continue-on-collection-errors", f"--junitxml={base}.xml",
               *map(str, gpu_test_files())] + (["-k", select] if select else [])
        step.say("running " + " ".join(cmd[2:]))
        rc = step.child(cmd, log_path=base.with_suffix(".txt"))
        text = base.with_suffix(".txt").read_text() if base.with_suffix(".txt").exists() else ""
        summary = next((ln for ln in reversed(text.splitlines()) if re.search(r"passed|failed|error|skipped", ln)),
                       "").strip("= ").strip()
    else:
        shared, alone = collected
        n = max(1, min(GPU_TEST_WORKERS, os.cpu_count() or 1, len(shared)))
        cache = Path(step.env.get("PYCUDA_CACHE_DIR", "/tmp/asynctm-pycuda-cache"))
        jobs, parts = [], []
        for i in range(n):
            part = base.with_name(f"{base.name}_part{i}")
            (cache / f"tests-{i}").mkdir(parents=True, exist_ok=True)
            jobs.append(([*pytest_cmd, f"--junitxml={part}.xml", *shared[i::n]], part.with_suffix(".txt"),
                         {**step.env, "PYCUDA_CACHE_DIR": str(cache / f"tests-{i}")}))
            parts.append(part)
        step.say(f"running {len(shared)} GPU tests in {n} pytest processes side by side"
                 + (f", then {len(alone)} alone" if alone else ""))
        codes = step.children(jobs)
        if alone and all(rc is not None for rc in codes):
            part = base.with_name(f"{base.name}_alone")
            codes += step.children([([*pytest_cmd, f"--junitxml={part}.xml", *alone], part.with_suffix(".txt"),
                                     None)])
            parts.append(part)
        text = "".join(f"==== pytest process {p.name.rsplit('_', 1)[-1]} ====\n" + p.with_suffix(".txt").read_text()
                       for p in parts if p.with_suffix(".txt").exists())
        base.with_suffix(".txt").write_text(text)
        merge_junit([p.with_suffix(".xml") for p in parts], base.with_suffix(".xml"))
        for p in parts:
            for ext in (".txt", ".xml"):
                p.with_suffix(ext).unlink(missing_ok=True)
        # None: one ran past the budget; else one that broke off (a crash: a negative signal), else 1 where tests
        # failed, else 0
        rc = (None if any(c is None for c in codes) else next((c for c in codes if c not in (0, 1)), max(codes)))
        counts = _pytest_counts(text)
        odd = [f"pytest process {p.name.rsplit('_', 1)[-1]} exited with {c}" for p, c in zip(parts, codes)
               if c not in (0, 1)]  # 1: failed tests, counted above; anything else: it broke off
        summary = (", ".join(f"{v} {k}" for k, v in counts.items()) + f" in {time.time() - t0:.0f} s ({n} "
                   f"process{'es' if n > 1 else ''} side by side" + (", then 1 alone)" if alone else ")")
                   + "".join(f"; {o}" for o in odd))
    failed = junit_failures(base.with_suffix(".xml"))
    scores = junit_scores(base.with_suffix(".xml"))
    step.manifest["pytest"] = {"returncode": rc, "summary": summary, "failed": failed, "scores": scores}
    for line in text.splitlines()[-40:]:
        step.log_fh.write(line + "\n")
    for line in text.splitlines():
        if line.startswith(("FAILED", "ERROR")):
            print(line[:300], flush=True)  # the device tool's reply shows the end of stdout
    for test, by_name in scores.items():
        step.say(f"{test.rsplit('::', 1)[-1]}: " + "; ".join(
            f"{name} {statistics.mean(v):.3f} ({', '.join(f'{x:.3f}' for x in v)})" for name, v in by_name.items()
            if isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v)))
    if rc is None:
        step.stop("pytest ran past the budget")
    else:
        step.say(f"pytest -m gpu: exit {rc}: {summary.strip('= ')}")
        step.manifest["done"].append("pytest -m gpu")


def step_bench(step: Step, select: str | None = None) -> None:
    """(b) ours and PyTsetlinMachineCUDA on one GPU in one process (:mod:`asynctm.campaign.bench`): records
    ``benchmarks/results/gpu_<gpu>_<commit>.{json,md}``; no epoch starts later than :data:`BENCH_END_MARGIN_S`
    before the step's end."""
    name = f"gpu_{slug(step.gpu['name'])}_{((step.campaign.get('source') or {}).get('commit') or 'unknown')[:7]}"
    cmd = [step.python, "-m", "asynctm.campaign.bench", "--campaign-dir", str(step.campaign_dir),
           "--out-dir", str(step.work / "benchmarks" / "results"), "--name", name,
           "--deadline", f"{step.deadline - BENCH_END_MARGIN_S:.0f}"] + (["--settings", select] if select else [])
    step.say("running " + " ".join(cmd[2:]))
    rc = step.child(cmd)
    if rc is None:
        step.stop("the benchmark ran past the budget (what it wrote per setting is packed)")
    elif rc != 0:
        step.failed("benchmark", f"exit status {rc} (see the log)")
    else:
        step.manifest["done"].append(f"benchmarks/results/{name}.json")
    table = step.work / "benchmarks" / "results" / f"{name}.md"
    if table.is_file():
        print(table.read_text(), flush=True)  # the device tool's reply shows the end of stdout


def resumable(step: Step, rel: str) -> dict | None:
    """The state of the checkpoint that an earlier call on this machine left for the run ``rel`` (it paused at
    that call's end, or was killed there), which the run resumes from; None where there is none."""
    ckpt = checkpoint_path(step.work / rel)
    if not ckpt.is_file():
        return None
    try:
        state = read_checkpoint(ckpt)
        return state if state.get("epochs") else None
    except ValueError:
        return None


def timings(step: Step) -> estimate.Timings:
    """The pipeline's references for estimating a run (:mod:`asynctm.experiments.estimate`): the records in the
    checkout and in this step's work folder, and the staged datasets' sizes."""
    from ..store import RecordError

    root = plan.results_root(step.config)
    try:
        out = estimate.load_timings(step.tree / root, None, step.campaign_dir / "data")
        for key, refs in estimate.load_timings(step.work / root).tm.items():
            out.tm.setdefault(key, []).extend(refs)
    except RecordError as exc:  # the runs still start, and pause at the step's end where they must
        step.say(f"no estimates: {exc}")
        return estimate.Timings()
    return out


def record_path(config: dict, run: tuple) -> str:
    """The record of a GPU run ``(experiment, impl, params, seed)``, or ``(experiment, impl, params, seed,
    variant)`` of the tally ablation."""
    name, impl, params, seed, *variant = run
    rec = {"experiment": name, "impl": impl, "params": params, "seed": seed}
    if variant:
        return plan.ablation_record_path(config, {**rec, "variant": variant[0]})
    return plan.record_path(config, rec)


def _tm_runs(step: Step, runs: list[tuple]) -> None:
    """GPU runs ``(experiment, impl, params, seed[, variant])`` in order, each through ``python -m
    asynctm.experiments tm`` (novelty experiments: then the MLP stage on its class sums). A run whose estimate (the
    pipeline's, :func:`asynctm.experiments.estimate.estimate_run`) exceeds the time left and the next call's
    (``--later``) is passed over; an unestimated one starts. Each run pauses (``--stop-at``) before an epoch that
    would end after the step; its checkpoint stays in the work folder, and the step's next call on this machine
    resumes it (:func:`resumable`)."""
    config, refs = step.config, timings(step)
    for run in runs:
        if step.manifest["stopped"]:
            return
        name, impl, params, seed, *variant = run
        rel = record_path(config, run)
        if step.exists(rel):
            step.say(f"{rel}: recorded already")
        else:
            left = step.remaining()
            if left < STOP_MARGIN_S + 5:  # a run started now would have to pause before its first epoch
                step.stop("the budget is spent")
                return
            resume = resumable(step, rel)
            need = None if resume else estimate.estimate_run(
                config, {"experiment": name, "impl": impl, "params": params, "kind": "tm"}, refs).seconds
            if need is not None and need > left + step.later_s:
                step.skip(rel, f"would not fit: about {need:.0f} s needed (the pipeline's estimate), {left:.0f} s "
                          "left" + (f" (and {step.later_s:.0f} s in the next call)" if step.later_s else ""))
                continue
            epochs = plan.parse_tm_params(params)["epochs"]
            settings = (plan.ablation_run_settings(config, name, impl, params, variant[0], seed) if variant else
                        plan.tm_run_settings(config, name, impl, params, seed))
            out = step.work / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            log = out.with_suffix(".log")
            step.say(f"{rel}: " + (f"resuming after epoch {len(resume['epochs'])}/{epochs}" if resume else "training")
                     + f" ({left:.0f} s left" + (f", about {need:.0f} s needed)" if need else ")"))
            rc = step.child([step.python, "-m", "asynctm.experiments", "tm", "--settings",
                             json.dumps(settings, sort_keys=True), "--data-dir", str(step.data_dir), "--out",
                             str(out), "--log", str(log), "--stop-at", f"{step.deadline - STOP_MARGIN_S:.0f}"])
            state = resumable(step, rel) if rc == EXIT_PAUSED else None
            if state:
                s_per_epoch = statistics.median(e["train_s"] + e["eval_s"] for e in state["epochs"])
                step.manifest.setdefault("paused", []).append({
                    "run": rel, "epochs_done": len(state["epochs"]), "epochs": epochs,
                    "s_per_epoch": round(s_per_epoch, 4), "gpu": (step.gpu or {}).get("name")})
                step.say(f"{rel}: paused after epoch {len(state['epochs'])}/{epochs} ({s_per_epoch:.3f} s per epoch): "
                         "no time for another; its checkpoint stays on this machine for the next call")
                step.pack()
                continue
            if rc is None or rc != 0 or not out.is_file():
                keep_log = checkpoint_path(out).is_file()  # a later call here resumes the run, appending to its log
                for partial in [out.with_name(out.name.removesuffix(".json") + ".scores.npz")] + [log] * (not keep_log):
                    partial.unlink(missing_ok=True)
                if rc is None:
                    step.stop(f"{rel} ran past the budget; not recorded")
                    return
                step.failed(rel, f"exit status {rc} (see the log)")
                continue
            step.failures_in_a_row = 0
            rec = json.loads(out.read_text())
            step.say(f"{rel}: {rec['timing']['train_s_mean']:.3f} s/epoch, final {rec['final']}")
            step.manifest["done"].append(rel)
            step.pack()
        if plan.experiment(config, name)["task"] == "novelty" and step.manifest.get("with_mlp") and not variant:
            _mlp_run(step, name, params, seed, impl)

def _mlp_run(step: Step, name: str, params: str, seed: int, impl: str = "tm_gpu") -> None:
    """The novelty MLP (CPU, seconds) on a GPU run's class sums (``impl``: tm_gpu or tm_gpu_warp), so that Table 3's
    cell is complete."""
    config = step.config
    mlp_params = f"{impl}.{params}"
    rel = plan.record_path(config, {"experiment": name, "impl": "mlp_novelty", "params": mlp_params, "seed": seed})
    if step.exists(rel):
        return
    tm_rel = plan.record_path(config, {"experiment": name, "impl": impl, "params": params, "seed": seed})
    stem = tm_rel.removesuffix(".json") + ".scores.npz"
    scores = next((r / stem for r in (step.work, step.tree) if (r / stem).is_file()), None)
    if scores is None:
        step.skip(rel, f"the {impl} run's class sums (scores.npz) are not here")
        return
    out = step.work / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    settings = plan.mlp_run_settings(config, name, mlp_params, seed)
    rc = step.child([step.python, "-m", "asynctm.experiments", "mlp", "--settings",
                     json.dumps(settings, sort_keys=True), "--scores", str(scores), "--out", str(out), "--log",
                     str(out.with_suffix(".log"))])
    if rc == 0 and out.is_file():
        step.manifest["done"].append(rel)
        step.pack()
    else:
        out.with_suffix(".log").unlink(missing_ok=True)
        step.skip(rel, f"the MLP stage failed or ran past the budget (exit {rc})")


def ordered(config: dict, order: tuple[str, ...], names=None) -> list[str]:
    """The active experiments (of ``names``, if given) in ``order``, then any other, by name."""
    active = [n for n in plan.active_experiments(config) if names is None or n in names]
    return [n for n in order if n in active] + sorted(n for n in active if n not in order)


def gpu_impls(impls, only: str | None = None) -> list[str]:
    """The GPU implementations among ``impls`` (the config's list, in its order), or just ``only`` (``--impl``)."""
    return [i for i in impls if i in plan.GPU_IMPLS and (only is None or i == only)]


def sweep_runs(config: dict, only: str | None = None) -> list[tuple[str, str, str, int]]:
    """The GPU points ``(experiment, impl, params, seed)`` of the figures' clause sweeps, in :data:`SWEEP_ORDER`,
    each GPU implementation the sweep lists; per sweep the smallest and the largest number of clauses first (the
    time ratio the paper's claim is about), then the rest ascending."""
    runs = []
    for name in ordered(config, SWEEP_ORDER, config.get("sweeps", {})):
        pts = plan.sweep_points(config, name)
        for impl in gpu_impls(pts["impls"], only):
            params = sorted(plan.sweep_params(pts, impl), key=lambda p: plan.parse_tm_params(p)["clauses"])
            order = [params[0], params[-1], *params[1:-1]] if len(params) > 1 else params
            runs += [(name, impl, p, seed) for p in dict.fromkeys(order) for seed in pts["seeds"]]
    return runs


def paper_runs(config: dict, only: str | None = None) -> list[tuple[str, str, str, int]]:
    """Each experiment's main setting ``(experiment, impl, params, seed)``, every seed, in :data:`PAPER_ORDER`, each
    GPU implementation the config lists (``impls``)."""
    return [(name, impl, plan.main_params(config, name, impl), seed) for name in ordered(config, PAPER_ORDER)
            for impl in gpu_impls(config.get("impls", plan.GPU_IMPLS), only)
            for seed in plan.run_seeds(config, name, impl)]


def ablation_runs(config: dict) -> list[tuple[str, str, str, int, str]]:
    """The tally ablation's GPU runs ``(experiment, "tm_gpu", params, seed, variant)`` in :data:`GPU_ABLATION`'s
    order: those of the configured ablation at each experiment's main setting, each group's variants seed by seed."""
    wanted = {(r["experiment"], r["variant"], r["seed"]): r["params"]
              for r in plan.ablation_runs({**config, "ablation": {**config["ablation"], "impl": "tm_gpu"}})
              if r["params"] == plan.main_params(config, r["experiment"])}
    active = plan.active_experiments(config)
    runs = []
    for name, variants in GPU_ABLATION:
        seeds = sorted({seed for n, _, seed in wanted if n == name}) if name in active else []
        runs += [(name, "tm_gpu", wanted[name, v, seed], seed, v) for seed in seeds for v in variants
                 if (name, v, seed) in wanted]
    return runs


def _selected(runs: list[tuple], select: str | None) -> list[tuple]:
    return [r for r in runs if not select or r[0] in select.split(",")]


def step_sweeps(step: Step, select: str | None = None) -> None:
    """(c) the clause sweeps' GPU points (epochs per point: the config's sweep epochs)."""
    runs = _selected(sweep_runs(step.config, step.impl), select)
    step.say(f"{len(runs)} sweep runs: " + ", ".join(f"{n}/{i}/{p}/seed{s}" for n, i, p, s in runs))
    _tm_runs(step, runs)


def step_paper(step: Step, select: str | None = None) -> None:
    """(d) paper-scale GPU runs of Tables 3-5 (the config's seeds and epochs)."""
    runs = _selected(paper_runs(step.config, step.impl), select)
    step.manifest["with_mlp"] = True
    step.say(f"{len(runs)} runs: " + ", ".join(f"{n}/{i}/{p}/seed{s}" for n, i, p, s in runs))
    _tm_runs(step, runs)


def step_ablation(step: Step, select: str | None = None) -> None:
    """The tally ablation's GPU runs (:func:`ablation_runs`), each with its variant's threads per clause (one, the
    paper's, or a warp for a ``_warp`` variant): records under results/ablation/, beside the CPU build's."""
    runs = _selected(ablation_runs(step.config), select)
    step.say(f"{len(runs)} ablation runs: " + ", ".join(f"{n}/{p}/{v}/seed{s}" for n, _, p, s, v in runs))
    _tm_runs(step, runs)


def step_host_peers(step: Step, select: str | None = None) -> None:
    from .host import step_host_peers as run

    run(step, select, order=PAPER_ORDER, stop_margin_s=STOP_MARGIN_S)


STEPS = {"gpu_tests": step_gpu_tests, "bench": step_bench, "sweeps": step_sweeps, "paper": step_paper,
         "ablation": step_ablation, "host_peers": step_host_peers}
IMPL_STEPS = ("sweeps", "paper")  # the steps that take --impl


def run_step(name: str, campaign_dir: Path | None = None, out_dir: Path | None = None,
             budget_s: float = DEFAULT_BUDGET_S, do_install: bool = True, work_dir: Path | None = None,
             select: str | None = None, tree: Path | None = None, impl: str | None = None,
             until: float | None = None, later_s: float = 0.0) -> int:
    """Run one step; returns the exit status (0: it ran, even if it stopped at its budget). ``impl`` (sweeps,
    paper): only this GPU implementation. ``until`` (UNIX time) ends the step then, if that comes before the budget.
    ``later_s``: seconds the same step gets in the next call of this lease, on this machine (a run that needs more
    than this call has left starts where the two together fit, pauses at this call's end and resumes in that one)."""
    if name not in STEPS:
        raise StageError(f"unknown step {name!r}; the steps are, in order: {', '.join(STEPS)}")
    if impl is not None and (name not in IMPL_STEPS or impl not in plan.GPU_IMPLS):
        raise StageError(f"--impl applies to the {' and '.join(IMPL_STEPS)} steps and must be one of "
                         f"{', '.join(plan.GPU_IMPLS)}, got {impl} for step {name}")
    campaign_dir = Path(campaign_dir) if campaign_dir else REPO / STAGE_DIR
    out_dir = Path(out_dir or os.environ.get("OUT") or REPO / "campaign-out")
    step = Step(name, campaign_dir, out_dir, budget_s, work_dir, tree, until=until, later_s=later_s)
    step.impl = step.manifest["impl"] = impl
    try:
        if do_install:
            install(campaign_dir, step.campaign, say=step.say)
        step.env = child_env(step.campaign, SITE if do_install else None)
        info = probe(step)
        step.gpu = info.get("gpu")
        step.manifest.update(gpu=step.gpu, versions=info.get("versions"))
        if not step.gpu or "name" not in step.gpu:
            why = info.get("error") or (step.gpu or {}).get("error") or "no device"
            step.stop(f"no CUDA GPU found by PyCUDA ({why})")
            step.pack()
            return 1
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
        print(f"asynctm.campaign step {name}: {exc}", file=sys.stderr)
        return 1
    finally:
        step.close()
