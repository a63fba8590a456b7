#!/usr/bin/env bash
# Builds a cp312 pycuda wheel on a machine WITHOUT CUDA (pycuda has no wheel on PyPI): CUDA
# 13.0's headers come from NVIDIA's PyPI wheels, and libcuda is a stub library exporting the
# driver symbols pycuda uses (so the linker records libcuda.so.1; the real driver resolves them
# on the GPU machine). Needs Python 3.12 (pyenv's here) and a C++ compiler. Usage: build_pycuda.sh DEST
set -euo pipefail
dest=$(readlink -f "$1")
work=$(mktemp -d)
py312=${PY312:-$(command -v python3.12)}
"$py312" -m venv "$work/venv"
"$work/venv/bin/pip" install -q numpy setuptools wheel
pip_get() {
  "$work/venv/bin/pip" download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 -d "$work/dl" "$1"
}
pip_get "nvidia-cuda-runtime==13.0.*"
pip_get "nvidia-cuda-profiler-api==13.0.*"
"$work/venv/bin/pip" download -q --no-deps --no-binary=:all: --no-build-isolation -d "$work/dl" "pycuda==2026.1"
mkdir -p "$work/cuda/lib64" "$work/x"
for w in "$work"/dl/nvidia_*.whl; do (cd "$work/x" && unzip -q -o "$w"); done
cp -r "$work"/x/nvidia/cu13/include "$work/cuda/"
tar xzf "$work"/dl/pycuda-*.tar.gz -C "$work"
cd "$work"/pycuda-*/
# Every cu* symbol pycuda's sources call, as empty stubs: enough for the linker.
grep -rhoE '\bcu[A-Z][A-Za-z0-9_]*' src/cpp src/wrapper | sort -u | awk '{print "void " $1 "(void){}"}' > "$work/stub.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$work/cuda/lib64/libcuda.so" "$work/stub.c"
"$work/venv/bin/python" configure.py --cuda-root="$work/cuda" --cudadrv-lib-dir="$work/cuda/lib64" \
  --no-cuda-enable-curand >/dev/null
"$work/venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$dest" .
rm -rf "$work"
