// The replica set's record as the real lock group keeps it (the lock
// simulation's): get_replicas and set_replicas over the simulated network,
// as `palisade member` sends them (cli/member_change.h): to the master a
// reply names, else to the next node, each try answered within a timeout.
// A set_replicas whose answer is lost may have been recorded all the same;
// its try again is then refused stale, as the command's would be.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "tests/sim/replica_record.h"
#include "tests/sim/world.h"
#include "wire/lock_protocol.h"

namespace palisade::sim {

class LockGroupRecord final : public ReplicaRecord {
 public:
  struct Options {
    int node = 0;  // its world node
    int lockd_base = 0;  // lockd i (from 1) is world node lockd_base + i
    int lockd = 0;  // lockd nodes, spares included
    uint64_t timeout_ms = 1000;  // per try
    int tries = 12;  // then Unavailable
  };
  LockGroupRecord(World& world, Options options);

  void get(Done done) override;
  void set(uint64_t replaces, const wire::ReplicaSet& next, Done done) override;
  bool shared() const override { return true; }

 private:
  struct Call {
    wire::LockRequestBody body;
    Done done;
    int tries = 0;
    int lockd = 1;  // asked last
    bool over = false;
  };
  void start(wire::LockRequestBody body, Done done);
  void send(const std::shared_ptr<Call>& call);
  void receive(int from, const std::string& bytes);
  // Gives `call` to the next node, or gives up after Options::tries.
  void again(const std::shared_ptr<Call>& call, int lockd);

  World& world_;
  Options o_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::shared_ptr<Call>> waiting_;  // by request id, one per try
};

}  // namespace palisade::sim
