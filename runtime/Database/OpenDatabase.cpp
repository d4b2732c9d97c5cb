//===- OpenDatabase.cpp - Open a kernel database by path or URL -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A path opens a SQLite file; a postgresql:// or postgres:// URL a server.
// Passwords never come from a command line, and never appear in a message:
// libpq reads them from PGPASSWORD, ~/.pgpass or a service file.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelDatabase.h"
#include "kopt/Runtime/TuningQueue.h"

#ifdef KOPT_HAVE_POSTGRES
#include "PostgresKernelDatabase.h"
#endif

#include <cstdlib>

using namespace kopt::runtime;

bool kopt::runtime::isPostgresUrl(std::string_view location) {
  return location.rfind("postgresql://", 0) == 0 ||
         location.rfind("postgres://", 0) == 0;
}

namespace {
/// Where the password of the URL `location` is, as [begin, end) ranges.
std::vector<std::pair<size_t, size_t>>
findPasswords(std::string_view location) {
  std::vector<std::pair<size_t, size_t>> found;
  size_t scheme = location.find("://");
  if (scheme == std::string_view::npos)
    return found;
  size_t authority = scheme + 3;
  size_t authorityEnd = location.find_first_of("/?", authority);
  if (authorityEnd == std::string_view::npos)
    authorityEnd = location.size();
  // user:password@host; the last '@' ends the user information.
  size_t at = location.rfind('@', authorityEnd - 1);
  if (at != std::string_view::npos && at >= authority) {
    size_t colon = location.find(':', authority);
    if (colon != std::string_view::npos && colon < at)
      found.push_back({colon + 1, at});
  }
  // ?password=...&...
  size_t query = location.find('?');
  while (query != std::string_view::npos) {
    size_t begin = query + 1;
    size_t end = location.find('&', begin);
    std::string_view parameter = location.substr(
        begin, end == std::string_view::npos ? end : end - begin);
    if (parameter.rfind("password=", 0) == 0)
      found.push_back(
          {begin + 9, end == std::string_view::npos ? location.size() : end});
    query = end;
  }
  return found;
}
} // namespace

bool kopt::runtime::hasPassword(std::string_view location) {
  for (auto [begin, end] : findPasswords(location))
    if (end > begin)
      return true;
  return false;
}

std::string kopt::runtime::redactDatabaseUrl(std::string_view location) {
  std::string text(location);
  auto passwords = findPasswords(location);
  // From the back, so that earlier positions stay right.
  for (auto it = passwords.rbegin(); it != passwords.rend(); ++it)
    text.replace(it->first, it->second - it->first, "***");
  return text;
}

std::string kopt::runtime::getDatabaseFromEnvironment() {
  const char *value = std::getenv("KOPT_DB");
  return value ? value : "";
}

/// The error for a password in a URL given on a command line.
static Status refusePassword(const std::string &location) {
  return Status::error(
      StatusCode::InvalidArgument,
      "kernel database '" + redactDatabaseUrl(location) +
          "': refusing a password in a database URL on the command line "
          "(it would land in shell histories, process lists and logs); "
          "give it in PGPASSWORD, ~/.pgpass or a service file "
          "(PGSERVICEFILE, 'postgresql:///?service=NAME') instead");
}

Result<std::unique_ptr<KernelDatabase>>
kopt::runtime::openKernelDatabase(const std::string &location,
                                  const KernelDatabaseOptions &options) {
  if (!isPostgresUrl(location)) {
    SqliteOpenOptions sqlite;
    sqlite.readOnly = options.readOnly;
    sqlite.create = options.create;
    sqlite.checkIntegrity = options.checkIntegrity;
    sqlite.busyTimeoutMs = options.busyTimeoutMs;
    Result<std::unique_ptr<SqliteKernelDatabase>> db =
        SqliteKernelDatabase::open(location, sqlite);
    if (!db)
      return db.status();
    return std::unique_ptr<KernelDatabase>(std::move(*db));
  }
  if (options.fromCommandLine && hasPassword(location))
    return refusePassword(location);
#ifdef KOPT_HAVE_POSTGRES
  KernelDatabaseOptions withTrust = options;
  if (withTrust.trustedWriters.empty())
    if (const char *writers = std::getenv("KOPT_DB_TRUSTED_WRITERS")) {
      std::string_view rest(writers);
      while (!rest.empty()) {
        size_t comma = rest.find(',');
        std::string_view name = rest.substr(0, comma);
        if (!name.empty())
          withTrust.trustedWriters.emplace_back(name);
        rest = comma == std::string_view::npos ? std::string_view()
                                               : rest.substr(comma + 1);
      }
    }
  return openPostgresKernelDatabase(location, withTrust);
#else
  return Status::error(StatusCode::Unsupported,
                       "kernel database '" + redactDatabaseUrl(location) +
                           "': this kopt was built without PostgreSQL "
                           "support (libpq); use a SQLite file, or a build "
                           "with libpq");
#endif
}

TuningQueue::~TuningQueue() = default;

Result<std::unique_ptr<TuningQueue>> TuningQueue::open(const std::string &url,
                                                       bool fromCommandLine) {
  if (!isPostgresUrl(url))
    return Status::error(StatusCode::Unsupported,
                         "kernel database '" + url +
                             "': the tuning queue needs a PostgreSQL "
                             "database (--db postgresql://...); a SQLite "
                             "file has none");
  if (fromCommandLine && hasPassword(url))
    return refusePassword(url);
#ifdef KOPT_HAVE_POSTGRES
  return openPostgresTuningQueue(url);
#else
  return Status::error(StatusCode::Unsupported,
                       "kernel database '" + redactDatabaseUrl(url) +
                           "': this kopt was built without PostgreSQL "
                           "support (libpq), which the tuning queue needs");
#endif
}
