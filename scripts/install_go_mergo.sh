#!/bin/sh
# Install what tests/test_backend_mergo.py builds its Go oracle with: Go and the mergo source, as Debian packages
# (golang-go, golang-github-imdario-mergo-dev). Run by the README's test command.
#
# Quiet and idempotent: nothing happens when both are there (the mergo source where the test looks for it:
# $MERGO_GOPATH, else /usr/share/gocode). It never fails its caller: where it cannot install them (no apt-get, no
# root, no network, no such package), it says why, with apt-get's own error, and that the differential test will
# be skipped; it says so only when the test will be (what is missing is checked again, after the attempt).
packages="golang-go golang-github-imdario-mergo-dev"
mergo="${MERGO_GOPATH:-/usr/share/gocode}/src/github.com/imdario/mergo/merge.go"
missing() {
    command -v go >/dev/null 2>&1 || printf 'go on PATH; '
    [ -f "$mergo" ] || printf '%s; ' "$mergo"
}
[ -z "$(missing)" ] && exit 0
log=$(mktemp 2>/dev/null || echo "/tmp/install_go_mergo.$$")
note() {
    gone=$(missing)
    rm -f "$log"
    [ -z "$gone" ] && exit 0  # there after all (installed meanwhile, or found where the test looks)
    echo "install_go_mergo: $1; tests/test_backend_mergo.py will be skipped (missing: ${gone%; })" >&2
    exit 0
}
why() {  # apt-get's own words: its error lines (E: ...), else its last line
    said=$(grep -E '^(E|Err):' "$log" 2>/dev/null | tail -n 2 | tr '\n' ' ')
    [ -n "$said" ] || said=$(tail -n 1 "$log" 2>/dev/null)
    echo "${said% }" | tr -d '\r' | cut -c1-300
}
command -v apt-get >/dev/null 2>&1 || note "no apt-get to install $packages with"
as_root=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || note "not root, and no sudo"
    sudo -n true 2>/dev/null || note "not root, and sudo asks for a password"
    as_root="sudo -n"
fi
install() { $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >"$log" 2>&1; }
start=$(date +%s)
# the package lists of a fresh machine may be missing or stale: update them only if the install needs it
if ! install; then
    first=$(why)
    if ! $as_root apt-get update -qq >"$log" 2>&1; then
        note "apt-get install failed (${first:-no message}), and apt-get update failed too ($(why))"
    fi
    install || note "apt-get could not install $packages: $(why)"
fi
[ -z "$(missing)" ] || note "apt-get installed $packages, but they are not where the test looks"
rm -f "$log"
echo "install_go_mergo: installed $packages in $(( $(date +%s) - start )) s" >&2
