# neuron_constructs: every target installs what it needs first (Python venv + pinned Node.js 22 and CDK CLI).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := synth

PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
NODE_BIN := $(CURDIR)/node_modules/.bin

# The pinned Node.js 22 runs both the cdk CLI and jsii (no end-of-life banner), the venv runs the app.
export PATH := $(NODE_BIN):$(BIN):$(PATH)
export JSII_NODE := $(NODE_BIN)/node
export CDK_DISABLE_CLI_TELEMETRY := true

STACKS := NeuronInferenceManaged NeuronInferenceEc2 NeuronMixedCluster

.PHONY: install synth test check readme-tables clean

install: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

## Synthesize every example stack through the pinned cdk CLI with cdk-nag on, then cfn-lint each template.
synth: install
	rm -rf cdk.out
	cdk synth --quiet --context cdkNag=true
	cfn-lint $(foreach s,$(STACKS),cdk.out/$(s).template.json)
	@echo "synthesized and linted: $(STACKS) (cdk-nag AwsSolutions: no unacknowledged findings; cfn-lint: clean)"

## Lint, type-check and run the test suite.
test: install check
	$(BIN)/python -m pytest

check: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## Rewrite the README's catalog and rule tables from the code.
readme-tables: install
	$(BIN)/python -m neuron_constructs.tables README.md

clean:
	rm -rf cdk.out .pytest_cache .mypy_cache .ruff_cache
