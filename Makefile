# neuron_constructs: every target installs what it needs first (Python venv + pinned Node.js 22 and CDK CLI).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := deploy-local

PYTHON ?= python3
VENV := .venv
CHECKOV_VENV := .venv-checkov
BIN := $(CURDIR)/$(VENV)/bin
NODE_BIN := $(CURDIR)/node_modules/.bin

# The pinned Node.js 22 runs both the cdk CLI and jsii (no end-of-life banner), the venv runs the app.
export PATH := $(NODE_BIN):$(BIN):$(PATH)
export JSII_NODE := $(NODE_BIN)/node
export CDK_DISABLE_CLI_TELEMETRY := true

STACKS ?= NeuronInferenceManaged NeuronInferenceEc2 NeuronMixedCluster NeuronSlicedInf2 NeuronSlicedTrn1 NeuronRagFleet NeuronInferenceTrn2 NeuronTrainingTrn1
CDK_ARGS ?=

.PHONY: install deploy-local deploy-team-app serve-local synth test test-e2e test-all lint deploy destroy dist bench-loop bench-harness bench-inspect bench-slices bench-lint bench-synth bench-synth-profile bench-training docs docs-tables compliance-report clean

install: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev,docs]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

## Deploy the example stacks with the pinned cdk CLI to a fresh local AWS endpoint (moto on 127.0.0.1):
## bootstrap, deploy, print what was created, stop the endpoint. No AWS account or credentials.
deploy-local: install
	$(BIN)/python -m neuron_constructs.local_endpoint --context cdkNag=true $(STACKS)

## Deploy the team app (examples/team_app: a platform stack and a stack per workload) to a fresh local endpoint.
deploy-team-app: install
	$(BIN)/python -m neuron_constructs.local_endpoint --app-dir examples/team_app --context cdkNag=true

## deploy-local, then keep the endpoint up until Ctrl-C, to look around with neuron-ecs or boto3.
serve-local: install
	$(BIN)/python -m neuron_constructs.local_endpoint --serve --context cdkNag=true $(STACKS)

## Synthesize every example stack through the pinned cdk CLI with cdk-nag on, then cfn-lint each template.
synth: install
	rm -rf cdk.out
	cdk synth --quiet --context cdkNag=true
	cfn-lint $(foreach s,$(STACKS),cdk.out/$(s).template.json)
	neuron-ecs lint $(foreach s,$(STACKS),cdk.out/$(s).template.json)
	@echo "synthesized and linted: $(STACKS) (cdk-nag AwsSolutions: no unacknowledged findings; cfn-lint and neuron-ecs lint: clean)"

## Everything CI runs: lint, the test suite, the documentation site, and the end-to-end deploys; the slowest
## property tests draw their full number of examples here (the everyday loop draws fewer: tests/conftest.py examples).
test-all: export NEURON_HYPOTHESIS_BUDGET = full
test-all: export NEURON_JSII_TYPE_CHECKS = on
test-all: test docs test-e2e

## Lint, type-check and run the test suite on two workers, without the end-to-end deploys: the loop for every push.
test: install lint
	$(BIN)/python -m pytest -n 2 -m "not e2e"

## End to end: the cdk CLI deploys the example stacks, and a team app built on the wheel, to local endpoints.
test-e2e: install
	$(BIN)/python -m pytest -n 2 --dist loadfile -m e2e

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

## Deploy the example stacks to the AWS account and region of your own credentials (never the default).
deploy: install
	cdk bootstrap --context cdkNag=true
	cdk deploy --context cdkNag=true $(STACKS) $(CDK_ARGS)
	$(BIN)/python -m neuron_constructs.tools.deployment_report $(STACKS)

## Delete the example stacks from that account (asks for confirmation; CDK_ARGS=--force does not).
destroy: install
	cdk destroy $(STACKS) $(CDK_ARGS)

## The everyday test loop (pytest -n 2 -m "not e2e") five times in a row: each run, its CPU time, the machine's pace, the medians.
## AGAINST=<git revision>: that revision's loop and this checkout's, alternately, and the ratio of their medians.
bench-loop: install
	$(BIN)/python benchmarks/test_loop_benchmark.py $(if $(AGAINST),--against $(AGAINST))

## What the test harness's jsii kernel without its relay, and assemblies in memory, save on the construct tests; and
## what compiling the CloudFormation validation engine with V8's baseline compiler alone saves on the examples' synthesis.
bench-harness: install
	$(BIN)/python benchmarks/harness_benchmark.py

## neuron-ecs inspect on 1,000 container instances and 5,000 tasks (local moto server), and its start-up.
bench-inspect: install
	$(BIN)/python benchmarks/inspect_benchmark.py

## neuron-ecs lint on the example templates (whole process) and the template checks in process (medians).
bench-lint: install
	$(BIN)/python benchmarks/lint_benchmark.py

## Synth time of one stack as sliced services grow from 1 to 64 (medians, ms per added service).
bench-slices: install
	$(BIN)/python benchmarks/slice_synth_benchmark.py

## Synth time of the library's EC2 inference stack against the same resources in plain aws-cdk-lib (warm and cold).
bench-synth: install
	$(BIN)/python benchmarks/synth_overhead_benchmark.py

## Where a warm synth's time goes: construction, synthesis, calls to jsii's runtime, callbacks, the template checks.
bench-synth-profile: install
	$(BIN)/python benchmarks/synth_profile.py

## Synth time of the library's distributed-training stack against the same stack in plain aws-cdk-lib + L1 overrides.
bench-training: install
	$(BIN)/python benchmarks/training_synth_benchmark.py

## Build the documentation site (guides and API reference) into docs/_build/html; any warning fails it.
docs: install
	rm -rf docs/_build
	$(BIN)/sphinx-build -E -n -W --keep-going -q -b html docs docs/_build/html
	@! grep -rlE 'object at 0x|&lt;[A-Za-z_][A-Za-z_.]*(</span> <span class="pre">| )object' docs/_build/html --include='*.html' \
		|| { echo "docs: a Python repr where a value should be (above): give its type a readable repr in docs/conf.py"; exit 1; }
	@echo "docs: docs/_build/html/index.html"

## Rewrite the docs' catalog, rule, density and fleet tables from the code.
docs-tables: install
	$(BIN)/python -m neuron_constructs.tools.tables docs/*.md README.md

## cdk-nag's AwsSolutions and NIST 800-53 rev 5 packs and checkov on the example stacks: rewrite the security
## page's tables and the README's counts; fails on a finding without a reason, or a reason without a finding.
compliance-report: install $(CHECKOV_VENV)/.installed
	$(BIN)/python examples/compliance_report.py --checkov $(CURDIR)/$(CHECKOV_VENV)/bin/checkov docs/security.md README.md

# checkov is heavy and only this report needs it: its own venv, pinned in requirements-checkov.txt.
$(CHECKOV_VENV)/.installed: requirements-checkov.txt
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	touch $@

## Build the package's wheel into dist/ (pip install dist/neuron_constructs-*.whl in your project).
dist:
	rm -rf dist build
	$(PYTHON) -m pip wheel --quiet --disable-pip-version-check --no-deps -w dist .
	rm -rf build
	@ls dist/*.whl

clean:
	rm -rf dist build cdk.out examples/team_app/cdk.out docs/_build .pytest_cache .mypy_cache .ruff_cache
