#!/usr/bin/env bash
# The first-call benchmark's larger models with pme's batched densities on JAX, on a GPU machine
# (the device tool's H100/H200 image: Python 3.12 with jax, numpy, scipy, pandas, xarray; no
# network). PyMC's stack travels as wheels in .whl/ (see benchmarks/README.md), the repository
# as the working tree. Results (JSON per tool, one table) land under $OUT.
#
#   bash benchmarks/gpu_first_call.sh            # on the GPU machine, from the repository root
set -u
OUT=${OUT:-/tmp/gpu_first_call}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi -L
nproc
python3 -c "import jax, numpy, numba; print('jax', jax.__version__, jax.devices(), 'numpy', numpy.__version__, 'numba', numba.__version__)"
# PyTensor's default (numba) linker for PyMC's own functions; C where numba cannot run here
if ! python3 -c "import pytensor, pytensor.tensor as pt; x = pt.dvector(); pytensor.function([x], pt.exp(x).sum())([1.0])"; then
    export PYTENSOR_FLAGS=linker=cvm
fi
LARGE=${LARGE:-hierarchy_300,regression_50,gp_latent,logistic_20k}
python3 benchmarks/first_call.py --models "$LARGE" --tools pme --backend jax \
    --timeout 200 --out "$OUT/gpu" 2>&1 | grep -v '^{'
python3 benchmarks/first_call.py --models "${SMC_MODELS:-hierarchy_300,regression_50,gp_latent}" \
    --tools pymc_smc --timeout 150 --out "$OUT/smc" 2>&1 | grep -v '^{'
JAX_PLATFORMS=cpu python3 benchmarks/first_call.py --models "${CPU_MODELS:-hierarchy_300,gp_latent}" \
    --tools pme --backend jax --timeout 150 --out "$OUT/cpu" 2>&1 | grep -v '^{'
