"""The GPU campaign: everything a lent GPU machine needs, staged here, run there in steps, unpacked here.

A GPU machine is lent now and then for a few minutes of device time (its start and idle time included), with no
network, a 64 MiB checkout and one command of limited length at a time; results come back as at most 8 files.

1. ``python -m gpu_host stage`` (:mod:`.stage`) copies the wheels built for the GPU machine's python and the
   processed datasets into one ignored folder (``.campaign/``) with ``campaign.json`` (the configuration, the commit).
2. There, ``python3 -m gpu_host step <name>`` (:mod:`.steps`) installs them, runs one step within a time
   budget and packs what finished into ``$OUT/<name>.tar.gz`` (rewritten after every finished run) and its log.
3. Here, ``python -m gpu_host unpack <folder>`` (:mod:`.unpack`) checks each tarball and puts the records in
   place through the record gate; then ``snakemake --cores all tables figures --config run_missing=false``.

``python -m gpu_host commands`` prints the device calls of a lease from :data:`CALLS_FILE`, a list a person
edits (each call: its seconds and its steps). The steps run the GPU builds the config names (``impls``: ``tm_gpu``,
the paper's design, one thread per clause; ``tm_gpu_warp``, a warp per clause); ``--impl`` narrows a step to one.
"""

from __future__ import annotations

import sys

STAGE_DIR = ".campaign"
TRAVEL_BUDGET_BYTES = 64 * 2**20  # the checkout that travels to the GPU machine, carried folders included
CALLS_FILE = "profiles/gpu-host/calls.yaml"  # the device calls of a lease (python -m gpu_host commands)


def benchmark(name: str):
    """A benchmark script of ``benchmarks/`` (a folder of scripts, not a package) as a module: ``bench_gpu`` (the GPU
    benchmark: its builds and peers) or ``bench_host`` (the same-host benchmark's jobs)."""
    import importlib

    from asynctm.provenance import REPO

    folder = str(REPO / "benchmarks")
    if folder not in sys.path:
        sys.path.append(folder)  # after everything else: its scripts shadow no module
    return importlib.import_module(name)
