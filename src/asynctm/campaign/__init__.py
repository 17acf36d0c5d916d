"""The GPU campaign: everything a lent GPU machine needs, staged here, run there in steps, unpacked here.

A GPU machine is lent now and then for a few minutes of device time (its start and idle time included), with no
network, a 64 MiB checkout and one command of limited length at a time; results come back as at most 8 files.
So the campaign is prepared on a machine without a GPU:

1. ``python -m asynctm.campaign stage`` copies into one ignored folder (``.campaign/``) the PyCUDA wheels
   built for the GPU machine's Python, the PyTsetlinMachineCUDA sdist and the processed datasets (the
   compact ``.npz`` files of ``data/processed``), plus ``campaign.json`` (the configuration and the commit),
   and checks that checkout and folder fit the 64 MiB that travel.
2. On the GPU machine, ``python3 -m asynctm.campaign step <name>`` (see :data:`~.steps.STEPS`) installs
   PyCUDA and PyTsetlinMachineCUDA from that folder, runs one step within a time budget and packs what
   finished into ``$OUT/<name>.tar.gz`` (rewritten after every finished run) and ``$OUT/<name>.log``.
3. Here, ``python -m asynctm.campaign unpack <folder>`` checks each tarball (no links, no paths outside
   ``results/`` and ``benchmarks/results/``, records through the record gate) and puts the records in place; then
   ``snakemake --cores all tables figures --config run_missing=false`` rebuilds the tables and the figures.

``python -m asynctm.campaign commands`` prints the device calls of a lease from :data:`CALLS_FILE`, a list a
person edits (each call: its seconds and its steps). The GPU builds are implementations the config names
(``impls``: ``tm_gpu``, the paper's design, one thread per clause; ``tm_gpu_warp``, a warp per clause); the steps
run those it lists, and ``--impl`` narrows a step to one.
"""

from __future__ import annotations

import re

STAGE_DIR = ".campaign"
TRAVEL_BUDGET_BYTES = 64 * 2**20  # the checkout that travels to the GPU machine, carried folders included
CALLS_FILE = "profiles/gpu-host/calls.yaml"  # the device calls of a lease (python -m asynctm.campaign commands)


def slug(text: str) -> str:
    """``text`` (a GPU's name) as part of a file name: lower case, each run of other characters one underscore."""
    return re.sub(r"[^a-z0-9]+", "_", (text or "unknown").lower()).strip("_") or "unknown"
