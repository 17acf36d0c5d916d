"""Benchmark peers that run in a worker process of their own virtual environment: tmu (``tmu_cpu``, and
``tmu_cuda`` on a GPU) and green-tsetlin (``green_tsetlin``). Benchmark-only code: ``bench_tm.py`` and
``bench_gpu.py`` hand :func:`factories` to :mod:`asynctm.benchmarking` (``Options.workers``), which builds these
peers like the package's own.

tmu 0.8.3 needs NumPy < 2 and green-tsetlin 1.1.0 compiles a C++ extension, so neither is installed beside our
package: ``benchmarks/setup_tm_peers.sh`` builds ``benchmarks/.venv-tmu`` and ``benchmarks/.venv-green-tsetlin``
(git-ignored), and each peer here starts its worker script (``tmu_worker.py``, ``green_tsetlin_worker.py``) with
that environment's python and talks to it in JSON lines over a pipe (``worker_protocol.py``). A peer whose python
is missing raises ``FileNotFoundError`` naming the setup command; the benchmark skips it with that line.

Hyperparameters, ours -> tmu 0.8.3 ``TMClassifier`` / ``TMRegressor``; green-tsetlin 1.1.0 ``TsetlinMachine`` +
``Trainer``:

- ``n_clauses`` (per class) -> tmu ``number_of_clauses``, also per class (a clause bank per class, half the
  clauses for, half against); green-tsetlin ``n_clauses = n_clauses * n_classes`` clauses *shared by all
  classes*, each with a learned int16 weight per class (a Coalesced Tsetlin Machine: the same number of clauses
  and automata, organised differently).
- ``T`` -> tmu ``T``; green-tsetlin ``threshold``. ``s`` -> ``s`` in both.
- ``state_bits`` -> tmu ``number_of_state_bits_ta``; green-tsetlin has int8 automata (8 bits): others refused.
- ``boost_true_positive`` -> tmu ``boost_true_positive_feedback`` (1/0); green-tsetlin ``boost_true_positives``.
- ``append_negated`` -> tmu ``feature_negation``; green-tsetlin always appends them: ``False`` is refused.
- ``batch_size``: neither has one (one example at a time).
- ``seed`` -> ``seed + 1`` for both (:meth:`WorkerPeer.library_seed`: both break on 0): tmu ``seed`` (its
  NumPy ``RandomState``, the shuffle, and its C generators); green-tsetlin ``Trainer(seed=)`` (clause block k
  gets it + k, the feedback block and the executor's per-epoch shuffle get it).
- threads: tmu 1 (its CPU clause bank is single-threaded); green-tsetlin ``Trainer(n_jobs=)``, that many clause
  blocks on a thread pool, joined after every example.

tmu's GPU peer (``tmu_cuda``) is the same model on tmu's ``platform="CUDA"`` clause bank (PyCUDA kernels that tmu
compiles at start; the host launches them example by example and waits for each), from the same environment with
PyCUDA added (``benchmarks/.venv-tmu/bin/pip install pycuda`` on a GPU workstation; on a lent GPU host ``python -m
gpu_host stage --tmu`` stages that environment).

Left at the libraries' defaults: tmu ``platform="CPU"`` (dense clause bank), ``weighted_clauses=False``, no
clause or literal drop, no literal budget; green-tsetlin ``literal_budget=None`` (no budget) and
``feedback_type="focused_negative_sampling"`` (the target class and one other class drawn by how strongly it
votes; tmu draws the other class uniformly, as pyTsetlinMachine does).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from asynctm.baselines.worker import PipePeer

HERE = Path(__file__).resolve().parent
SETUP = HERE / "setup_tm_peers.sh"


@dataclass(frozen=True)
class WorkerEnv:
    """Where a worker peer's library lives: its environment (default), the worker script and the name that
    ``setup_tm_peers.sh`` takes for it."""

    library: str
    version: str
    venv: Path
    worker: Path
    setup_name: str

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def setup_command(self) -> str:
        return f"bash benchmarks/{SETUP.name} {self.setup_name}"


ENVS = {
    "tmu_cpu": WorkerEnv("tmu", "0.8.3", HERE / ".venv-tmu", HERE / "tmu_worker.py", "tmu"),
    "green_tsetlin": WorkerEnv("green-tsetlin", "1.1.0", HERE / ".venv-green-tsetlin",
                               HERE / "green_tsetlin_worker.py", "green_tsetlin"),
}


class WorkerPeer(PipePeer):
    """A peer whose library runs in a worker process started with ``python`` (its own environment)."""

    env: WorkerEnv

    def __init__(self, *args, python: str | os.PathLike, n_threads: int = 1, **kwargs):
        super().__init__(*args, **kwargs)
        self.n_threads = int(n_threads)
        self.check()
        python = Path(python)
        if not python.exists():
            raise FileNotFoundError(f"{python} does not exist: build {self.env.library}'s environment with "
                                    f"`{self.env.setup_command}`")
        if not self.env.worker.is_file():
            raise FileNotFoundError(f"no worker script at {self.env.worker}")
        self.python = str(python)
        self.built: dict | None = None
        self._start(self.python, str(self.env.worker), f"asynctm-{self.peer}-", task=self.task,
                    arguments=self.worker_arguments(), seed=self.library_seed(), n_threads=self.n_threads)

    def check(self) -> None:
        """Refuse, before any process starts, what the library cannot do (one line)."""

    def worker_arguments(self) -> dict:
        return self.library_arguments()

    def library_seed(self) -> int | None:
        """The library's seed for ours: ``seed + 1``, because both libraries break on 0 (tmu 0.8.3 seeds its
        xorshift128+ with the value itself, and 0 leaves it at state zero, where the literal draw of the first
        Type I feedback never ends; green-tsetlin 1.1.0's clause blocks refuse to initialise with seed 0, and its
        feedback block takes 0 to mean a random seed)."""
        return None if self.seed is None else int(self.seed) + 1

    def _worker_name(self) -> str:
        return f"{self.env.library} worker"

    # -- Peer -----------------------------------------------------------------------------------------
    def _fit(self, X, y) -> None:
        out = self._fit_epoch(X, y)
        if out.get("built"):
            self.built = out["built"]

    def metadata(self) -> dict:
        return self._worker_metadata(
            super().metadata(), "thread", str(self.env.worker),
            timing="perf_counter around one epoch inside the worker; the pipe round trip is left out")


class TmuPeer(WorkerPeer):
    """tmu's ``TMClassifier`` / ``TMRegressor`` on its single-threaded CPU clause bank."""

    peer = "tmu_cpu"
    library = "tmu"
    env = ENVS["tmu_cpu"]
    platform = "CPU"

    def check(self) -> None:
        if self.n_threads != 1:
            raise ValueError(f"tmu's CPU clause bank runs on 1 thread, got n_threads={self.n_threads}")

    def library_arguments(self) -> dict:
        return {"number_of_clauses": self.n_clauses, "T": self.T, "s": self.s, "platform": self.platform,
                "boost_true_positive_feedback": int(self.boost_true_positive),
                "number_of_state_bits_ta": self.state_bits, "feature_negation": self.append_negated,
                "weighted_clauses": False, "seed": self.library_seed()}

    def metadata(self) -> dict:
        meta = super().metadata()
        cls = "TMClassifier" if self.task == "classification" else "TMRegressor"
        meta["driving"] = (f"tmu {cls}.fit(X, y) once per epoch (one epoch per call, examples in a fresh seeded "
                           "shuffle); X handed over once as the dense uint32 array fit asserts; tmu hashes it "
                           "(xxhash) on every call to reuse its encoding, inside the epoch")
        meta["mapping"] = (f"number_of_clauses = {self.n_clauses} per class (ours: per class), T = {self.T}, "
                           f"s = {self.s:g}, number_of_state_bits_ta = {self.state_bits}, platform CPU (dense "
                           "clause bank, 1 thread), unweighted clauses, the other class drawn uniformly per example")
        meta["random_numbers"] = ("tmu's NumPy RandomState and its C generators (pcg32, xorshift128+) seeded with "
                                  f"seed + 1 = {self.library_seed()}: tmu 0.8.3 seeds xorshift128+ with the value "
                                  "itself, and 0 leaves it at state zero, where the literal draw of the first Type I "
                                  "feedback never ends")
        return meta


class TmuCudaPeer(TmuPeer):
    """tmu's ``TMClassifier`` / ``TMRegressor`` on its CUDA clause bank (PyCUDA, one GPU)."""

    peer = "tmu_cuda"
    platform = "CUDA"  # the environment and worker are tmu_cpu's

    def metadata(self) -> dict:
        meta = super().metadata()
        meta["mapping"] = meta["mapping"].replace("platform CPU (dense clause bank, 1 thread)",
                                                  "platform CUDA (its PyCUDA clause bank: kernels launched per "
                                                  "example, the host waiting for each)")
        return meta


class GreenTsetlinPeer(WorkerPeer):
    """green-tsetlin's dense C++ Tsetlin Machine (a Coalesced TM), ``n_threads`` clause blocks."""

    peer = "green_tsetlin"
    library = "green-tsetlin"
    env = ENVS["green_tsetlin"]
    feedback_type = "focused_negative_sampling"

    def check(self) -> None:
        if self.task != "classification":
            raise ValueError("green-tsetlin 1.1.0 has no regression machine (classification only)")
        if not self.append_negated:
            raise ValueError("green-tsetlin always appends negated literals; append_negated=False has no equivalent")
        if self.state_bits != 8:
            raise ValueError(f"green-tsetlin's automata are int8 (8 state bits), got state_bits={self.state_bits}")

    def worker_arguments(self) -> dict:
        return {"n_clauses_per_class": self.n_clauses, "s": self.s, "threshold": self.T, "literal_budget": None,
                "boost_true_positives": self.boost_true_positive, "trainer": {"feedback_type": self.feedback_type}}

    def library_arguments(self) -> dict:
        if self.built:  # what the worker passed, once the first epoch has built the machine
            return {**self.built["machine"], "trainer": self.built["trainer"]}
        n_classes = None if self.classes_ is None else len(self.classes_)
        return {"n_literals": None, "n_clauses": None if n_classes is None else self.n_clauses * n_classes,
                "n_classes": n_classes, "s": self.s, "threshold": self.T, "literal_budget": None,
                "boost_true_positives": self.boost_true_positive,
                "trainer": {"seed": self.library_seed(), "n_jobs": self.n_threads,
                            "feedback_type": self.feedback_type}}

    def metadata(self) -> dict:
        meta = super().metadata()
        args = self.library_arguments()
        meta["driving"] = ("the objects green_tsetlin.Trainer builds (input, feedback and clause blocks, executor), "
                           "one executor train_epoch() per epoch, the call Trainer.train() times; predictions "
                           "by the executor's eval_predict, training data restored after it")
        meta["mapping"] = (f"TsetlinMachine(n_clauses = {self.n_clauses} per class x {args['n_classes']} classes = "
                           f"{args['n_clauses']} clauses shared by all classes, each with a learned int16 weight "
                           f"per class: a Coalesced TM; ours: {self.n_clauses} clauses per class with fixed "
                           f"polarity), threshold = T = {self.T}, s = {self.s:g}, boost_true_positives = "
                           f"{self.boost_true_positive}, literal_budget None, int8 automata (8 state bits), "
                           f"negated literals always; Trainer(n_jobs = {self.n_threads}, feedback_type = "
                           f"{self.feedback_type})")
        meta["built"] = self.built
        meta["random_numbers"] = (f"Trainer seed = seed + 1 = {self.library_seed()} (green-tsetlin's clause blocks "
                                  "refuse seed 0, its feedback block takes 0 for a random seed): clause block k gets "
                                  "Trainer seed + k, the feedback block and the executor's per-epoch shuffle the "
                                  "Trainer seed")
        return meta


PEER_CLASSES = {"tmu_cpu": TmuPeer, "tmu_cuda": TmuCudaPeer, "green_tsetlin": GreenTsetlinPeer}


def factories(pythons: dict[str, str | os.PathLike] | None = None) -> dict:
    """``{peer name: factory(task, n_clauses, T, s, seed=..., **options) -> Peer}`` for
    :class:`asynctm.benchmarking.Options` (``workers``); ``pythons`` overrides an environment's python."""
    pythons = pythons or {}

    def make(name):
        cls = PEER_CLASSES[name]

        def build(task, n_clauses, T, s, **kwargs):
            return cls(task, n_clauses, T, s, python=pythons.get(name) or cls.env.python, **kwargs)
        return build

    return {name: make(name) for name in PEER_CLASSES}
