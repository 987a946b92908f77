// What each identity may do (docs/security.md "Permissions"): the cluster
// file's [[role]] tables and the roles its identities name, checked by the
// lock group (acquires, sessions, status) and the replicas (reads, writes,
// deletes, repair). Pure: no I/O, no third-party library.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "palisade/lock_mode.h"

namespace palisade {

// A [[role]] table. Patterns are globs: '*' matches any run of characters
// ('/' too), '?' any one; a pattern without them names one lock or key, and
// "jobs/*" is the prefix "jobs/".
struct Role {
  std::string name{};
  std::vector<std::string> locks{};  // may acquire, exclusive or shared
  std::vector<std::string> shared_locks{};  // may acquire shared only
  std::vector<std::string> read{};  // keys it may get
  std::vector<std::string> write{};  // keys it may put
  std::vector<std::string> remove{};  // keys it may delete ("delete" in the file)
  bool admin = false;  // everything, repair and the whole status included
  friend bool operator==(const Role&, const Role&) = default;
};

// The roles the cluster file need not define. admin: everything; replica: a
// replica peer (repairs, tombstone drops, anti-entropy's reads); lockd: a
// lock-group peer (no client calls once permissions are configured).
inline constexpr std::string_view kBuiltInRoles[] = {"lockd", "replica", "admin"};

// Whether `name` matches the glob `pattern` (see Role).
bool glob_match(std::string_view pattern, std::string_view name);
// Whether `pattern` matches every name that starts with `prefix` ("jobs/*"
// covers "jobs/" and "jobs/a", "*" every prefix, "jobs/a" none).
bool glob_covers_prefix(std::string_view pattern, std::string_view prefix);

class Permissions {
 public:
  // Nothing configured: every identity may make every client call; only
  // repair stays with the replica and admin roles.
  Permissions() = default;
  // `roles`: the [[role]] tables (none: nothing configured, as above);
  // `identity_roles`: each identity's role names (built-in or of `roles`).
  Permissions(std::vector<Role> roles, std::map<std::string, std::vector<std::string>> identity_roles);

  // Whether any [[role]] is defined: then whatever no role allows is denied.
  bool configured() const { return !roles_.empty(); }

  bool may_acquire(std::string_view identity, std::string_view lock, LockMode mode) const;
  bool may_read(std::string_view identity, std::string_view key) const;
  // Every key that starts with `prefix` (a prefix read): one pattern must
  // cover them all (glob_covers_prefix).
  bool may_read_prefix(std::string_view identity, std::string_view prefix) const;
  bool may_write(std::string_view identity, std::string_view key) const;
  bool may_delete(std::string_view identity, std::string_view key) const;
  // The admin role, or a [[role]] with admin = true.
  bool is_admin(std::string_view identity) const;
  // Repairs (sealed copies and commits) and tombstone drops: the replica and
  // admin roles, configured or not.
  bool may_repair(std::string_view identity) const;
  // The whole status, replica stats, comparing replicas (anti-entropy's
  // reads): anyone while nothing is configured, then repairers only.
  bool may_inspect(std::string_view identity) const { return !configured() || may_repair(identity); }

  friend bool operator==(const Permissions&, const Permissions&) = default;

 private:
  // The roles of `identity` that are [[role]] tables, admin's included.
  std::vector<const Role*> roles_of(std::string_view identity) const;
  bool has_built_in(std::string_view identity, std::string_view role) const;
  // Whether a pattern of `patterns(role)`, of a role of `identity`, passes `matches`.
  template <typename Patterns, typename Matches>
  bool any_pattern(std::string_view identity, Patterns patterns, Matches matches) const;
  template <typename Patterns>
  bool any_role(std::string_view identity, std::string_view name, Patterns patterns) const {
    return any_pattern(identity, patterns, [name](std::string_view pattern) { return glob_match(pattern, name); });
  }

  std::map<std::string, Role, std::less<>> roles_;
  std::map<std::string, std::vector<std::string>, std::less<>> identity_roles_;
};

}  // namespace palisade
