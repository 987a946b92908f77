// Leader election (palisade/election.h, `palisade elect`) on real processes:
// three palisade-lockd nodes and three palisade-replica daemons (verifying
// sequencers) with short leases, candidates in this process and in `palisade
// elect` processes that the tests pause, resume and stop. docs/recipes.md,
// "Leader election".
#include "palisade/election.h"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/temp_dir.h"
#include "cli/process.h"
#include "tests/support/recipe_cluster.h"
#include "tests/support/waiting.h"

namespace palisade {
namespace {

using namespace std::chrono_literals;

using test::read_file;
using test::wait_until;

using Fixture = test::RecipeCluster;

std::optional<Leader> leader_of(Election& e) {
  auto now = e.leader();
  REQUIRE(now.is_ok());
  return now.value();
}

TEST_CASE("election: one leader at a time, its value and token observed, and resign elects the next",
          "[election][recipes]") {
  Fixture fx;
  auto store = fx.store();
  auto a = fx.client(store.get());
  auto b = fx.client(nullptr);  // campaign fences the store itself
  auto watcher = fx.client(nullptr);
  Election ea(*a, *store, {.name = "scheduler"});
  Election eb(*b, *store, {.name = "scheduler"});
  Election observer(*watcher, *store, {.name = "scheduler"});
  CHECK(ea.key() == "scheduler");
  CHECK_FALSE(leader_of(observer));

  // The observer, from its own thread, records every state it is told of.
  std::mutex mu;
  std::vector<std::optional<Leader>> seen;
  std::stop_source stop;
  Status observed;
  std::thread observing([&] {
    observed = observer.observe(
        [&](const std::optional<Leader>& l) {
          std::lock_guard lock(mu);
          seen.push_back(l);
        },
        stop.get_token(), 20ms);
  });
  auto saw = [&](const std::optional<Leader>& state) {
    std::lock_guard lock(mu);
    return std::find(seen.begin(), seen.end(), state) != seen.end();
  };

  // Told at once that nobody leads, before anybody campaigns.
  wait_until("the observer's first answer", [&] {
    std::lock_guard lock(mu);
    return !seen.empty();
  });
  auto la = ea.campaign("node-a", 5s);
  REQUIRE(la.is_ok());
  std::optional<Leader> now = leader_of(observer);
  REQUIRE(now);
  CHECK(now->token == la.value().token());
  CHECK(now->value == "node-a");
  CHECK(now->ts.token == la.value().token());
  // Another candidate does not lead while it does.
  CHECK(eb.campaign("node-b", 0ms).code() == Code::kBusy);
  CHECK(eb.campaign("node-b", 300ms).code() == Code::kTimeout);
  // The leader changes its value.
  REQUIRE(ea.proclaim(la.value(), "node-a:2").status.is_ok());
  const std::optional<Leader> proclaimed = leader_of(observer);
  REQUIRE(proclaimed);
  CHECK(proclaimed->token == la.value().token());
  CHECK(proclaimed->value == "node-a:2");
  wait_until("the observer to see node-a:2", [&] { return saw(proclaimed); });

  // Resigning deletes the value and frees the lock: nobody leads.
  REQUIRE(ea.resign(la.value()).is_ok());
  CHECK_FALSE(leader_of(observer));
  CHECK_FALSE(store->get("scheduler").found);
  wait_until("the observer to see nobody lead", [&] { return saw(std::nullopt); });

  auto lb = eb.campaign("node-b", 5s);
  REQUIRE(lb.is_ok());
  CHECK(lb.value().token() > la.value().token());
  now = leader_of(observer);
  REQUIRE(now);
  CHECK(now->token == lb.value().token());
  CHECK(now->value == "node-b");
  wait_until("the observer to see node-b", [&] { return saw(now); });
  stop.request_stop();
  observing.join();
  CHECK(observed.is_ok());
  // In order: each state is told once, and tokens never go back.
  std::lock_guard lock(mu);
  REQUIRE(seen.size() >= 4);
  CHECK_FALSE(seen.front());
  uint64_t last = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (i > 0) CHECK(seen[i] != seen[i - 1]);
    if (seen[i]) {
      CHECK(seen[i]->token >= last);
      last = seen[i]->token;
    }
  }
  CHECK(seen.back() == now);
}

TEST_CASE("election: a deposed leader's value is refused, and a leader yet to store one is told without it",
          "[election][recipes]") {
  Fixture fx;
  auto store = fx.store();
  auto a = fx.client(store.get());
  auto b = fx.client(store.get());
  Election ea(*a, *store, {.name = "primary", .key = "primary/leader"});
  Election eb(*b, *store, {.name = "primary", .key = "primary/leader"});
  auto la = ea.campaign("a", 5s);
  REQUIRE(la.is_ok());
  const Fence deposed{la.value().name(), la.value().token(), la.value().sequencer()};

  // A's session ends (its process exits); B is elected.
  a.reset();
  auto lb = eb.campaign("b", 10s);
  REQUIRE(lb.is_ok());
  // A's grant, from a process that does not know it was deposed: refused.
  const WriteResult late = store->put("primary/leader", "a", deposed);
  CHECK(late.status.code() == Code::kFenced);
  CHECK(late.floor >= lb.value().token());
  // The lease object knows it is over: refused without a request.
  CHECK(ea.proclaim(la.value(), "a").status.code() == Code::kNoSession);
  std::optional<Leader> now = leader_of(eb);
  REQUIRE(now);
  CHECK(now->token == lb.value().token());
  CHECK(now->value == "b");
  // Nor does its delete take the successor's value away.
  CHECK(store->del("primary/leader", deposed).status.code() == Code::kFenced);
  CHECK(leader_of(eb)->value == "b");

  // B resigns; C takes the lock without storing a value: it leads, valueless.
  REQUIRE(eb.resign(lb.value()).is_ok());
  auto c = fx.client(store.get());
  auto lc = c->acquire("primary", {.wait = 5s});
  REQUIRE(lc.is_ok());
  now = leader_of(eb);
  REQUIRE(now);
  CHECK(now->token == lc.value().token());
  CHECK_FALSE(now->value);
  // A shared holder is no leader.
  REQUIRE(c->release(lc.value()).is_ok());
  REQUIRE(c->acquire("primary", {.mode = LockMode::kShared}).is_ok());
  CHECK_FALSE(leader_of(eb));
  // Proclaiming or resigning with another lock's lease is refused.
  auto other = b->acquire("other");
  REQUIRE(other.is_ok());
  CHECK(eb.proclaim(other.value(), "b").status.code() == Code::kBadRequest);
  CHECK(eb.resign(other.value()).code() == Code::kBadRequest);
}

// ---- `palisade elect`, as a person runs it ----

using Run = test::CliRun;

// Candidates' COMMANDs run in process groups of their own: killed at the end
// of a test, whatever happened to the candidates.
struct CommandGroups {
  std::vector<pid_t> groups;
  ~CommandGroups() {
    for (pid_t g : groups) ::kill(-g, SIGKILL);
  }
  // What candidate `name`'s COMMAND said as it started leading: its pid
  // (its group's) and token. The group is killed at the end.
  std::pair<pid_t, uint64_t> leading(const TempDir& dir, const std::string& name) {
    std::istringstream said(read_file(dir.sub(name + ".leading")));
    pid_t pid = 0;
    uint64_t token = 0;
    said >> pid >> token;
    REQUIRE(pid > 0);
    groups.push_back(pid);
    return {pid, token};
  }
};

// Candidates run in process groups of their own, as a shell's jobs.
struct ElectFixture : Fixture {
  std::unique_ptr<cli::Process> start(const std::string& log, const std::vector<std::string>& args) {
    return Fixture::start(log, args, /*own_group=*/true);
  }
  Run run(const std::vector<std::string>& args) { return Fixture::run(args, /*own_group=*/true); }
};

// A candidate's COMMAND: says it leads (its pid and token in NAME.leading),
// waits for NAME.go, then stores its value again under its grant as it knew
// it and records put's exit code in NAME.put, then waits to be stopped.
std::vector<std::string> candidate(const TempDir& dir, const std::string& name) {
  const std::string base = dir.sub(name);
  return {"elect",
          "scheduler",
          "--value",
          name,
          "-v",
          "--",
          "sh",
          "-c",
          "echo $$ $PALISADE_TOKEN > " + base + ".leading.tmp; mv " + base + ".leading.tmp " + base + ".leading; " +
              "while [ ! -e " + base + ".go ]; do sleep 0.05; done; " + std::string(PALISADE_BIN) +
              " put \"$PALISADE_ELECTION_KEY\" \"$PALISADE_ELECTION_VALUE\"; " + "echo $? > " + base + ".put.tmp; mv " +
              base + ".put.tmp " + base + ".put; " + "while true; do sleep 0.05; done"};
}

TEST_CASE("elect: three candidates, the leader paused past its lease: the next is elected and the old one's "
          "value is refused",
          "[election][recipes][cli]") {
  ElectFixture fx;
  CommandGroups commands;
  auto observer = fx.start("observer.log", {"elect", "scheduler", "--observe"});
  const std::vector<std::string> names = {"c1", "c2", "c3"};
  std::vector<std::unique_ptr<cli::Process>> candidates;
  for (const std::string& name : names) candidates.push_back(fx.start(name + ".log", candidate(fx.dir, name)));
  auto leading = [&] {
    std::vector<size_t> out;
    for (size_t i = 0; i < names.size(); ++i) {
      if (std::filesystem::exists(fx.dir.sub(names[i] + ".leading"))) out.push_back(i);
    }
    return out;
  };
  wait_until("a leader", [&] { return !leading().empty(); });
  REQUIRE(leading().size() == 1);
  const size_t first = leading()[0];
  const auto [first_command, first_token] = commands.leading(fx.dir, names[first]);
  Run who = fx.run({"elect", "scheduler", "--leader"});
  INFO(who.out);
  CHECK(who.code == 0);
  CHECK(who.out == std::to_string(first_token) + " " + names[first] + "\n");

  // The leader, candidate and COMMAND, paused past its session lease (3 s).
  candidates[first]->signal(SIGSTOP);
  ::kill(-first_command, SIGSTOP);
  wait_until(
      "a second leader", [&] { return leading().size() == 2; }, 30s);
  size_t second = 0;
  for (size_t i : leading()) {
    if (i != first) second = i;
  }
  const auto [second_command, second_token] = commands.leading(fx.dir, names[second]);
  CHECK(second_token > first_token);
  const std::string second_line = std::to_string(second_token) + " " + names[second] + "\n";
  wait_until("--leader to name the second", [&] {
    return fx.run({"elect", "scheduler", "--leader"}).out == second_line;
  });

  // The old leader's COMMAND wakes first and stores its value under its old
  // grant: refused (exit 3, fenced), and the second's value stays.
  std::ofstream(fx.dir.sub(names[first] + ".go")) << "";
  ::kill(-first_command, SIGCONT);
  wait_until("the old leader's put", [&] { return std::filesystem::exists(fx.dir.sub(names[first] + ".put")); });
  CHECK(read_file(fx.dir.sub(names[first] + ".put")) == "3\n");
  CHECK(fx.run({"elect", "scheduler", "--leader"}).out == second_line);
  // Its `palisade elect` wakes to a lost session: it stops COMMAND and exits 7.
  candidates[first]->signal(SIGCONT);
  auto status = candidates[first]->wait(30000);
  REQUIRE(status);
  INFO(candidates[first]->log());
  CHECK(WEXITSTATUS(*status) == 7);
  CHECK(candidates[first]->log().find("lost 'scheduler'") != std::string::npos);

  // The second's COMMAND stores its value again under its grant: ok.
  std::ofstream(fx.dir.sub(names[second] + ".go")) << "";
  wait_until("the second's put", [&] { return std::filesystem::exists(fx.dir.sub(names[second] + ".put")); });
  CHECK(read_file(fx.dir.sub(names[second] + ".put")) == "0\n");

  // The second is stopped (SIGTERM, passed on to COMMAND): it resigns, and the third leads.
  const size_t third = 3 - first - second;
  candidates[second]->signal(SIGTERM);
  status = candidates[second]->wait(30000);
  REQUIRE(status);
  CHECK(WEXITSTATUS(*status) == 128 + SIGTERM);  // COMMAND's code, as a shell reports it
  wait_until("the third to lead", [&] { return std::filesystem::exists(fx.dir.sub(names[third] + ".leading")); });
  const auto [third_command, third_token] = commands.leading(fx.dir, names[third]);
  CHECK(third_token > second_token);
  const std::string third_line = std::to_string(third_token) + " " + names[third] + "\n";
  wait_until("the observer to see the third", [&] { return observer->log().find(third_line) != std::string::npos; });

  // The observer printed each leader in order, the deposed one never again
  // once the second was told.
  observer->signal(SIGTERM);
  status = observer->wait(10000);
  REQUIRE(status);
  CHECK(WEXITSTATUS(*status) == 0);
  const std::string log = observer->log();
  INFO(log);
  const std::string first_line = std::to_string(first_token) + " " + names[first] + "\n";
  const size_t at_first = log.find(first_line);
  const size_t at_second = log.find(second_line);
  const size_t at_third = log.find(third_line);
  CHECK(at_first != std::string::npos);
  CHECK(at_second != std::string::npos);
  CHECK(at_first < at_second);
  CHECK(at_second < at_third);
  CHECK(log.find(first_line, at_second) == std::string::npos);
}

TEST_CASE("elect: --leader says none with exit 5, usage errors exit 2, and -o json carries the leader",
          "[election][recipes][cli]") {
  ElectFixture fx;
  Run none = fx.run({"elect", "jobs", "--leader"});
  CHECK(none.code == 5);
  CHECK(none.out == "none\n");
  Run json_none = fx.run({"-o", "json", "elect", "jobs", "--leader"});
  CHECK(json_none.out == "{\"leader\":null}\n");
  Run no_command = fx.run({"elect", "jobs"});
  CHECK(no_command.code == 2);
  CHECK(no_command.out.find("give a COMMAND") != std::string::npos);
  CHECK(fx.run({"elect", "jobs", "--leader", "--observe"}).code == 2);
  CHECK(fx.run({"elect", "jobs", "--leader", "--", "true"}).code == 2);

  // A leader whose COMMAND prints what --leader says meanwhile, and its environment.
  Run led = fx.run({"elect", "jobs", "--value", "worker 7", "--", "sh", "-c",
                    std::string(PALISADE_BIN) + " -o json elect jobs --leader; echo \"$PALISADE_ELECTION_KEY|" +
                        "$PALISADE_ELECTION_VALUE|$PALISADE_LOCK|$PALISADE_TOKEN\""});
  INFO(led.out);
  CHECK(led.code == 0);
  CHECK(led.out.find("\"value\":\"worker 7\"") != std::string::npos);
  CHECK(led.out.find("jobs|worker 7|jobs|") != std::string::npos);
  // It resigned as COMMAND ended: nobody leads, the value is gone.
  CHECK(fx.run({"elect", "jobs", "--leader"}).code == 5);
  CHECK(fx.run({"get", "jobs"}).code == 5);
  // A COMMAND's exit code is elect's; a missing one is 127.
  CHECK(fx.run({"elect", "jobs", "--", "sh", "-c", "exit 42"}).code == 42);
  CHECK(fx.run({"elect", "jobs", "--", "/nonexistent/command"}).code == 127);
}

}  // namespace
}  // namespace palisade
