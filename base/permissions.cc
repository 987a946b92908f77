#include "base/permissions.h"

#include <algorithm>

namespace palisade {

bool glob_match(std::string_view pattern, std::string_view name) {
  // Greedy with one backtrack point, the last '*': linear in practice, and
  // never worse than |pattern| * |name|.
  size_t p = 0, n = 0;
  size_t star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool glob_covers_prefix(std::string_view pattern, std::string_view prefix) {
  // A pattern L* covers the prefix when L matches a start of it: whatever
  // follows that start, the last '*' takes.
  if (!pattern.ends_with('*')) return false;
  pattern.remove_suffix(1);
  for (size_t n = 0; n <= prefix.size(); ++n) {
    if (glob_match(pattern, prefix.substr(0, n))) return true;
  }
  return false;
}

Permissions::Permissions(std::vector<Role> roles, std::map<std::string, std::vector<std::string>> identity_roles) {
  for (Role& r : roles) {
    std::string name = r.name;
    roles_.emplace(std::move(name), std::move(r));
  }
  for (auto& [identity, names] : identity_roles) identity_roles_.emplace(identity, std::move(names));
}

bool Permissions::has_built_in(std::string_view identity, std::string_view role) const {
  auto it = identity_roles_.find(identity);
  return it != identity_roles_.end() && std::find(it->second.begin(), it->second.end(), role) != it->second.end();
}

std::vector<const Role*> Permissions::roles_of(std::string_view identity) const {
  std::vector<const Role*> out;
  auto it = identity_roles_.find(identity);
  if (it == identity_roles_.end()) return out;
  for (const std::string& name : it->second) {
    if (auto role = roles_.find(name); role != roles_.end()) out.push_back(&role->second);
  }
  return out;
}

template <typename Patterns, typename Matches>
bool Permissions::any_pattern(std::string_view identity, Patterns patterns, Matches matches) const {
  if (!configured() || is_admin(identity)) return true;
  for (const Role* role : roles_of(identity)) {
    for (const std::string& pattern : patterns(*role)) {
      if (matches(pattern)) return true;
    }
  }
  return false;
}

bool Permissions::may_acquire(std::string_view identity, std::string_view lock, LockMode mode) const {
  if (any_role(
          identity, lock, [](const Role& r) -> const auto& { return r.locks; }))
    return true;
  return mode == LockMode::kShared && any_role(
                                          identity, lock, [](const Role& r) -> const auto& { return r.shared_locks; });
}

bool Permissions::may_read(std::string_view identity, std::string_view key) const {
  return any_role(
      identity, key, [](const Role& r) -> const auto& { return r.read; });
}

bool Permissions::may_read_prefix(std::string_view identity, std::string_view prefix) const {
  return any_pattern(
      identity, [](const Role& r) -> const auto& { return r.read; },
      [prefix](std::string_view pattern) { return glob_covers_prefix(pattern, prefix); });
}

bool Permissions::may_write(std::string_view identity, std::string_view key) const {
  return any_role(
      identity, key, [](const Role& r) -> const auto& { return r.write; });
}

bool Permissions::may_delete(std::string_view identity, std::string_view key) const {
  return any_role(
      identity, key, [](const Role& r) -> const auto& { return r.remove; });
}

bool Permissions::is_admin(std::string_view identity) const {
  if (has_built_in(identity, "admin")) return true;
  for (const Role* role : roles_of(identity)) {
    if (role->admin) return true;
  }
  return false;
}

bool Permissions::may_repair(std::string_view identity) const {
  return is_admin(identity) || has_built_in(identity, "replica");
}

}  // namespace palisade
