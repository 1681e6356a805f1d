"""Build psda's one shared library: gopy bindings and the C ABI in one .so.

Metadata lives in pyproject.toml; this file only knows how to build the
extension module ``psda._psdago``. Go cannot host two runtimes in one
process, so the gopy-generated bindings (package pyapi) and the C exports
(package capi) are linked into the same c-shared library; Python reaches the
first as an extension module, for its stateful objects (pyapi.Matching and
the pyapi.Schedule built from it), and the second through ctypes on the same
file, for the stateless bulk calls; C programs link the same file for the C
ABI (capi/psda.h). The library never links libpython (step 4), so one build
serves every interpreter of its Python version and C programs alike.

The steps mirror gopy v0.4.10's ``runBuild`` (cmd_build.go), done here so
that we choose the flags:

1. build gopy and goimports from our go.mod (pinned in tools.go);
2. ``gopy gen`` the bindings for ./pyapi into a directory whose name starts
   with "_", so that ``go vet ./...`` and ``go test ./...`` ignore it;
3. ``goimports -w`` the generated Go file;
4. drop its ``#cgo LDFLAGS`` (they link libpython: an extension module must
   take Python's symbols from the interpreter that loads it, so one build
   serves every interpreter of that version) and add a file importing ./capi,
   whose //export functions are exported from the final library too;
5. ``go tool cgo -exportheader`` for the header the C glue includes (gopy
   builds a first c-shared library only to get it);
6. ``python build.py`` (pybindgen) to generate that C glue;
7. ``go build -buildmode=c-shared``, now with the glue, to the extension's
   final path.

System needs: Go >= 1.24, a C compiler, the Python headers.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

MIN_GO = (1, 24)
ROOT = Path(__file__).resolve().parent
MODULE = "github.com/psda-dev/psda"
NAME = "psdago"  # gopy's -name: the extension module is _psdago


class BuildError(RuntimeError):
    """BuildError reports a missing build requirement or a failed step."""


def find_go():
    """Return the go command ($GO or go on PATH) after checking its version."""
    go = shutil.which(os.environ.get("GO") or "go")
    if not go:
        raise BuildError(
            "psda needs Go >= %d.%d to build its extension, and there is no %s: "
            "install Go from https://go.dev/dl/ or set GO=/path/to/go"
            % (MIN_GO + ("GO=" + os.environ["GO"] if os.environ.get("GO") else "`go` on PATH",))
        )
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    m = re.match(r"go(\d+)\.(\d+)", out.stdout.strip())
    if out.returncode != 0 or not m:
        raise BuildError("cannot read the Go version from `%s env GOVERSION`: %s" % (go, out.stderr.strip()))
    if (int(m[1]), int(m[2])) < MIN_GO:
        raise BuildError(
            "psda needs Go >= %d.%d to build its extension, found %s at %s: "
            "install a newer Go from https://go.dev/dl/ or set GO=/path/to/go"
            % (MIN_GO + (out.stdout.strip(), go))
        )
    return go


def check_c_compiler(go):
    """Fail early, with the fix, when cgo has no C compiler."""
    cc = subprocess.run([go, "env", "CC"], capture_output=True, text=True, check=False).stdout.split()
    if not cc or not shutil.which(cc[0]):
        raise BuildError(
            "psda's extension needs a C compiler for cgo; `go env CC` is %r and not on PATH: "
            "install gcc (e.g. apt-get install gcc) or set CC" % " ".join(cc)
        )


def check_python_headers():
    """Fail early, with the fix, when Python.h is missing."""
    inc = sysconfig.get_path("include")
    if not os.path.exists(os.path.join(inc, "Python.h")):
        raise BuildError(
            "Python.h not found in %s: install the Python development headers "
            "(e.g. apt-get install python3-dev)" % inc
        )
    try:
        import pybindgen  # noqa: F401  (gopy's build.py imports it)
    except ImportError as e:
        raise BuildError("pybindgen is missing: `pip install pybindgen` or build with build isolation") from e


def run(cmd, cwd, env=None):
    """Run one build step, echoing it, and raise BuildError with its output."""
    start = time.perf_counter()
    res = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    print("psda build: %s (%.1f s)" % (" ".join(str(c) for c in cmd), time.perf_counter() - start), flush=True)
    if res.returncode != 0:
        raise BuildError("step failed (exit %d): %s\n%s%s" % (res.returncode, " ".join(map(str, cmd)), res.stdout, res.stderr))


class build_go_ext(build_ext):
    """build_go_ext builds the Go extension; see the module docstring."""

    def build_extension(self, ext):
        go = find_go()
        check_c_compiler(go)
        check_python_headers()
        # The generated main package must sit inside our module to import it,
        # even when setuptools builds elsewhere (editable installs do); a
        # fresh directory per build lets concurrent builds share the tree.
        (ROOT / "build").mkdir(exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="_gopy-", dir=ROOT / "build"))
        try:
            self._build(ext, go, work)
        except BaseException:
            print("psda build: kept %s for inspection" % work, file=sys.stderr)
            raise
        shutil.rmtree(work, ignore_errors=True)

    def _build(self, ext, go, work):
        bindir, gen = work / "bin", work / "gen"
        gen.mkdir()

        env = dict(os.environ, CGO_ENABLED="1")
        # The generated file's own #cgo CFLAGS carry the include directory.
        env["CGO_CFLAGS"] = env.get("CGO_CFLAGS", "-O2 -g0")
        # Python's symbols stay undefined in the library; the interpreter
        # supplies them. GNU ld allows that for shared objects by default,
        # macOS needs it said.
        env["CGO_LDFLAGS"] = "-Wl,-undefined,dynamic_lookup" if sys.platform == "darwin" else ""
        gobuild = [go, "build", "-trimpath", "-buildmode=c-shared"]

        # 1. Tools from our go.mod, never @latest.
        run([go, "build", "-o", str(bindir) + os.sep, "github.com/go-python/gopy", "golang.org/x/tools/cmd/goimports"], ROOT, env)
        # 2. Bindings for the stateful objects.
        run(
            [bindir / "gopy", "gen", "-vm=" + sys.executable, "-output=" + str(gen), "-name=" + NAME, "-no-make", MODULE + "/pyapi"],
            ROOT,
            env,
        )
        gofile = gen / (NAME + ".go")
        # 3. gopy's output needs goimports to compile.
        run([bindir / "goimports", "-w", gofile], gen, env)
        # 4. No libpython; C ABI in the same library.
        src = gofile.read_text()
        src, n = re.subn(r"(?m)^#cgo LDFLAGS:.*$", "", src)
        if n != 1:
            raise BuildError("expected one #cgo LDFLAGS line in gopy's %s, found %d: gopy changed?" % (gofile, n))
        gofile.write_text(src)
        (gen / "capi_link.go").write_text(
            "package main\n\n// The C ABI's //export functions, linked into this library.\n"
            'import _ "%s/capi"\n' % MODULE
        )
        # 5. The header <NAME>_go.h that the glue includes. gopy links a whole
        #    first library for it; cgo's export header of the generated file
        #    is the same text (the exports are main's) at a tenth of the time.
        inc = sysconfig.get_path("include")
        run([go, "tool", "cgo", "-objdir", gen / "_obj", "-exportheader", gen / (NAME + "_go.h"), "--", "-I" + inc, gofile.name], gen, env)
        shutil.rmtree(gen / "_obj")
        # 6. The CPython glue.
        run([sys.executable, "build.py"], gen, env)
        # 7. The extension; -X stamps the version psda_version reports.
        lib = gen / "lib.so"  # go also writes lib.h beside it; keep both out of the package
        ldflags = "-s -w -X %s/capi.version=%s" % (MODULE, self.distribution.get_version())
        run(gobuild + ["-ldflags=" + ldflags, "-o", lib.name, "."], gen, env)
        out = Path(self.get_ext_fullpath(ext.name))
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lib, out)


def long_description():
    """Return README.md's text, or "" while it does not exist."""
    readme = ROOT / "README.md"
    return readme.read_text(encoding="utf-8") if readme.exists() else ""


setup(
    long_description=long_description(),
    long_description_content_type="text/markdown",
    package_dir={"": "python"},
    packages=find_packages(where="python"),
    package_data={"psda": ["py.typed"]},
    ext_modules=[Extension("psda._psdago", sources=[])],
    cmdclass={"build_ext": build_go_ext},
    zip_safe=False,
)
