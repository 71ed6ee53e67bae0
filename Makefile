# `make run` and `make test` set themselves up on a fresh Debian/Ubuntu machine.
.PHONY: run test setup lint typecheck bench clean

run:
	@scripts/setup.sh --run-only
	.venv/bin/nexus serve

# Two workers, a file each at a time (module fixtures start once); PYTEST_ARGS= runs serially.
PYTEST_ARGS ?= -n 2 --dist loadfile

test: setup
	.venv/bin/ruff check src tests bench
	.venv/bin/mypy
	.venv/bin/pytest $(PYTEST_ARGS)

setup:
	@scripts/setup.sh

lint:
	.venv/bin/ruff check src tests bench
	.venv/bin/ruff format --check src tests bench

typecheck:
	.venv/bin/mypy

bench: setup
	.venv/bin/python bench/overhead.py

clean:
	rm -rf .venv .venv-v1 tools/node/node_modules results
