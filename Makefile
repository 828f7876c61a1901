# Corral's build, run and test entry points. `make run` and `make test` are
# all the set-up a fresh clone needs.

GO       ?= go
BIN      := bin
PKGS     := ./...
# The version stamped into the binaries (/v1/health, corral_build_info,
# supervisor health --client-version): the git description of the tree.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/corral-dev/corral/internal/buildinfo.Version=$(VERSION)
# The pinned agent CLIs that engine tests drive.
export CORRAL_ENGINES_DIR := $(CURDIR)/deploy/engines

.PHONY: all build web run test deps bench bench-console lint fuzz fuzz-long clean generate reliability

all: build

# Static binaries: a runner linked against libc takes ~2 ms longer to start.
# plugin-runner is the runner with plugin engines (go-plugin), kept apart so
# that every other session's runner starts faster and smaller.
# The web console (web/) is built first: the supervisor embeds it.
build: web
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/supervisor ./cmd/runner ./cmd/plugin-runner ./cmd/corral-script-plugin

# A supervisor in a temporary state folder with a demo session on the script
# engine, watched in this terminal. No API key needed.
run: build
	./deploy/demo.sh

# Everything the tests need (pinned agent CLIs, a few Debian packages), then
# unit and integration tests with the race detector.
test: deps
	$(GO) test -race -timeout 30m $(PKGS)

deps:
	./deploy/deps.sh
	./deploy/engines/install.sh
	./deploy/npm-ci.sh clients/typescript
	./deploy/web.sh

# The web console's bundle, embedded by the supervisor (internal/console).
web:
	./deploy/web.sh

# The contract's generated files (api/, clients/typescript/src/types.gen.ts)
# from the Go types; a test fails while they are stale.
generate:
	$(GO) generate ./internal/schema

# The reliability harness at full size (runner kill -9 at 1,000 random
# points, every damage at every offset of a log's last lines, 1,000 sessions
# x 100 commands); it rewrites the figures in docs/reliability.md. make test
# runs the same scenarios small.
reliability:
	CORRAL_RELIABILITY=full CORRAL_RELIABILITY_REPORT=$(CURDIR)/docs/reliability.md \
	  $(GO) test -count=1 -timeout 90m -v -run . ./internal/reliability/

bench: build
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# The web console's figures in Chromium (docs/performance.md).
bench-console: build
	CORRAL_BIN=$(CURDIR)/bin node web/e2e/perf.mjs

# gofmt, go vet (also for macOS, which builds but is not tested here), staticcheck.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	GOOS=darwin GOARCH=arm64 $(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

# A short run of every fuzz target (FUZZTIME each).
FUZZTIME ?= 20s
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$target"; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# Every fuzz target for a longer stretch (FUZZLONG each), with a summary
# line per target; docs/security.md records a run.
FUZZLONG ?= 5m
fuzz-long:
	GO=$(GO) FUZZTIME=$(FUZZLONG) ./deploy/fuzz-long.sh

clean:
	rm -rf $(BIN)
