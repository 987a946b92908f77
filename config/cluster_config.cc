#include "config/cluster_config.h"

#include "base/endpoint.h"
#include "base/identity.h"
#include "wire/sequencer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <set>
#include <sstream>

#include <toml++/toml.h>

namespace palisade {
namespace {

constexpr size_t kMaxGroupBytes = 128;
constexpr size_t kMaxLockdNodes = 7;
constexpr int64_t kMaxLockdId = 255;

// Collects the first problem found, as "FILE:LINE: problem".
class Checker {
 public:
  explicit Checker(const std::string& path) : path_(path) {}

  bool ok() const { return status_.is_ok(); }
  const Status& status() const { return status_; }

  void fail(const toml::source_region& where, const std::string& problem) {
    if (!ok()) return;
    std::string at = path_;
    if (where.begin.line != 0) at += ":" + std::to_string(where.begin.line);
    status_ = Status(Code::kBadRequest, at + ": " + problem);
  }

  // Refuses every key of `table` not in `known`; `what` names the table.
  void only_keys(const toml::table& table, std::initializer_list<std::string_view> known, const std::string& what) {
    for (const auto& [key, node] : table) {
      if (std::find(known.begin(), known.end(), key.str()) == known.end()) {
        fail(key.source(), "unknown key '" + std::string(key.str()) + "'" + what);
      }
    }
  }

  // A string value; nullopt (and a problem when required) when absent or not a string.
  std::optional<std::string> text(const toml::table& table, std::string_view key, bool required,
                                  const std::string& what) {
    const toml::node* node = table.get(key);
    if (node == nullptr) {
      if (required) fail(table.source(), "missing key '" + std::string(key) + "'" + what);
      return std::nullopt;
    }
    if (!node->is_string()) {
      fail(node->source(), "'" + std::string(key) + "'" + what + " must be a string");
      return std::nullopt;
    }
    return node->value<std::string>();
  }

  // An optional true or false.
  std::optional<bool> boolean(const toml::table& table, std::string_view key, const std::string& what) {
    const toml::node* node = table.get(key);
    if (node == nullptr) return std::nullopt;
    if (!node->is_boolean()) {
      fail(node->source(), "'" + std::string(key) + "'" + what + " must be true or false");
      return std::nullopt;
    }
    return node->value_or(false);
  }

  // An integer value within [min, max].
  std::optional<int64_t> integer(const toml::table& table, std::string_view key, bool required, int64_t min,
                                 int64_t max, const std::string& what) {
    const toml::node* node = table.get(key);
    if (node == nullptr) {
      if (required) fail(table.source(), "missing key '" + std::string(key) + "'" + what);
      return std::nullopt;
    }
    if (!node->is_integer()) {
      fail(node->source(), "'" + std::string(key) + "'" + what + " must be an integer");
      return std::nullopt;
    }
    int64_t v = *node->value<int64_t>();
    if (v < min || v > max) {
      fail(node->source(), "'" + std::string(key) + "'" + what + " is " + std::to_string(v) + ", must be " +
                               std::to_string(min) + ".." + std::to_string(max));
      return std::nullopt;
    }
    return v;
  }

  // An array of strings; absent: empty, or a problem when required.
  std::optional<std::vector<std::string>> texts(const toml::table& table, std::string_view key, bool required,
                                                const std::string& what) {
    const toml::node* node = table.get(key);
    if (node == nullptr) {
      if (!required) return std::vector<std::string>{};
      fail(table.source(), "missing key '" + std::string(key) + "'" + what);
      return std::nullopt;
    }
    const toml::array* array = node->as_array();
    std::vector<std::string> out;
    if (array != nullptr) {
      for (const toml::node& n : *array) {
        if (!n.is_string()) break;
        out.push_back(*n.value<std::string>());
      }
    }
    if (array == nullptr || out.size() != array->size()) {
      fail(node->source(), "'" + std::string(key) + "'" + what + " must be a list of strings");
      return std::nullopt;
    }
    return out;
  }

  // An array of tables ([[name]]); nullptr when absent or another type.
  const toml::array* tables(const toml::table& root, std::string_view key) {
    const toml::node* node = root.get(key);
    if (node == nullptr) return nullptr;
    const toml::array* array = node->as_array();
    bool all_tables = array != nullptr;
    if (array != nullptr) {
      for (const toml::node& n : *array) all_tables &= n.is_table();
    }
    if (!all_tables) {
      fail(node->source(), "'" + std::string(key) + "' must be a list of tables, written [[" + std::string(key) + "]]");
      return nullptr;
    }
    return array;
  }

 private:
  const std::string& path_;
  Status status_;
};

std::string resolve_key_file(const std::string& cluster_path, const std::string& key_file) {
  namespace fs = std::filesystem;
  fs::path p(key_file);
  if (p.is_relative()) p = fs::path(cluster_path).parent_path() / p;
  std::error_code ec;
  fs::path absolute = fs::absolute(p, ec);
  return (ec ? p : absolute).lexically_normal().string();
}

void check_endpoint(Checker& c, const toml::table& t, const std::string& endpoint, const std::string& what,
                    std::set<std::string>& seen) {
  const toml::node* node = t.get("endpoint");
  if (endpoint.empty()) return c.fail(node->source(), "'endpoint'" + what + " must not be empty");
  if (std::string problem = endpoint_problem(endpoint); !problem.empty()) {
    return c.fail(node->source(), "'endpoint'" + what + ": " + problem);
  }
  if (!seen.insert(endpoint).second) {
    c.fail(node->source(), "endpoint '" + endpoint + "'" + what + " is used by another node");
  }
}

// [[role]] tables: what identities that name them may do (base/permissions.h).
void parse_roles(Checker& c, const toml::table& root, ClusterConfig& config) {
  const toml::array* roles = c.tables(root, "role");
  if (roles == nullptr) return;
  for (const toml::node& n : *roles) {
    const toml::table& t = *n.as_table();
    const std::string what = " of [[role]] " + std::to_string(config.roles.size() + 1);
    c.only_keys(t, {"name", "locks", "shared_locks", "read", "write", "delete", "admin"}, what);
    Role role;
    if (auto name = c.text(t, "name", true, what)) role.name = *name;
    const std::pair<std::string_view, std::vector<std::string>*> lists[] = {
        {"locks", &role.locks},   {"shared_locks", &role.shared_locks}, {"read", &role.read}, {"write", &role.write},
        {"delete", &role.remove},
    };
    for (const auto& [key, out] : lists) {
      if (auto patterns = c.texts(t, key, false, what)) *out = std::move(*patterns);
    }
    role.admin = c.boolean(t, "admin", what).value_or(false);
    if (!c.ok()) return;
    if (!is_identity_name(role.name)) {
      return c.fail(t.get("name")->source(), "'" + role.name + "'" + what +
                                                 " is not a role name: 1 to 64 letters, digits, '.', '_' or '-', "
                                                 "not starting with '.' or '-'");
    }
    if (std::find(std::begin(kBuiltInRoles), std::end(kBuiltInRoles), role.name) != std::end(kBuiltInRoles)) {
      return c.fail(t.get("name")->source(), "role '" + role.name + "' is built in (lockd, replica, admin)");
    }
    for (const Role& other : config.roles) {
      if (other.name == role.name) {
        return c.fail(t.get("name")->source(), "role '" + role.name + "' is defined twice");
      }
    }
    config.roles.push_back(std::move(role));
  }
}

void parse_identities(Checker& c, const toml::table& root, ClusterConfig& config) {
  const toml::array* identities = c.tables(root, "identity");
  if (identities == nullptr) return;
  std::set<std::string> keys;
  for (const toml::node& n : *identities) {
    const toml::table& t = *n.as_table();
    const std::string what = " of [[identity]] " + std::to_string(config.identities.size() + 1);
    c.only_keys(t, {"name", "keys", "roles"}, what);
    Identity id;
    if (auto name = c.text(t, "name", true, what)) id.name = *name;
    auto key_list = c.texts(t, "keys", true, what);
    auto roles = c.texts(t, "roles", false, what);
    if (!c.ok()) return;
    if (!is_identity_name(id.name)) {
      return c.fail(t.get("name")->source(), "'" + id.name + "'" + what +
                                                 " is not an identity name: 1 to 64 letters, digits, '.', '_' or '-', "
                                                 "not starting with '.' or '-'");
    }
    if (config.identity(id.name) != nullptr) {
      return c.fail(t.get("name")->source(), "identity '" + id.name + "' is defined twice");
    }
    const toml::node* keys_node = t.get("keys");
    if (key_list->empty() || key_list->size() > 2) {
      return c.fail(keys_node->source(), "identity '" + id.name +
                                             "' needs 1 or 2 keys (2 while one is rotated), it has " +
                                             std::to_string(key_list->size()));
    }
    for (const std::string& key : *key_list) {
      if (!is_z85_key(key)) {
        return c.fail(keys_node->source(), "a key of identity '" + id.name + "' is not a CURVE public key (" +
                                               std::to_string(kCurveKeyZ85Chars) +
                                               " characters of Z85, as palisade keygen prints)");
      }
      if (!keys.insert(key).second) {
        return c.fail(keys_node->source(), "the key " + key + " of identity '" + id.name + "' is listed twice");
      }
    }
    id.keys = std::move(*key_list);
    for (const std::string& role : *roles) {
      const bool built_in =
          std::find(std::begin(kBuiltInRoles), std::end(kBuiltInRoles), role) != std::end(kBuiltInRoles);
      if (!built_in && config.role(role) == nullptr) {
        return c.fail(t.get("roles")->source(), "identity '" + id.name + "' has an unknown role '" + role +
                                                    "' (built in: lockd, replica, admin; others need a [[role]])");
      }
    }
    id.roles = std::move(*roles);
    config.identities.push_back(std::move(id));
  }
}

// A daemon's `identity`: with [[identity]] entries, every daemon names one of
// them that has `role`; without, none does.
void daemon_identity(Checker& c, const toml::table& t, const std::string& endpoint, std::string_view role,
                     const std::string& what, ClusterConfig& config) {
  auto name = c.text(t, "identity", false, what);
  if (!c.ok()) return;
  if (config.identities.empty()) {
    if (name) {
      c.fail(t.get("identity")->source(),
             "'identity'" + what + " names '" + *name + "', but no [[identity]] defines any");
    }
    return;
  }
  if (!name) {
    return c.fail(t.source(), "missing key 'identity'" + what +
                                  ": with [[identity]] entries, every daemon names the identity it serves as");
  }
  const Identity* id = config.identity(*name);
  if (id == nullptr)
    return c.fail(t.get("identity")->source(),
                  "'identity'" + what + " names '" + *name + "', which no [[identity]] defines");
  if (!id->has_role(role)) {
    return c.fail(t.get("identity")->source(),
                  "'identity'" + what + " names '" + *name + "', which lacks the role '" + std::string(role) + "'");
  }
  config.daemon_identity[endpoint] = *name;
}

}  // namespace

bool Identity::has_role(std::string_view role) const {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

const Role* ClusterConfig::role(std::string_view name) const {
  for (const Role& r : roles) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

Permissions ClusterConfig::permissions() const {
  std::map<std::string, std::vector<std::string>> identity_roles;
  for (const Identity& id : identities) identity_roles[id.name] = id.roles;
  return Permissions(roles, std::move(identity_roles));
}

const Identity* ClusterConfig::identity(std::string_view name) const {
  for (const Identity& id : identities) {
    if (id.name == name) return &id;
  }
  return nullptr;
}

const LockdNode* ClusterConfig::lockd_node(uint32_t id) const {
  for (const LockdNode& n : lockd) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

Result<ClusterConfig> parse_cluster_config(std::string_view text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Status(Code::kBadRequest, path + ":" + std::to_string(e.source().begin.line) + ": not valid TOML: " +
                                         std::string(e.description()));
  }
  Checker c(path);
  ClusterConfig config;
  config.path = path;
  c.only_keys(root,
              {"cluster_id", "group", "key_file", "sequencer_public_key", "replica_key_file", "role", "identity",
               "lockd", "replica", "quorum", "timing"},
              "");

  if (auto hex = c.text(root, "cluster_id", false, "")) {
    auto id = cluster_id_from_hex(*hex);
    if (!id) {
      c.fail(root.get("cluster_id")->source(), "'cluster_id' must be " + std::to_string(2 * kClusterIdBytes) +
                                                   " hex digits, not '" + *hex + "'");
    }
    config.cluster_id = id.value_or("");
  }
  if (auto group = c.text(root, "group", true, "")) {
    if (group->empty() || group->size() > kMaxGroupBytes) {
      c.fail(root.get("group")->source(), "'group' must be 1.." + std::to_string(kMaxGroupBytes) + " bytes");
    }
    config.group = *group;
  }
  if (auto key_file = c.text(root, "key_file", false, "")) {
    if (key_file->empty()) c.fail(root.get("key_file")->source(), "'key_file' must not be empty");
    config.key_file = resolve_key_file(path, *key_file);
  }
  if (auto key = c.text(root, "sequencer_public_key", false, "")) {
    // The form only: the daemons check the key itself (palisade/sequencer.h).
    if (auto bytes = sequencer_format::public_key_bytes(*key);
        !bytes || bytes->size() != SequencerVerifier::kPublicKeyBytes) {
      c.fail(root.get("sequencer_public_key")->source(),
             "'sequencer_public_key' must be \"psk1.\" and 43 base64url characters (palisade-lockd logs it)");
    }
    config.sequencer_public_key = *key;
  }
  if (auto key_file = c.text(root, "replica_key_file", false, "")) {
    if (key_file->empty()) c.fail(root.get("replica_key_file")->source(), "'replica_key_file' must not be empty");
    if (config.sequencer_public_key.empty()) {
      c.fail(root.get("replica_key_file")->source(),
             "'replica_key_file' needs 'sequencer_public_key': replicas without the cluster key check sequencers "
             "with it");
    }
    config.replica_key_file = resolve_key_file(path, *key_file);
  }

  parse_roles(c, root, config);
  parse_identities(c, root, config);
  if (c.ok() && !config.roles.empty() && config.identities.empty()) {
    c.fail(root.get("role")->source(),
           "[[role]] tables need [[identity]] entries: permissions are given to identities, which plaintext "
           "links do not have");
  }

  std::set<std::string> endpoints;
  const toml::array* lockd = c.tables(root, "lockd");
  if (c.ok() && (lockd == nullptr || lockd->empty() || lockd->size() > kMaxLockdNodes)) {
    c.fail(lockd != nullptr ? lockd->source() : root.source(),
           "the cluster needs 1.." + std::to_string(kMaxLockdNodes) + " [[lockd]] nodes, it has " +
               std::to_string(lockd != nullptr ? lockd->size() : 0));
  }
  if (lockd != nullptr) {
    std::set<int64_t> ids;
    for (const toml::node& n : *lockd) {
      const toml::table& t = *n.as_table();
      const std::string what = " of [[lockd]] node " + std::to_string(config.lockd.size() + 1);
      c.only_keys(t, {"id", "endpoint", "identity"}, what);
      auto id = c.integer(t, "id", true, 1, kMaxLockdId, what);
      auto endpoint = c.text(t, "endpoint", true, what);
      if (!c.ok()) break;
      if (!ids.insert(*id).second) c.fail(t.get("id")->source(), "lockd id " + std::to_string(*id) + " is used twice");
      check_endpoint(c, t, *endpoint, what, endpoints);
      daemon_identity(c, t, *endpoint, "lockd", what, config);
      config.lockd.push_back({static_cast<uint32_t>(*id), *endpoint});
    }
  }

  // No [[replica]]: a client's file that names only the lock group, whose
  // record gives the replica set (docs/design.md "The replica set").
  const toml::array* replicas = c.tables(root, "replica");
  if (c.ok() && replicas != nullptr) {
    for (const toml::node& n : *replicas) {
      const toml::table& t = *n.as_table();
      const std::string what =
          " of [[replica]] " + std::to_string(config.replicas.size() + config.spare_replicas.size() + 1);
      c.only_keys(t, {"endpoint", "identity", "spare"}, what);
      auto endpoint = c.text(t, "endpoint", true, what);
      auto spare = c.boolean(t, "spare", what);
      if (!c.ok()) break;
      check_endpoint(c, t, *endpoint, what, endpoints);
      daemon_identity(c, t, *endpoint, "replica", what, config);
      (spare.value_or(false) ? config.spare_replicas : config.replicas).push_back(*endpoint);
    }
  }

  if (const toml::node* q = root.get("quorum"); q != nullptr && c.ok()) {
    if (!q->is_table()) {
      c.fail(q->source(), "'quorum' must be a table, written [quorum]");
    } else {
      const toml::table& t = *q->as_table();
      const auto n = static_cast<int64_t>(config.replicas.size());
      if (n == 0) {
        c.fail(q->source(), "[quorum] needs the [[replica]] entries it counts: without them the quorums are the "
                            "lock group's record's");
      }
      const std::string what = " in [quorum]";
      c.only_keys(t, {"read", "write"}, what);
      if (auto r = c.integer(t, "read", false, 1, n, what)) config.read_quorum = static_cast<int>(*r);
      if (auto w = c.integer(t, "write", false, 1, n, what)) config.write_quorum = static_cast<int>(*w);
      // What the store would use: a majority when not given.
      const int64_t majority = n / 2 + 1;
      const int64_t r = config.read_quorum != 0 ? config.read_quorum : majority;
      const int64_t w = config.write_quorum != 0 ? config.write_quorum : majority;
      if (c.ok() && r + w <= n) {
        c.fail(t.source(), "read + write quorums (" + std::to_string(r) + " + " + std::to_string(w) +
                               ") must exceed the " + std::to_string(n) + " replicas, or reads may miss writes");
      }
      if (c.ok() && 2 * w <= n) {
        c.fail(t.source(), "the write quorum " + std::to_string(w) + " must be a majority of the " +
                               std::to_string(n) + " replicas");
      }
    }
  }

  if (const toml::node* tn = root.get("timing"); tn != nullptr && c.ok()) {
    if (!tn->is_table()) {
      c.fail(tn->source(), "'timing' must be a table, written [timing]");
    } else {
      const toml::table& t = *tn->as_table();
      const std::string what = " in [timing]";
      ClusterTiming& timing = config.timing;
      const std::pair<std::string_view, uint64_t*> fields[] = {
          {"session_lease_ms", &timing.session_lease_ms},   {"client_grace_ms", &timing.client_grace_ms},
          {"master_lease_ms", &timing.master_lease_ms},     {"heartbeat_ms", &timing.heartbeat_ms},
          {"election_timeout_ms", &timing.election_timeout_ms}, {"max_clock_drift_ppm", &timing.max_clock_drift_ppm},
      };
      c.only_keys(t,
                  {"session_lease_ms", "client_grace_ms", "master_lease_ms", "heartbeat_ms", "election_timeout_ms",
                   "max_clock_drift_ppm"},
                  what);
      for (const auto& [key, out] : fields) {
        const int64_t max = key == "max_clock_drift_ppm" ? 999'999 : int64_t{1} << 40;
        if (auto v = c.integer(t, key, false, 1, max, what)) *out = static_cast<uint64_t>(*v);
      }
      if (c.ok() && timing.heartbeat_ms >= timing.master_lease_ms) {
        c.fail(t.source(), "heartbeat_ms (" + std::to_string(timing.heartbeat_ms) +
                               ") must be below master_lease_ms (" + std::to_string(timing.master_lease_ms) +
                               "), or the master's lease lapses between heartbeats");
      }
      if (c.ok() && timing.election_timeout_ms < timing.heartbeat_ms) {
        c.fail(t.source(), "election_timeout_ms (" + std::to_string(timing.election_timeout_ms) +
                               ") must be at least heartbeat_ms (" + std::to_string(timing.heartbeat_ms) + ")");
      }
    }
  }
  if (!c.ok()) return c.status();
  return config;
}

Result<ClusterConfig> load_cluster_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status(Code::kStorageError, "cannot read cluster file " + path + ": it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kStorageError, "cannot read cluster file " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status(Code::kStorageError, "cannot read cluster file " + path + ": " + std::strerror(errno));
  return parse_cluster_config(ss.str(), path);
}

std::string format_cluster_config(const ClusterConfig& config) {
  auto quoted = [](const std::string& s) {
    std::ostringstream out;
    out << toml::value<std::string>(s);
    return out.str();
  };
  std::ostringstream out;
  if (!config.cluster_id.empty()) out << "cluster_id = " << quoted(cluster_id_hex(config.cluster_id)) << "\n";
  out << "group = " << quoted(config.group) << "\n";
  if (!config.key_file.empty()) out << "key_file = " << quoted(config.key_file) << "\n";
  if (!config.sequencer_public_key.empty()) {
    out << "sequencer_public_key = " << quoted(config.sequencer_public_key) << "\n";
  }
  if (!config.replica_key_file.empty()) out << "replica_key_file = " << quoted(config.replica_key_file) << "\n";
  auto list = [&](const std::vector<std::string>& items) {
    std::string text = "[";
    for (const std::string& item : items) text += (text.size() > 1 ? ", " : "") + quoted(item);
    return text + "]";
  };
  for (const Role& role : config.roles) {
    out << "\n[[role]]\nname = " << quoted(role.name) << "\n";
    const std::pair<const char*, const std::vector<std::string>*> lists[] = {
        {"locks", &role.locks},   {"shared_locks", &role.shared_locks}, {"read", &role.read}, {"write", &role.write},
        {"delete", &role.remove},
    };
    for (const auto& [key, patterns] : lists) {
      if (!patterns->empty()) out << key << " = " << list(*patterns) << "\n";
    }
    if (role.admin) out << "admin = true\n";
  }
  for (const Identity& id : config.identities) {
    out << "\n[[identity]]\nname = " << quoted(id.name) << "\nkeys = " << list(id.keys)
        << "\nroles = " << list(id.roles) << "\n";
  }
  auto identity_line = [&](const std::string& endpoint) {
    auto it = config.daemon_identity.find(endpoint);
    return it == config.daemon_identity.end() ? std::string() : "identity = " + quoted(it->second) + "\n";
  };
  for (const LockdNode& n : config.lockd) {
    out << "\n[[lockd]]\nid = " << n.id << "\nendpoint = " << quoted(n.endpoint) << "\n" << identity_line(n.endpoint);
  }
  for (const std::string& r : config.replicas) {
    out << "\n[[replica]]\nendpoint = " << quoted(r) << "\n" << identity_line(r);
  }
  for (const std::string& r : config.spare_replicas) {
    out << "\n[[replica]]\nendpoint = " << quoted(r) << "\nspare = true\n" << identity_line(r);
  }
  if (config.read_quorum != 0 || config.write_quorum != 0) {
    out << "\n[quorum]\n";
    if (config.read_quorum != 0) out << "read = " << config.read_quorum << "\n";
    if (config.write_quorum != 0) out << "write = " << config.write_quorum << "\n";
  }
  const ClusterTiming& t = config.timing;
  out << "\n[timing]\n"
      << "session_lease_ms = " << t.session_lease_ms << "\n"
      << "client_grace_ms = " << t.client_grace_ms << "\n"
      << "master_lease_ms = " << t.master_lease_ms << "\n"
      << "heartbeat_ms = " << t.heartbeat_ms << "\n"
      << "election_timeout_ms = " << t.election_timeout_ms << "\n"
      << "max_clock_drift_ppm = " << t.max_clock_drift_ppm << "\n";
  return out.str();
}

}  // namespace palisade
