# Everyday tasks; each one sets up .venv first (see dev.py, which needs only python3).
PYTHON ?= python3

.PHONY: demo test test-fast test-all test-django42 test-flask30 coverage bench lint types memcheck strict-build fuzz fuzz-contexts clean

demo:            ## set everything up and serve the example sites
	$(PYTHON) dev.py demo

test:            ## set everything up and run the whole test suite
	$(PYTHON) dev.py test

test-fast:       ## the quick profile: no slow tests, hypothesis capped (under a minute)
	$(PYTHON) dev.py test-fast

test-all:        ## the suite (without slow tests) on the other Pythons, 3.10 to 3.15 (3.14, 3.15: chroot as root)
	$(PYTHON) dev.py test-all

coverage:        ## the example sites' tests under coverage, their .ptl templates included
	$(PYTHON) dev.py coverage

bench:           ## benchmarks against Jinja2, Mako, Django, Chameleon, Quixote, markupsafe, htpy, dominate, FastHTML; exit 1 on a missed target
	$(PYTHON) dev.py bench

lint:
	$(PYTHON) dev.py setup && .venv/bin/ruff check . && .venv/bin/ruff format --check .

types:           ## mypy --strict and pyright on the package; stubtest of the stubs on both twins
	$(PYTHON) dev.py setup && .venv/bin/python -m mypy && .venv/bin/python -m pyright
	MYPYPATH=typings .venv/bin/python -m mypy.stubtest ptl_wsgi.html ptl_wsgi._htmltext_c
	MYPYPATH=typings PTL_WSGI_PURE_PYTHON=1 .venv/bin/python -m mypy.stubtest ptl_wsgi.html

strict-build:    ## the C accelerator with -Wall -Wextra -Werror
	$(PYTHON) dev.py setup && PTL_WSGI_STRICT_BUILD=1 .venv/bin/python setup.py -q build_ext --inplace --force

memcheck:        ## the htmltext tests against the C accelerator under AddressSanitizer
	$(PYTHON) dev.py setup && bash tools/memcheck.sh

clean:
	rm -rf build .venv .venv-* ptl_wsgi/*.so *.egg-info .pytest_cache

test-django42:   ## the Django tests against Django 4.2 LTS
	$(PYTHON) dev.py test-django42

test-flask30:    ## the Flask and Quart tests against the oldest Flask (3.0) and Jinja2 (3.1.2)
	$(PYTHON) dev.py test-flask30

fuzz:            ## atheris targets for the C escaping and the compiler (60 s each)
	$(PYTHON) dev.py setup && bash tools/fuzz.sh

FUZZ_MINUTES ?= 10
fuzz-contexts:   ## contextual escaping fuzzed in headless Chromium, new seeds (FUZZ_MINUTES=10)
	$(PYTHON) dev.py fuzz-contexts --minutes $(FUZZ_MINUTES)
