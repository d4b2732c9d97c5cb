#!/bin/sh
#===- zoo-dry-run.sh - The model zoo's dynamic-batch runs without a GPU ----===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Usage: zoo-dry-run.sh PYTHON KOPT WORKDIR
#
# bench/zoo/prepare.sh emits the dynamic-batch exports' modules (tuned
# sizes 1 and 4, no GPU code), then bench/zoo/run_zoo.py --dry-run runs
# each at batch 1, 3 and 8 through kopt.runtime over a libkoptrt whose GPU
# calls do nothing: the batch follows the inputs and the outputs take its
# shape. Fails when a module is not emitted or a row does not dry-run.
#
#===------------------------------------------------------------------------===#
set -eu
python="$1"
kopt="$2"
work="$3"
root="$(cd "$(dirname "$0")/../.." && pwd)"
stems="resnet18_dynbatch bert_base_layer_dynbatch"

rm -rf "$work"
mkdir -p "$work"
# shellcheck disable=SC2086 # the stems are words
KOPT="$kopt" KOPT_ZOO_ARGS="--module-arch=none" \
  "$root/bench/zoo/prepare.sh" "$work" "$work/kopt.db" $stems
only=""
for stem in $stems; do
  only="$only --only $stem"
done
# shellcheck disable=SC2086 # the --only words
"$python" "$root/bench/zoo/run_zoo.py" --dry-run --strict \
  --modules "$work" $only | tee "$work/run.log"
test "$(grep -c '| dry run: bound and run through kopt.runtime at batch' \
  "$work/run.log")" -eq 6
