# `make test` is the project's test command (README); .ci/run calls it.
# Everything here runs on a CPU-only machine.
.PHONY: test lint unit data pipeline workflow notebooks integration slurm

# Every target runs this checkout's code, wherever `pip install -e` last pointed the
# environment (two clones' `make test` side by side on one machine each test their own).
export PYTHONPATH := $(CURDIR)/src$(if $(PYTHONPATH),:$(PYTHONPATH),)

test: lint unit data pipeline workflow notebooks integration slurm

lint:
	ruff check src tests workflow/scripts notebooks
	snakemake --lint

# The tests in-process; the ones marked `pipeline` (Snakemake, papermill, nbval or the
# commands of README.md and docs/, tests/test_docs.py, in a subprocess) and `data` (a check of every committed run or step: it grows with the data)
# run in their own targets. unit + data + pipeline = every test but the integration ones.
unit:
	python3 -m pytest -q -m "not integration and not pipeline and not data" tests

data:
	python3 -m pytest -q -m "data and not integration and not pipeline" tests

pipeline:
	python3 -m pytest -q -m "pipeline and not integration" tests

workflow:
	snakemake -n all > /dev/null
	snakemake --cores 1 all
	snakemake -n all | grep -q "Nothing to be done"

notebooks:
	python3 -m pytest -q -p no:cacheprovider --nbval-lax \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks/

integration:
	bash envs/cpu/run-integration.sh

# A one-node SLURM cluster on loopback runs the measure workflow (about 6 minutes on 2 cores).
slurm:
	bash envs/slurm/run-slurm-test.sh
