# The two commands a fresh machine needs: `make demo` and `make test`. `make docs` builds the API reference.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Re-install only when the project's dependency list changes.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test lint docs bench data dist clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# .[test] pulls in every extra (judge, plots, widgets, notebooks): demo and test get everything.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m ipykernel install --prefix $(VENV) --name python3 >/dev/null
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m raglab.demo

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check raglab tests benchmarks scripts

# The API reference from the docstrings (docs/conf.py), HTML in build/docs; any warning fails it
# (-n: every cross-reference must resolve). tests/test_docs.py runs the same build.
docs: $(STAMP)
	$(BIN)/python -m sphinx -b html -n -W --keep-going -q -E docs build/docs

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/retrieval.py
	$(BIN)/python benchmarks/bootstrap.py
	$(BIN)/python benchmarks/judge.py
	$(BIN)/python benchmarks/gate_errors.py
	$(BIN)/python benchmarks/coverage.py
	$(BIN)/python benchmarks/sizing_power.py
	$(BIN)/python benchmarks/ppi.py

# Rebuild the bundled data in data/ from ../shared/data (deterministic).
data: $(STAMP)
	$(BIN)/python scripts/build_data.py
	$(BIN)/python scripts/build_clapnq.py
	$(BIN)/python scripts/build_mtrag.py
	$(BIN)/python scripts/build_frank.py

# The wheel in dist/ (it carries data/ as raglab/datasets/data/; tests/test_install.py installs one).
dist: $(BIN)/python
	rm -rf build/lib build/bdist.* dist  # build/ also holds make demo's output
	$(BIN)/python -m pip wheel --quiet --no-deps -w dist .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build dist
