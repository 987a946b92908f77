#include "tests/nemesis/campaign_history.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace palisade::nemesis {
namespace {

using nlohmann::json;

// A field that must be there, of the type asked for (json throws otherwise).
template <typename T>
T field(const json& line, const char* name) {
  if (!line.contains(name)) throw std::invalid_argument(std::string("no field '") + name + "'");
  return line.at(name).get<T>();
}

Code result_of(const json& line) {
  const auto name = field<std::string>(line, "result");
  const auto code = code_from_name(name);
  if (!code) throw std::invalid_argument("unknown result '" + name + "'");
  return *code;
}

FencedTimestamp ts_of(const json& line) {
  if (!line.contains("ts") || line.at("ts").is_null()) return {};
  const auto text = line.at("ts").get<std::string>();
  const auto ts = FencedTimestamp::parse(text);
  if (!ts) throw std::invalid_argument("ts '" + text + "' is not TOKEN@MS.LOGICAL");
  return *ts;
}

void read_line(const json& line, sim::History& into) {
  const auto op = field<std::string>(line, "op");
  const int client = field<int>(line, "client");
  const auto start = field<uint64_t>(line, "start");
  const auto end = field<uint64_t>(line, "end");
  if (end < start) throw std::invalid_argument("it ends before it starts");
  const Code result = result_of(line);
  if (op == "acquire") {
    const auto token = field<uint64_t>(line, "token");
    if (result == Code::kOk && token == 0) throw std::invalid_argument("an acquire ok without a token");
    into.fences.push_back({client, field<std::string>(line, "lock"), token, start, end, result, result == Code::kOk,
                           line.value("session", uint64_t{0})});
  } else if (op == "put" || op == "del") {
    const bool tombstone = op == "del";
    into.writes.push_back({client, field<std::string>(line, "key"),
                           tombstone ? std::string() : field<std::string>(line, "value"), tombstone,
                           line.value("lock", std::string()), line.value("token", uint64_t{0}), start, end, result,
                           ts_of(line)});
  } else if (op == "get") {
    const bool found = result == Code::kOk && field<bool>(line, "found");
    into.reads.push_back({client, field<std::string>(line, "key"), start, end, result, found,
                          found ? field<std::string>(line, "value") : std::string(), ts_of(line)});
  } else {
    throw std::invalid_argument("unknown op '" + op + "'");
  }
}

}  // namespace

std::vector<std::string> read_history(std::istream& in, std::string_view name, sim::History& into) {
  std::vector<std::string> errors;
  std::string text;
  for (size_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      read_line(json::parse(text), into);
    } catch (const std::exception& e) {  // json's parse and type errors, and ours
      errors.push_back(std::string(name) + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  return errors;
}

namespace {

// Acquiring a lock the session holds returns the same grant (a release that
// failed left it held): one token, one session, both recorded.
bool same_grant(const sim::FenceRecord& a, const sim::FenceRecord& b) {
  return a.token == b.token && a.session != 0 && a.session == b.session;
}

}  // namespace

std::vector<std::string> check_tokens(const sim::History& history) {
  std::map<std::string, std::vector<const sim::FenceRecord*>> granted;  // lock -> acquires that returned ok
  for (const sim::FenceRecord& f : history.fences) {
    if (f.result == Code::kOk) granted[f.lock].push_back(&f);
  }
  std::vector<std::string> out;
  auto describe = [](const sim::FenceRecord& f) {
    return "client " + std::to_string(f.client) + "'s acquire [" + std::to_string(f.start_ms) + ", " +
           std::to_string(f.end_ms) + "] got token " + std::to_string(f.token);
  };
  for (auto& [lock, grants] : granted) {
    std::sort(grants.begin(), grants.end(), [](auto* a, auto* b) { return a->end_ms < b->end_ms; });
    std::map<uint64_t, const sim::FenceRecord*> by_token;
    for (const sim::FenceRecord* g : grants) {
      if (auto [it, fresh] = by_token.emplace(g->token, g); !fresh && !same_grant(*it->second, *g)) {
        out.push_back("token granted twice: lock '" + lock + "': " + describe(*it->second) + ", " + describe(*g));
      }
    }
    // The largest token returned before each acquire began must be below its own.
    for (const sim::FenceRecord* g : grants) {
      const sim::FenceRecord* before = nullptr;
      for (const sim::FenceRecord* e : grants) {
        if (e->end_ms >= g->start_ms) break;
        if (before == nullptr || e->token > before->token) before = e;
      }
      if (before != nullptr && before->token >= g->token && !same_grant(*before, *g)) {
        out.push_back("token did not increase: lock '" + lock + "': " + describe(*g) + " after " + describe(*before));
      }
    }
  }
  return out;
}

Tally tally(const sim::History& history) {
  Tally t;
  std::map<std::string, std::vector<const sim::FenceRecord*>> granted;
  for (const sim::FenceRecord& f : history.fences) {
    ++t.acquires;
    if (f.result != Code::kOk) continue;
    ++t.acquires_ok;
    granted[f.lock].push_back(&f);
  }
  auto refused = [](Code c) { return c == Code::kFenced || c == Code::kStale || c == Code::kBadSequencer; };
  for (const sim::WriteRecord& w : history.writes) {
    ++t.writes;
    t.writes_ok += w.result == Code::kOk ? 1 : 0;
    t.writes_refused += refused(w.result) ? 1 : 0;
    if (w.token == 0) continue;
    const auto& grants = granted[w.lock];
    const bool zombie = std::any_of(grants.begin(), grants.end(), [&](const sim::FenceRecord* g) {
      return g->token > w.token && g->end_ms < w.start_ms;
    });
    if (!zombie) continue;
    t.zombies.push_back(w);
    ++t.zombie_writes;
    t.zombie_writes_refused += w.result != Code::kOk ? 1 : 0;
    t.zombie_writes_fenced += refused(w.result) ? 1 : 0;
  }
  for (const sim::ReadRecord& r : history.reads) {
    ++t.reads;
    t.reads_ok += r.result == Code::kOk ? 1 : 0;
  }
  return t;
}

std::vector<std::string> check_campaign(const sim::History& history) {
  std::vector<std::string> out = check_tokens(history);
  for (std::string& v : sim::check(history)) out.push_back(std::move(v));
  return out;
}

}  // namespace palisade::nemesis
