// palisade check-sequencer [SEQUENCER]: whether a sequencer is genuine (its
// signature, checked offline with the cluster file's sequencer_public_key)
// and, unless --offline, whether it is still its lock's current grant (asked
// of the lock group). What a service handed a sequencer can run to judge it.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/cluster_clients.h"
#include "cli/command.h"
#include "palisade/lock_client.h"
#include "palisade/sequencer.h"

namespace palisade::cli {
namespace {

struct CheckFlags {
  std::string sequencer;  // empty: $PALISADE_SEQUENCER
  bool offline = false;
  std::chrono::milliseconds timeout{5000};
};

constexpr std::string_view kWhat = "check-sequencer";

int run(const CheckFlags& flags, const CommonOptions& common) {
  std::string text = flags.sequencer;
  if (text.empty()) {
    const char* env = std::getenv("PALISADE_SEQUENCER");
    if (env == nullptr || *env == '\0') {
      return report_failure(kWhat,
                            "no sequencer: give one, or run under `palisade lock`, which sets "
                            "$PALISADE_SEQUENCER",
                            kExitUsage);
    }
    text = env;
  }
  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error(kWhat, loaded.status());
  const ClusterConfig& config = loaded.value().config;
  if (config.sequencer_public_key.empty()) {
    return report_failure(kWhat,
                          config.path + " lists no sequencer_public_key: add the one palisade-lockd logs at "
                                        "start (docs/security.md)",
                          kExitFailure);
  }
  auto verifier = SequencerVerifier::create(config.group, config.sequencer_public_key);
  if (!verifier.is_ok()) return report_error(kWhat, verifier.status());
  auto genuine = verifier.value().verify(text);
  if (!genuine.is_ok()) return report_error(kWhat, genuine.status());
  const Sequencer& s = genuine.value();

  std::optional<bool> current;
  if (!flags.offline) {
    auto client = LockClient::connect(lock_client_options(loaded.value()), flags.timeout);
    if (!client.is_ok()) return report_error(kWhat, client.status());
    auto asked = client.value()->check_sequencer(text);
    if (!asked.is_ok()) return report_error(kWhat, asked.status());
    current = asked.value();
  }
  if (common.json()) {
    nlohmann::json j{{"group", s.group},
                     {"lock", s.lock},
                     {"mode", std::string(mode_name(s.mode))},
                     {"token", s.token},
                     {"identity", s.identity.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.identity)},
                     {"genuine", true},
                     {"current", nullptr}};
    if (current) j["current"] = *current;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("sequencer: lock '%s', %s, token %llu, group '%s'%s\n", s.lock.c_str(),
                std::string(mode_name(s.mode)).c_str(), static_cast<unsigned long long>(s.token), s.group.c_str(),
                s.identity.empty() ? "" : (", granted to '" + s.identity + "'").c_str());
    std::printf("signature: genuine (the lock group's key %s)\n", config.sequencer_public_key.c_str());
    if (!current) {
      std::printf("current: not asked (--offline)\n");
    } else if (*current) {
      std::printf("current: yes, the lock's grant now\n");
    } else {
      std::printf("current: no, released, expired or superseded: refuse its holder's writes\n");
    }
  }
  return current.value_or(true) ? kExitOk : kExitFenced;
}

}  // namespace

void add_check_sequencer_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<CheckFlags>();
  auto* sub = app.add_subcommand("check-sequencer",
                                 "Check a sequencer's signature offline and ask the lock group whether it is current");
  sub->add_option("SEQUENCER", flags->sequencer, "The sequencer text (default: $PALISADE_SEQUENCER)");
  sub->add_flag("--offline", flags->offline,
                "Check the signature only, with the cluster file's sequencer_public_key; ask no daemon");
  add_duration_option(sub, "--timeout", flags->timeout, false, "How long to wait for the lock group (default 5s)");
  sub->footer("Exit status: 0 genuine and current (with --offline: genuine), 3 genuine but no longer current, "
              "2 not a genuine sequencer of this cluster's lock group (forged, altered, another group's), "
              "1 the cluster file lists no sequencer_public_key, 4 or 6 the lock group did not answer.");
  sub->callback([flags, &common, &exit_code] { exit_code = run(*flags, common); });
}

}  // namespace palisade::cli
