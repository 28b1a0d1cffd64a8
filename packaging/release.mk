# Release artifacts (included by the Makefile; none of this is part of
# `make test`).  See docs/install.md.
#
#   make dist   dist/fluence-VERSION-linux-{amd64,arm64}.tar.gz, their
#               .sha256 files and dist/fluence.yaml (the krew manifest)
#   make deb    dist/fluence_VERSION-1_amd64.deb (debhelper), lintian-checked
#
# A release binary needs only libc (glibc >= 2.31): Lua, LPeg, libyaml and
# jansson linked from their static archives, libcurl and libcrypto loaded when
# needed (core/lazylib.c), and the symbols whose newest glibc version is
# above 2.31 bound to their oldest one (packaging/glibc_compat.c).

RELEASE_ARCHES := amd64 arm64
TRIPLET_amd64  := x86_64-linux-gnu
TRIPLET_arm64  := aarch64-linux-gnu
# The Debian packages each architecture's build needs (the arm64 ones after
# dpkg --add-architecture arm64; tools/release-deps.sh does both).
RELEASE_DEPS_amd64 := binutils
RELEASE_DEPS_arm64 := gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user-static libc6:arm64 \
  liblua5.4-dev:arm64 lua-lpeg-dev:arm64 libyaml-dev:arm64 libjansson-dev:arm64 \
  libcurl4-openssl-dev:arm64 libssl-dev:arm64
DEB_DEPS       := debhelper lintian fakeroot dpkg-dev

GLIBC_WRAP := __libc_start_main dlopen dlsym dlclose dlerror pthread_create \
              pthread_attr_setstacksize pthread_join pthread_sigmask stat lstat fstat
comma := ,

.PHONY: dist deb release-binary

# One architecture's release binary, in build-release-ARCH/ (make dist calls
# this with BUILD_SUFFIX, CC and PKG_CONFIG set for the architecture).
release-binary: $(B)/fluence

$(B)/obj/glibc_compat.o: packaging/glibc_compat.c | $(B)/obj
	$(CC) $(WARN) $(CFLAGS) -c -o $@ $<

# libdl.so.2 and libpthread.so.0 stay needed: before glibc 2.34 the old
# versions of dlopen and pthread_create & co. lived there (stubs since).
$(B)/fluence: $(B)/obj/main.o $(B)/obj/glibc_compat.o $(B)/libfluence.a
	@[ "$(STATIC_OK)" = yes ] || { echo "release: the static archives of $(STATIC_LIBS) are missing for $(CC) (their -dev packages)" >&2; exit 1; }
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(B)/obj/main.o $(B)/obj/glibc_compat.o $(B)/libfluence.a \
	  $(addprefix -Wl$(comma)--wrap=,$(GLIBC_WRAP)) \
	  -Wl,-Bstatic $(addprefix -l,$(STATIC_LIBS)) -Wl,-Bdynamic -lm \
	  -Wl,--no-as-needed -l:libdl.so.2 -l:libpthread.so.0 -Wl,--as-needed

dist: all
	@sh tools/release-deps.sh $(foreach a,$(RELEASE_ARCHES),$(RELEASE_DEPS_$(a)))
	@sh tools/dist.sh $(VERSION) $(RELEASE_ARCHES)

deb: all
	@sh tools/deps.sh $(DEPS) $(DEB_DEPS)
	@sh tools/deb.sh $(VERSION)
