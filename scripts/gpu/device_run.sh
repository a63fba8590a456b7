#!/usr/bin/env bash
# Runs on the lent GPU machine, in the repository root, with .gpu/ carried (scripts/gpu/fetch.sh
# made it): installs what that machine lacks, then `make test-gpu`'s tests and `make bench-gpu`,
# writing every log and table under $OUT. One call:
#   device run: bash scripts/gpu/device_run.sh    (carry: [".gpu"], timeout_s 480)
# STEPS=tests or STEPS=bench runs one half; BENCH_ARGS passes through to benchmarks/gpu.py.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
site=/tmp/site
started=$(date +%s)
stamp() { echo "[$(( $(date +%s) - started ))s] $*"; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvcc --version | tail -2
  python3 -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
} > "$OUT/versions.txt" 2>&1
cat "$OUT/versions.txt"

stamp "installing carried wheels"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
  .gpu/wheels/*.whl .gpu/ours/*.whl > "$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
export PYTHONPATH=$site
if ! python3 -c "import pycuda.driver as d; d.init(); print('pycuda', d.get_version(), d.Device(0).name())" \
    >> "$OUT/versions.txt" 2>&1; then
  stamp "the carried pycuda wheel did not load: building pycuda from its sdist here"
  tail -3 "$OUT/versions.txt"
  (cd /tmp && tar xzf "$OLDPWD/.gpu/pycuda-2026.1.tar.gz" && cd pycuda-2026.1 \
    && python3 configure.py --cuda-root=/usr/local/cuda --no-cuda-enable-curand > /dev/null \
    && python3 -m pip wheel -q --no-build-isolation --no-deps -w "$OUT" . \
    && python3 -m pip install -q --no-index --no-deps --target "$site" "$OUT"/pycuda-*.whl) > "$OUT/pycuda-build.log" 2>&1
  python3 -c "import pycuda.driver as d; d.init(); print('pycuda (built here)', d.get_version())" >> "$OUT/versions.txt" 2>&1
fi
python3 -c "import pynvml, tritonclient, grpc, google.protobuf as p; print('grpcio', grpc.__version__, 'protobuf', p.__version__)" >> "$OUT/versions.txt" 2>&1
mkdir -p .venv && rm -rf .venv/perf_analyzer && cp -r .gpu/perf_analyzer .venv/perf_analyzer
.venv/perf_analyzer/perf_analyzer --version >> "$OUT/versions.txt" 2>&1 || echo "perf_analyzer does not run here" >> "$OUT/versions.txt"
tail -4 "$OUT/versions.txt"

if [ "${STEPS:-all}" != bench ]; then
  stamp "make test-gpu's tests"
  # Modules that need packages this machine lacks (moto, jsonschema, ...) hold no GPU tests:
  # their collection errors are listed in the log, and every gpu-marked test still runs.
  timeout 230 python3 -m pytest -m gpu -p no:cacheprovider -q -rs --timeout=120 --continue-on-collection-errors \
    ${TEST_PATHS:-tests} > "$OUT/test-gpu.log" 2>&1
  echo "pytest exit $?" >> "$OUT/test-gpu.log"
  grep -E "passed|failed|error|SKIPPED|FAILED|ERROR|exit" "$OUT/test-gpu.log" | tail -30
fi
if [ "${STEPS:-all}" != tests ]; then
  stamp "make bench-gpu"
  (cd benchmarks && timeout 250 python3 gpu.py --json "$OUT/bench-gpu.json" ${BENCH_ARGS:-}) > "$OUT/bench-gpu.log" 2>&1
  echo "bench exit $?" >> "$OUT/bench-gpu.log"
  grep -E "^\||exit|Error|error" "$OUT/bench-gpu.log" | tail -40
fi
stamp "done"
