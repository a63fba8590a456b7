# Two commands on a fresh machine with only python3: `make serve` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
PROTOC := $(BIN)/python -m grpc_tools.protoc -Iprotos
SOURCES := pyproject.toml $(wildcard requirements/*.txt) $(wildcard plugins/*/pyproject.toml)

.PHONY: triton-peer serve test test-gpu bench bench-gpu soak fuzz protos lint clean venv perf-analyzer chromium wrk prometheus image-base image image-gpu image-test

serve: $(STAMP)
	$(BIN)/platform serve --model-repository model_repository

# Tests run in TEST_WORKERS processes (pytest-xdist), each test file whole in one of them, so a
# file's module fixtures (its servers) start once; TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2
test: lint $(STAMP) perf-analyzer chromium prometheus
	$(BIN)/python -m pytest -m "not gpu" -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# ruff's lint rules, ruff's formatting and mypy over core and every plugin (the rules and the
# strictness: pyproject.toml, CONTRIBUTING.md "Lint and types"); `make test` runs it first.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The GPU path on a CUDA machine (README "GPU tests"); a lent machine without a registry runs the
# same through scripts/gpu/device_run.sh.
test-gpu: $(STAMP) perf-analyzer
	$(BIN)/pip install -q -r requirements/gpu.txt
	$(BIN)/python -m pytest -m gpu $(PYTEST_ARGS)

bench-gpu: $(STAMP) perf-analyzer
	$(BIN)/pip install -q -r requirements/gpu.txt
	cd benchmarks && ../$(BIN)/python gpu.py $(BENCH_ARGS)

bench: $(STAMP) perf-analyzer wrk
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

# Triton's own server for the bench's "peer" rows (benchmarks/peer.py): the tritonserver binary
# inside the nvidia-pytriton wheel, in a venv of its own (its python backend needs numpy 1.x).
# Optional: without it `make bench` leaves the Triton column out and says so.
PEER_VENV := $(VENV)/triton-peer
triton-peer: $(PEER_VENV)/.installed
$(PEER_VENV)/.installed: $(BIN)/python
	$(PYTHON) -m venv $(PEER_VENV)
	$(PEER_VENV)/bin/pip install -q "nvidia-pytriton==0.7.0" "numpy<2"
	touch $@

# The real server under mixed traffic over every dialect for MINUTES (benchmarks/soak/__init__.py);
# fails on any 5xx, wrong answer, or memory growth over 20 MiB after the warm-up (docs/reliability.md).
MINUTES ?= 5
soak: $(STAMP)
	PYTHONPATH=benchmarks$${PYTHONPATH:+:$$PYTHONPATH} $(BIN)/python -m soak --minutes $(MINUTES) $(SOAK_ARGS)

# Fuzzes every request decoder through the real request path (fuzz/, docs/reliability.md):
# FUZZ_SECONDS per target, FUZZ_TARGETS=a,b to choose (default: all), FUZZ_INPUTS=N to stop at N inputs.
# atheris (coverage-guided) when it installs, else hypothesis-driven random mutation (said so when run).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
FUZZ_INPUTS  ?= 0
fuzz: $(STAMP)
	$(BIN)/python -m pip install -q -r requirements/fuzz.txt || echo "fuzz: atheris did not install; falling back to hypothesis-driven random mutation"
	$(BIN)/python -m fuzz --seconds $(FUZZ_SECONDS) --targets "$(FUZZ_TARGETS)" --inputs $(FUZZ_INPUTS)

# Regenerates the committed protobuf code; when it is stale these fail:
# tests/core/test_protos_stale.py, tests/plugins/oip/test_protos_stale.py,
# tests/plugins/grps/test_protos_stale.py, tests/plugins/tfserving/test_protos.py.
protos: $(STAMP)
	$(PROTOC) --python_out=core --pyi_out=core protos/modelplatform/protos/model_config.proto
	$(PROTOC) --python_out=plugins/oip --pyi_out=plugins/oip --grpc_python_out=plugins/oip protos/modelplatform_oip/protos/grpc_service.proto
	$(PROTOC) --python_out=plugins/grps --pyi_out=plugins/grps --grpc_python_out=plugins/grps protos/modelplatform_grps/protos/grps.proto
	$(PROTOC) --python_out=plugins/tfserving --pyi_out=plugins/tfserving protos/modelplatform_tfserving/protos/*.proto
	$(PROTOC) --grpc_python_out=plugins/tfserving protos/modelplatform_tfserving/protos/services.proto
	$(BIN)/python scripts/private_proto_pool.py plugins/tfserving/modelplatform_tfserving/protos modelplatform_tfserving.protos

venv: $(BIN)/python

# python3 -m venv needs Debian's python3-venv; install it when missing.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || { apt-get update && apt-get install -y python3-venv && $(PYTHON) -m venv $(VENV); }

$(STAMP): $(BIN)/python $(SOURCES)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements/dev.txt
	touch $(STAMP)

# perf_analyzer (r24.09): the binary inside the tritonclient 2.50.0 manylinux wheel
# (newer wheels need glibc 2.38), unpacked beside the venv - not into it, since the
# tests use a newer tritonclient - with libcudart from PyPI and Debian's libb64.
PA_DIR   := $(VENV)/perf_analyzer
PA_STAMP := $(PA_DIR)/.installed

perf-analyzer: $(PA_STAMP)

$(PA_STAMP): $(BIN)/python
	ldconfig -p | grep -q libb64.so.0d || { apt-get update && apt-get install -y libb64-0d; }
	rm -rf $(PA_DIR) && mkdir -p $(PA_DIR)/wheels
	$(BIN)/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
	  --platform manylinux1_x86_64 --platform manylinux2014_x86_64 -d $(PA_DIR)/wheels \
	  tritonclient==2.50.0 'nvidia-cuda-runtime-cu12>=12,<13'
	$(BIN)/python scripts/extract_from_wheel.py '$(PA_DIR)/wheels/tritonclient-*.whl' /data/bin/perf_analyzer $(PA_DIR)/bin
	$(BIN)/python scripts/extract_from_wheel.py '$(PA_DIR)/wheels/nvidia_cuda_runtime_cu12-*.whl' /lib/libcudart.so.12 $(PA_DIR)/lib
	chmod +x $(PA_DIR)/bin/perf_analyzer
	printf '#!/bin/sh\nhere=$$(dirname "$$(readlink -f "$$0")")\nLD_LIBRARY_PATH="$$here/lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" exec "$$here/bin/perf_analyzer" "$$@"\n' > $(PA_DIR)/perf_analyzer
	chmod +x $(PA_DIR)/perf_analyzer
	rm -rf $(PA_DIR)/wheels
	$(PA_DIR)/perf_analyzer --version
	touch $(PA_STAMP)

# Headless Chromium for the grps monitor-page test (Debian's package; idempotent).
chromium:
	command -v chromium >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }

# wrk (Debian's package): the HTTP/1.1 load generator of the REST dialect rows of `make bench`
# (perf_analyzer speaks only OIP); idempotent.
wrk:
	command -v wrk >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends wrk; }

# Prometheus (Debian's package) for the test that scrapes the server and runs the PromQL of
# Triton's dashboard and autoscaler (tests/e2e/test_prometheus.py); idempotent.
prometheus:
	command -v prometheus >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus; }

# Container images (docs/deployment.md, "Images"). No registry image can be pulled on the
# development machines: image-base makes IMAGE_BASE (Debian with python3) from Debian's
# packages with debootstrap and podman import; image builds the CPU image on it; image-test
# builds it and serves readiness from it as its user (tests/deploy/test_images.py). Not part of
# `make test`: it downloads a Debian system and every Python dependency (about 8 minutes).
IMAGE_BASE ?= localhost/debian-python:bookworm
# The host's CA bundle and pip settings reach RUN steps that go through a TLS-intercepting proxy.
HOST_TRUST := $(foreach f,/etc/ssl/certs/ca-certificates.crt /etc/pip.conf,$(if $(wildcard $(f)),--volume=$(f):$(f):ro))

image-base:
	command -v podman >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends podman debootstrap; }
	podman image exists $(IMAGE_BASE) || { root=$$(mktemp -d) && debootstrap --variant=minbase --include=python3,python3-venv,python3-pip bookworm $$root && tar -C $$root -c . | podman import - $(IMAGE_BASE); status=$$?; rm -rf $$root; exit $$status; }

image: image-base
	podman build --isolation=chroot --pull=never $(HOST_TRUST) --build-arg BASE=$(IMAGE_BASE) -f Containerfile -t modelplatform:cpu .

# Needs NVIDIA's CUDA images from their registry.
image-gpu:
	podman build -f Containerfile.gpu -t modelplatform:gpu .

image-test: $(STAMP) image-base
	MODELPLATFORM_TEST_BASE_IMAGE=$(IMAGE_BASE) $(BIN)/python -m pytest tests/deploy/test_images.py $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache
