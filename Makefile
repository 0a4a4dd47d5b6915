# pvefleet: one gate. `make verify` is what CI runs (.ci/run) and what you run before pushing.
SHELL := /bin/bash
CARGO ?= cargo
PYENV := target/pyenv
PYTHON := $(PYENV)/bin/python

.PHONY: verify fmt clippy doc test deny pyenv demo bench clean-pyenv

verify: fmt clippy doc pyenv test deny

fmt:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --locked

# The third-party client (proxmoxer) the end-to-end tests drive the simulator with.
pyenv: $(PYENV)/.installed
$(PYENV)/.installed: tests/python/requirements.txt
	python3 -m venv $(PYENV)
	$(PYENV)/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
	touch $@

test: pyenv
	@if command -v cargo-nextest >/dev/null 2>&1; then \
		PVEFLEET_PYTHON=$(CURDIR)/$(PYTHON) $(CARGO) nextest run --workspace --locked --no-fail-fast; \
	else \
		echo "cargo-nextest not found: running cargo test instead"; \
		PVEFLEET_PYTHON=$(CURDIR)/$(PYTHON) $(CARGO) test --workspace --locked --no-fail-fast; \
	fi

deny:
	@if command -v cargo-deny >/dev/null 2>&1; then \
		$(CARGO) deny check licenses bans sources; \
	else \
		echo "NOTICE: cargo-deny is not installed, licenses/bans/sources NOT checked (cargo install cargo-deny --locked)"; \
	fi

# A whole simulated fleet on loopback (3 coordinators, 5 simulated PVE hosts, the example
# fleet of examples/fleet.toml) until Ctrl-C. The demo runs the binaries built beside pvefleet.
demo:
	$(CARGO) build --release --bins
	target/release/pvefleet demo

# Figures, not pass/fail. The coordinator, fleet_scale and agent_idle benches run the release
# binaries as processes.
bench:
	$(CARGO) build --release --locked --bins
	$(CARGO) bench --locked -p pvefleet-tests --bench client_roundtrips
	$(CARGO) bench --locked -p pvefleet-tests --bench coordinator
	$(CARGO) bench --locked -p pvefleet-tests --bench placement
	$(CARGO) bench --locked -p pvefleet-tests --bench fleet_scale
	$(CARGO) bench --locked -p pvefleet-tests --bench agent_idle

clean-pyenv:
	rm -rf $(PYENV)
