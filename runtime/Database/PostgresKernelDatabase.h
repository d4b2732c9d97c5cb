//===- PostgresKernelDatabase.h - The PostgreSQL backend --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The kernel database and the tuning queue in PostgreSQL, reached through
// `openKernelDatabase` and `TuningQueue::open` (OpenDatabase.cpp). Both
// share the schema, which lives in the `kopt` schema of the database.
//
//===----------------------------------------------------------------------===//

#ifndef KOPT_RUNTIME_DATABASE_POSTGRESKERNELDATABASE_H
#define KOPT_RUNTIME_DATABASE_POSTGRESKERNELDATABASE_H

#include "kopt/Runtime/KernelDatabase.h"
#include "kopt/Runtime/TuningQueue.h"

#include "Postgres.h"

namespace kopt::runtime {

/// The version of kopt's PostgreSQL schema.
constexpr int64_t kPostgresSchemaVersion = 2;

/// Connects to `url` and brings kopt's tables to `kPostgresSchemaVersion`
/// (creating them when `create` is set), unless `readOnly`. Returns the
/// connection and, in `version`, the schema version found; `options` give
/// the timeouts. Errors start with `kernel database 'URL': `, the URL
/// without its password.
Result<postgres::Connection>
connectPostgres(const std::string &url, bool readOnly, bool create,
                const KernelDatabaseOptions &options, int64_t &version);

Result<std::unique_ptr<KernelDatabase>>
openPostgresKernelDatabase(const std::string &url,
                           const KernelDatabaseOptions &options);

Result<std::unique_ptr<TuningQueue>>
openPostgresTuningQueue(const std::string &url,
                        const KernelDatabaseOptions &options);

} // namespace kopt::runtime

#endif // KOPT_RUNTIME_DATABASE_POSTGRESKERNELDATABASE_H
