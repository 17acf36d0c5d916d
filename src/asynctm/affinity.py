"""The CPUs a process may run its threads on, under OpenMP's thread binding (``OMP_PROC_BIND``, ``OMP_PLACES``).

An OpenMP runtime computes its places from the affinity of the thread that loads it and, asked to bind, binds that
thread to the first place. scikit-learn's wheel brings its own runtime, which loads with scikit-learn and binds the
main thread to one CPU; the runtime of our CPU build, loaded after it, would then find that one CPU for all its
threads. So the package notes the CPUs it could use when imported (:data:`START_CPUS`, before scikit-learn loads),
and the CPU build hands them back to the thread that loads its runtime (:func:`process_cpus`).
"""

from __future__ import annotations

import os

BINDING_VARIABLES = ("OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY")
# The CPUs this process could run on when the package was imported; None off Linux.
START_CPUS = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def binding() -> bool:
    """Whether OpenMP thread binding is asked for."""
    return any(os.environ.get(v, "").strip().lower() not in ("", "false") for v in BINDING_VARIABLES)


def process_cpus() -> set[int] | None:
    """The CPUs this process may run on: its affinity, except where binding is asked for and the affinity is
    narrower than when asynctm was imported (another OpenMP runtime bound the thread since): then that earlier
    affinity. None off Linux."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    now = os.sched_getaffinity(0)
    return set(START_CPUS) if START_CPUS and binding() and now < START_CPUS else now


def one_bound_cpu(n_threads: int) -> str | None:
    """Where binding is asked for and this thread may run on one CPU of several, what to tell a user of
    ``n_threads`` > 1 threads (they would all share it); else None."""
    cpus = process_cpus()
    if not (binding() and cpus is not None and len(cpus) == 1 and n_threads > 1 and (os.cpu_count() or 1) > 1):
        return None
    return (f"OpenMP thread binding is set ({', '.join(v for v in BINDING_VARIABLES if v in os.environ)}) and this "
            f"thread may run on CPU {min(cpus)} only, so all {n_threads} threads of the CPU build share it: import "
            "asynctm before scikit-learn (whose OpenMP runtime binds the thread), or unset the binding variables")
