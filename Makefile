# rankdoctor — every target sets up what it needs on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
LAB_STAMP := $(VENV)/.torch-2.13.0
SCENARIOS ?= tests/scenarios
JOBS ?= 2

.PHONY: setup chromium prometheus demo test eval fit lock coverage lab lab-matrix bench-fr check-kb clean

# the test extra holds what the suite runs for real: pytest, playwright, Ray, fsspec/s3fs, moto...
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@rm -f $(VENV)/.installed-*; touch $@

setup: $(STAMP)

## demo: diagnose bundled real examples (public issue-thread logs and real torchrun runs)
demo: setup
	@for case in tests/scenarios/real/comms-11-peer-crash-funasr-rank2-oom/log.txt \
	             tests/scenarios/real/comms2-10-desync-fsdp-t5-rank0-reduce-vs-allgather/log.txt \
	             tests/scenarios/lab/straggler-rank0/logs \
	             tests/scenarios/lab/compile-desync/console.log; do \
	  echo; echo "\$$ rankdoctor diagnose $$case"; \
	  $(VENV)/bin/rankdoctor diagnose $$case; status=$$?; \
	  echo "(exit status $$status: 0 no failure, 1 diagnosed, 3 inconclusive)"; \
	done; true

# $(call apt_when_missing,PACKAGE,TEST,WHAT IT IS FOR,WHAT IS SKIPPED WITHOUT IT): install a Debian
# package when the shell TEST says it is missing (apt-get, no recommends, as root, one line)
define apt_when_missing
	@if ! $(2); then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    export DEBIAN_FRONTEND=noninteractive; \
	    echo "installing $(1) (apt-get, no recommends) for $(3)"; \
	    { apt-get update -qq && apt-get install -y -qq --no-install-recommends $(1); } >/dev/null 2>&1 \
	      || echo "note: could not install $(1); $(4) will be skipped"; \
	  else \
	    echo "note: $(1) is missing (installing it needs root and apt-get); $(4) will be skipped"; \
	  fi; \
	fi
endef

## chromium: the browser the web-app tests drive (apt-get, as root, only when it is missing)
chromium:
	$(call apt_when_missing,chromium,[ -x /usr/bin/chromium ],the browser tests,the browser tests)

## prometheus: the server and promtool the watch-metrics and rules tests run (apt-get, as root, only when missing)
prometheus:
	$(call apt_when_missing,prometheus,{ command -v prometheus && command -v promtool; } >/dev/null,the watch metrics and rules tests,the Prometheus and promtool tests)

## neovim: the editor whose built-in LSP client the language-server test drives (apt-get, as root, only when missing)
.PHONY: neovim
neovim:
	$(call apt_when_missing,neovim,command -v nvim >/dev/null,the Neovim language-server test,the Neovim test)

## test: the whole suite (torch 2.13.0 CPU is installed for the live lab tests)
test: setup chromium prometheus neovim $(LAB_STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -p no:cacheprovider -rs

## eval: per-class accuracy on a scenario corpus (make eval SCENARIOS=dir)
eval: setup
	$(PY) -m rankdoctor.evaluate $(SCENARIOS)

## fit: refit the scoring weights (diagnose/weights.json) on every labelled scenario
FIT_CORPUS ?= $(sort $(wildcard tests/scenarios/*/))
fit: setup
	$(PY) -m rankdoctor.fit $(FIT_CORPUS)

## lock: rewrite the regression lock (tests/scenarios/expected.tsv) from the current results
lock: setup
	$(PY) -m rankdoctor.evaluate --lock tests/scenarios/expected.tsv tests/scenarios

## coverage: how many upstream failure messages (eval/upstream/*.tsv) the encyclopedia knows
coverage: setup
	$(PY) eval/upstream_coverage.py $(if $(V),-v)

## check-kb: validate every entry and run its examples
check-kb: setup
	$(PY) -m rankdoctor.kb.check

## lab: regenerate the real-PyTorch lab runs (installs the CPU build of torch 2.13.0)
$(LAB_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0 numpy tqdm
	touch $@

lab: $(LAB_STAMP)
	$(PY) lab/run.py --out tests/scenarios/lab

## lab-matrix: the fault matrix (same faults, culprit rank / world size / console options varied)
lab-matrix: $(LAB_STAMP)
	$(PY) lab/run.py --matrix

## lab-pg2d: the held-out 8-rank TP x DP (x PP) process-group matrix with py-spy stacks (make lab-pg2d OUT=/work/labpg2d;
## FRESH=1 to 6 for a held-out draw)
.PHONY: lab-pg2d
lab-pg2d: $(LAB_STAMP)
	@test -n "$(OUT)" || { echo "usage: make lab-pg2d OUT=<a folder outside tests/>"; exit 2; }
	$(PY) -m pip install --quiet --disable-pip-version-check py-spy==0.4.2
	$(PY) lab/run.py --matrix-pg2d $(if $(FRESH),--fresh $(FRESH)) --out $(OUT)

## bench-fr: torchfrtrace and `rankdoctor fr` side by side on every lab dump set
bench-fr: $(LAB_STAMP)
	$(PY) bench/fr_vs_torchfrtrace.py --out bench/fr_vs_torchfrtrace.md

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache

## bench: rankdoctor vs ripgrep vs grep on a generated 1 GB / 64-rank corpus (bench/README.md)
.PHONY: bench ripgrep
ripgrep:
	@command -v rg >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq ripgrep; \
	  else echo "note: rg is missing (apt-get install ripgrep needs root); rg rows are skipped"; fi; }

bench: setup ripgrep
	PY=$(PY) bench/gen_all.sh
	$(PY) bench/run.py $(BENCH_INPUTS)

## vsix: the VS Code extension (editors/vscode) as a .vsix: npm ci from the lockfile, then the pinned
## @vscode/vsce from node_modules (needs node 20+ and the npm registry)
.PHONY: vsix
VSCODE_DIR ?= editors/vscode
VSIX ?= build/rankdoctor-vscode.vsix
vsix:
	@command -v npm >/dev/null || { echo "npm is missing: install Node.js 20+ and npm to build the VS Code extension"; exit 2; }
	@mkdir -p $(dir $(abspath $(VSIX)))
	cd $(VSCODE_DIR) && npm ci --no-audit --no-fund && npx --no-install vsce package --skip-license --allow-missing-repository -o $(abspath $(VSIX))
