//===- OpenDatabase.cpp - Open a kernel database by path or URL -*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// A path opens a SQLite file; a postgresql:// or postgres:// URL, or a libpq
// keyword string (`host=db dbname=kopt`), a server.
// Passwords never come from a command line, and never appear in a message:
// libpq reads them from PGPASSWORD, ~/.pgpass or a service file.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/KernelDatabase.h"
#include "kopt/Runtime/Redact.h"
#include "kopt/Runtime/TuningQueue.h"

#ifdef KOPT_HAVE_POSTGRES
#include "PostgresKernelDatabase.h"
#endif

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>

using namespace kopt::runtime;

namespace {
/// The connection keywords libpq knows (its documentation's list).
constexpr std::string_view kLibpqKeywords[] = {"host",
                                               "hostaddr",
                                               "port",
                                               "dbname",
                                               "user",
                                               "password",
                                               "passfile",
                                               "require_auth",
                                               "channel_binding",
                                               "connect_timeout",
                                               "client_encoding",
                                               "options",
                                               "application_name",
                                               "fallback_application_name",
                                               "keepalives",
                                               "keepalives_idle",
                                               "keepalives_interval",
                                               "keepalives_count",
                                               "tcp_user_timeout",
                                               "replication",
                                               "gssencmode",
                                               "sslmode",
                                               "requiressl",
                                               "sslcompression",
                                               "sslcert",
                                               "sslkey",
                                               "sslpassword",
                                               "sslcertmode",
                                               "sslrootcert",
                                               "sslcrl",
                                               "sslcrldir",
                                               "sslsni",
                                               "requirepeer",
                                               "ssl_min_protocol_version",
                                               "ssl_max_protocol_version",
                                               "krbsrvname",
                                               "gsslib",
                                               "gssdelegation",
                                               "service",
                                               "target_session_attrs",
                                               "load_balance_hosts"};

/// Whether `location` reads as a libpq keyword/value string
/// (`host=db dbname=kopt`): one or more `keyword = value` pairs, each
/// keyword one libpq knows in any case, each value plain or 'quoted'.
bool isKeywordString(std::string_view location) {
  auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\n'; };
  size_t i = 0, pairs = 0;
  auto skipSpaces = [&] {
    while (i < location.size() && isSpace(location[i]))
      ++i;
  };
  for (skipSpaces(); i < location.size(); skipSpaces()) {
    size_t begin = i;
    while (i < location.size() && location[i] != '=' && !isSpace(location[i]))
      ++i;
    std::string keyword(location.substr(begin, i - begin));
    for (char &c : keyword)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (std::find(std::begin(kLibpqKeywords), std::end(kLibpqKeywords),
                  keyword) == std::end(kLibpqKeywords))
      return false;
    skipSpaces();
    if (i >= location.size() || location[i] != '=')
      return false;
    ++i;
    skipSpaces();
    if (i < location.size() && location[i] == '\'') {
      for (++i; i < location.size() && location[i] != '\''; ++i)
        i += location[i] == '\\';
      if (i >= location.size())
        return false;
      ++i;
    } else {
      while (i < location.size() && !isSpace(location[i]))
        i += location[i] == '\\' ? 2 : 1;
    }
    ++pairs;
  }
  return pairs > 0;
}
} // namespace

bool kopt::runtime::isPostgresUrl(std::string_view location) {
  return location.rfind("postgresql://", 0) == 0 ||
         location.rfind("postgres://", 0) == 0 || isKeywordString(location);
}

bool kopt::runtime::hasPassword(std::string_view location) {
  return hasCredentials(location);
}

std::string kopt::runtime::redactDatabaseUrl(std::string_view location) {
  return redactCredentials(location);
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
                         "kernel database '" + redactDatabaseUrl(url) +
                             "': the tuning queue needs a PostgreSQL "
                             "database (--db postgresql://...); a SQLite "
                             "file has none");
  if (fromCommandLine && hasPassword(url))
    return refusePassword(url);
#ifdef KOPT_HAVE_POSTGRES
  return openPostgresTuningQueue(url, KernelDatabaseOptions());
#else
  return Status::error(StatusCode::Unsupported,
                       "kernel database '" + redactDatabaseUrl(url) +
                           "': this kopt was built without PostgreSQL "
                           "support (libpq), which the tuning queue needs");
#endif
}
