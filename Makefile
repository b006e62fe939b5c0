# Build, run and test the genderize Kong plugin. See README.md.
GO      ?= go
DATA    ?= ../shared/data/names
DB      ?= names.db
BIN     ?= bin
PORT    ?= 8000
# make run serves the plugin's Prometheus metrics here (127.0.0.1 only).
METRICS_PORT ?= 9542
STATE   ?= .state

# The default database uses every file with counts; CORE_ONLY=1 keeps the
# seven official core sources; LEXICONS=1 adds the count-less lexicons.
CORE_FILES    := $(sort $(wildcard $(DATA)/*.tsv.gz))
EXTRA_FILES   := $(sort $(wildcard $(DATA)/extra/*.tsv.gz))
LEXICON_FILES := $(sort $(wildcard $(DATA)/lexicons/*.tsv.gz))
DB_FILES      := $(CORE_FILES) $(if $(CORE_ONLY),,$(EXTRA_FILES)) $(if $(LEXICONS),$(LEXICON_FILES))

# The plugin runs inside the official Kong image, whose glibc is not ours:
# link it statically (cgo SQLite included).
STATIC_TAGS    := sqlite_omit_load_extension osusergo netgo
STATIC_LDFLAGS := -s -w -linkmode external -extldflags "-static"

# What the database depends on besides its input files: the schema, the
# importer, the keys it shares with the engine (schema/namekey) and the build
# command; never the engine, which the importer does not import.
DB_SOURCES := $(filter-out %_test.go,$(wildcard schema/*.go schema/importer/*.go schema/namekey/*.go)) \
	$(wildcard schema/*.sql) schema/cmd/genderize-db/main.go

.PHONY: all build db eval run test bench fuzz soak vet fmt clean FORCE

all: build db

build: $(BIN)/genderize $(BIN)/genderize-db $(BIN)/genderize-usage $(BIN)/kong-standin

# go build is a no-op when nothing changed, so these always ask it.
$(BIN)/genderize: FORCE
	CGO_ENABLED=1 $(GO) build -tags '$(STATIC_TAGS)' -ldflags '$(STATIC_LDFLAGS)' -o $@ ./plugin/cmd/genderize

# The admin's usage command ships in the Kong image too: static as well.
$(BIN)/genderize-usage: FORCE
	CGO_ENABLED=1 $(GO) build -tags '$(STATIC_TAGS)' -ldflags '$(STATIC_LDFLAGS)' -o $@ ./plugin/cmd/genderize-usage

$(BIN)/genderize-db: FORCE
	CGO_ENABLED=1 $(GO) build -o $@ ./schema/cmd/genderize-db

$(BIN)/kong-standin: FORCE
	$(GO) build -o $@ ./testing/cmd/kong-standin

db: $(DB)

# The input list is recorded so that switching CORE_ONLY or LEXICONS rebuilds.
.db-inputs: FORCE
	@echo '$(DB_FILES)' | cmp -s - $@ || echo '$(DB_FILES)' > $@

$(DB): .db-inputs $(DB_FILES) $(DB_SOURCES)
	CGO_ENABLED=1 $(GO) build -o $(BIN)/genderize-db ./schema/cmd/genderize-db
	$(BIN)/genderize-db build -o $@ $(DB_FILES)

# Evaluation: a database built without a held-out share of every source's
# names, the labelled sets (held-out names; lexicons for scripts and
# locales the data lacks; held-out given names with surnames of their
# country: the US Census list, schema/evalsets/surnames.tsv elsewhere) and
# their scores. Never touches $(DB).
EVAL_DB    ?= names-eval.db
EVAL_DIR   ?= evalsets
EVAL_SHARE ?= 0.1
EVAL_SETS  := $(EVAL_DIR)/heldout.tsv $(EVAL_DIR)/fullnames.tsv $(EVAL_DIR)/firstnames.tsv \
	$(EVAL_DIR)/faker.tsv $(EVAL_DIR)/persian.tsv $(EVAL_DIR)/japanese.tsv

$(EVAL_DB) $(EVAL_DIR)/heldout.tsv &: .db-inputs $(DB_FILES) $(DB_SOURCES)
	@mkdir -p $(EVAL_DIR)
	CGO_ENABLED=1 $(GO) build -o $(BIN)/genderize-db ./schema/cmd/genderize-db
	$(BIN)/genderize-db build -holdout-share $(EVAL_SHARE) -holdout-out $(EVAL_DIR)/heldout.tsv -o $(EVAL_DB) $(DB_FILES)

SURNAMES := $(DATA)/surnames/us_census2000.tsv.gz schema/evalsets/surnames.tsv
$(EVAL_DIR)/fullnames.tsv: $(EVAL_DIR)/heldout.tsv schema/evalsets/fullnames.awk $(SURNAMES)
	{ gzip -dc $(DATA)/surnames/us_census2000.tsv.gz; cat schema/evalsets/surnames.tsv; } | \
		awk -f schema/evalsets/fullnames.awk - $< > $@
$(EVAL_DIR)/firstnames.tsv: $(EVAL_DIR)/heldout.tsv schema/evalsets/fullnames.awk $(SURNAMES)
	{ gzip -dc $(DATA)/surnames/us_census2000.tsv.gz; cat schema/evalsets/surnames.tsv; } | \
		awk -v FIRST=1 -f schema/evalsets/fullnames.awk - $< > $@
$(EVAL_DIR)/faker.tsv: $(DATA)/lexicons/faker_first_names.tsv.gz schema/evalsets/lexicon.awk
	@mkdir -p $(EVAL_DIR)
	gzip -dc $< | awk -f schema/evalsets/lexicon.awk > $@
$(EVAL_DIR)/persian.tsv: $(DATA)/lexicons/persian_names.tsv.gz schema/evalsets/lexicon.awk
	@mkdir -p $(EVAL_DIR)
	gzip -dc $< | awk -f schema/evalsets/lexicon.awk > $@
$(EVAL_DIR)/japanese.tsv: $(DATA)/lexicons/ja_enamdict.tsv.gz schema/evalsets/lexicon.awk
	@mkdir -p $(EVAL_DIR)
	gzip -dc $< | awk -f schema/evalsets/lexicon.awk > $@

eval: $(EVAL_DB) $(EVAL_SETS)
	CGO_ENABLED=1 $(GO) build -o $(BIN)/genderize-db ./schema/cmd/genderize-db
	$(BIN)/genderize-db eval -plot $(EVAL_DIR)/heldout.png $(EVAL_DB) $(EVAL_DIR)/heldout.tsv
	$(BIN)/genderize-db eval -country-col $(EVAL_DB) $(EVAL_DIR)/heldout.tsv
	$(BIN)/genderize-db eval -plot $(EVAL_DIR)/fullnames.png $(EVAL_DB) $(EVAL_DIR)/fullnames.tsv
	$(BIN)/genderize-db eval $(EVAL_DB) $(EVAL_DIR)/firstnames.tsv
	$(BIN)/genderize-db eval -country-col $(EVAL_DB) $(EVAL_DIR)/faker.tsv
	for set in faker persian japanese; do \
		$(BIN)/genderize-db eval -plot $(EVAL_DIR)/$$set.png $(EVAL_DB) $(EVAL_DIR)/$$set.tsv || exit 1; done

run: build $(DB)
	$(BIN)/kong-standin -listen 127.0.0.1:$(PORT) -kong-yml kong/kong.yml \
		-plugin $(BIN)/genderize -db $(abspath $(DB)) -state $(abspath $(STATE)) \
		-plugin-args '-metrics-listen 127.0.0.1:$(METRICS_PORT)'

test: build $(DB)
	$(GO) vet ./...
	GENDERIZE_DB=$(abspath $(DB)) GENDERIZE_DATA=$(abspath $(DATA)) $(GO) test -count=1 ./...
	# The conformance suite again without the consumer cache (kong.yml: 1 s).
	GENDERIZE_DB=$(abspath $(DB)) GENDERIZE_CONSUMER_CACHE_TTL=0 $(GO) test -count=1 ./testing/conformance/

# The protocol benchmark runs the plugin and the no-op plugin (the floor
# the plugin-server protocol imposes) through the stand-in, no HTTP; the
# no-op runs on the plugin's own server and on go-pdk's stock one; the
# plugin runs again with -metrics-listen, to show what counting costs.
# BENCHFLAGS adds kong-standin flags, e.g. "-compare old/genderize
# -compare-kong-yml old/kong.yml" to measure an earlier build alongside.
bench: build $(DB)
	GENDERIZE_DB=$(abspath $(DB)) $(GO) test -run '^$$' -bench . -benchmem ./engine/
	$(GO) build -o $(BIN)/noop ./testing/cmd/noop
	$(GO) build -o $(BIN)/noop-gopdk ./testing/cmd/noop-gopdk
	$(BIN)/kong-standin -bench -kong-yml kong/kong.yml -plugin $(BIN)/genderize \
		-noop $(BIN)/noop -noop-stock $(BIN)/noop-gopdk \
		-compare-args '-metrics-listen 127.0.0.1:0' \
		-db $(abspath $(DB)) -conns 16 -duration 3s $(BENCHFLAGS)

# Each fuzz target runs for FUZZTIME on its own (go test -fuzz takes one at a
# time); `make test` runs their seed corpora. Inputs that fail are written to
# plugin/testdata/fuzz/: commit them, they become seeds. Go 1.26 may end a
# run with "context deadline exceeded" and no failing input (a race in its
# fuzzing coordinator, go.dev/issue/75804, fixed in 1.27): that is reported,
# not failed.
FUZZTIME    ?= 30s
# New inputs are minimised (not counted as execs) for at most this long, so
# that most of FUZZTIME explores.
FUZZMINTIME ?= 5s
FUZZTARGETS := FuzzParseQuery FuzzDecide
fuzz: $(DB)
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for t in $(FUZZTARGETS); do \
		echo "== $$t ($(FUZZTIME))"; \
		before=$$(ls plugin/testdata/fuzz/$$t 2>/dev/null | wc -l); \
		GENDERIZE_DB=$(abspath $(DB)) $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./plugin/ 2>&1 | tee $$log; \
		if ! grep -q '^ok ' $$log; then \
			after=$$(ls plugin/testdata/fuzz/$$t 2>/dev/null | wc -l); \
			if [ "$$after" -eq "$$before" ] && tail -n 4 $$log | grep -q '^    context deadline exceeded$$'; then \
				echo "$$t: stopped by Go's fuzztime deadline race (go.dev/issue/75804), no failing input"; \
			else exit 1; fi; \
		fi; \
	done

# Mixed traffic through the stand-in for DURATION, printing the plugin
# process's RSS, goroutines, open files and p99 every 10 s (not in CI).
# SOAK_POLICY=redis counts in a redis-server of its own.
DURATION ?= 60s
soak: build $(DB)
	GENDERIZE_DB=$(abspath $(DB)) SOAK_DURATION=$(DURATION) SOAK_POLICY=$(SOAK_POLICY) \
		$(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./testing/reliability/

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) $(DB) .db-inputs $(STATE) $(EVAL_DB) $(EVAL_DIR)
