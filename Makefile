# KG Memory — two commands:
#   make run   set up and run the product: the tray app where a display is present,
#              the headless server (kg-memory serve) where there is none
#   make test  set up and run every test
# and, for memory quality (issue 21):
#   make eval  score prompt recall and kg_search on the labelled memories of
#              tests/recall-eval/, reference policy beside ours, clean and live
#              sessions, with the reference 0.17's recorded runs beside them and
#              issue 37's targets judged (EVAL_ARGS="--verbose" lists every miss,
#              "--json" for machines; EVAL_RUNS= leaves 0.17 out)
# and, to install it like any desktop app (issue 22):
#   make package  the .deb, the .rpm and the AppImage in target/package/ (scripts/package.sh)
.PHONY: run test build eval package

run:
	./scripts/setup.sh run
	cargo build --release -p kg-cli -p kg-memory-app
	@if [ -n "$${DISPLAY}$${WAYLAND_DISPLAY}" ]; then \
	  exec ./target/release/kg-memory-app; \
	else \
	  echo "No display: running the headless server (kg-memory serve)."; \
	  exec ./target/release/kg-memory serve; \
	fi

test:
	./scripts/setup.sh test
	./scripts/test.sh

build:
	cargo build --release -p kg-cli -p kg-memory-app

# Release build: the latencies it prints are the product's, not a debug build's.
EVAL_RUNS ?= tests/recall-eval/runs/kg-memory-0.17.0.json
eval:
	@cargo run --release -q -p recall-eval -- $(if $(EVAL_RUNS),--runs $(EVAL_RUNS)) $(EVAL_ARGS)

package:
	./scripts/package.sh
