#!/usr/bin/env bash
# Install a Go toolchain from the Go distribution into PREFIX/go (default
# /usr/local/go), checking the archive's SHA-256 against the checksum the
# distribution publishes. cibuildwheel runs this in before-all inside the
# manylinux2014 container (Linux x86_64 and aarch64); macOS is the same with
# os=darwin.
#
# Usage: tools/install-go.sh [PREFIX]      GO_VERSION=1.26.8 by default
set -euo pipefail

prefix="${1:-/usr/local}"
# The Go release the wheels were built and tested with (go.mod needs >= 1.24).
version="${GO_VERSION:-1.26.8}"
case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) echo "install-go: unsupported OS $(uname -s)" >&2; exit 2 ;; esac
case "$(uname -m)" in x86_64 | amd64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) echo "install-go: unsupported machine $(uname -m)" >&2; exit 2 ;; esac
file="go$version.$os-$arch.tar.gz"

# Any Python 3 reads the checksum list (manylinux images keep theirs in /opt/python).
py="$(command -v python3 || ls /opt/python/cp3*/bin/python3 2>/dev/null | tail -n 1)"
[ -n "$py" ] || { echo "install-go: need a python3 to read the checksum list" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
curl -fsSL --retry 3 -o "$tmp/$file" "https://go.dev/dl/$file"
curl -fsSL --retry 3 -o "$tmp/releases.json" "https://go.dev/dl/?mode=json&include=all"
want="$("$py" -c 'import json, sys
for r in json.load(open(sys.argv[1])):
    for f in r["files"]:
        if f["filename"] == sys.argv[2]:
            print(f["sha256"]); sys.exit(0)
sys.exit("install-go: %s is not in the Go release list" % sys.argv[2])' "$tmp/releases.json" "$file")"
echo "$want  $tmp/$file" | sha256sum -c - >/dev/null 2>&1 || echo "$want  $tmp/$file" | shasum -a 256 -c - >/dev/null ||
    { echo "install-go: checksum mismatch for $file" >&2; exit 1; }
rm -rf "$prefix/go"
mkdir -p "$prefix"
tar -C "$prefix" -xzf "$tmp/$file"
"$prefix/go/bin/go" version
