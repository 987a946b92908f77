// A ReplicaStore in memory, for tests and the simulator: a "disk" that keeps
// what was committed and loses the open batch when its node crashes. Stores the
// same checksummed records as LmdbStore, so corruption can be injected.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "replica/store.h"

namespace palisade::replica {

class MemoryStore final : public ReplicaStore {
 public:
  Result<Versions> get(std::string_view key) override;
  Result<std::vector<std::string>> keys_in(std::string_view prefix, std::string_view after, size_t max) override;
  Result<uint64_t> fence_floor(std::string_view lock) override;
  Status apply(const Change& change) override;
  Status commit() override;
  void abort() override { batch_ = {}; }
  // By scanning every entry: this store is for tests and the simulator.
  Result<wire::TreeNode> tree_node(uint32_t level, uint64_t index) override;
  Status list_leaf(uint64_t leaf, std::vector<wire::LeafEntry>& out) override;
  Result<wire::ReplicaStats> stats(size_t max_floors) override;
  Result<std::string> config_certificate() override { return config_; }
  Status save_config_certificate(std::string_view text) override {
    config_ = text;
    return Status::ok();
  }
  // What list_leaf would list for the key, without the scan.
  Result<std::optional<uint64_t>> key_digest(std::string_view key) override;

  // The node crashed: what was not committed is gone.
  void crash() { abort(); }
  // Flips one bit of the key's committed record. Returns false when it has none.
  bool corrupt(std::string_view key);
  // The next commit fails like a disk that refuses to sync.
  void fail_next_commit() { fail_next_commit_ = true; }
  // apply() fails like a full disk once the stored records exceed this many bytes.
  void set_capacity_bytes(size_t bytes) { capacity_bytes_ = bytes; }

 private:
  struct State {
    std::map<std::string, std::optional<std::string>, std::less<>> records;  // nullopt: erased in the batch
    std::map<std::string, std::string, std::less<>> floors;  // lock -> floor record
  };
  std::optional<std::string> record(std::string_view key) const;
  // Every entry of the store as the batch sees it, unordered.
  std::vector<std::pair<uint64_t, wire::LeafEntry>> entries() const;
  size_t stored_bytes() const;

  State durable_;
  State batch_;  // overlay on durable_
  bool fail_next_commit_ = false;
  size_t capacity_bytes_ = SIZE_MAX;
  std::string config_;  // the config certificate
};

}  // namespace palisade::replica
