"""The paper's baselines, one module each, and the interface they share with our own Tsetlin Machine
(:class:`~.base.Peer`); our adapter is in :mod:`asynctm.peers`, above this package (:func:`asynctm.peers.make_peer`
builds any peer by name).

=================  ======================================================================================
``base``           :class:`~.base.Peer`, the interface, and :func:`~.base.dense01`, the baselines' dense 0/1 input
``pytm``           pyTsetlinMachine 0.6.6 (the paper's CPU baseline), ``indexed=True`` or ``False``
``pytm_cuda``      PyTsetlinMachineCUDA (the paper's own GPU code); only where a GPU is present
``pytm_parallel``  pyTsetlinMachineParallel 0.2.1 (OpenMP) in a worker process run by a separate virtual
                   environment's python (``benchmarks/setup_pytm_parallel.sh``); not built by ``make_peer``
                   (it needs the paths of that environment): :class:`~.pytm_parallel.PyTMParallelPeer`
``thundersvm``     the SVM of the paper's Table 4: ThunderSVM's GPU build, else its CPU build, else
                   scikit-learn (:func:`~.thundersvm.run_svm`; not a peer: it trains in one call)
=================  ======================================================================================

The hyperparameter mapping and the places where the implementations differ are documented in
:mod:`asynctm.peers`. Nothing is imported here: each library loads only when its module is used.
"""
