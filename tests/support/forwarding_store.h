// A ReplicaStore that hands every call to a MemoryStore: tests derive from it
// and override the one call they break (a disk that forgets floors, an apply
// that throws).
#pragma once

#include "replica/memory_store.h"

namespace palisade::test {

class ForwardingStore : public replica::ReplicaStore {
 public:
  Result<replica::Versions> get(std::string_view key) override { return inner.get(key); }
  Result<std::vector<std::string>> keys_in(std::string_view prefix, std::string_view after, size_t max) override {
    return inner.keys_in(prefix, after, max);
  }
  Result<uint64_t> fence_floor(std::string_view lock) override { return inner.fence_floor(lock); }
  Status apply(const replica::Change& c) override { return inner.apply(c); }
  Status commit() override { return inner.commit(); }
  void abort() override { inner.abort(); }
  Result<wire::TreeNode> tree_node(uint32_t level, uint64_t index) override { return inner.tree_node(level, index); }
  Status list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) override { return inner.list_leaf(leaf, out); }
  Result<wire::ReplicaStats> stats(size_t max_floors) override { return inner.stats(max_floors); }
  Result<std::string> config_certificate() override { return inner.config_certificate(); }
  Status save_config_certificate(std::string_view t) override { return inner.save_config_certificate(t); }

  replica::MemoryStore inner;
};

}  // namespace palisade::test
