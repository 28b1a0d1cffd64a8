# fluence — build, test, install.  Plain make + pkg-config; see README.md.
#
#   make            build bin/fluence, bin/kubectl-fluence and build/lib/fluence.so
#   make demo       install missing deps, build, run a selection on examples/
#   make test       install missing deps, build, run every spec
#   make check      the specs under ASan+UBSan, then under valgrind
#   make dist       release tarballs (amd64, arm64), sha256s, krew manifest
#   make deb        a Debian package (debhelper), lintian-checked
#   make install    PREFIX=/usr/local (DESTDIR honoured); completions, the Lua modules
#                   and fluence.so where lua5.4 (and busted) find them, for
#                   require("fluence.testing") in plain busted specs

# The version, for the binary, the man page, the tarballs, the .deb and the
# krew manifest: the file VERSION is its one place.
VERSION  := $(shell cat VERSION)
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
MANDIR   ?= $(PREFIX)/share/man
LUADIR   ?= $(PREFIX)/share/lua/5.4
LUACDIR  ?= $(PREFIX)/lib/lua/5.4
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
CC       ?= cc
LUA      ?= lua5.4
PKG_CONFIG ?= pkg-config
PKGS     := lua5.4 lua5.4-lpeg yaml-0.1 libcurl jansson libcrypto

# Debian packages: build, then test (servers, certificates, memory checkers).
DEPS      := pkg-config liblua5.4-dev lua5.4 lua-lpeg lua-lpeg-dev libyaml-dev \
             libcurl4-openssl-dev libjansson-dev libssl-dev
TEST_DEPS := lua-busted python3 openssl valgrind zsh fish man-db groff-base

OPT      ?= -O2
WARN     := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
            -Wformat=2 -Wno-unused-parameter
ifdef WERROR
WARN     += -Werror
endif
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
# libcurl and libcrypto are not linked: core/lazylib.c loads them on first
# use (linking libcurl cost ~15 ms at every start); their headers are used.
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs lua5.4 lua5.4-lpeg yaml-0.1 jansson 2>/dev/null)
CFLAGS   ?= $(OPT) -g
ALL_CFLAGS = $(WARN) $(CFLAGS) $(SAN) -fPIC -D_GNU_SOURCE -DFLUENCE_VERSION='"$(VERSION)"' \
             -Icore -Ibuild/gen $(PKG_CFLAGS)
LDLIBS   += $(PKG_LIBS) -lm -ldl -lpthread
# bin/fluence links Lua, LPeg, libyaml and jansson statically (the archives
# of their -dev packages) when they are there: the dynamic loader finding and
# relocating four more libraries was a third of every start.  The specs'
# build/lib/fluence.so stays dynamic: busted's lua5.4 brings its own Lua.
STATIC_LIBS := lua5.4-lpeg lua5.4 yaml jansson
STATIC_OK   := $(shell for l in $(STATIC_LIBS); do [ -f "$$($(CC) -print-file-name=lib$$l.a)" ] || exit 0; done; echo yes)
ifeq ($(STATIC_OK),yes)
BIN_LIBS := -Wl,-Bstatic $(addprefix -l,$(STATIC_LIBS)) -Wl,-Bdynamic -lm -ldl -lpthread
else
BIN_LIBS := $(LDLIBS)
endif

B        := build$(BUILD_SUFFIX)
CORE_SRC := $(filter-out core/main.c,$(wildcard core/*.c))
CORE_OBJ := $(CORE_SRC:core/%.c=$(B)/obj/%.o)
GEN_OBJ  := $(B)/obj/gen_modules.o $(B)/obj/gen_embed.o
LUA_SRC  := $(shell find lua policies providers -name '*.lua' 2>/dev/null | LC_ALL=C sort)

.PHONY: all deps deps-test deps-fuzz test-assets test demo check check-asan check-valgrind install uninstall clean bench fuzz fuzz-build fluxion-diff
all: bin/fluence bin/kubectl-fluence $(B)/lib/fluence.so $(B)/bench/startup

# Every C file that defines luaopen_fluence_NAME becomes the module fluence.NAME:
# the registry is generated, so adding a module is adding a file.
$(B)/gen/modules.c: $(CORE_SRC) tools/gen-modules.sh | $(B)/gen
	sh tools/gen-modules.sh $(CORE_SRC) > $@.$$$$.tmp && mv $@.$$$$.tmp $@

# lua/, policies/ and providers/ are compiled into the binary.
$(B)/gen/embed.c: $(LUA_SRC) tools/embed.lua | $(B)/gen
	$(LUA) tools/embed.lua $(LUA_SRC) > $@.$$$$.tmp && mv $@.$$$$.tmp $@

$(B)/obj/gen_%.o: $(B)/gen/%.c | $(B)/obj
	$(CC) $(ALL_CFLAGS) -Wno-overlength-strings -c -o $@ $<

$(B)/obj/%.o: core/%.c $(wildcard core/*.h) VERSION | $(B)/obj
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/libfluence.a: $(CORE_OBJ) $(GEN_OBJ)
	rm -f $@ && ar rcs $@ $^

bin/fluence$(BUILD_SUFFIX): $(B)/obj/main.o $(B)/libfluence.a | bin
	$(CC) $(CFLAGS) $(SAN) -o $@ $< $(B)/libfluence.a $(LDFLAGS) $(BIN_LIBS)

# The floor of a select in this shape (make bench, spec/startup_floor_spec.lua):
# linked as bin/fluence is, so only what it does after start-up differs.
$(B)/bench/startup: bench/startup.c $(B)/libfluence.a $(wildcard core/*.h) | $(B)/bench
	$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libfluence.a $(LDFLAGS) $(BIN_LIBS)

bin/kubectl-fluence: bin/fluence
	ln -sf fluence $@

# One shared object holding every fluence.* C module, for busted specs:
# require "fluence.yaml" finds luaopen_fluence_yaml in fluence.so.
$(B)/lib/fluence.so: $(CORE_OBJ) $(GEN_OBJ) | $(B)/lib
	$(CC) $(CFLAGS) $(SAN) -shared -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(B)/gen $(B)/obj $(B)/lib $(B)/bench bin:
	mkdir -p $@

deps:
	@sh tools/deps.sh $(DEPS)

deps-test:
	@sh tools/deps.sh $(DEPS) $(TEST_DEPS)

demo: deps
	@$(MAKE) --no-print-directory all
	./bin/fluence select -f examples/quickstart/job.yaml --attributes examples/quickstart/attributes.yaml --offline

# The real kube-apiserver + etcd the cluster specs start (envtest's
# KUBEBUILDER_ASSETS convention; build/envtest from ../shared/envtest).
test-assets:
	@sh tools/envtest-assets.sh

test: deps-test test-assets
	@sh tools/fluxion-deps.sh
	@$(MAKE) --no-print-directory WERROR=1 all
	@sh spec/run

# Sanitizers: a separate build tree so the normal one stays fast.
check: deps-test test-assets check-asan check-valgrind
check-asan:
	@$(MAKE) --no-print-directory BUILD_SUFFIX=-asan OPT=-O1 \
	  SAN='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined' \
	  bin/fluence-asan build-asan/lib/fluence.so build-asan/bench/startup
	@# busted's lua5.4 is not instrumented: preload the runtimes for the C
	@# modules it loads, and check leaks only in fluence processes (whose
	@# main() closes the Lua state), see spec/support/cli.lua.
	@FLUENCE_BIN=$(CURDIR)/bin/fluence-asan FLUENCE_CPATH=$(CURDIR)/build-asan/lib FLUENCE_SANITIZE=1 \
	  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	  sh spec/run
check-valgrind: all
	@FLUENCE_VALGRIND=1 sh spec/run

# The matcher against Fluxion itself (../shared/fluxion, or
# FLUENCE_RESOURCE_QUERY and FLUENCE_FLUXION_LIB): thousands of random
# command streams (fuzz/differential.lua) through the built-in matcher, a
# fifth of them through Fluxion's library, and every stream that ever
# differed (spec/fixtures/match-regressions/seeds.txt).  `make test` runs a
# few hundred.  Differing streams are kept under build/differential/SEED.
FLUXION_DIFF_SEED  ?= 100000
FLUXION_DIFF_CASES ?= 5000
FLUXION_RQ  = $(or $(FLUENCE_RESOURCE_QUERY),$(abspath $(wildcard ../shared/fluxion/bin/resource-query)))
FLUXION_LIB = $(or $(FLUENCE_FLUXION_LIB),$(abspath $(wildcard ../shared/fluxion/lib/libreapi_cli.so)))
fluxion-diff: deps-test
	@sh tools/fluxion-deps.sh
	@$(MAKE) --no-print-directory WERROR=1 all
	@if [ -z "$(FLUXION_RQ)" ]; then echo "fluxion-diff: skipped: no resource-query (../shared/fluxion or FLUENCE_RESOURCE_QUERY)"; exit 0; fi; \
	mkdir -p build; rc=0; \
	run() { log=$$1; shift; env FLUENCE_RESOURCE_QUERY=$(FLUXION_RQ) "$$@" > build/$$log.log 2>&1 || rc=1; \
	        grep -E '^(FAIL|CHANGED)' build/$$log.log | head -n 20; tail -n 1 build/$$log.log; }; \
	run fluxion-diff $(LUA) fuzz/differential.lua $(FLUXION_DIFF_SEED) $(FLUXION_DIFF_CASES); \
	if [ -n "$(FLUXION_LIB)" ]; then \
	  run fluxion-diff-lib env FLUENCE_FLUXION_LIB=$(FLUXION_LIB) \
	    $(LUA) fuzz/differential.lua $(FLUXION_DIFF_SEED) $$(( $(FLUXION_DIFF_CASES) / 5 )); \
	else echo "fluxion-diff: no libreapi_cli.so: the library's share skipped"; fi; \
	run fluxion-diff-kept $(LUA) fuzz/differential.lua --seeds spec/fixtures/match-regressions/seeds.txt; \
	exit $$rc

# Benchmarks: whole-process medians and peak RSS, each against its floor
# measured in the same run (bench/floor.c: libyaml's and jansson's bare
# parse; /bin/true; Fluxion's resource-query), written to docs/benchmarks.md.
# They report; they never fail CI.
bench: deps-test all
	@sh tools/fluxion-deps.sh
	@mkdir -p build/bench
	@$(CC) -O2 -o build/bench/timeit bench/timeit.c
	@$(CC) -O2 $(shell pkg-config --cflags yaml-0.1 jansson) -o build/bench/floor bench/floor.c \
	  $(shell pkg-config --libs yaml-0.1 jansson)
	@$(LUA) bench/run.lua

# libFuzzer targets (clang from Debian): one harness, fuzz/fuzz_target.c,
# runs lua/fluence/fuzz.lua's target per input in a fresh runtime.  Seeds
# live in fuzz/corpus/TARGET; findings land in build-fuzz/.
FUZZ_TARGETS := yaml json manifest policy attributes kubeconfig offerings jobspec jgf braket kubelists
# Targets that read YAML fuzz with fuzz/dict/yaml.dict (anchors, aliases,
# merge keys), plus fuzz/dict/TARGET.dict when there is one (kubeconfig and
# kubelists keys).
FUZZ_YAML    := yaml manifest attributes kubeconfig offerings
FUZZ_TIME    ?= 30
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
                -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
fuzz-build:
	@$(MAKE) --no-print-directory BUILD_SUFFIX=-fuzz CC=clang OPT=-O1 \
	  SAN='$(FUZZ_SAN) -fsanitize=fuzzer-no-link' build-fuzz/libfluence.a
	@for t in $(FUZZ_TARGETS); do \
	  clang $(WARN) -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer -D_GNU_SOURCE -Icore -Ibuild-fuzz/gen $(PKG_CFLAGS) \
	    -DFUZZ_TARGET="\"$$t\"" fuzz/fuzz_target.c build-fuzz/libfluence.a $(LDLIBS) -o build-fuzz/fuzz-$$t \
	    || exit 1; \
	done
fuzz: deps-fuzz fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t fuzz/corpus/$$t; \
	  dict=build-fuzz/$$t.dict; rm -f $$dict; \
	  case " $(FUZZ_YAML) " in *" $$t "*) cat fuzz/dict/yaml.dict >> $$dict;; esac; \
	  [ ! -f fuzz/dict/$$t.dict ] || cat fuzz/dict/$$t.dict >> $$dict; \
	  echo "fuzz: $$t for $(FUZZ_TIME) s$$([ -f $$dict ] && echo ", dictionary $$dict")"; \
	  build-fuzz/fuzz-$$t -max_total_time=$(FUZZ_TIME) -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	    $$([ -f $$dict ] && echo "-dict=$$dict") \
	    -print_final_stats=1 -artifact_prefix=build-fuzz/crash-$$t- \
	    build-fuzz/corpus/$$t fuzz/corpus/$$t 2>build-fuzz/fuzz-$$t.log \
	    || { tail -n 40 build-fuzz/fuzz-$$t.log; exit 1; }; \
	  grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' build-fuzz/fuzz-$$t.log; \
	done
deps-fuzz:
	@sh tools/deps.sh $(DEPS) clang libclang-rt-14-dev

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 bin/fluence $(DESTDIR)$(BINDIR)/fluence
	ln -sf fluence $(DESTDIR)$(BINDIR)/kubectl-fluence
	if [ -f docs/fluence.1 ]; then install -m 644 docs/fluence.1 $(DESTDIR)$(MANDIR)/man1/fluence.1; fi
	@# shell completion, generated by the program from its own tables
	install -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	bin/fluence completion bash > $(DESTDIR)$(BASHCOMPDIR)/fluence
	ln -sf fluence $(DESTDIR)$(BASHCOMPDIR)/kubectl-fluence
	bin/fluence completion zsh > $(DESTDIR)$(ZSHCOMPDIR)/_fluence
	bin/fluence completion fish > $(DESTDIR)$(FISHCOMPDIR)/fluence.fish
	@# plain busted: require("fluence.testing") finds lua/fluence/*.lua here and
	@# the C modules (and the built-in plugins) in fluence.so (docs/testing-plugins.md)
	install -d $(DESTDIR)$(LUACDIR)
	install -m 644 $(B)/lib/fluence.so $(DESTDIR)$(LUACDIR)/fluence.so
	cd lua && for f in $$(find fluence -name '*.lua' | LC_ALL=C sort); do \
	  install -D -m 644 "$$f" "$(DESTDIR)$(LUADIR)/$$f" || exit 1; done

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/fluence $(DESTDIR)$(BINDIR)/kubectl-fluence $(DESTDIR)$(MANDIR)/man1/fluence.1
	rm -f $(DESTDIR)$(BASHCOMPDIR)/fluence $(DESTDIR)$(BASHCOMPDIR)/kubectl-fluence \
	  $(DESTDIR)$(ZSHCOMPDIR)/_fluence $(DESTDIR)$(FISHCOMPDIR)/fluence.fish
	rm -rf $(DESTDIR)$(LUADIR)/fluence $(DESTDIR)$(LUACDIR)/fluence.so

clean:
	rm -rf build build-* bin

# make dist, make deb: release artifacts, outside make test.
include packaging/release.mk
