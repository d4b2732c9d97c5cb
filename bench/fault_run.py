#!/usr/bin/env python3
# ===- fault_run.py - Kernel database imports under faults -----*- Python -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Usage: fault_run.py --backend sqlite|postgres [--rounds N] [--kopt BIN]
#                     [--seed S] [--json FILE]
#
# Runs rounds of four concurrent `kopt db import` processes into one kernel
# database while faults hit them, and checks what docs/KernelDatabase.md
# promises: every import that reported success is in the database, no
# import is there in part, and `kopt db verify` passes after every round.
#
# Each importer imports two export files, each in its own transaction: one
# shared by the four importers of the round (so they race on the same keys)
# and one of its own. Every file is written by `kopt db export` from a
# database filled by `kopt db import` of records made as the kopt db tests
# make them (test/Tools/kopt-db/Inputs/make-records.py).
#
#   sqlite     one SQLite file; in every round 1 to 3 importers are killed
#              with SIGKILL at a random time within an import's duration.
#   postgres   a throwaway server (test/Support/with-postgres.sh; the script
#              runs itself under it); in every round the server is stopped
#              with `pg_ctl -m immediate` at a random time while the
#              importers run, and started again, and in every other round
#              one importer is also killed with SIGKILL.
#
# An import counts as reported when its `FILE: N added, ...` line was
# printed. At the end every kernel and attempt line of every reported file
# must be in the database's export, byte for byte (export, import and export
# give the same bytes), and of every file either all lines or none. Prints
# the figures, writes them as JSON with --json, and exits 1 on any loss.
#
# ===----------------------------------------------------------------------===#

import argparse
import contextlib
import glob
import hashlib
import importlib.util
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAKE_RECORDS = os.path.join(ROOT, "test", "Tools", "kopt-db", "Inputs", "make-records.py")
WITH_POSTGRES = os.path.join(ROOT, "test", "Support", "with-postgres.sh")
IMPORTERS = 4


def run(args, **kwargs):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs)


# ===----------------------------------------------------------------------===#
# Export files
# ===----------------------------------------------------------------------===#


def make_exports(kopt, work, labels):
    """One export file per (label, count, cubin bytes) in `labels`: the
    records are imported into one fresh SQLite file, exported once, and the
    export's lines are split by label (task keys are SHA-256 of
    `LABEL-INDEX`, as make-records.py makes them)."""
    spec = importlib.util.spec_from_file_location("make_records", MAKE_RECORDS)
    make_records = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_records)
    text = io.StringIO()
    saved = sys.argv
    try:
        with contextlib.redirect_stdout(text):
            for label, count, cubin_bytes in labels:
                sys.argv = [MAKE_RECORDS, "--label", label, "--count", str(count),
                            "--cubin-bytes", str(cubin_bytes)]
                make_records.main()
    finally:
        sys.argv = saved
    records = text.getvalue()
    source = os.path.join(work, "source.db")
    run([kopt, "db", "import", "-", "--db", source], input=records)
    export = run([kopt, "db", "export", "--db", source]).stdout
    label_of = {hashlib.sha256(f"{label}-{i}".encode()).hexdigest(): label
                for label, count, _ in labels for i in range(count)}
    lines_of = {label: [] for label, _, _ in labels}
    for line in export.splitlines():
        value = json.loads(line)
        entry = value.get("record") or value.get("attempt")
        lines_of[label_of[entry["task_key"]]].append(line)
    paths = {}
    for label, lines in lines_of.items():
        paths[label] = os.path.join(work, "exports", label + ".jsonl")
        with open(paths[label], "w") as f:
            f.write("".join(line + "\n" for line in lines))
    return paths, lines_of


# ===----------------------------------------------------------------------===#
# PostgreSQL server control (the server with-postgres.sh started)
# ===----------------------------------------------------------------------===#


class Server:
    def __init__(self):
        self.folder = os.environ["KOPT_TEST_POSTGRES_HOST"]
        self.port = os.environ["KOPT_TEST_POSTGRES_PORT"]
        self.url = os.environ["KOPT_TEST_POSTGRES_URL"]
        bindir = os.environ.get("KOPT_POSTGRES_BINDIR")
        if not bindir:
            found = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                           key=lambda p: [int(x) for x in p.split("/")[-2].split(".")
                                          if x.isdigit()])
            bindir = found[-1] if found else os.path.dirname(shutil.which("pg_ctl"))
        self.pg_ctl = os.path.join(bindir, "pg_ctl")
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []

    def ctl(self, *args):
        return subprocess.run(self.as_user + [self.pg_ctl, "-D", os.path.join(self.folder, "data"),
                                              *args],
                              capture_output=True, text=True)

    def stop_immediately(self):
        return self.ctl("-m", "immediate", "stop").returncode == 0

    def start(self):
        # The options with-postgres.sh starts it with.
        options = (f"-k {self.folder} -p {self.port} -c listen_addresses='' "
                   "-c fsync=off -c max_connections=200")
        result = self.ctl("-l", os.path.join(self.folder, "server.log"), "-w", "-t", "60",
                          "-o", options, "start")
        if result.returncode != 0:
            sys.exit("fault_run: the server did not start again: " + result.stderr)


# ===----------------------------------------------------------------------===#
# Rounds
# ===----------------------------------------------------------------------===#


def start_importers(kopt, db, files):
    return [subprocess.Popen([kopt, "db", "import", shared, own, "--db", db],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for shared, own in files]


def reported_files(process_output):
    """The files whose import line the importer printed."""
    done = set()
    for line in process_output.splitlines():
        name, _, rest = line.partition(": ")
        if " added, " in rest:
            done.add(name)
    return done


def time_one_import(kopt, db, files):
    """Seconds one importer takes alone, into the database under test."""
    begin = time.monotonic()
    run([kopt, "db", "import", files[0], files[1], "--db", db])
    return time.monotonic() - begin


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], required=True)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--kopt", default=os.path.join(ROOT, "build", "bin", "kopt"))
    parser.add_argument("--records", type=int, default=20,
                        help="records per importer's own file (the shared file has half)")
    parser.add_argument("--cubin-bytes", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--spread", type=float,
                        help="faults land up to this many times one import's duration "
                             "after the start (default 2 for sqlite, 5 for postgres)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    args.kopt = os.path.abspath(args.kopt)
    if args.spread is None:
        args.spread = 5.0 if args.backend == "postgres" else 2.0

    if args.backend == "postgres" and "KOPT_TEST_POSTGRES_URL" not in os.environ:
        # Run under a throwaway server, which with-postgres.sh always stops.
        os.execv(WITH_POSTGRES, [WITH_POSTGRES, sys.executable, os.path.abspath(__file__),
                                 *sys.argv[1:]])

    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="kopt-fault-run-")
    os.makedirs(os.path.join(work, "exports"))
    server = Server() if args.backend == "postgres" else None
    db = server.url if server else os.path.join(work, "kernels.db")
    try:
        print(f"fault_run: making {args.rounds * (IMPORTERS + 1)} export files", flush=True)
        labels = []
        for r in range(args.rounds):
            labels.append((f"r{r}-shared", max(1, args.records // 2), args.cubin_bytes))
            labels += [(f"r{r}-p{i}", args.records, args.cubin_bytes) for i in range(IMPORTERS)]
        timing = [("timing-shared", max(1, args.records // 2), args.cubin_bytes),
                  ("timing-own", args.records, args.cubin_bytes)]
        paths, lines_by_label = make_exports(args.kopt, work, labels + timing)
        lines_of = {paths[label]: lines for label, lines in lines_by_label.items()
                    if not label.startswith("timing-")}
        rounds = [[(paths[f"r{r}-shared"], paths[f"r{r}-p{i}"]) for i in range(IMPORTERS)]
                  for r in range(args.rounds)]
        if server:
            run([args.kopt, "db", "init", "--db", db])
        alone = time_one_import(args.kopt, db,
                                (paths["timing-shared"], paths["timing-own"]))
        print(f"fault_run: one importer alone takes {alone:.3f} s", flush=True)

        figures = {"backend": args.backend, "rounds": args.rounds, "seed": args.seed,
                   "importers_per_round": IMPORTERS, "import_seconds_alone": round(alone, 3),
                   "imports_started": 0, "sigkills": 0, "server_stops": 0,
                   "imports_running_at_stop": 0,
                   "imports_failed_otherwise": 0, "files_reported": 0,
                   "verify_failures": 0}
        reported = set()
        started = time.monotonic()
        for r, files in enumerate(rounds):
            processes = start_importers(args.kopt, db, files)
            figures["imports_started"] += len(processes)
            # Four at once take longer than one alone: faults land anywhere
            # from the start to past the end of the round's imports.
            delay = rng.uniform(0, args.spread * alone)
            time.sleep(delay)
            killed = set()
            if server:
                victims = rng.sample(range(IMPORTERS), 1) if r % 2 else []
            else:
                victims = rng.sample(range(IMPORTERS), rng.randint(1, 3))
            for i in victims:
                if processes[i].poll() is None:
                    processes[i].send_signal(signal.SIGKILL)
                    killed.add(i)
            if server:
                running = sum(1 for process in processes if process.poll() is None)
                if server.stop_immediately():
                    figures["server_stops"] += 1
                    figures["imports_running_at_stop"] += running
            for i, process in enumerate(processes):
                out, err = process.communicate()
                if process.returncode == -signal.SIGKILL:
                    figures["sigkills"] += 1
                elif process.returncode != 0 and i not in killed and not server:
                    figures["imports_failed_otherwise"] += 1
                    print(f"fault_run: round {r}: importer {i} failed: {err.strip()}")
                for name in reported_files(out):
                    reported.add(name)
            if server:
                server.start()
            verify = subprocess.run([args.kopt, "db", "verify", "--db", db],
                                    capture_output=True, text=True)
            if verify.returncode != 0:
                figures["verify_failures"] += 1
                print(f"fault_run: round {r}: verify failed: {verify.stderr.strip()}")
            if (r + 1) % 10 == 0:
                print(f"fault_run: {r + 1} rounds, {figures['sigkills']} killed, "
                      f"{figures['server_stops']} server stops, {len(reported)} files reported",
                      flush=True)
        figures["seconds"] = round(time.monotonic() - started, 1)

        export = run([args.kopt, "db", "export", "--db", db]).stdout
        present = set(export.splitlines())
        calibration = set(lines_by_label["timing-shared"] + lines_by_label["timing-own"])
        figures["files_reported"] = len(reported)
        records_reported = records_found = lost = partial = 0
        files_absent = 0
        for path, lines in lines_of.items():
            found = sum(1 for line in lines if line in present)
            kernels = [line for line in lines if line.startswith('{"type":"kernel"')]
            if path in reported:
                records_reported += len(kernels)
                records_found += sum(1 for line in kernels if line in present)
                lost += len(lines) - found
            if 0 < found < len(lines):
                # A shared file's lines are all or none too: only whole
                # transactions of identical lines ever commit.
                partial += 1
                print(f"fault_run: {os.path.basename(path)}: {found} of {len(lines)} lines present")
            if found == 0:
                files_absent += 1
        figures.update({"records_reported": records_reported, "records_found": records_found,
                        "lines_lost": lost, "files_partial": partial,
                        "files_absent_at_end": files_absent,
                        "records_in_database": sum(
                            1 for line in present if line.startswith('{"type":"kernel"')
                            and line not in calibration)})
        print(json.dumps(figures, indent=2))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=2)
                f.write("\n")
        ok = lost == 0 and partial == 0 and figures["verify_failures"] == 0 \
            and figures["imports_failed_otherwise"] == 0
        print("fault_run: " + ("zero records lost, nothing partial, verify passed every round"
                               if ok else "FAILED"))
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
