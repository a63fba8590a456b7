#!/usr/bin/env bash
# Prepares, on a machine with pip's registries, everything `device_run.sh` needs on the lent GPU
# machine (Python 3.12, no registry): cp312 wheels of what its image lacks, a pycuda wheel built
# against CUDA 13.0's headers, and perf_analyzer with its libraries. All of it lands in .gpu/
# (ignored), which the device call names in `carry`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.gpu"
pip="$root/.venv/bin/python -m pip"
mkdir -p "$out/wheels"
platforms=""
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
         manylinux1_x86_64 manylinux_2_24_x86_64 manylinux_2_31_x86_64 manylinux_2_34_x86_64 \
         manylinux_2_35_x86_64 manylinux_2_5_x86_64; do
  platforms="$platforms --platform $p"
done
grep -v '^\s*#' "$here/wheels.txt" | grep -v '^\s*$' | while read -r req; do
  $pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    $platforms -d "$out/wheels" "$req" 2>&1 | grep -v '^WARNING: Location' || true
done
[ -n "$(ls "$out"/wheels/pycuda-*.whl 2>/dev/null)" ] || "$here/build_pycuda.sh" "$out/wheels"
# perf_analyzer (make perf-analyzer) plus Debian's libb64, which that machine lacks.
make -C "$root" perf-analyzer >/dev/null
rm -rf "$out/perf_analyzer" && cp -r "$root/.venv/perf_analyzer" "$out/perf_analyzer"
cp "$(readlink -f /lib/x86_64-linux-gnu/libb64.so.0d)" "$out/perf_analyzer/lib/libb64.so.0d"
du -sh "$out"
# This tree's own distributions (core and every plugin), built here: the GPU machine installs
# them with --no-index (entry points need their metadata); rebuilt before every device call.
rm -rf "$out/ours" && mkdir -p "$out/ours"
for project in "$root" "$root"/plugins/*/; do
  $pip wheel -q --no-deps --no-build-isolation --no-cache-dir -w "$out/ours" "$project" >/dev/null
done
ls "$out/ours" | wc -l
du -sh "$out"
