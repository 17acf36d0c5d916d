"""PyTsetlinMachineCUDA (the paper's own GPU code) as a peer (:class:`asynctm.baselines.base.Peer`).

PyTsetlinMachineCUDA is imported only when a CUDA GPU is found. It runs ``import pycuda.autoinit`` at
import, which would create a second CUDA context beside ours; :func:`_share_our_context` puts a stand-in
for that module in place first, so that both libraries' buffers and kernels live in our (primary) context.
The GPU campaign's benchmark has run it beside our CUDA build on an NVIDIA H200 and an H100
(``benchmarks/results/gpu_*.md``); the GPU test ``test_noisy_xor_on_the_gpu_learns_as_pytsetlinmachinecuda_does``
trains it too.
"""

from __future__ import annotations

import numpy as np

from ..provenance import dist_version
from .base import Peer, dense01

# The names PyTsetlinMachineCUDA has been published under (PyPI normalises them; sdists and wheels differ).
DISTRIBUTIONS = ("pyTsetlinMachineCUDA", "PyTsetlinMachineCUDA", "pytsetlinmachinecuda")


def _share_our_context() -> None:
    """Make ``import pycuda.autoinit`` yield our backend's context instead of creating a new one: two contexts
    in one process would each own their allocations, and a kernel of one cannot use the other's buffers."""
    import sys
    import types

    if "pycuda.autoinit" in sys.modules:
        return
    from ..backends.cuda import context

    ctx = context()
    stand_in = types.ModuleType("pycuda.autoinit")
    stand_in.context, stand_in.device = ctx, ctx.get_device()
    sys.modules["pycuda.autoinit"] = stand_in


class PyTMCudaPeer(Peer):
    """PyTsetlinMachineCUDA (the paper's GPU code)."""

    library = "PyTsetlinMachineCUDA"
    peer = "pytm_cuda"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from ..backends import BackendUnavailableError, cuda_available

        if not cuda_available():
            raise BackendUnavailableError("PyTsetlinMachineCUDA needs a CUDA GPU; none was found")
        # Imported here only: the module runs `import pycuda.autoinit`, which would create a GPU context.
        _share_our_context()
        from PyTsetlinMachineCUDA import tm as cutm

        bt = int(self.boost_true_positive)
        cls = cutm.MultiClassTsetlinMachine if self.task == "classification" else cutm.RegressionTsetlinMachine
        self.model = cls(self.n_clauses, self.T, self.s, boost_true_positive_feedback=bt,
                         number_of_state_bits=self.state_bits, append_negated=self.append_negated)

    def version(self) -> str | None:
        return dist_version(*DISTRIBUTIONS)

    def library_arguments(self) -> dict:
        return {"number_of_clauses": self.n_clauses, "T": self.T, "s": self.s,
                "boost_true_positive_feedback": int(self.boost_true_positive),
                "number_of_state_bits": self.state_bits, "append_negated": self.append_negated,
                "fit.batch_size": self.batch_size}

    def metadata(self) -> dict:
        meta = super().metadata()
        try:
            import pycuda.driver as drv

            dev = drv.Context.get_device()
            meta["device"] = f"{dev.name()} (driver {drv.get_driver_version()})"
        except Exception:  # noqa: BLE001
            meta["device"] = "CUDA GPU"
        meta["threads"] = None
        meta["random_numbers"] = "a global curand XORWOW generator, not seedable through the library"
        meta["driving"] += "; the encoded training data stay on the GPU while X compares equal"
        return meta

    def _fit(self, X, y) -> None:
        # Its regression fit recomputes min/max of y on every call; y is the same array each epoch.
        self.model.fit(X, y, epochs=1, incremental=True, batch_size=self.batch_size)

    def _predict(self, X) -> np.ndarray:
        return self.model.predict(dense01(X))

    def _class_sums(self, X) -> np.ndarray:
        # The authors' PyTsetlinMachineCUDA (their ICML repository) has score(X): the clipped class sums,
        # shape (C, n). The cair/PyTsetlinMachineCUDA tm.py we read has no such method (predict only).
        # Untested here (no GPU where this was written).
        score = getattr(self.model, "score", None)
        if score is None:
            raise NotImplementedError(
                f"{self.name}: this PyTsetlinMachineCUDA ({self.version()}) has no score() method, so its class sums "
                "cannot be read; the authors' version (their ICML repository) has one")
        X = dense01(X)
        out = np.asarray(score(X))
        C, n = self._n_classes(), X.shape[0]
        if out.shape == (C, n):
            return out.T
        if out.shape == (n, C):
            return out
        raise RuntimeError(f"{self.name}: score() returned shape {out.shape}; expected {(C, n)}")
