// The metrics registry and its Prometheus text (metrics/registry.h), the
// --metrics-listen address, health answers, and the HTTP endpoint.
#include <catch2/catch.hpp>

#include <thread>

#include <httplib.h>

#include "metrics/health.h"
#include "metrics/http_server.h"
#include "metrics/listen_address.h"
#include "metrics/registry.h"

using namespace palisade;
using namespace palisade::metrics;

TEST_CASE("metrics: counters, gauges and histograms render in the text format 0.0.4", "[metrics]") {
  Registry r;
  auto& requests = r.counter("demo_requests_total", "Requests answered, by type and outcome", {"type", "outcome"});
  auto& epoch = r.gauge("demo_epoch", "The epoch");
  auto& latency = r.histogram("demo_latency_seconds", "Latency", {0.001, 0.5, 2});
  requests.with({"write", "ok"}).inc(3);
  requests.with({"read", "ok"}).inc();
  requests.with({"write", "fenced"}).inc();
  epoch.get().set(7);
  latency.get().observe(0.0005);
  latency.get().observe(0.001);  // a bound is inclusive: le="0.001"
  latency.get().observe(1);
  latency.get().observe(100);
  CHECK(r.render() == "# HELP demo_requests_total Requests answered, by type and outcome\n"
                      "# TYPE demo_requests_total counter\n"
                      "demo_requests_total{type=\"read\",outcome=\"ok\"} 1\n"
                      "demo_requests_total{type=\"write\",outcome=\"fenced\"} 1\n"
                      "demo_requests_total{type=\"write\",outcome=\"ok\"} 3\n"
                      "# HELP demo_epoch The epoch\n"
                      "# TYPE demo_epoch gauge\n"
                      "demo_epoch 7\n"
                      "# HELP demo_latency_seconds Latency\n"
                      "# TYPE demo_latency_seconds histogram\n"
                      "demo_latency_seconds_bucket{le=\"0.001\"} 2\n"
                      "demo_latency_seconds_bucket{le=\"0.5\"} 2\n"
                      "demo_latency_seconds_bucket{le=\"2\"} 3\n"
                      "demo_latency_seconds_bucket{le=\"+Inf\"} 4\n"
                      "demo_latency_seconds_sum 101.0015\n"
                      "demo_latency_seconds_count 4\n");
}

TEST_CASE("metrics: label values and help text are escaped", "[metrics]") {
  Registry r;
  r.counter("demo_total", "a \\ backslash\nand a \"quote\"", {"lock"}).with({"a\"b\\c\nd"}).inc();
  r.histogram("demo_seconds", "h", {1}, {"lock"}).with({"x\"y"}).observe(0.5);
  CHECK(r.render() == "# HELP demo_total a \\\\ backslash\\nand a \"quote\"\n"
                      "# TYPE demo_total counter\n"
                      "demo_total{lock=\"a\\\"b\\\\c\\nd\"} 1\n"
                      "# HELP demo_seconds h\n"
                      "# TYPE demo_seconds histogram\n"
                      "demo_seconds_bucket{lock=\"x\\\"y\",le=\"1\"} 1\n"
                      "demo_seconds_bucket{lock=\"x\\\"y\",le=\"+Inf\"} 1\n"
                      "demo_seconds_sum{lock=\"x\\\"y\"} 0.5\n"
                      "demo_seconds_count{lock=\"x\\\"y\"} 1\n");
}

TEST_CASE("metrics: past max_series, new label values share the _other series", "[metrics]") {
  Registry r;
  auto& fenced = r.counter("demo_fenced_total", "Fenced writes by lock", {"lock"}, 3);
  fenced.with({"a"}).inc();
  fenced.with({"b"}).inc();
  fenced.with({"c"}).inc();
  fenced.with({"d"}).inc(2);
  fenced.with({"a"}).inc();  // a series made before the cap keeps counting
  CHECK(&fenced.with({"c"}) == &fenced.with({"d"}));
  CHECK(r.render() == "# HELP demo_fenced_total Fenced writes by lock\n"
                      "# TYPE demo_fenced_total counter\n"
                      "demo_fenced_total{lock=\"_other\"} 3\n"
                      "demo_fenced_total{lock=\"a\"} 2\n"
                      "demo_fenced_total{lock=\"b\"} 1\n");
}

TEST_CASE("metrics: misuse is a logic_error at registration, not at update", "[metrics]") {
  Registry r;
  r.counter("demo_total", "x");
  CHECK_THROWS_AS(r.gauge("demo_total", "again"), std::logic_error);
  CHECK_THROWS_AS(r.histogram("demo_seconds", "h", {2, 1}), std::logic_error);
  auto& labelled = r.counter("demo_labelled_total", "x", {"a", "b"});
  CHECK_THROWS_AS(labelled.with({"only one"}), std::logic_error);
}

TEST_CASE("metrics: a counter copied from a count kept elsewhere never goes down", "[metrics]") {
  Counter c;
  c.advance_to(5);
  c.advance_to(3);
  CHECK(c.value() == 5);
  c.inc();
  CHECK(c.value() == 6);
}

TEST_CASE("metrics: a histogram read while observed stays cumulative, +Inf its count", "[metrics]") {
  Histogram h(power_of_two_buckets(64));
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 200000; ++i) h.observe(i % 100);
    done = true;
  });
  bool cumulative = true;
  while (!done) {
    Histogram::Snapshot s = h.snapshot();
    for (size_t i = 1; i < s.cumulative.size(); ++i) cumulative &= s.cumulative[i - 1] <= s.cumulative[i];
  }
  writer.join();
  CHECK(cumulative);
  CHECK(h.snapshot().cumulative.back() == 200000);
}

TEST_CASE("metrics: --metrics-listen addresses", "[metrics]") {
  auto ok = [](std::string_view text) {
    auto a = parse_listen_address(text);
    REQUIRE(a.is_ok());
    return std::pair(a.value().host, a.value().port);
  };
  CHECK(ok("127.0.0.1:9464") == std::pair<std::string, int>("127.0.0.1", 9464));
  CHECK(ok("[::1]:9464") == std::pair<std::string, int>("::1", 9464));
  CHECK(ok(":9464") == std::pair<std::string, int>("0.0.0.0", 9464));
  CHECK(ok("localhost:0") == std::pair<std::string, int>("localhost", 0));
  for (std::string_view bad :
       {"", "9464", "host:", "host:port", "host:70000", "host:-1", "::1:9464", "[::1:9464", "[]:9464", "host:94x"}) {
    INFO(bad);
    auto a = parse_listen_address(bad);
    CHECK(a.status().code() == Code::kBadRequest);
    CHECK_THAT(a.status().message(), Catch::Contains("HOST:PORT"));
  }
}

TEST_CASE("metrics: health says ready only when the loop turns and the daemon can serve", "[metrics]") {
  Health h(std::chrono::milliseconds(50));
  CHECK(h.healthz().ok);
  CHECK_FALSE(h.readyz().ok);
  CHECK(h.readyz().text == "starting");
  h.set_ready(false, "no master known");
  CHECK(h.readyz().text == "no master known");
  h.set_ready(true);
  CHECK(h.readyz().ok);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // longer than the stall allowed
  CHECK_FALSE(h.healthz().ok);
  CHECK_THAT(h.healthz().text, Catch::Contains("has not turned"));
  CHECK_FALSE(h.readyz().ok);
  h.turned();
  CHECK(h.healthz().ok);
  CHECK(h.readyz().ok);
}

TEST_CASE("metrics: the HTTP endpoint serves /metrics, /healthz and /readyz", "[metrics]") {
  Registry r;
  r.counter("demo_total", "x").get().inc(2);
  Health health;
  auto server = HttpServer::start({.host = "127.0.0.1", .port = 0}, r, health);
  REQUIRE(server.is_ok());
  httplib::Client client("127.0.0.1", server.value()->port());
  auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->status == 200);
  CHECK(metrics->get_header_value("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  CHECK_THAT(metrics->body, Catch::Contains("\ndemo_total 2\n"));
  CHECK(client.Get("/healthz")->status == 200);
  auto ready = client.Get("/readyz");
  CHECK(ready->status == 503);
  CHECK(ready->body == "starting\n");
  health.set_ready(true);
  CHECK(client.Get("/readyz")->status == 200);
  CHECK(client.Get("/nothing")->status == 404);

  SECTION("a taken port is an error that names it") {
    auto second = HttpServer::start({.host = "127.0.0.1", .port = server.value()->port()}, r, health);
    CHECK(second.status().code() == Code::kUnavailable);
    CHECK_THAT(second.status().message(), Catch::Contains(std::to_string(server.value()->port())));
  }
}

TEST_CASE("metrics: values kept elsewhere are read at each render", "[metrics]") {
  Registry r;
  std::atomic<uint64_t> refused{4};
  int64_t size = 10;
  r.counter_from("demo_refused_total", "kept elsewhere", [&] { return refused.load(); });
  GaugeFamily& bytes = r.gauge("demo_bytes", "read when scraped");
  r.before_render([&] { bytes.get().set(size); });
  CHECK(r.render() == "# HELP demo_refused_total kept elsewhere\n"
                      "# TYPE demo_refused_total counter\n"
                      "demo_refused_total 4\n"
                      "# HELP demo_bytes read when scraped\n"
                      "# TYPE demo_bytes gauge\n"
                      "demo_bytes 10\n");
  refused = 6;
  size = 3;
  const std::string text = r.render();
  CHECK_THAT(text, Catch::Contains("\ndemo_refused_total 6\n"));
  CHECK_THAT(text, Catch::Contains("\ndemo_bytes 3\n"));
}
