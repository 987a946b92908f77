#include "replica/receipts.h"

#include <sodium.h>

#include <algorithm>
#include <vector>

#include "base/big_endian.h"
#include "base/check.h"

namespace palisade::replica {
namespace {

constexpr std::string_view kPurpose = "palisade replica receipts v1";
static_assert(sizeof(wire::Receipt::mac) >= crypto_generichash_BYTES_MIN);

}  // namespace

Receipts::Receipts(const ClusterKey& cluster_key, std::string_view group, uint64_t replica_id)
    : key_(derive_key(cluster_key, kPurpose, group)), replica_id_(replica_id) {}

wire::Receipt Receipts::sign(uint64_t replica, std::string_view key, const FencedTimestamp& ts, uint64_t hash) const {
  uint8_t head[32];
  store_be64(head, replica);
  store_be64(head + 8, ts.token);
  store_be64(head + 16, ts.hlc);
  store_be64(head + 24, hash);
  wire::Receipt receipt{.replica = replica};
  keyed_mac(key_, {{reinterpret_cast<const char*>(head), sizeof head}, key}, receipt.mac.data(), receipt.mac.size());
  return receipt;
}

wire::Receipt Receipts::issue(std::string_view key, const FencedTimestamp& ts, uint64_t hash) const {
  return sign(replica_id_, key, ts, hash);
}

bool Receipts::proves(const wire::Certificate& certificate, std::string_view key, const FencedTimestamp& ts,
                      uint64_t hash, size_t needed) const {
  PALISADE_CHECK(needed >= 1);
  if (certificate.size() < needed) return false;
  std::vector<uint64_t> replicas;
  for (const wire::Receipt& r : certificate) {
    if (std::find(replicas.begin(), replicas.end(), r.replica) != replicas.end()) continue;
    const wire::Receipt expected = sign(r.replica, key, ts, hash);
    if (sodium_memcmp(expected.mac.data(), r.mac.data(), r.mac.size()) != 0) continue;
    replicas.push_back(r.replica);
  }
  return replicas.size() >= needed;
}

}  // namespace palisade::replica
