#!/usr/bin/env bash
#===- test/Support/read-only-dir.sh - Run a command on a read-only folder --===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Usage: read-only-dir.sh DIR COMMAND [ARGUMENT...]
#
# Runs COMMAND with DIR read-only and exits with its status. As root, whom
# permissions do not stop, DIR is a read-only bind mount in a mount
# namespace of the command's own (as a read-only image or mount would be);
# otherwise DIR and its files lose their write permission, and get it back
# afterwards. Exits 77 when root cannot mount here (lit's feature
# `read-only-dir` is set only where this works).
#
#===------------------------------------------------------------------------===#
set -uo pipefail

dir="$1"
shift
if [ "$(id -u)" = 0 ]; then
  unshare -m true 2>/dev/null || exit 77
  # The folder is the mount's own first argument; the command follows.
  exec unshare -m sh -c 'mount --make-rprivate / && mount --bind "$0" "$0" &&
    mount -o remount,bind,ro "$0" "$0" || exit 77; exec "$@"' "$dir" "$@"
fi
chmod a-w "$dir" "$dir"/*
"$@"
status=$?
chmod u+w "$dir" "$dir"/*
exit $status
