#!/usr/bin/env bash
# The ensemble and peer benchmarks on a GPU in float64 and float32, and the same code on
# the same machine's CPU (JAX_PLATFORMS=cpu): the tables and the machine, in OUTDIR; on
# the GPU also loop_variants.py (the loops, each map as (B, n) arrays or columns, steps
# an iteration).
#
#     bash benchmarks/gpu.sh [OUTDIR]
#
# Settings (environment): QUICK=1 the small sizes (a smoke test); WHERE="gpu cpu" which
# backends; DTYPES="float64 float32"; LONG=1e6 the steps of the long one-body run;
# LIMIT=100 seconds per script (one that hangs costs only its own table); LOOPS=0 leaves
# out loop_variants.py.
# Needs jax with CUDA (pip install -e ".[cuda,bench]"), diffrax and numba (numba-cuda for
# its row).
set -u
cd "$(dirname "$0")/.."
out=${1:-gpu-results}
mkdir -p "$out"
py=${PYTHON:-python3}
quick=${QUICK:+--quick}
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
export PYTHONPATH=$PWD/src:$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH}
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    lscpu | grep -E '^(Model name|CPU\(s\))'
    $py -c "import jax, numba, diffrax; print('jax', jax.__version__, jax.devices(), \
'numba', numba.__version__, 'diffrax', diffrax.__version__)"
} > "$out/machine.txt" 2>&1
for where in ${WHERE:-gpu cpu}; do
    plat=""
    [ "$where" = cpu ] && plat=cpu
    for d in ${DTYPES:-float64 float32}; do
        JAX_PLATFORMS=$plat timeout "${LIMIT:-100}" $py benchmarks/ensemble.py $quick \
            --dtype "$d" --long "${LONG:-1e6}" >> "$out/ensemble-$where.md" 2>&1
        echo "exit $?" >> "$out/ensemble-$where.md"
        JAX_PLATFORMS=$plat timeout "${LIMIT:-100}" $py benchmarks/peers.py $quick \
            --dtype "$d" >> "$out/peers-$where.md" 2>&1
        echo "exit $?" >> "$out/peers-$where.md"
        if [ "$where" = gpu ] && [ "${LOOPS:-1}" != 0 ]; then  # the loops, by map and by steps an iteration
            timeout "${LIMIT:-100}" $py benchmarks/loop_variants.py $quick --dtype "$d" \
                >> "$out/loop-variants-gpu.md" 2>&1
            echo "exit $?" >> "$out/loop-variants-gpu.md"
        fi
    done
done
