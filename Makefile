# Two commands set everything up: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench docs clean lock browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Reinstall only when the dependency pins change.
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev,ray]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/agenteval run configs/routing.yaml

test: lint browser
	$(BIN)/pytest

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

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python -m bench

# Write the run output README.md and docs/ show from a fresh run of each demo.
docs: $(STAMP)
	AGENTEVAL_WRITE_DOCS=1 $(BIN)/python -m pytest tests/test_docs_output.py -q -m slow

# Refresh constraints.txt from the current environment after a tested upgrade.
lock: $(STAMP)
	$(BIN)/pip freeze --exclude-editable | grep -v '^-e' > constraints.txt

clean:
	rm -rf $(VENV) .agenteval .pytest_cache .ruff_cache
