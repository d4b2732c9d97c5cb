#!/usr/bin/env bash
#===- bench/zoo/prepare.sh - Emit the model zoo's runtime modules ----------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Compiles every graph of test/Inputs/zoo with `kopt compile --emit-module`
# into OUT/STEM.kmod, keeping kopt's report in OUT/STEM.compile.log. A graph
# kopt cannot emit yet leaves only its log, whose first error line
# bench/zoo/run_zoo.py reports; that is no failure of this script, which
# fails only when kopt itself is missing.
#
# Usage: bench/zoo/prepare.sh OUT [DB]
#
#   KOPT             the kopt binary (default: dist/bin/kopt, the portable
#                    build; build/bin/kopt works too)
#   KOPT_ZOO_TUNE    --tune mode (default: never, so the modules use the
#                    database's records where it has them and baseline
#                    plans elsewhere; `missing` tunes on this GPU)
#   KOPT_ZOO_BUDGET  --budget seconds per graph when tuning (default 60)
#   KOPT_ZOO_TIMEOUT seconds per graph before kopt is stopped (default 300)
#   DB               the kernel database (default: OUT/kopt.db)
#
#===------------------------------------------------------------------------===#
set -uo pipefail
cd "$(dirname "$0")/../.."

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: bench/zoo/prepare.sh OUT [DB]" >&2
  exit 2
fi
out="$1"
db="${2:-$out/kopt.db}"
kopt="${KOPT:-dist/bin/kopt}"
tune="${KOPT_ZOO_TUNE:-never}"
budget="${KOPT_ZOO_BUDGET:-60}"
limit="${KOPT_ZOO_TIMEOUT:-300}"
if [ ! -x "$kopt" ]; then
  echo "prepare.sh: no kopt at '$kopt' (set KOPT)" >&2
  exit 1
fi
mkdir -p "$out"

emitted=0
total=0
for mlir in test/Inputs/zoo/*.mlir; do
  stem=$(basename "$mlir" .mlir)
  total=$((total + 1))
  rm -f "$out/$stem.kmod"
  if timeout "$limit" "$kopt" compile "$mlir" --db "$db" --tune="$tune" \
    --budget="$budget" -o /dev/null --emit-module "$out/$stem.kmod" \
    >"$out/$stem.compile.log" 2>&1 && [ -f "$out/$stem.kmod" ]; then
    emitted=$((emitted + 1))
    echo "emitted  $stem"
  else
    rm -f "$out/$stem.kmod"
    echo "failed   $stem: $(grep -m1 error "$out/$stem.compile.log")"
  fi
done
echo "$emitted of $total graphs emitted as modules into $out"
