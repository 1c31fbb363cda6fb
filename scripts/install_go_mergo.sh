#!/bin/sh
# Install what tests/test_backend_mergo.py builds its Go oracle with: Go and the mergo source, as Debian packages
# (golang-go, golang-github-imdario-mergo-dev). Run by the README's test command.
#
# Quiet and idempotent: nothing happens when both are there. It never fails its caller: where it cannot install
# them (no apt-get, no root, no network), it says so and the differential test is skipped, with the reason.
packages="golang-go golang-github-imdario-mergo-dev"
mergo=/usr/share/gocode/src/github.com/imdario/mergo/merge.go
if command -v go >/dev/null 2>&1 && [ -f "$mergo" ]; then
    exit 0
fi
note() { echo "install_go_mergo: $*; tests/test_backend_mergo.py will be skipped" >&2; exit 0; }
command -v apt-get >/dev/null 2>&1 || note "no apt-get to install $packages with"
as_root=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null || note "not root, and no password-less sudo"
    as_root="sudo -n"
fi
install() { $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null 2>&1; }
start=$(date +%s)
# the package lists of a fresh machine may be missing or stale: update them only if the install needs it
install || { $as_root apt-get update -qq >/dev/null 2>&1 && install; } || note "apt-get could not install $packages"
echo "install_go_mergo: installed $packages in $(( $(date +%s) - start )) s" >&2
