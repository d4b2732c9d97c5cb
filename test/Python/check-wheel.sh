#!/bin/sh
#===- check-wheel.sh - Build the Python package and import it -------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Usage: check-wheel.sh PYTHON SOURCE WORK LIBKOPTRT
#
# Builds SOURCE (python/) into a wheel with `PYTHON -m pip wheel`, as
# `pip install ./python` does, from a scratch copy in WORK (pip builds in
# place), checks that the wheel holds the kopt package and nothing else and
# registers the torch.compile backend "kopt" (the torch_dynamo_backends
# entry point), then imports kopt.runtime from the wheel alone and has it
# load LIBKOPTRT, and loads the backend through its entry point (which
# needs no torch).
# Exits 77 (skipped) when PYTHON lacks pip, setuptools or wheel.
#
#===------------------------------------------------------------------------===#
set -eu
python="$1"
source="$2"
work="$3"
library="$4"

if ! "$python" -c "import setuptools, wheel" 2>/dev/null ||
  ! "$python" -m pip --version >/dev/null 2>&1; then
  echo "skipped: $python lacks pip, setuptools or wheel (python3-pip)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
cp -r "$source" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info "$work/src/tests"
"$python" -m pip wheel --no-deps --no-build-isolation --no-index -q \
  -w "$work/dist" "$work/src"
wheel=$(ls "$work"/dist/kopt-*-py3-none-any.whl)
echo "built $(basename "$wheel")"

"$python" - "$wheel" <<'PY'
import sys
import zipfile

names = zipfile.ZipFile(sys.argv[1]).namelist()
package = sorted(n for n in names if not n.startswith("kopt-0.1.0.dist-info/"))
print("\n".join(package))
assert "kopt/runtime/__init__.py" in package, package
assert "kopt/dynamo/__init__.py" in package, package
assert all(n.startswith("kopt/") and n.endswith(".py") for n in package), package
PY

cd "$work"
env PYTHONPATH="$wheel" KOPT_RUNTIME_LIBRARY="$library" \
  "$python" -c "
import kopt.runtime as rt
assert rt.__file__.startswith('$wheel'), rt.__file__
from kopt.runtime import _capi
print('libkoptrt:', _capi.library().path)
from importlib.metadata import entry_points
[backend] = [e for e in entry_points(group='torch_dynamo_backends')
             if e.name == 'kopt']
print('torch_dynamo_backends:', backend.name, '=', backend.value)
import kopt.dynamo
assert backend.load() is kopt.dynamo.backend
"
