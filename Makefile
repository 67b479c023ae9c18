# The project's habits. Every target works on a fresh machine with Go installed: tools come
# through the Go module proxy at pinned versions.
GO ?= go
RFQDESK_SCREENSHOTS ?= $(or $(TMPDIR),/tmp)/rfqdesk-e2e-browser
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Packages that run goroutines or guard shared state; CI runs them under the race detector.
RACE_PKGS ?= ./ledgersim/... ./journal/... ./loop/... ./node/... ./transport/... ./client/... ./pglog/...
FUZZTIME ?= 30s

.PHONY: run test race sim fuzz bench lint doclint tidy mutate ha e2e-browser

## run: start the desk on the embedded default (ledgersim, testnet profile).
run:
	$(GO) run ./cmd/desk

## test: every unit, property and regression test.
test:
	$(GO) test -count=1 ./...

## race: the concurrent packages under the race detector.
race:
	$(GO) test -count=1 -race $(RACE_PKGS)

## sim: the long simulation budgets (property tests with more checks), then SIM_SEEDS seeds of
## one simulated hour each with harsh faults and crashes, SIM_JOBS at a time, timed.
SIM_SEEDS ?= 100
SIM_JOBS ?= 2
sim:
	RAPID_CHECKS=2000 $(GO) test -count=1 -run 'Property|StateMachine' ./...
	@out=$${TMPDIR:-/tmp}/rfqdesk-sim.out; \
	$(GO) run ./cmd/sim -seeds $(SIM_SEEDS) -jobs $(SIM_JOBS) -duration 1h -faults harsh \
		-crash-rate 0.0002 -require-coverage > $$out; status=$$?; \
	grep -E '^(seed|FAIL|reproduce|trace|coverage|[0-9]+ seeds)' $$out; \
	echo "full output: $$out"; exit $$status

## mutate: plant each mutant of testdata/mutants.txt (through -overlay; the tree is never
## written) and report which ones the simulator and the rapid tests catch within a fixed seed
## budget (MUTATE_FLAGS, e.g. "-seeds 20 -only fee"); fails below 90%. Not in CI: about a
## minute per mutant.
MUTATE_FLAGS ?=
mutate:
	$(GO) run ./cmd/mutate $(MUTATE_FLAGS)

## fuzz: run every fuzz target of every package for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$target"; \
			$(GO) test $$pkg -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) || exit 1; \
		done; \
	done

## bench: the performance suite against its targets (docs/performance.md): one table on stdout,
## bench-results.json and profiles in the temp dir, rfqdesk-bench/ (BENCHFLAGS="-out DIR" moves them).
bench:
	$(GO) run ./cmd/benchall $(BENCHFLAGS)

## lint: formatting, vet and staticcheck.
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) vet -tags planted ./sim ./cmd/replay
	$(GO) run $(STATICCHECK) -tags planted ./sim ./cmd/replay

## doclint: docs/openapi.yaml and docs/asyncapi.yaml through Redocly CLI, pinned exactly in
## .ci/doclint (needs node >= 20.19 and npm; .ci/run installs them). Its npm cache and
## node_modules stay in .ci/doclint.
doclint:
	cd .ci/doclint && npm ci --no-audit --no-fund --loglevel=error --cache "$$PWD/.npm-cache" && \
		REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
		./node_modules/.bin/redocly lint --config redocly.yaml

## tidy: go.mod and go.sum are exactly what `go mod tidy` makes.
tidy:
	$(GO) mod tidy -diff

## ha: rehearse failovers of a desk on PostgreSQL (docs/ha.md): a cluster of its own (Debian's
## postgresql, installed with apt-get when missing), two desks, a bounded load, HA_ROUNDS
## rounds of SIGKILL or SIGSTOP of the leader; prints losses, split-brain writes and the take
## over times, and fails on any loss, split-brain write or unfenced zombie.
HA_ROUNDS ?= 10
HA_FLAGS ?=
ha:
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
		{ apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; }
	$(GO) run ./cmd/failover -rounds $(HA_ROUNDS) $(HA_FLAGS)

## e2e-browser: the console in a headless Chromium (Debian's chromium, installed with apt-get
## when missing): the page's signing and backup against Go's crypto, then the walkthrough of
## a taker and a maker by clicking and typing, and the operator view on the admin listener;
## screenshots of each step under $RFQDESK_SCREENSHOTS (default: $TMPDIR/rfqdesk-e2e-browser,
## outside the repository).
e2e-browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
	mkdir -p $(RFQDESK_SCREENSHOTS)
	RFQDESK_SCREENSHOTS=$(RFQDESK_SCREENSHOTS) $(GO) test -count=1 -tags browser ./web/console
	RFQDESK_SCREENSHOTS=$(RFQDESK_SCREENSHOTS) $(GO) test -count=1 -tags browser ./cmd/desk -run 'TestConsoleInBrowser|TestOperatorViewInBrowser'
	@echo "screenshots: $(RFQDESK_SCREENSHOTS)"
