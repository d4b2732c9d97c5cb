#!/bin/sh
#===- with-modules.sh - Run a test where Python has what it needs ---------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Usage: with-modules.sh PYTHON MODULE[,MODULE...] COMMAND [ARG...]
#
# Runs COMMAND when PYTHON imports every MODULE (torch, say); otherwise
# exits 77, which ctest reports as skipped, naming what is missing and the
# CMake variable that picks another Python (KOPT_TORCH_PYTHON).
#
#===------------------------------------------------------------------------===#
set -eu
python="$1"
modules="$2"
shift 2

missing=""
for module in $(echo "$modules" | tr ',' ' '); do
  if ! "$python" -c "import $module" >/dev/null 2>&1; then
    missing="$missing $module"
  fi
done
if [ -n "$missing" ]; then
  echo "skipped: $python cannot import$missing (configure with" \
    "-DKOPT_TORCH_PYTHON=/path/to/python of a virtualenv that has them)"
  exit 77
fi
exec "$@"
