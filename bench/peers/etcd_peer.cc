// etcd as palisade-peer-bench measures it: a 3-member cluster reached through
// the v3 JSON gateway that every member serves on its client port (etcd has no
// C or C++ client; HTTP/1.1 with keep-alive from libcurl costs the client about
// what a gRPC call would). Client i talks to member i mod 3; each grants itself
// one lease at connect, as an etcd concurrency session does, and takes its
// locks with it through the v3 lock API (/v3/lock/lock waits in the server's
// queue; /v3/lock/unlock deletes the owner key). Keys and values are base64 in
// JSON. Reads are etcd's default, linearizable.
#include <curl/curl.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/peers/systems.h"

namespace palisade::bench::peers {
namespace {

using json = nlohmann::json;

// A lease outlives every level (no keepalive stream is needed) and is revoked when its client goes.
constexpr long kLeaseTtlSeconds = 600;
constexpr long kRequestTimeoutMs = std::chrono::milliseconds(kLockWait).count() + 5000;

std::string base64(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<uint8_t>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

size_t append_body(char* data, size_t size, size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

class EtcdClient : public PeerClient {
 public:
  explicit EtcdClient(const std::string& endpoint) : base_url_("http://" + endpoint) {
    curl_ = curl_easy_init();
    headers_ = curl_slist_append(nullptr, "Content-Type: application/json");
    if (curl_ == nullptr || headers_ == nullptr) throw std::runtime_error("libcurl: out of memory");
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &body_);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, kRequestTimeoutMs);
    curl_easy_setopt(curl_, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    json granted;
    if (Status s = post("/v3/lease/grant", {{"TTL", kLeaseTtlSeconds}}, granted); !s.is_ok() || !granted.contains("ID")) {
      cleanup();
      throw std::runtime_error("etcd lease grant at " + base_url_ + ": " + (s.is_ok() ? granted.dump() : s.to_string()));
    }
    lease_ = granted["ID"].get<std::string>();  // int64 as a JSON string
  }
  ~EtcdClient() override {
    json ignored;
    (void)post("/v3/lease/revoke", {{"ID", lease_}}, ignored);  // best effort, as a session's close
    cleanup();
  }
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  Status lock_cycle(const std::string& lock) override {
    json locked;
    if (Status s = post("/v3/lock/lock", {{"name", base64(lock)}, {"lease", lease_}}, locked); !s.is_ok()) return s;
    if (!locked.contains("key")) return Status(Code::kInternal, "lock: no key in " + locked.dump());
    json unlocked;
    return post("/v3/lock/unlock", {{"key", locked["key"]}}, unlocked);
  }

  Status put(const std::string& key, const std::string& value) override {
    json reply;
    return post("/v3/kv/put", {{"key", base64(key)}, {"value", base64(value)}}, reply);
  }

  Status get(const std::string& key) override {
    json reply;
    if (Status s = post("/v3/kv/range", {{"key", base64(key)}}, reply); !s.is_ok()) return s;
    if (!reply.contains("kvs") || reply["kvs"].empty()) return Status(Code::kInternal, "key not found: " + key);
    return Status::ok();
  }

 private:
  // POSTs `request` to `path`; ok with the decoded reply when etcd answered 200.
  Status post(const std::string& path, const json& request, json& reply) {
    const std::string url = base_url_ + path;
    const std::string text = request.dump();
    body_.clear();
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, text.c_str());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE, static_cast<long>(text.size()));
    if (CURLcode rc = curl_easy_perform(curl_); rc != CURLE_OK) {
      return Status(rc == CURLE_OPERATION_TIMEDOUT ? Code::kTimeout : Code::kUnavailable,
                    path + ": " + curl_easy_strerror(rc));
    }
    long http = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &http);
    if (http != 200) return Status(Code::kInternal, path + ": HTTP " + std::to_string(http) + " " + body_);
    reply = json::parse(body_, nullptr, false);
    if (reply.is_discarded()) return Status(Code::kMalformed, path + ": not JSON: " + body_);
    return Status::ok();
  }

  void cleanup() {
    curl_slist_free_all(headers_);
    curl_easy_cleanup(curl_);
  }

  std::string base_url_;
  CURL* curl_ = nullptr;
  curl_slist* headers_ = nullptr;
  std::string body_;
  std::string lease_;
};

class EtcdSystem : public PeerSystem {
 public:
  explicit EtcdSystem(std::vector<std::string> endpoints) : endpoints_(std::move(endpoints)) {
    static std::once_flag once;  // curl_global_init is not thread-safe; connect runs on many threads
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }
  std::string topology() const override {
    return std::to_string(endpoints_.size()) + " etcd members, v3 JSON gateway, client i on member i mod " +
           std::to_string(endpoints_.size());
  }
  std::unique_ptr<PeerClient> connect(int index) override {
    return std::make_unique<EtcdClient>(endpoints_[static_cast<size_t>(index) % endpoints_.size()]);
  }

 private:
  std::vector<std::string> endpoints_;
};

}  // namespace

std::unique_ptr<PeerSystem> make_etcd(const std::vector<std::string>& endpoints) {
  if (endpoints.empty()) throw std::invalid_argument("give the etcd members' client endpoints");
  return std::make_unique<EtcdSystem>(endpoints);
}

}  // namespace palisade::bench::peers
