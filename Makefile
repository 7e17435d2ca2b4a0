# KG Memory — two commands:
#   make run   set up and run the product (headless server: kg-memory serve)
#   make test  set up and run every test
.PHONY: run test build

run:
	./scripts/setup.sh run
	cargo build --release -p kg-server
	./target/release/kg-memory serve

test:
	./scripts/setup.sh test
	./scripts/test.sh

build:
	cargo build --release -p kg-server
