# `make test` is the project's whole test suite; .ci/run runs exactly it.
GO ?= go

.PHONY: test check unit e2e build fuzz manifests conformance

test: check unit e2e manifests conformance

# Static checks: gofmt over every module; go vet and staticcheck (pinned in
# its own tools module, tools/staticcheck, so it cannot move versitygw's
# dependencies) over the service, the end-to-end module and the test
# support module e2e and conformance share; then a short run of every fuzz
# target.
STATICCHECK = $(GO) tool -modfile=$(CURDIR)/tools/staticcheck/go.mod staticcheck
check:
	@out="$$(gofmt -l . )"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd e2e && $(GO) vet ./...
	cd testsupport && $(GO) vet ./...
	$(STATICCHECK) ./...
	cd e2e && $(STATICCHECK) ./...
	cd testsupport && $(STATICCHECK) ./...
	$(MAKE) fuzz-short

# Every fuzz target of the service module (found by name, so new ones are
# included), each for FUZZSHORT. Findings land in the package's
# testdata/fuzz/ and fail the run. .ci/fuzz-one tells a finding from the
# toolchain's "context deadline exceeded" at the end of -fuzztime on a busy
# machine (go.dev/issue/75804, fixed in Go 1.27), which writes no input.
FUZZSHORT ?= 10s
.PHONY: fuzz-short
fuzz-short:
	@set -e; for dir in $$($(GO) list -f '{{.Dir}}' ./...); do \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$dir/*_test.go 2>/dev/null); do \
			echo "fuzz $${dir#$(CURDIR)/} $$fn ($(FUZZSHORT))"; \
			GO=$(GO) $(CURDIR)/.ci/fuzz-one $$dir $$fn $(FUZZSHORT) || exit 1; \
		done; \
	done

# Everything under the race detector, then a race-free pass: the
# allocation-count tests (built only without it: *allocs_test.go) and the
# fast path's differential tests at full size (under -race they shrink;
# their seeds change every run and are printed with a failure).
unit:
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run 'Allocs|Differential' ./...

# End-to-end: real countersign binary (built with -race), real versitygw
# and SeaweedFS (built from the pinned tools modules; SeaweedFS's cold
# build takes over 20 minutes, inside the test binary, hence the timeout;
# VERSITYGW= and WEED= name prebuilt ones), real OPA.
e2e:
	cd e2e && COUNTERSIGN_E2E_BUILDFLAGS=-race $(GO) test -race -count=1 -timeout 60m ./...

# deploy/kubernetes: every manifest decoded strictly into the Kubernetes API
# types, kustomize builds, cross-references, the ConfigMaps' configuration
# through "countersign config check", the Grafana dashboard's metrics.
manifests:
	cd deploy/kubernetes/manifests_test && $(GO) test -count=1 ./...

# Conformance with real Iceberg clients (own module: iceberg-go and arrow):
# iceberg-go's table code, the Java S3V4RestSignerClient's semantics on the
# Go SDK, and PyIceberg's signer hook on Debian's python3-botocore (.ci/run
# installs it), each through countersign (built with -race) into versitygw;
# iceberg-go's REST catalog through countersign's catalog front into
# SeaweedFS's Iceberg catalog (weed from the build cache e2e filled, or WEED=).
conformance:
	cd conformance && $(GO) vet ./...
	cd conformance && COUNTERSIGN_CONFORMANCE_BUILDFLAGS=-race $(GO) test -race -count=1 -timeout 30m ./...

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o countersign ./cmd/countersign

# Short fuzz runs of every parser (CI runs them; run longer locally with FUZZTIME=10m).
FUZZTIME ?= 20s
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzClassify -fuzztime=$(FUZZTIME) ./s3req/
	$(GO) test -run='^$$' -fuzz=FuzzParseDeleteBody -fuzztime=$(FUZZTIME) ./s3req/
	$(GO) test -run='^$$' -fuzz=FuzzDecode -fuzztime=$(FUZZTIME) ./remotesign/
