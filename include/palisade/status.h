// Status and Result: how palisade reports what the world did to a call.
// Bugs are not Statuses: they fail an assertion (see check.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace palisade {

// An error code exists only where some caller reacts to it differently.
enum class Code : uint8_t {
  kOk,
  kMalformed,  // not MessagePack, trailing bytes, not a map, duplicate fields
  kBadRequest,  // missing, mistyped or unknown field, or a value out of range
  kUnknownType,  // a message type this node does not serve
  kUnsupportedVersion,  // protocol version this node does not speak
  kTooLarge,  // message, key, value or lock name over its limit
  kFenced,  // the write's token is below the lock's fence floor
  kStale,  // a newer version is already stored
  kCorrupt,  // a stored value failed its checksum
  kClockSkew,  // a remote timestamp is too far ahead of local time
  kStorageError,  // the disk refused (full, I/O error)
  kUnavailable,  // too few nodes answered
  kTimeout,  // no answer in time: the outcome is unknown
  kBadSequencer,  // a sequencer failed its MAC, names another group, or does not match the write
  kNotMaster,  // this lock node is not the master: ask the one the reply names
  kStaleEpoch,  // the call carried an older epoch than the master's: a failover happened
  kNoSession,  // the session expired or was closed: its leases are void
  kBusy,  // the lock is held by another session, or in lock-delay
  kInternal,  // a bug on the answering side
  kWrongCluster,  // the daemon belongs to another cluster than the caller's (cluster_id)
  kCancelled,  // the caller cancelled the call (client side only)
  kPermissionDenied,  // the caller's identity may not do this; nothing was applied
  kStaleConfig,  // the request named an older replica set than the replica's (the reply carries it)
  kUnknownConfig,  // the request named a replica set the replica has not installed yet
};
// How many codes there are: every code's value is below it (base/status.cc
// checks that each has a name). A new code goes last, and moves this.
inline constexpr size_t kCodeCount = static_cast<size_t>(Code::kUnknownConfig) + 1;

// The wire name of a code ("fenced", "stale", ...): docs/protocol.md lists them.
std::string_view code_name(Code code);
// Parses a wire name; nullopt when it is not one.
std::optional<Code> code_from_name(std::string_view name);

// [[nodiscard]]: a dropped Status is an error nobody saw (issue #25).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "fenced: token 4 is below the fence floor 7 of lock 'x'"
  std::string to_string() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that explains its absence.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Status status) : v_(std::move(status)) {}

  bool is_ok() const { return v_.index() == 0; }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  Status status() const { return is_ok() ? Status::ok() : std::get<1>(v_); }
  Code code() const { return is_ok() ? Code::kOk : std::get<1>(v_).code(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace palisade
