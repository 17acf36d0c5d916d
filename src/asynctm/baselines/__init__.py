"""Other Tsetlin Machine implementations behind one small interface, for benchmarks and experiments.

:func:`make_peer` builds a *peer*: an object that trains one epoch at a time (``fit_epoch``), predicts
(``predict``), and describes itself (``metadata``: library, version, device, indexing, and how its
hyperparameters map onto ours). The peers:

=============  ========================================================================================
``asynctm``    this package (:class:`asynctm.TMClassifier` / :class:`asynctm.TMRegressor`), so a runner
               can treat every implementation alike
``pytm``       pyTsetlinMachine 0.6.6 (the paper's CPU baseline), ``indexed=True`` or ``False``
``pytm_cuda``  PyTsetlinMachineCUDA (the paper's own GPU code); only where a GPU is present
=============  ========================================================================================

Not built by :func:`make_peer` (it needs the paths of its own environment):
:class:`~asynctm.baselines.pytm_parallel.PyTMParallelPeer`, pyTsetlinMachineParallel 0.2.1 (OpenMP) in a
worker process run by a separate virtual environment's python (``benchmarks/setup_pytm_parallel.sh``).

The mapping of hyperparameters and the places where the implementations differ are documented in
:mod:`asynctm.baselines.pytm`.
"""

from __future__ import annotations

from .pytm import PEERS, Peer, available_peers, make_peer
from .pytm_parallel import PyTMParallelPeer

__all__ = ["PEERS", "Peer", "PyTMParallelPeer", "available_peers", "make_peer"]
