#!/bin/sh
# Build the mergo oracle offline: GOPATH mode, against the mergo source Debian installs.
#
#   apt-get install golang-go golang-github-imdario-mergo-dev     (Go 1.19, mergo 0.3.12)
#   tests/mergo_oracle/build.sh OUTPUT
#
# flyteplugins v1.16.8 pins mergo 0.3.13; between the two, merge.go only changes how transformers are guarded
# and mergo.go accepts a slice as the top-level destination. The backend uses neither, so 0.3.12 merges alike.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTPUT}
gocode=${MERGO_GOPATH:-/usr/share/gocode}
if [ ! -f "$gocode/src/github.com/imdario/mergo/merge.go" ]; then
    echo "mergo source not found under $gocode (apt-get install golang-github-imdario-mergo-dev)" >&2
    exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/mergo_oracle"
cp "$here/main.go" "$here/k8stypes.go" "$work/src/mergo_oracle/"
cd "$work/src/mergo_oracle"
GOPATH="$work:$gocode" GO111MODULE=off GOFLAGS= GOPROXY=off GOCACHE="${GOCACHE:-$work/cache}" go build -o "$out" .
