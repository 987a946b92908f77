// Registry::render: the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
#include <charconv>
#include <cmath>

#include "metrics/registry.h"

namespace palisade::metrics {

namespace {

// HELP text escapes backslash and newline; label values the double quote too.
std::string escaped(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

// The shortest text that reads back as `v`; Prometheus' names for the
// infinities and NaN.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

// {a="x",b="y"} with `extra` (le="...") last; empty without labels.
std::string label_set(const std::vector<std::string>& names, const std::vector<std::string>& values,
                      std::string_view extra = {}) {
  if (names.empty() && extra.empty()) return {};
  std::string out = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i] + "=\"" + escaped(values[i], true) + '"';
  }
  if (!extra.empty()) {
    if (!names.empty()) out += ',';
    out += extra;
  }
  return out + '}';
}

template <typename T>
void header(std::string& out, const Family<T>& family, std::string_view type) {
  out += "# HELP " + family.name() + ' ' + escaped(family.help(), false) + '\n';
  out += "# TYPE " + family.name() + ' ' + std::string(type) + '\n';
}

void render_family(std::string& out, const CounterFamily& family) {
  header(out, family, "counter");
  family.each([&](const std::vector<std::string>& values, const Counter& c) {
    out += family.name() + label_set(family.labels(), values) + ' ' + std::to_string(c.value()) + '\n';
  });
}

void render_family(std::string& out, const GaugeFamily& family) {
  header(out, family, "gauge");
  family.each([&](const std::vector<std::string>& values, const Gauge& g) {
    out += family.name() + label_set(family.labels(), values) + ' ' + std::to_string(g.value()) + '\n';
  });
}

void render_family(std::string& out, const HistogramFamily& family) {
  header(out, family, "histogram");
  family.each([&](const std::vector<std::string>& values, const Histogram& h) {
    const Histogram::Snapshot s = h.snapshot();
    for (size_t i = 0; i < s.cumulative.size(); ++i) {
      const double bound = i < h.bounds().size() ? h.bounds()[i] : INFINITY;
      out += family.name() + "_bucket" + label_set(family.labels(), values, "le=\"" + number(bound) + '"') + ' ' +
             std::to_string(s.cumulative[i]) + '\n';
    }
    const std::string labels = label_set(family.labels(), values);
    out += family.name() + "_sum" + labels + ' ' + number(s.sum) + '\n';
    out += family.name() + "_count" + labels + ' ' + std::to_string(s.cumulative.back()) + '\n';
  });
}

}  // namespace

std::string Registry::render() const {
  std::lock_guard lock(mutex_);
  for (const auto& collect : collectors_) collect();
  std::string out;
  for (const Entry& e : order_) {
    switch (e.type) {
      case Type::kCounter:
        render_family(out, counters_[e.index]);
        break;
      case Type::kGauge:
        render_family(out, gauges_[e.index]);
        break;
      case Type::kHistogram:
        render_family(out, histograms_[e.index]);
        break;
    }
  }
  return out;
}

}  // namespace palisade::metrics
