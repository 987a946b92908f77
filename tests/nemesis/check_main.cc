// palisade-nemesis-check: judges the history a fault campaign recorded
// (tests/nemesis/campaign_history.h) with the simulator's checkers.
//   palisade-nemesis-check history/*.jsonl          violations, a summary, the verdict
//   palisade-nemesis-check --json history/*.jsonl   the same as one JSON object
// Exit 0 when the history keeps every promise, 1 when it breaks one, 2 when a
// file cannot be read (a line it cannot parse is an error too: a history
// judged in part is no verdict).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tests/nemesis/campaign_history.h"

int main(int argc, char** argv) {
  using namespace palisade;
  CLI::App app{"Judges a fault campaign's history (JSON lines) with the simulator's checkers."};
  std::vector<std::string> files;
  bool as_json = false;
  app.add_option("history", files, "History files, one JSON object a line")->required()->check(CLI::ExistingFile);
  app.add_flag("--json", as_json, "Print the summary and violations as one JSON object");
  CLI11_PARSE(app, argc, argv);

  sim::History history;
  std::vector<std::string> errors;
  for (const std::string& name : files) {
    std::ifstream in(name);
    if (!in) {
      errors.push_back(name + ": cannot be opened");
      continue;
    }
    for (std::string& e : nemesis::read_history(in, name, history)) errors.push_back(std::move(e));
  }
  if (!errors.empty()) {
    for (const std::string& e : errors) std::fprintf(stderr, "palisade-nemesis-check: %s\n", e.c_str());
    return 2;
  }
  const std::vector<std::string> violations = nemesis::check_campaign(history);
  const nemesis::Tally t = nemesis::tally(history);
  if (as_json) {
    nlohmann::json zombies = nlohmann::json::array();
    for (const sim::WriteRecord& w : t.zombies) {
      zombies.push_back({{"client", w.client},
                         {"lock", w.lock},
                         {"token", w.token},
                         {"start", w.start_ms},
                         {"end", w.end_ms},
                         {"result", code_name(w.result)}});
    }
    const nlohmann::json out{{"safe", violations.empty()},
                             {"violations", violations},
                             {"acquires", t.acquires},
                             {"acquires_ok", t.acquires_ok},
                             {"writes", t.writes},
                             {"writes_ok", t.writes_ok},
                             {"writes_refused", t.writes_refused},
                             {"zombie_writes", t.zombie_writes},
                             {"zombie_writes_refused", t.zombie_writes_refused},
                             {"zombie_writes_fenced", t.zombie_writes_fenced},
                             {"zombies", zombies},
                             {"reads", t.reads},
                             {"reads_ok", t.reads_ok}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    for (const std::string& v : violations) std::printf("violation: %s\n", v.c_str());
    std::printf("acquires  %llu, %llu ok\n", static_cast<unsigned long long>(t.acquires),
                static_cast<unsigned long long>(t.acquires_ok));
    std::printf("writes    %llu, %llu ok, %llu refused\n", static_cast<unsigned long long>(t.writes),
                static_cast<unsigned long long>(t.writes_ok), static_cast<unsigned long long>(t.writes_refused));
    std::printf("zombies   %llu writes of superseded holders, %llu not acknowledged (%llu fenced)\n",
                static_cast<unsigned long long>(t.zombie_writes),
                static_cast<unsigned long long>(t.zombie_writes_refused),
                static_cast<unsigned long long>(t.zombie_writes_fenced));
    std::printf("reads     %llu, %llu ok\n", static_cast<unsigned long long>(t.reads),
                static_cast<unsigned long long>(t.reads_ok));
    std::printf("verdict: %s (%zu violations; times in microseconds)\n", violations.empty() ? "SAFE" : "UNSAFE",
                violations.size());
  }
  return violations.empty() ? 0 : 1;
}
