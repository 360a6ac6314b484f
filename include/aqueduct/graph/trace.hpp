// aqueduct/graph/trace.hpp — `trace`: Chrome trace JSON (chrome://tracing, Perfetto) of eager
// runs and graph replays.
//
// Layer: graph. Events are spans on a timeline in nanoseconds of one clock: pid = the agent (its
// gpu_id; 0 = the host), tid = the queue (its queue id); spans of one queue that overlap (AQL
// kernels run concurrently unless ordered) go to lanes "queue N lane k" so none hides another.
// A flow arrow joins the host call that submitted work (a launch, an eager co_await) to each of
// its device spans. Device spans of a replay come from the device: an AQL kernel's completion
// signal start_ts/end_ts (written by the packet processor), PM4 RELEASE_MEM timestamps and SDMA
// TIMESTAMP packets around the node (exec_graph with instantiate_options::trace), all GPU clock
// counter ticks translated to the host's steady_clock by the agent's calibration
// (runtime/device_clock.hpp), so host and device spans line up — see docs/graph.md.
// Thread safety: one thread adds events; to_json any time after.
#pragma once

#include <aqueduct/core/result.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::graph {

class trace {
 public:
  struct span {
    std::string name;
    std::string category;  // "host", "kernel", "copy", ...
    std::uint32_t pid = 0;  // gpu_id (0: host)
    std::uint32_t tid = 0;  // queue id (host: 0)
    std::uint64_t start_ns = 0, end_ns = 0;
    std::uint64_t flow = 0;  // 0: none; else the host span's flow id this span belongs to
    std::string args;        // extra JSON members ("\"node\": 3, ...") or empty
  };

  // A host span (a launch, an eager co_await); returns its flow id for the device spans it caused.
  std::uint64_t host(std::string name, std::uint64_t start_ns, std::uint64_t end_ns) {
    const std::uint64_t id = ++flows_;
    spans_.push_back(span{std::move(name), "host", 0, 0, start_ns, end_ns, id, {}});
    host_of_flow_.push_back(spans_.size() - 1);
    return id;
  }
  void device(span s) { spans_.push_back(std::move(s)); }
  void name_process(std::uint32_t pid, std::string name) {
    for (const auto& p : pnames_)
      if (p.first == pid) return;
    pnames_.emplace_back(pid, std::move(name));
  }
  void name_thread(std::uint32_t pid, std::uint32_t tid, std::string name) {
    for (const auto& t : tnames_)
      if (t.pid == pid && t.tid == tid) return;
    tnames_.push_back({pid, tid, std::move(name)});
  }
  [[nodiscard]] const std::vector<span>& spans() const noexcept { return spans_; }
  [[nodiscard]] bool empty() const noexcept { return spans_.empty(); }
  void clear() noexcept {
    spans_.clear();
    host_of_flow_.clear();
  }

  // {"traceEvents": [...]}: complete events ("ph":"X", ts/dur in µs), metadata names, flow
  // arrows ("ph":"s" at the host span's end, "ph":"f" at the device span's start).
  [[nodiscard]] std::string to_json() const {
    std::uint64_t t0 = ~std::uint64_t{0};
    for (const span& s : spans_) t0 = std::min(t0, s.start_ns);
    if (spans_.empty()) t0 = 0;
    // Lanes: per (pid, tid), spans that overlap an earlier one move to the next free lane.
    std::vector<std::uint32_t> lane(spans_.size(), 0);
    {
      std::vector<std::size_t> order(spans_.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return spans_[a].start_ns < spans_[b].start_ns; });
      struct busy {
        std::uint32_t pid, tid;
        std::vector<std::uint64_t> until;  // per lane
      };
      std::vector<busy> b;
      for (std::size_t i : order) {
        const span& s = spans_[i];
        busy* q = nullptr;
        for (auto& x : b)
          if (x.pid == s.pid && x.tid == s.tid) q = &x;
        if (!q) q = &b.emplace_back(busy{s.pid, s.tid, {}});
        std::uint32_t l = 0;
        while (l < q->until.size() && q->until[l] > s.start_ns) ++l;
        if (l == q->until.size()) q->until.push_back(0);
        q->until[l] = s.end_ns;
        lane[i] = l;
      }
    }
    const auto tid_of = [&](std::size_t i) { return spans_[i].tid * 16 + lane[i]; };
    std::string o = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    bool first = true;
    const auto item = [&](const std::string& e) {
      o += first ? "  " : ",\n  ";
      o += e;
      first = false;
    };
    char buf[160];
    for (const auto& [pid, n] : pnames_)
      item("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) + ",\"args\":{\"name\":\"" + escape(n) + "\"}}");
    for (const auto& t : tnames_)
      for (std::uint32_t l = 0; l < 16; ++l) {
        bool used = false;
        for (std::size_t i = 0; i < spans_.size(); ++i) used |= spans_[i].pid == t.pid && spans_[i].tid == t.tid && lane[i] == l;
        if (!used && l) continue;
        item("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(t.pid) + ",\"tid\":" + std::to_string(t.tid * 16 + l) +
             ",\"args\":{\"name\":\"" + escape(t.name + (l ? " lane " + std::to_string(l) : "")) + "\"}}");
      }
    for (std::size_t i = 0; i < spans_.size(); ++i) {
      const span& s = spans_[i];
      std::snprintf(buf, sizeof buf, "\"ts\":%.3f,\"dur\":%.3f", (s.start_ns - t0) / 1e3,
                    (s.end_ns > s.start_ns ? s.end_ns - s.start_ns : 0) / 1e3);
      std::string e = "{\"ph\":\"X\",\"name\":\"" + escape(s.name) + "\",\"cat\":\"" + escape(s.category) + "\",\"pid\":" +
                      std::to_string(s.pid) + ",\"tid\":" + std::to_string(tid_of(i)) + "," + buf;
      if (!s.args.empty()) e += ",\"args\":{" + s.args + "}";
      item(e + "}");
      if (s.flow && s.category != "host" && s.flow <= host_of_flow_.size()) {
        const span& h = spans_[host_of_flow_[s.flow - 1]];
        std::snprintf(buf, sizeof buf, "\"ts\":%.3f", (h.end_ns - t0) / 1e3);
        item("{\"ph\":\"s\",\"id\":" + std::to_string(i + 1) + ",\"name\":\"submit\",\"cat\":\"flow\",\"pid\":0,\"tid\":0," + buf + "}");
        std::snprintf(buf, sizeof buf, "\"ts\":%.3f", (s.start_ns - t0) / 1e3);
        item("{\"ph\":\"f\",\"bp\":\"e\",\"id\":" + std::to_string(i + 1) + ",\"name\":\"submit\",\"cat\":\"flow\",\"pid\":" +
             std::to_string(s.pid) + ",\"tid\":" + std::to_string(tid_of(i)) + "," + buf + "}");
      }
    }
    o += "\n]}\n";
    return o;
  }
  [[nodiscard]] result<void> try_write(const std::string& path) const {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
      const int e = errno;
      return failure(errc::io_error, "cannot write the trace to " + path + ": " + std::strerror(e), e);
    }
    const std::string j = to_json();
    const bool wrote = std::fwrite(j.data(), 1, j.size(), f) == j.size();
    const int e = errno;
    if (std::fclose(f) != 0 || !wrote) return failure(errc::io_error, "writing the trace to " + path + " failed: " + std::strerror(e), e);
    return ok();
  }

 private:
  static std::string escape(std::string_view v) {
    std::string r;
    for (char c : v) {
      if (c == '"' || c == '\\') r += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;
      r += c;
    }
    return r;
  }
  struct tname {
    std::uint32_t pid, tid;
    std::string name;
  };
  std::vector<span> spans_;
  std::vector<std::size_t> host_of_flow_;
  std::vector<std::pair<std::uint32_t, std::string>> pnames_;
  std::vector<tname> tnames_;
  std::uint64_t flows_ = 0;
};

}  // namespace aqueduct::graph
