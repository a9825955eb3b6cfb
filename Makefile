# BlobStream: the README's two commands are `make demo` and `make test`.
SWIFT ?= swift
# `swift` must be the Swift toolchain. Debian's python3-swiftclient (OpenStack's client: never
# install it, the benches use PyPI's in a virtual environment) puts a /usr/bin/swift that
# shadows it; then use the `swift` next to `swiftc`, or stop with a message that says so.
ifeq ($(shell $(SWIFT) --version 2>/dev/null | grep -c 'Swift version'),0)
  SWIFT_NEXT_TO_SWIFTC := $(shell d=$$(dirname "$$(command -v swiftc)") && "$$d/swift" --version 2>/dev/null | grep -q 'Swift version' && echo "$$d/swift")
  ifeq ($(SWIFT_NEXT_TO_SWIFTC),)
    $(error `$(SWIFT)` is not the Swift toolchain (`$(SWIFT) --version` does not say "Swift version"; OpenStack's python3-swiftclient installs such a /usr/bin/swift: remove it) and no toolchain swift was found next to swiftc: run make SWIFT=/path/to/toolchain/usr/bin/swift)
  endif
  $(warning `$(SWIFT)` is not the Swift toolchain (OpenStack's python3-swiftclient installs such a /usr/bin/swift); using $(SWIFT_NEXT_TO_SWIFTC))
  override SWIFT := $(SWIFT_NEXT_TO_SWIFTC)
endif
# Debian packages the build, the tests and the benchmarks need.
DEBIAN_PACKAGES := pkg-config zlib1g-dev libarchive-dev liblzma-dev libzstd-dev libisal-dev libarchive-tools gzip xz-utils zstd tar binutils nginx python3 openssl curl strace
BENCH_PACKAGES := pigz isal curl libarchive-tools nginx time
# OpenStack Swift with its S3 API, the object store of the S3 tests and benches (scripts/swift-store).
# Not python3-swiftclient: its /usr/bin/swift would shadow the toolchain's `swift`.
STORE_PACKAGES := swift swift-proxy swift-account swift-container swift-object python3-swift memcached

.PHONY: all deps build demo test tsan lint format docs bench fixtures clean

all: build

## deps: install the Debian packages that are missing (nothing when all are there).
deps:
	@scripts/install-deps $(DEBIAN_PACKAGES) $(STORE_PACKAGES)
	@python3 -c 'import werkzeug' 2>/dev/null || python3 -m pip install --quiet werkzeug
	@scripts/indexed-gzip-venv >/dev/null
	@scripts/rapidgzip-venv >/dev/null

build: deps
	$(SWIFT) build

## demo: the main job on the bundled samples (streams them, uploads them to nginx on
## 127.0.0.1, checks the server's copies).
demo: deps
	$(SWIFT) build --product blobstream
	scripts/demo "$$($(SWIFT) build --show-bin-path)/blobstream"

## test: install what is missing, build everything, run every test.
test: deps
	cd Fixtures/ConsumerPackage && $(SWIFT) run PhotoExport ..
	cd Fixtures/ConsumerPackage && $(SWIFT) run ComposedRead ..
	SWIFT="$(SWIFT)" scripts/check-snippets
	SWIFT="$(SWIFT)" scripts/newcomer-path
	$(SWIFT) build --build-tests
	SWIFT="$(SWIFT)" scripts/run-tests --skip-build

## tsan: every test under ThreadSanitizer, in its own build folder (.build-tsan); fails on
## any report that scripts/tsan.supp does not suppress (each entry says why it may).
tsan: deps
	SWIFT="$(SWIFT)" scripts/tsan

## lint: the module graph (scripts/check-module-graph: what each module may import), the
## committed .swift-format, strictly (plain `swift format lint` exits 0 on findings); its rules
## include AllPublicDeclarationsHaveDocumentation: every public declaration has a doc comment.
## Then the API digest (scripts/api-digest --check): the public symbols of every library
## product, from the symbol graph, against the committed API.txt; it fails with the diff, and
## `scripts/api-digest --write` accepts a change. It needs the modules built, so it runs
## `swift build` first: the debug build `make test` reuses (CI runs lint first, nothing is
## built twice), a few seconds on a built tree; hence deps, as for any build.
lint: deps
	scripts/check-module-graph --self-test
	scripts/check-module-graph
	scripts/check-locks
	$(SWIFT) format lint --strict --recursive --parallel Package.swift Sources Tests Plugins
	SWIFT="$(SWIFT)" scripts/api-digest --check

## docs: build the DocC catalog of every library module with swift-docc-plugin, warnings
## treated as errors (a broken symbol link, an undocumented topic); the archives go to
## .build/docs/MODULE.doccarchive. CI runs it.
DOC_TARGETS := BlobStream BlobStreamFiles BlobStreamCompression BlobStreamGzip BlobStreamZstd BlobStreamArchive BlobStreamAssets BlobStreamUpload \
	BlobStreamNetworking BlobStreamHTTPClient BlobStreamS3 BlobStreamSources BlobStreamTestSupport BlobStreamNginxTestSupport
docs:
	@mkdir -p .build/docs
	@for t in $(DOC_TARGETS); do \
	  echo "docs: $$t"; \
	  $(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation --target "$$t" \
	    --warnings-as-errors --output-path ".build/docs/$$t.doccarchive" || exit 1; \
	done

## format: rewrite the sources in place by the committed .swift-format.
format:
	$(SWIFT) format format --in-place --recursive --parallel Package.swift Sources Tests Plugins

## bench: benchmarks against the reference tools on a large corpus outside the repo.
bench: deps
	@scripts/install-deps $(BENCH_PACKAGES)
	$(SWIFT) build -c release --product blobstream
	$(SWIFT) build -c release --product blobstream-urlsession
	$(SWIFT) build -c release --product blobstream-bench
	$(SWIFT) build -c release --product blobstream-bench-urlsession
	$(SWIFT) build -c release --product blobstream-bench-asynchttpclient
	scripts/bench

## fixtures: regenerate Fixtures/ (deterministic).
fixtures:
	$(SWIFT) package --allow-writing-to-package-directory generate-fixtures

## completions: shell completion scripts for blobstream (swift-argument-parser writes them),
## into .build/completions/ (blobstream.bash, _blobstream for zsh, blobstream.fish).
.PHONY: completions man
completions:
	$(SWIFT) build --product blobstream
	mkdir -p .build/completions
	bin="$$($(SWIFT) build --show-bin-path)/blobstream" && \
	  "$$bin" --generate-completion-script bash > .build/completions/blobstream.bash && \
	  "$$bin" --generate-completion-script zsh > .build/completions/_blobstream && \
	  "$$bin" --generate-completion-script fish > .build/completions/blobstream.fish

## man: the man page blobstream.1 (swift-argument-parser's generate-manual plugin, on a
## debug build), into .build/man/.
man:
	$(SWIFT) package generate-manual --configuration debug
	mkdir -p .build/man
	find .build/plugins -path '*GenerateManual*/outputs/blobstream/blobstream.1' -exec cp {} .build/man/ \;
	test -s .build/man/blobstream.1
	@for c in cat checksum info ls index compress upload presign demo; do \
	  grep -q "^\.It Em $$c" .build/man/blobstream.1 || { echo "man: blobstream.1 has no section for '$$c'" >&2; exit 1; }; \
	done

clean:
	rm -rf .build .build-tsan
