#!/usr/bin/env python
"""Worker process of the ``green_tsetlin`` benchmark peer: green-tsetlin's C++ Tsetlin Machine (dense, AVX2 where
the CPU has it), run by the python of its own environment (``benchmarks/setup_tm_peers.sh green_tsetlin`` builds
``benchmarks/.venv-green-tsetlin``). The client is ``benchmarks/worker_peers.py``; the protocol is
``worker_protocol.py``'s.

green-tsetlin trains through ``green_tsetlin.Trainer``, whose ``train()`` runs all its epochs in one call (and
evaluates after each). The benchmark times one epoch at a time, round-robin with the other implementations, so
this worker builds what ``Trainer._train_inner`` builds, with the Trainer's own helpers (its input block for the
data's type, its feedback block, ``n_jobs`` clause blocks of ``TsetlinMachine.construct_clause_blocks``,
``allocate_clause_blocks(seed)`` and the single- or multi-thread executor), and then calls the executor's
``train_epoch()`` once per epoch: the very call the Trainer brackets with ``perf_counter`` for its own epoch
times. Predictions are the executor's ``eval_predict`` on the test data, after which the training data are put
back, as the Trainer does between epochs (outside the timed region). The model is built by the first epoch
(inside the warm-up epoch's time), once the data give its sizes. Checked on one thread with a fixed seed: the
test accuracies after each epoch equal the ``eval_log`` of ``Trainer.train()`` on the same data, epoch for
epoch.

The machine is a Coalesced Tsetlin Machine: ``n_clauses`` clauses *shared by all classes*, each with a learned
int16 weight per class, trained with focused negative sampling (the Trainer's default ``feedback_type``). The
client asks for ``n_clauses_per_class``; this worker builds ``n_clauses = n_clauses_per_class * n_classes``
shared clauses (the same number of clauses and automata as a per-class machine) and reports the arguments it
passed. green-tsetlin has no regression machine.
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np
from worker_protocol import Worker, serve


class GreenTsetlinWorker(Worker):
    library = "green-tsetlin"

    def build(self) -> dict:
        if self.task != "classification":
            raise ValueError("green-tsetlin has no regression machine (classification only)")
        import green_tsetlin_core

        self.executor = None
        self._stack = contextlib.ExitStack()
        self._train = None  # the (X, y) the input block holds for training
        self._source = None  # the loaded array they were made from
        return {"threads": self.n_threads, "avx2": bool(green_tsetlin_core.has_avx2())}

    def convert(self, X, y):
        return np.ascontiguousarray(X, dtype=np.uint8), y

    def _make(self, X, y) -> dict:
        import green_tsetlin as gt
        from green_tsetlin.trainer import _flexible_set_data

        args = dict(self.arguments)
        per_class = int(args.pop("n_clauses_per_class"))
        trainer_args = args.pop("trainer")
        n_classes = int(y.max()) + 1
        machine = {"n_literals": int(X.shape[1]), "n_clauses": per_class * n_classes, "n_classes": n_classes,
                   **args}
        tm = gt.TsetlinMachine(**machine)
        if not self.seed or int(self.seed) < 1:  # its clause blocks do not initialise with seed 0
            raise ValueError(f"green-tsetlin needs a seed >= 1, got {self.seed!r}")
        trainer = gt.Trainer(tm, seed=int(self.seed), n_jobs=self.n_threads, n_epochs=1, progress_bar=False,
                             load_best_state=False, **trainer_args)
        trainer.set_train_data(X, y)
        trainer.set_eval_data(X[:1], y[:1])  # the Trainer picks its input block by the types of both sets
        trainer._select_backend_ib()
        block = trainer._cls_input_block(tm.n_literals)
        # The input block keeps pointers into the arrays it is given: they stay referenced here.
        self._train, self._source = (trainer.x_train, trainer.y_train), X
        _flexible_set_data(block, *self._train)
        feedback = trainer._get_feedback_block(tm.n_classes, tm.threshold)
        tm.set_num_clause_blocks(trainer._calculate_blocks_for_tm())
        cbs = tm.construct_clause_blocks()
        for cb in cbs:
            cb.set_feedback(feedback)
            cb.set_input_block(block)
        self._stack.enter_context(gt.allocate_clause_blocks(cbs, seed=trainer.seed))
        if trainer.n_jobs == 1:
            executor = trainer._cls_exec_singlethread(block, cbs, feedback, 1, trainer.seed)
        else:
            executor = trainer._cls_exec_multithread(block, cbs, feedback, trainer.n_jobs, trainer.seed)
        self.tm, self.trainer, self.block, self.cbs, self.feedback, self.executor = (
            tm, trainer, block, cbs, feedback, executor)
        self._set_data = _flexible_set_data
        return {"machine": machine, "trainer": {"seed": trainer.seed, "n_jobs": trainer.n_jobs, **trainer_args},
                "clause_blocks": [cb.get_number_of_clauses() for cb in cbs],
                "clause_block_class": type(cbs[0]).__name__, "executor": type(executor).__name__}

    def train_epoch(self, X, y) -> dict | None:
        built = None
        if self.executor is None:
            built = self._make(X, y)
        elif X is not self._source:
            raise ValueError(f"this worker trains on one training set, got a second one of shape {X.shape}")
        self.train_accuracy = self.executor.train_epoch()
        return {"built": built} if built else None

    def predict_array(self, X) -> np.ndarray:
        if self.executor is None:
            raise RuntimeError("train an epoch first")
        labels = np.zeros(X.shape[0], dtype=np.uint32)  # the input block wants labels; eval_predict ignores them
        out = np.empty(X.shape[0], dtype=np.uint32)
        self._set_data(self.block, X, labels)
        try:
            if not self.executor.eval_predict(out):
                raise RuntimeError("eval_predict refused the output array")
        finally:
            self._set_data(self.block, *self._train)  # back to training, as the Trainer does after evaluating
        return out

    def close(self) -> None:
        self._stack.close()


if __name__ == "__main__":
    worker = GreenTsetlinWorker()
    try:
        sys.exit(serve(worker))
    finally:
        if getattr(worker, "_stack", None) is not None:
            worker.close()
