#!/usr/bin/env bash
# generate.sh regenerates user.pb.go and user_grpc.pb.go from user.proto.
#
# Usage: generate.sh [OUTDIR]
#
# OUTDIR defaults to the directory holding this script. protoc must be on
# PATH (Debian: apt-get install protobuf-compiler). The two Go plugins are
# installed with `go install` at the versions pinned below into
# $PROTOC_GEN_BIN (default: ${TMPDIR:-/tmp}/quartet-protobin), so nothing
# lands in the repository or in the user's GOBIN. A plugin already there at
# the pinned version is reused, which keeps repeated runs off the network.
#
# Exit status: 0 success, 1 generation failed, 2 usage error, 3 protoc not
# found, 4 a plugin could not be installed. generate_test.go relies on these.

set -euo pipefail

# protoc-gen-go must match google.golang.org/protobuf in go.mod: the generated
# code asserts the runtime is not older than its generator.
readonly PROTOC_GEN_GO_VERSION=v1.36.12
# protoc-gen-go-grpc v1.6.x emits grpc.SupportPackageIsVersion9, which needs
# google.golang.org/grpc v1.64.0 or later; go.mod has v1.85.0.
readonly PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

die() {
	local status=$1
	shift
	echo "generate.sh: $*" >&2
	exit "$status"
}

if (($# > 1)); then
	die 2 "usage: generate.sh [OUTDIR]"
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
outdir=${1:-$here}
mkdir -p "$outdir" || die 2 "cannot create output directory $outdir"
# Resolve now: protoc runs from $here, where a relative OUTDIR would mean
# something else.
outdir=$(cd "$outdir" && pwd)

command -v protoc >/dev/null 2>&1 ||
	die 3 "protoc not found on PATH (Debian: apt-get install -y protobuf-compiler)"

bin=${PROTOC_GEN_BIN:-${TMPDIR:-/tmp}/quartet-protobin}
mkdir -p "$bin" || die 4 "cannot create plugin directory $bin"

# ensure_plugin NAME PACKAGE VERSION WANT_VERSION_OUTPUT
# installs NAME unless $bin already holds it at the pinned version.
ensure_plugin() {
	local name=$1 pkg=$2 version=$3 want=$4
	if [[ -x $bin/$name ]] && [[ $("$bin/$name" --version 2>/dev/null) == "$want" ]]; then
		return 0
	fi
	command -v go >/dev/null 2>&1 || die 4 "go not found on PATH; needed to install $name"
	# First from the module cache alone, served as a file proxy: after one
	# download this works offline, where even GOPROXY=off fails because
	# `go install pkg@version` looks up deprecation notices. Then online.
	local cache
	cache=$(go env GOMODCACHE)/cache/download
	# go install refuses to overwrite a file it did not build.
	rm -f "$bin/$name"
	GOBIN=$bin GOPROXY=file://$cache go install "$pkg@$version" 2>/dev/null ||
		GOBIN=$bin go install "$pkg@$version" ||
		die 4 "cannot install $pkg@$version into $bin (not in the module cache and no network?)"
	[[ $("$bin/$name" --version 2>/dev/null) == "$want" ]] ||
		die 4 "$bin/$name does not report version $want after install"
}

ensure_plugin protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go \
	"$PROTOC_GEN_GO_VERSION" "protoc-gen-go $PROTOC_GEN_GO_VERSION"
ensure_plugin protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc \
	"$PROTOC_GEN_GO_GRPC_VERSION" "protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC_VERSION#v}"

cd "$here"
protoc \
	--proto_path=. \
	--plugin=protoc-gen-go="$bin/protoc-gen-go" \
	--plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
	--go_out="$outdir" --go_opt=paths=source_relative \
	--go-grpc_out="$outdir" --go-grpc_opt=paths=source_relative \
	user.proto ||
	die 1 "protoc failed"
