// What identities may do (base/permissions.h): globs, [[role]] tables, the
// built-in roles, and a cluster that configures none.
#include "base/permissions.h"

#include <catch2/catch.hpp>

namespace palisade {
namespace {

TEST_CASE("permissions: globs match whole names, '*' any run and '?' one character", "[permissions][security]") {
  struct Case {
    const char* pattern;
    const char* name;
    bool match;
  };
  const Case cases[] = {
      {"jobs/*", "jobs/1", true},
      {"jobs/*", "jobs/", true},
      {"jobs/*", "jobs", false},
      {"jobs/*", "jobs/a/b", true},
      {"jobs/*", "xjobs/1", false},
      {"ledger", "ledger", true},
      {"ledger", "ledger/1", false},
      {"ledger", "ledge", false},
      {"*", "", true},
      {"*", "anything/at/all", true},
      {"", "", true},
      {"", "x", false},
      {"a?c", "abc", true},
      {"a?c", "ac", false},
      {"*.log", "x.log", true},
      {"*.log", "x.log.1", false},
      {"a*b*c", "aXbYc", true},
      {"a*b*c", "aXcYb", false},
      {"**", "x", true},
      {"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
  };
  for (const Case& c : cases) {
    INFO(c.pattern << " ~ " << c.name);
    CHECK(glob_match(c.pattern, c.name) == c.match);
  }
}

TEST_CASE("permissions: a pattern covers a prefix when it matches every name that starts with it",
          "[permissions][security]") {
  CHECK(glob_covers_prefix("*", ""));
  CHECK(glob_covers_prefix("*", "anything"));
  CHECK(glob_covers_prefix("jobs/*", "jobs/"));
  CHECK(glob_covers_prefix("jobs/*", "jobs/a/b"));
  CHECK_FALSE(glob_covers_prefix("jobs/*", "jobs"));  // "jobsx" starts with it
  CHECK_FALSE(glob_covers_prefix("jobs/*", "job"));
  CHECK_FALSE(glob_covers_prefix("jobs/*", ""));
  CHECK_FALSE(glob_covers_prefix("jobs/a", "jobs/a"));  // one key, not "jobs/ab"
  CHECK_FALSE(glob_covers_prefix("jobs/*/x", "jobs/"));
  CHECK(glob_covers_prefix("j?bs/*", "jobs/1"));
  CHECK(glob_covers_prefix("*/logs/*", "app/logs/"));
  CHECK_FALSE(glob_covers_prefix("*/logs/*", "app/"));
}

TEST_CASE("permissions: nothing configured lets every identity make client calls", "[permissions][security]") {
  const Permissions p({}, {{"app", {}}, {"replica-0", {"replica"}}, {"ops", {"admin"}}});
  CHECK_FALSE(p.configured());
  CHECK(p.may_acquire("app", "anything", LockMode::kExclusive));
  CHECK(p.may_read("app", "k"));
  CHECK(p.may_write("app", "k"));
  CHECK(p.may_delete("app", "k"));
  CHECK(p.may_inspect("app"));
  // Repair stays with the replica and admin roles all the same.
  CHECK_FALSE(p.may_repair("app"));
  CHECK(p.may_repair("replica-0"));
  CHECK(p.may_repair("ops"));
  CHECK(Permissions().may_write("", "k"));
}

TEST_CASE("permissions: once a role exists, what no role allows is denied", "[permissions][security]") {
  const Role jobs{.name = "jobs",
                  .locks = {"jobs/*"},
                  .shared_locks = {"config"},
                  .read = {"jobs/*", "config"},
                  .write = {"jobs/*"},
                  .remove = {"jobs/tmp/*"}};
  const Role reader{.name = "reader", .read = {"*"}};
  const Role boss{.name = "boss", .admin = true};
  const Permissions p({jobs, reader, boss}, {{"worker", {"jobs"}},
                                             {"both", {"jobs", "reader"}},
                                             {"auditor", {"reader"}},
                                             {"chief", {"boss"}},
                                             {"ops", {"admin"}},
                                             {"replica-0", {"replica"}},
                                             {"lockd-1", {"lockd"}},
                                             {"idle", {}}});
  CHECK(p.configured());
  CHECK(p.may_acquire("worker", "jobs/1", LockMode::kExclusive));
  CHECK(p.may_acquire("worker", "jobs/1", LockMode::kShared));
  CHECK(p.may_acquire("worker", "config", LockMode::kShared));
  CHECK_FALSE(p.may_acquire("worker", "config", LockMode::kExclusive));
  CHECK_FALSE(p.may_acquire("worker", "ledger", LockMode::kExclusive));
  CHECK(p.may_read("worker", "config"));
  CHECK_FALSE(p.may_read("worker", "config/x"));
  CHECK(p.may_read_prefix("worker", "jobs/"));
  CHECK(p.may_read_prefix("worker", "jobs/x/"));
  CHECK_FALSE(p.may_read_prefix("worker", "jobs"));
  CHECK_FALSE(p.may_read_prefix("worker", "config"));  // "config" covers one key, not "config/x"
  CHECK_FALSE(p.may_read_prefix("worker", ""));
  CHECK(p.may_read_prefix("auditor", ""));
  CHECK(p.may_read_prefix("ops", "ledger/"));
  CHECK(p.may_write("worker", "jobs/1"));
  CHECK_FALSE(p.may_write("worker", "ledger/1"));
  CHECK(p.may_delete("worker", "jobs/tmp/1"));
  CHECK_FALSE(p.may_delete("worker", "jobs/1"));
  CHECK_FALSE(p.may_inspect("worker"));
  CHECK_FALSE(p.is_admin("worker"));
  // Roles add up.
  CHECK(p.may_read("both", "ledger/1"));
  CHECK(p.may_write("both", "jobs/1"));
  CHECK_FALSE(p.may_write("auditor", "jobs/1"));
  CHECK_FALSE(p.may_acquire("auditor", "jobs/1", LockMode::kShared));
  // admin, built in or a table's: everything.
  for (const char* admin : {"chief", "ops"}) {
    INFO(admin);
    CHECK(p.is_admin(admin));
    CHECK(p.may_acquire(admin, "ledger", LockMode::kExclusive));
    CHECK(p.may_delete(admin, "ledger/1"));
    CHECK(p.may_inspect(admin));
    CHECK(p.may_repair(admin));
  }
  // Peers: a replica repairs and inspects; neither peer role makes client calls.
  CHECK(p.may_repair("replica-0"));
  CHECK(p.may_inspect("replica-0"));
  CHECK_FALSE(p.may_write("replica-0", "k"));
  CHECK_FALSE(p.may_acquire("lockd-1", "jobs/1", LockMode::kExclusive));
  CHECK_FALSE(p.may_read("lockd-1", "k"));
  // No roles, or an identity nobody listed: nothing.
  for (const char* nobody : {"idle", "stranger", ""}) {
    INFO(nobody);
    CHECK_FALSE(p.may_acquire(nobody, "jobs/1", LockMode::kShared));
    CHECK_FALSE(p.may_read(nobody, "jobs/1"));
    CHECK_FALSE(p.may_inspect(nobody));
    CHECK_FALSE(p.may_repair(nobody));
  }
}

}  // namespace
}  // namespace palisade
