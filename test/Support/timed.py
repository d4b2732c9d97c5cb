#!/usr/bin/env python3
# ===- test/Support/timed.py - Run a command against a time limit --------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: timed.py LIMIT OUT COMMAND [ARGUMENT...]
#
# Runs COMMAND (its standard streams are this script's), writes to OUT
# `exit STATUS, within LIMIT s` or `exit STATUS, over LIMIT s`, with the
# seconds it took, and exits with COMMAND's status. The tests of the tuning
# budget check that a command ends in time; a command still running at
# four times LIMIT is killed.
#
# ===----------------------------------------------------------------------===#

import subprocess
import sys
import time


def main():
    limit, out, command = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
    start = time.monotonic()
    try:
        status = subprocess.run(command, timeout=4 * limit).returncode
    except subprocess.TimeoutExpired:
        status = "killed"
    seconds = time.monotonic() - start
    verdict = "within" if seconds <= limit else "over"
    with open(out, "w") as f:
        f.write("exit %s, %s %g s (%.2f s)\n" % (status, verdict, limit, seconds))
    return status if isinstance(status, int) else 1


if __name__ == "__main__":
    sys.exit(main())
