#!/bin/sh
#===- kill-mid-import.sh - Kill kopt db import mid-transaction -------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Usage: kill-mid-import.sh KOPT INPUT DB
# Runs `KOPT db import` on DB, feeding it INPUT through a FIFO that stays
# open, so the import cannot reach the end of its input and commit; waits
# until its uncommitted writes have reached DB's WAL file, and kills it with
# SIGKILL. Fails when the import ends any other way.
#
#===------------------------------------------------------------------------===#
set -e
kopt=$1 input=$2 db=$3
fifo=$db.fifo
rm -f "$fifo"
mkfifo "$fifo"
"$kopt" db import "$fifo" --db "$db" > /dev/null 2>&1 &
importer=$!
# Opening the FIFO waits for the importer to open it.
exec 3> "$fifo"
cat "$input" >&3
tries=0
while :; do
  size=0
  [ -f "$db-wal" ] && size=$(wc -c < "$db-wal")
  [ "$size" -lt 1000000 ] || break
  tries=$((tries + 1))
  if [ $tries -ge 3000 ]; then
    echo "the import wrote nothing to the WAL file"
    kill -9 $importer
    exit 1
  fi
  sleep 0.01
done
kill -9 $importer
status=0
wait $importer || status=$?
exec 3>&-
rm -f "$fifo"
if [ $status -ne 137 ]; then
  echo "the import ended with status $status instead of being killed"
  exit 1
fi
echo "killed the import with $size bytes in the WAL file"
