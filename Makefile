# `make test` is the project's test command (README); .ci/run calls it.
# Everything here runs on a CPU-only machine.
.PHONY: test lint unit workflow notebooks integration

test: lint unit workflow notebooks integration

lint:
	ruff check src tests workflow/scripts notebooks
	snakemake --lint

unit:
	python3 -m pytest -q -m "not integration" tests

workflow:
	snakemake -n all > /dev/null
	snakemake --cores 1 all
	snakemake -n all | grep -q "Nothing to be done"

notebooks:
	python3 -m pytest -q -p no:cacheprovider --nbval-lax \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks/

integration:
	bash envs/cpu/run-integration.sh
