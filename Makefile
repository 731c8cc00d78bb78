# Two commands set everything up: `make run` and `make test`.
PYTHON ?= python3
# Compiled modules are kept (some machines turn that off): the test run's workers then
# compile and rewrite each module once, not once each.
unexport PYTHONDONTWRITEBYTECODE
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# `make run` needs only the package itself; the test extras (pytest, mypy, Ray, OpenTelemetry,
# the third-party agent frameworks the tests drive) are installed by `make test`.
RUN_STAMP := $(VENV)/.installed-run

.PHONY: run test lint bench docs clean lock browser langgraph-server

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -qq --upgrade pip

# Reinstall only when the dependency pins change. -qq: errors only, so the first screen
# of `make run` is the demo (setuptools warns about every flat-layout editable install).
$(RUN_STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install -qq -c constraints.txt -e .
	touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(BIN)/pip install -qq -c constraints.txt -e '.[dev,ray]'
	touch $(STAMP)

run: $(RUN_STAMP)
	$(BIN)/agenteval run configs/routing.yaml

# The suite runs on every core (pytest-xdist; worksteal evens out the long tests).
test: lint browser langgraph-server
	$(BIN)/pytest -n auto --dist worksteal

# The HTML report tests drive Debian's headless chromium through chromedriver. Installed
# here when missing and apt is usable (CI runs as root); elsewhere those tests are skipped.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq chromium chromium-driver; \
	  else \
	    echo "chromium missing: 'sudo apt-get install chromium chromium-driver' to run the browser tests"; \
	  fi; \
	fi

# The remote-target tests serve graphs with `langgraph dev` (langgraph-cli[inmem]). Its server,
# langgraph-api, is Elastic-2.0 licensed and pins protobuf<7, which .venv's pins exclude: a
# test-only tool, installed in a venv of its own that sees .venv's packages after its own, so
# .venv keeps its pins and agenteval never depends on it (tests/langgraph_server.py finds it).
LANGGRAPH_VENV := .venv-langgraph
PURELIB := import sysconfig; print(sysconfig.get_paths()["purelib"])

$(LANGGRAPH_VENV)/bin/langgraph: $(STAMP) tests/langgraph-server.txt
	$(PYTHON) -m venv --clear $(LANGGRAPH_VENV)
	$(BIN)/python -c '$(PURELIB)' > "$$($(LANGGRAPH_VENV)/bin/python -c '$(PURELIB)')/agenteval-venv.pth"
	$(LANGGRAPH_VENV)/bin/pip install --quiet -c tests/langgraph-server.txt 'langgraph-cli[inmem]'

langgraph-server: $(LANGGRAPH_VENV)/bin/langgraph

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python -m bench

# Write the run output README.md and docs/ show from a fresh run of each demo, and the
# command reference in docs/commands.md from the CLI's own --help.
docs: $(STAMP)
	AGENTEVAL_WRITE_DOCS=1 $(BIN)/python -m pytest tests/test_docs_output.py -q -m slow
	$(BIN)/cog -r docs/commands.md

# Refresh constraints.txt from the current environment after a tested upgrade.
lock: $(STAMP)
	$(BIN)/pip freeze --exclude-editable | grep -v '^-e' > constraints.txt

clean:
	rm -rf $(VENV) .agenteval .pytest_cache .ruff_cache
