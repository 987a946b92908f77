// palisade keygen NAME: a CurveZMQ key pair for identity NAME, in a key file
// of mode 0600 (transport/curve_keys.h). Prints the public key, the part the
// cluster file lists.
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "transport/curve_keys.h"

namespace palisade::cli {
namespace {

struct KeygenFlags {
  std::string identity;
  std::string out;  // empty: NAME.key in the current directory
};

int run(const KeygenFlags& flags, const CommonOptions& common) {
  if (!is_identity_name(flags.identity)) {
    std::fprintf(stderr,
                 "palisade keygen: '%s' is not an identity name: 1 to 64 letters, digits, '.', '_' or '-', "
                 "not starting with '.' or '-'\n",
                 flags.identity.c_str());
    return kExitUsage;
  }
  const std::string path = flags.out.empty() ? flags.identity + ".key" : flags.out;
  transport::KeyFile file{flags.identity, {}};
  try {
    file.keys = transport::generate_curve_keys();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "palisade keygen: %s\n", e.what());
    return kExitFailure;
  }
  if (Status s = transport::write_key_file(path, file); !s.is_ok()) {
    std::fprintf(stderr, "palisade keygen: %s\n", s.message().c_str());
    return kExitFailure;
  }
  if (common.json()) {
    nlohmann::json j{{"identity", file.identity}, {"public_key", file.keys.public_key}, {"key_file", path}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("wrote %s (mode 0600: it holds the secret key of identity %s)\npublic key: %s\n", path.c_str(),
                file.identity.c_str(), file.keys.public_key.c_str());
  }
  return kExitOk;
}

}  // namespace

void add_keygen_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<KeygenFlags>();
  auto* sub = app.add_subcommand("keygen", "Make a CurveZMQ key pair for an identity, in a key file of mode 0600");
  sub->add_option("NAME", flags->identity, "The identity the key pair proves (a daemon, a service, a person)")
      ->required();
  sub->add_option("--out", flags->out, "The key file to write (default: NAME.key here); never replaced")
      ->type_name("FILE");
  sub->footer("Exit status: 0 written, 1 the file exists or cannot be written, 2 NAME is not an identity name.");
  sub->callback([flags, &common, &exit_code] { exit_code = run(*flags, common); });
}

}  // namespace palisade::cli
