# pvefleet: one gate. `make verify` is what CI runs (.ci/run) and what you run before pushing.
SHELL := /bin/bash
CARGO ?= cargo
PYENV := target/pyenv
PYTHON := $(PYENV)/bin/python

.PHONY: verify fmt clippy doc test deny pyenv faketime disk-fault browser-deps demo bench chaos clean-pyenv package-test deb lint-deb golden upgrade-test

verify: fmt clippy doc pyenv test package-test deny

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

# libfaketime: the doctor's end-to-end test (tests/tests/it/doctor.rs) runs one agent with its
# wall clock 30 s ahead. Debian's package; installed here when missing.
FAKETIME_LIB := /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
faketime:
	@test -e $(FAKETIME_LIB) || apt-get install -y libfaketime

# The dashboard's browser tests (tests/tests/it/dashboard.rs) and bench drive Debian's headless
# Chromium through its WebDriver; installed here when missing (the tests fail without them).
browser-deps:
	@command -v chromedriver >/dev/null || apt-get install -y --no-install-recommends chromium chromium-driver

# The disk-fault library the scenario runner preloads into members (disk-fault/): a cdylib,
# which test builds do not make.
disk-fault:
	$(CARGO) build --locked -p pvefleet-disk-fault

test: pyenv faketime browser-deps disk-fault
	@if command -v cargo-nextest >/dev/null 2>&1; then \
		PVEFLEET_PYTHON=$(CURDIR)/$(PYTHON) $(CARGO) nextest run --workspace --locked --no-fail-fast \
			-E 'not binary(packaging) and not binary(rolling_upgrade)'; \
	else \
		echo "cargo-nextest not found: running cargo test instead"; \
		PVEFLEET_PYTHON=$(CURDIR)/$(PYTHON) $(CARGO) test --workspace --locked --no-fail-fast \
			-- $(PACKAGE_TEST_SKIP); \
	fi

# The packages installed, run, upgraded and purged in booted bookworm and trixie containers,
# and their contents checked (the product's programs carry no simulator; tests/tests/packaging.rs;
# root only). Alone and after the other tests: it builds the packages and boots containers,
# which would slow everything running beside it.
# The Debian roots are cached in target/debootstrap/ between runs.
# (Without nextest, `cargo test` cannot leave out a test binary: its tests are skipped by name.)
PACKAGE_TEST_SKIP := --skip the_package_installs_runs_upgrades --skip a_failing_step_still_powers_off \
	--skip the_product_package_holds_no_simulator --skip the_packaged_agent_carries_no_simulator \
	--skip a_fleet_upgraded_part_by_part
# It packages the binaries the tests just built (DEB_PROFILE=dev): what it checks is the
# package, its units and scripts, not the code's speed, and an optimised second build of the
# workspace took most of a fresh machine's CI time (18 of 62 minutes). `make deb` alone builds
# the release package.
package-test:
	@if command -v cargo-nextest >/dev/null 2>&1; then \
		DEB_PROFILE=dev $(CARGO) nextest run -p pvefleet-tests --test packaging --locked --no-capture; \
	else \
		DEB_PROFILE=dev $(CARGO) test -p pvefleet-tests --test packaging --locked -- --nocapture; \
	fi

# Writes the golden encodings of this build's version that are missing (tests/golden/vN/;
# never over an existing file). Check them in: later builds must keep reading them.
golden:
	UPDATE_GOLDEN=1 $(CARGO) nextest run -p pvefleet-tests --locked \
		-E 'test(this_builds_encodings_are_checked_in)'

# A rolling upgrade from the release pinned in tests/upgrade-pin to this build, while writes
# run (docs/design/upgrades.md). The pinned release is built once into target/upgrade/<pin>/.
# Not part of verify: it builds a second copy of the workspace.
UPGRADE_DIR := $(CURDIR)/target/upgrade
upgrade-test:
	$(CARGO) build --locked --bins
	set -euo pipefail; \
	pin="$$(tr -d '[:space:]' < tests/upgrade-pin)"; \
	old="$(UPGRADE_DIR)/$$pin"; \
	if [ ! -x "$$old/target/debug/pvefleet-coordinator" ]; then \
		rm -rf "$$old/src"; mkdir -p "$$old/src"; \
		git archive "$$pin" | tar -x -C "$$old/src"; \
		CARGO_TARGET_DIR="$$old/target" $(CARGO) build --locked --bins \
			--manifest-path "$$old/src/Cargo.toml"; \
	fi; \
	PVEFLEET_UPGRADE_FROM="$$old/target/debug" $(CARGO) nextest run -p pvefleet-tests \
		--test rolling_upgrade --locked --no-capture

deny:
	@if command -v cargo-deny >/dev/null 2>&1; then \
		$(CARGO) deny check licenses bans sources; \
	else \
		echo "NOTICE: cargo-deny is not installed, licenses/bans/sources NOT checked (cargo install cargo-deny --locked)"; \
	fi

# A whole simulated fleet on loopback (3 coordinators, 5 simulated PVE hosts, the example
# fleet of examples/fleet.toml) until Ctrl-C: the lab's `pvefleet-lab demo`, which runs the
# binaries built beside it (the product's and the simulator's).
demo:
	$(CARGO) build --release --bins
	target/release/pvefleet-lab demo

# Figures, not pass/fail. The coordinator, fleet_scale, agent_idle, join_surface and vip_failover
# benches run the release binaries as processes; vip_failover needs root and keepalived (Debian's
# package, installed here when missing) and takes about half an hour; fence_false_alarm runs
# 10 minutes of CPU and I/O hogs.
# etcd_compare runs Debian's etcd-server (installed here when missing) beside the release
# binaries: 4 workloads x 3 systems x 3 runs of 60 s, about 40 minutes (PVEFLEET_BENCH_SECS,
# PVEFLEET_BENCH_RUNS shorten it).
bench:
	$(CARGO) build --release --locked --bins
	$(CARGO) bench --locked -p pvefleet-tests --bench client_roundtrips
	$(CARGO) bench --locked -p pvefleet-tests --bench coordinator
	$(CARGO) bench --locked -p pvefleet-tests --bench placement
	$(CARGO) bench --locked -p pvefleet-tests --bench fleet_scale
	$(CARGO) bench --locked -p pvefleet-tests --bench agent_idle
	$(CARGO) bench --locked -p pvefleet-tests --bench join_surface
	$(CARGO) bench --locked -p pvefleet-tests --bench fence_false_alarm
	$(CARGO) bench --locked -p pvefleet-tests --bench ha_recovery
	$(CARGO) bench --locked -p pvefleet-tests --bench drain
	$(CARGO) bench --locked -p pvefleet-tests --bench vip_member_faults
	$(CARGO) bench --locked -p pvefleet-tests --bench rebalance_plan
	@command -v chromedriver >/dev/null || apt-get install -y --no-install-recommends chromium chromium-driver
	$(CARGO) bench --locked -p pvefleet-tests --bench dashboard
	command -v keepalived >/dev/null || apt-get install -y keepalived
	$(CARGO) bench --locked -p pvefleet-tests --bench vip_failover
	command -v etcd >/dev/null || apt-get install -y etcd-server
	$(CARGO) bench --locked -p pvefleet-tests --bench etcd_compare

# The seeded chaos campaign (docs/chaos.md): an hour of random faults on a five-host fleet
# while clients write, every invariant checked on every sample. A new seed each run
# (CHAOS_SEED=S replays one; CHAOS_DURATION=D shortens it). The schedule and the outcome are
# kept in target/chaos/. Not part of verify: its 150 s smoke is (tests/tests/it/chaos.rs).
CHAOS_DURATION ?= 60m
CHAOS_SEED ?= $(shell date +%s)
chaos: faketime disk-fault
	$(CARGO) build --locked --bins
	mkdir -p target/chaos
	target/debug/pvefleet-lab sim chaos --seed $(CHAOS_SEED) --duration $(CHAOS_DURATION) \
		--scenario-out target/chaos/chaos-$(CHAOS_SEED).toml \
		--report target/chaos/chaos-$(CHAOS_SEED).json

clean-pyenv:
	rm -rf $(PYENV)

# The Debian packages (packaging/README.md): release binaries, their man pages and completions
# (from each binary's hidden `--generate`), a changelog entry for this version, then cargo-deb:
# - the product, with the metadata of coordinator/Cargo.toml
#   -> target/debian/pvefleet_<version>_<arch>.deb (no simulator in it);
# - the lab, with the metadata of lab-cli/Cargo.toml
#   -> target/debian/pvefleet-lab_<version>_<arch>.deb (`pvefleet-lab`, `pve-sim`, `pvesh-sim`),
#   whose Depends is then narrowed to `pvefleet (= <version>)`: cargo-deb cannot write a version
#   into it, so the package is unpacked, its control file edited and packed again.
# DEB_VERSION=V builds version V (e.g. 0.1.0-2) instead of the crate's <version>-1.
DEB_VERSION ?=
# The Cargo profile of the packaged binaries (`release`; the package test uses `dev`).
DEB_PROFILE ?= release
DEB_BIN_DIR := target/$(if $(filter dev test,$(DEB_PROFILE)),debug,$(DEB_PROFILE))
DEB_GEN := target/packaging
DEB_BINS := pvefleet pvefleet-coordinator pvefleet-agent
# The lab package's programs with a man page and completions (`pvesh-sim` mimics pvesh's own
# argument syntax and has neither).
DEB_LAB_BINS := pvefleet-lab pve-sim
DEB_MAINTAINER := pvefleet maintainers <maintainers@users.noreply.a-seed-ddbd7c15.example>

deb:
	@# The product's packages alone: a workspace build would unify in the features the tests
	@# crate turns on (the coordinator's fault points).
	$(CARGO) build --profile $(DEB_PROFILE) --locked --bins -p coordinator -p node-agent -p cli
	@# The lab's binaries in a build of their own, so nothing of theirs unifies into the product's.
	$(CARGO) build --profile $(DEB_PROFILE) --locked --bins -p lab-cli -p pve-sim
	rm -rf $(DEB_GEN)
	mkdir -p $(DEB_GEN)/man $(DEB_GEN)/completions/bash $(DEB_GEN)/completions/zsh $(DEB_GEN)/lab
	set -euo pipefail; for bin in $(DEB_BINS) $(DEB_LAB_BINS); do \
		$(DEB_BIN_DIR)/$$bin --generate man > $(DEB_GEN)/man/$$bin.1; \
		gzip -9n $(DEB_GEN)/man/$$bin.1; \
		$(DEB_BIN_DIR)/$$bin --generate complete-bash > $(DEB_GEN)/completions/bash/$$bin; \
		$(DEB_BIN_DIR)/$$bin --generate complete-zsh > $(DEB_GEN)/completions/zsh/_$$bin; \
	done
	@# The changelog's date is the commit's, so the same commit gives the same package.
	set -euo pipefail; \
	version="$(DEB_VERSION)"; \
	if [ -z "$$version" ]; then version="$$($(CARGO) pkgid -p coordinator | sed 's/.*[#@]//')-1"; fi; \
	commit="$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"; \
	date="$$(git log -1 --format=%cD 2>/dev/null || date -R)"; \
	for pkg in pvefleet pvefleet-lab; do \
		out=$(DEB_GEN)/changelog; if [ "$$pkg" = pvefleet-lab ]; then out=$(DEB_GEN)/lab/changelog; fi; \
		printf '%s\n' "$$pkg ($$version) unstable; urgency=medium" "" \
			"  * Built from the pvefleet workspace at commit $$commit." "" \
			" -- $(DEB_MAINTAINER)  $$date" > "$$out"; \
	done
	$(CARGO) deb -p coordinator --no-build --profile $(DEB_PROFILE) --locked $(if $(DEB_VERSION),--deb-version $(DEB_VERSION))
	set -euo pipefail; \
	version="$(DEB_VERSION)"; \
	if [ -z "$$version" ]; then version="$$($(CARGO) pkgid -p lab-cli | sed 's/.*[#@]//')-1"; fi; \
	lab="$$($(CARGO) deb -p lab-cli --no-build --profile $(DEB_PROFILE) --locked $(if $(DEB_VERSION),--deb-version $(DEB_VERSION)) | tail -n 1)"; \
	root=$(DEB_GEN)/lab-root; rm -rf "$$root"; \
	dpkg-deb -R "$$lab" "$$root"; \
	sed -E -i "s/^(Depends:.*[ ,])pvefleet(,|\$$)/\1pvefleet (= $$version)\2/" "$$root/DEBIAN/control"; \
	grep -q "^Depends:.* pvefleet (= $$version)" "$$root/DEBIAN/control" \
		|| { echo "no pvefleet dependency to pin in $$root/DEBIAN/control" >&2; exit 1; }; \
	dpkg-deb --root-owner-group -Zxz --build "$$root" "$$lab" >/dev/null; \
	rm -rf "$$root"; \
	echo "$$lab"

# lintian on the newest packages `make deb` built, product and lab (or DEB="path..."): errors
# fail, warnings show.
lint-deb:
	set -euo pipefail; \
	debs="$(DEB)"; \
	if [ -z "$$debs" ]; then \
		debs="$$(ls -t target/debian/pvefleet_*.deb | head -n 1) $$(ls -t target/debian/pvefleet-lab_*.deb | head -n 1)"; \
	fi; \
	for deb in $$debs; do lintian --fail-on error --tag-display-limit 0 "$$deb"; done
