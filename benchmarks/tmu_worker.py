#!/usr/bin/env python
"""Worker process of the ``tmu_cpu`` and ``tmu_cuda`` benchmark peers: tmu (cair/tmu) on its ``platform="CPU"``
clause bank or its ``platform="CUDA"`` one (PyCUDA and a GPU), run by the python of its own environment
(``benchmarks/setup_tm_peers.sh tmu`` builds ``benchmarks/.venv-tmu``; tmu 0.8.3 needs NumPy < 2, which our
environment does not have; on a lent GPU host the staged one, ``python -m gpu_host stage --tmu``). The client is
``benchmarks/worker_peers.py``; the protocol is ``worker_protocol.py``'s.

One epoch is one ``fit(X, y)`` call (tmu's ``fit`` trains exactly one epoch, visiting the examples in a fresh
shuffle of its seeded ``RandomState``); predictions are ``predict(X)``. X is converted once to the dense uint32
array that tmu's ``fit`` asserts, outside the timed region; tmu then hashes it (xxhash) on every call to reuse
its encoding, which stays inside the epoch as its users pay it. ``TMClassifier`` for classification (one clause
bank per class, half the clauses voting for, half against: ``number_of_clauses`` is per class, as ours),
``TMRegressor`` for regression (it scales the targets to ``[0, T]`` by their training minimum and maximum itself).
"""

from __future__ import annotations

import logging
import sys

import numpy as np
from worker_protocol import Worker, serve


def _import_tmu():
    """tmu's models, with the warnings its import logs when PyCUDA is absent kept quiet (they say that only the
    CPU clause banks are available, which is all this worker uses); whether CUDA was found is reported."""
    logging.disable(logging.CRITICAL)
    try:
        from tmu.clause_bank import clause_bank_cuda
        from tmu.models.classification.vanilla_classifier import TMClassifier
        from tmu.models.regression.vanilla_regressor import TMRegressor
    finally:
        logging.disable(logging.NOTSET)
    return TMClassifier, TMRegressor, bool(getattr(clause_bank_cuda, "cuda_installed", False))


class TmuWorker(Worker):
    library = "tmu"

    def build(self) -> dict:
        platform = self.arguments.get("platform")
        if platform not in ("CPU", "CUDA"):
            raise ValueError(f"this worker runs tmu's CPU or CUDA clause bank, got platform={platform!r}")
        classifier, regressor, cuda = _import_tmu()
        if platform == "CUDA" and not cuda:
            raise ValueError("tmu's CUDA clause bank needs PyCUDA and a GPU, and its import of PyCUDA failed in this "
                             "environment: install PyCUDA there, or run on a machine with a GPU")
        cls = classifier if self.task == "classification" else regressor
        self.model = cls(**self.arguments)
        return {"class": f"{cls.__module__}.{cls.__name__}", "pycuda_found": cuda, "threads": 1}

    def convert(self, X, y):
        return np.ascontiguousarray(X, dtype=np.uint32), y

    def train_epoch(self, X, y) -> None:
        self.model.fit(X, y)

    def predict_array(self, X) -> np.ndarray:
        return self.model.predict(X)


if __name__ == "__main__":
    sys.exit(serve(TmuWorker()))
