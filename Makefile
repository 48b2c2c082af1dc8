# kvlab — see README.md. `make demo` and `make test` install what is missing first.
CARGO ?= cargo
KVLAB := target/release/kvlab

.PHONY: all deps build test bench demo lint clean

all: build

## deps: install missing servers and tools from Debian's packages (valkey from bookworm-backports),
## and fetch Cassandra's jars from Maven Central into ~/.cache/kvlab (outside the repository)
deps:
	@bash scripts/deps.sh
	@bash scripts/cassandra-jars.sh

## build: the release binary target/release/kvlab
build:
	@bash scripts/need-rust.sh
	$(CARGO) build --release

## test: unit and integration tests against real managed servers, built with
## the `suite` profile (release optimisation without LTO: links in seconds),
## run by scripts/test.sh in two lanes, then the quiet binary alone
test: deps
	@bash scripts/need-rust.sh
	@CARGO="$(CARGO)" bash scripts/test.sh

## bench: kvlab beside redis-benchmark (and memtier_benchmark if on PATH), interleaved
bench: deps build
	@bash scripts/bench.sh

## demo: kvlab decide on a stated load against managed PostgreSQL and Redis (~2.5 minutes)
demo: deps build
	@bash scripts/demo.sh

## lint: formatting and clippy, as required before a commit
lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

clean:
	$(CARGO) clean
