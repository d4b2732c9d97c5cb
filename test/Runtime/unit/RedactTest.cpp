//===- RedactTest.cpp - Secrets never leave in a message --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The one redaction routine: URL user information, every spelling of a
// libpq password, and the API key wherever it appears. The keys here are
// obviously fake.
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/Redact.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace kopt::runtime;

namespace {

/// Sets `KOPT_LLM_API_KEY` for one test and restores it after.
class ApiKeyScope {
public:
  explicit ApiKeyScope(const char *key) {
    if (const char *old = std::getenv("KOPT_LLM_API_KEY"))
      previous = old;
    if (key)
      ::setenv("KOPT_LLM_API_KEY", key, 1);
    else
      ::unsetenv("KOPT_LLM_API_KEY");
  }
  ~ApiKeyScope() {
    if (previous.empty())
      ::unsetenv("KOPT_LLM_API_KEY");
    else
      ::setenv("KOPT_LLM_API_KEY", previous.c_str(), 1);
  }

private:
  std::string previous;
};

TEST(RedactTest, HidesUserInformationOfUrls) {
  EXPECT_EQ(redactCredentials("http://user:FAKE-KEY-1@host/v1"),
            "http://***@host/v1");
  EXPECT_EQ(redactCredentials("endpoint 'https://FAKE-KEY-1@api.example/v1' "
                              "failed"),
            "endpoint 'https://***@api.example/v1' failed");
  // PostgreSQL user names stay: messages name the role.
  EXPECT_EQ(redactCredentials("postgresql://kopt:FAKE-PW@db:5432/kopt"),
            "postgresql://kopt:***@db:5432/kopt");
  EXPECT_EQ(redactCredentials("postgresql://kopt@db/kopt"),
            "postgresql://kopt@db/kopt");
  EXPECT_EQ(redactCredentials("http://host/v1 and mail@example"),
            "http://host/v1 and mail@example");
}

TEST(RedactTest, HidesEverySpellingOfPassword) {
  for (const char *name : {"password", "PASSWORD", "Password", "pass%77ord",
                           "%70assword", "PASS%57ORD", "sslpassword"}) {
    std::string url =
        std::string("postgresql://db/kopt?user=u&") + name + "=FAKE-PW&x=1";
    EXPECT_EQ(redactCredentials(url),
              std::string("postgresql://db/kopt?user=u&") + name + "=***&x=1");
    EXPECT_TRUE(hasCredentials(url)) << url;
    std::string keywords = std::string("host=db ") + name + "=FAKE-PW dbname=k";
    EXPECT_EQ(redactCredentials(keywords),
              std::string("host=db ") + name + "=*** dbname=k");
    EXPECT_TRUE(hasCredentials(keywords)) << keywords;
  }
}

TEST(RedactTest, HidesLibpqKeywordValues) {
  EXPECT_EQ(redactCredentials("host=db password = 'FAKE PW' dbname=k"),
            "host=db password = '***' dbname=k");
  EXPECT_EQ(redactCredentials("host=db password='FA\\'KE' dbname=k"),
            "host=db password='***' dbname=k");
  // Quoted in a message: the closing quote ends the value.
  EXPECT_EQ(redactCredentials("kernel database 'host=db password=FAKE-PW': "
                              "cannot connect"),
            "kernel database 'host=db password=***': cannot connect");
  EXPECT_FALSE(hasCredentials("host=db dbname=kopt"));
  EXPECT_FALSE(hasCredentials("postgresql://u:@h/d"));
  EXPECT_FALSE(hasCredentials("mypassword=x"));
}

TEST(RedactTest, ReplacesTheKeyWhereverItIs) {
  ApiKeyScope scope("FAKE-KEY-0123456789");
  EXPECT_EQ(redactSecrets("Bearer FAKE-KEY-0123456789 echoed"),
            "Bearer [REDACTED] echoed");
  EXPECT_EQ(redactSecrets("model FAKE-KEY-0123456789FAKE-KEY-0123456789"),
            "model [REDACTED][REDACTED]");
  EXPECT_EQ(redactSecrets("x abc y", {"abc"}), "x [REDACTED] y");
  EXPECT_EQ(replaceSecret("abc", ""), "abc");
}

TEST(RedactTest, ShortKeysFromTheEnvironmentAreLeftAlone) {
  ApiKeyScope scope("key");
  EXPECT_EQ(redactSecrets("a monkey"), "a monkey");
}

} // namespace
