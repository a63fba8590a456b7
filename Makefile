# Two commands on a fresh machine with only python3: `make serve` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
PROTOC := $(BIN)/python -m grpc_tools.protoc -Iprotos
SOURCES := pyproject.toml $(wildcard requirements/*.txt) $(wildcard plugins/*/pyproject.toml)

.PHONY: serve test test-gpu bench protos lint clean venv

serve: $(STAMP)
	$(BIN)/platform serve --model-repository model_repository

test: $(STAMP)
	$(BIN)/python -m pytest -m "not gpu" $(PYTEST_ARGS)

test-gpu: $(STAMP)
	$(BIN)/pip install -q -r requirements/gpu.txt
	$(BIN)/python -m pytest -m gpu $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

# Regenerates the committed protobuf code (tests/core/test_protos.py fails when stale).
protos: $(STAMP)
	$(PROTOC) --python_out=core --pyi_out=core protos/modelplatform/protos/model_config.proto

venv: $(BIN)/python

# python3 -m venv needs Debian's python3-venv; install it when missing.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || { apt-get update && apt-get install -y python3-venv && $(PYTHON) -m venv $(VENV); }

$(STAMP): $(BIN)/python $(SOURCES)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements/dev.txt
	touch $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache
