#!/usr/bin/env bash
# Build the private virtual environment of the pyTsetlinMachineParallel peer (benchmarks/bench_tm.py).
#
# pyTsetlinMachineParallel and pyTsetlinMachine both install their C library as the top-level extension
# site-packages/libTM.cpython-*.so; installing one overwrites the other's (checked: 0.2.1 and 0.6.6). So the
# parallel library lives in its own environment, and bench_tm.py drives it in a worker process
# (benchmarks/pytm_parallel_worker.py) run by that environment's python.
#
#   bash benchmarks/setup_pytm_parallel.sh            # -> benchmarks/.venv-pytmparallel
#   PYTM_PARALLEL_VENV=/some/dir bash benchmarks/setup_pytm_parallel.sh
#
# Needs python3 (with venv), a C compiler with OpenMP (gcc) and the package index. Idempotent: an existing
# environment that already imports the library is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${PYTM_PARALLEL_VENV:-$here/.venv-pytmparallel}"
python="${PYTHON:-python3}"
version="0.2.1"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import pyTsetlinMachineParallel.tm" 2>/dev/null; then
    echo "pyTsetlinMachineParallel already importable in $venv"
    exit 0
fi
echo "creating $venv with $("$python" --version 2>&1)"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# The sdist compiles its C code (gcc -fopenmp) at install time.
"$venv/bin/python" -m pip install --quiet numpy "pyTsetlinMachineParallel==$version"
"$venv/bin/python" -c "import pyTsetlinMachineParallel.tm as t, numpy; print('ok: pyTsetlinMachineParallel', '$version', 'numpy', numpy.__version__, t.__file__)"
