#!/usr/bin/env bash
# Build the private virtual environments of the tmu and green-tsetlin benchmark peers (benchmarks/bench_tm.py,
# peers tmu_cpu and green_tsetlin).
#
# tmu 0.8.3 needs NumPy < 2 (our environment has NumPy 2) and green-tsetlin 1.1.0 is a source distribution that
# compiles its C++ core (pybind11, -mavx2) at install time, so each lives in its own environment and bench_tm.py
# drives it through a worker script (benchmarks/tmu_worker.py, benchmarks/green_tsetlin_worker.py) run by that
# environment's python (benchmarks/worker_peers.py).
#
#   bash benchmarks/setup_tm_peers.sh                  # both -> benchmarks/.venv-tmu, benchmarks/.venv-green-tsetlin
#   bash benchmarks/setup_tm_peers.sh tmu              # one of them
#   bash benchmarks/setup_tm_peers.sh green_tsetlin
#   TMU_VENV=/some/dir GREEN_TSETLIN_VENV=/other/dir bash benchmarks/setup_tm_peers.sh
#
# Needs python3 (with venv), a C++ compiler (g++) for green-tsetlin and the package index. Idempotent: an
# environment that already imports its library at the pinned version is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
tmu_version="0.8.3"
gt_version="1.1.0"

build() {  # build <venv> <distribution> <version> <import name> <pip requirements...>
    local venv="$1" dist="$2" version="$3" module="$4"
    shift 4
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" - "$dist" "$version" "$module" <<'EOF' 2>/dev/null
import importlib, importlib.metadata, sys
dist, version, module = sys.argv[1:]
importlib.import_module(module)
sys.exit(importlib.metadata.version(dist) != version)
EOF
    then
        echo "$dist $version already importable in $venv"
        return 0
    fi
    echo "creating $venv with $("$python" --version 2>&1)"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet "$@"
    "$venv/bin/python" -c "import importlib.metadata as m, numpy; import $module
print('ok: $dist', m.version('$dist'), 'numpy', numpy.__version__)"
}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(tmu green_tsetlin)
for t in "${targets[@]}"; do
    case "$t" in
        tmu)
            # tmu's wheel ships its compiled C clause bank (cffi); 0.8.3 is built against NumPy 1.x.
            build "${TMU_VENV:-$here/.venv-tmu}" tmu "$tmu_version" tmu "numpy<2" "tmu==$tmu_version" ;;
        green_tsetlin)
            build "${GREEN_TSETLIN_VENV:-$here/.venv-green-tsetlin}" green-tsetlin "$gt_version" green_tsetlin_core \
                "green-tsetlin==$gt_version" ;;
        *)
            echo "unknown peer '$t': use tmu or green_tsetlin (or nothing for both)" >&2
            exit 2 ;;
    esac
done
