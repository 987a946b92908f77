#include "config/identity_reload.h"

#include <spdlog/spdlog.h>

namespace palisade {

std::optional<DaemonKeys> reload_identities(const std::string& cluster_file, const std::string& endpoint,
                                            const std::string& key_path, transport::ZapHandler* zap) {
  if (zap == nullptr) {
    spdlog::warn("SIGHUP: this node serves plaintext links, so it has no identities to reload; restart it with "
                 "--key to serve CurveZMQ");
    return std::nullopt;
  }
  auto keys = reload_daemon_keys(cluster_file, endpoint, key_path);
  if (!keys.is_ok()) {
    spdlog::error("reload (SIGHUP) of {} failed: {}; the identities stay as they were", cluster_file,
                  keys.status().message());
    return std::nullopt;
  }
  zap->set_allowed(keys.value().allowed);
  spdlog::info("reloaded {} (SIGHUP): {} keys may connect, {}; connections and sessions stay", cluster_file,
               keys.value().allowed.size(),
               keys.value().permissions.configured() ? "permissions as its [[role]] tables say"
                                                     : "no [[role]] tables (every identity may lock, read and write)");
  return std::move(keys).value();
}

}  // namespace palisade
