"""The GPU campaign: everything a lent GPU machine needs, staged here, run there in steps, unpacked here.

A GPU machine is lent now and then for 15 minutes of device time (its start and idle time included), with no
network, a 64 MiB checkout and one command of at most 10 minutes at a time; results come back as at most 8
files. So the campaign is prepared on a machine without a GPU:

1. ``python -m asynctm.campaign stage`` copies into one ignored folder (``.campaign/``) the PyCUDA wheels
   built for the GPU machine's Python, the PyTsetlinMachineCUDA sdist and the processed datasets (the
   compact ``.npz`` files of ``data/processed``), plus ``campaign.json`` (the configuration and the commit),
   and checks that checkout and folder fit the 64 MiB that travel.
2. On the GPU machine, ``python3 -m asynctm.campaign step <name>`` (see :data:`~.steps.STEPS`) installs
   PyCUDA and PyTsetlinMachineCUDA from that folder, runs one step within a time budget and packs what
   finished into ``$OUT/<name>.tar.gz`` (rewritten after every finished run) and ``$OUT/<name>.log``.
3. Here, ``python -m asynctm.campaign unpack <folder>`` checks each tarball (no links, no paths outside
   ``results/`` and ``benchmarks/results/``) and puts the records in place; then
   ``snakemake --cores all tables figures --config run_missing=false`` rebuilds the tables (paper_tables/) and
   the figures (figures/).

``python -m asynctm.campaign commands`` prints the device-tool commands, in order: two calls, the GPU tests
and the benchmark, then the sweeps and the paper runs, whose threads per clause :mod:`.choice` takes from the
first call's results; or, where this code has passed the GPU tests and been benchmarked at an earlier lease, two
calls of training (:data:`TRAINING_CALLS`).
"""

from __future__ import annotations

STAGE_DIR = ".campaign"
TRAVEL_BUDGET_BYTES = 64 * 2**20  # the checkout that travels to the GPU machine, carried folders included

# One device call per entry: (its seconds, its steps as (step, budget in seconds or None: the rest of the call)),
# sized to a session's 15 minutes of device time (the machine's start, transfers and idle time included). The
# steps of a call share its end (--until): the time one leaves unused goes to the next. The first lease
# (2026-11-26, an H200: a start of about 30 s) ran the GPU tests (54 s of their 120) and the benchmark (337 s,
# stopped in SemEval) in one call, then at once, while the machine was still warm (30 s), 5 WSD apple paper runs
# (94 s) and 2 SemEval sweep points (206 s) in a second call, and ended with 161 s left. The first call is the
# longer: the benchmark must reach IMDb, where PyTsetlinMachineCUDA takes about a minute per epoch. The GPU tests'
# cap only guards against a hang: there are 61 now against 30 then (the warp build's), each compiling its kernels
# afresh on a bare machine (about a second each), about 110 s in one process; the step shares them out to 8
# processes (asynctm.campaign.steps.GPU_TEST_WORKERS), and what they leave of the cap goes to the benchmark.
DEVICE_CALLS = ((480, (("gpu_tests", 180), ("bench", None))), (270, (("sweeps", 150), ("paper", None))))
# A lease whose code (kernels and backends, asynctm.provenance.code_digests) has passed the GPU tests and been
# benchmarked already (results unpacked into the checkout) trains in both calls instead, after the goal settings'
# missing benchmark seeds (asynctm.campaign.goals; a few seconds once there are none). A step that opens the next
# call too (the paper runs) gets --later: a run that needs more than the first call has left starts where both
# together fit, pauses with a checkpoint at the first call's end and resumes in the second on the warm machine.
# After them, up to 45 s of the tally ablation's GPU runs (steps.GPU_ABLATION: first the warp build's Bike Sharing
# pair, seconds a run), as the extra call below comes only where a lease has time left (the fourth had not).
# goal_seeds' 270 s hold one SemEval seed on an H100 (about 226 s with its margin, PyTsetlinMachineCUDA's two
# epochs most of it) and the step's end margin (steps.BENCH_END_MARGIN_S); at 240 it could never start one.
# Each call ends with a second turn of the ablation, which takes what the steps before it left: once the paper runs
# and sweeps are recorded (the fifth lease), the rest of both calls. A step's second turn in a call packs its first
# turn's files again (steps.Step), so a call still brings back one tarball and one log per step.
TRAINING_CALLS = ((480, (("goal_seeds", 270), ("ablation", 45), ("sweeps", 150), ("paper", None), ("ablation", None))),
                  (270, (("paper", None), ("sweeps", None), ("ablation", None))))
# Where the reply to a lease's last call shows at least EXTRA_CALL_MIN_LEFT_S of device time left, one more call
# at once on the warm machine trains in it: up to 90 s of the tally ablation's GPU runs (steps.GPU_ABLATION; a few
# seconds once they are recorded), the paper runs (a run paused at the last call's end resumes from its
# checkpoint), then the sweeps, then the ablation again, until EXTRA_CALL_MARGIN_S before that time runs out (the
# machine's release and the transfers). `commands` prints it with N in place of its seconds.
EXTRA_CALL = (("ablation", 90), ("paper", None), ("sweeps", None), ("ablation", None))
EXTRA_CALL_MIN_LEFT_S = 150
EXTRA_CALL_MARGIN_S = 60
# The training steps choose one thread or a warp per clause from the first call's tests and benchmark
# (asynctm.campaign.choice), so no one has to decide between the calls while the machine waits.
STEP_OPTIONS = {"sweeps": "--threads-per-clause auto", "paper": "--threads-per-clause auto"}
