#!/bin/sh
# A stand-in for kopt-run that needs no GPU: copies its one --input file to
# its one --output file, as a module computing the identity would.
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
in=
out=
while [ $# -gt 0 ]; do
  case "$1" in
  --input) in=${2#*=}; shift ;;
  --output) out=${2#*=}; shift ;;
  esac
  shift
done
cp "$in" "$out"
