// aqueduct/emu/fault_plan.hpp — fault injection on the emulated device: which faults fire, when,
// and the injector the device and its engines consult.
//
// Layer: emu. A `fault_plan` is part of machine_config (the API), or parsed from
// $AQUEDUCT_EMU_FAULTS when a device is created (so any program can run under it). Faults:
//   memory        a data access of a kernel or of an SDMA copy faults, as an unmapped page would
//                 (the engine stops the queue with the address);
//   hang          a data access never returns — a kernel or copy that never finishes — until its
//                 queue is destroyed or the device reset (it then faults and unwinds: no thread
//                 is left behind);
//   irq           an interrupt an engine raises is lost: the completion is written, the KFD
//                 event is not signalled (waiters block in bounded slices, so they still see it);
//   create_queue  CREATE_QUEUE fails with one of `create_queue_errnos` after its checks passed;
//   alloc         ALLOC_MEMORY_OF_GPU fails with one of `alloc_errnos` after its checks passed;
//   reset         a GPU reset: every queue of the process stops with errc::device_reset (rolled
//                 at each interrupt an engine raises; also device::reset() on demand);
// plus `preempt` (AQL and PM4 queues are preempted — CWSR save and restore — on a timer of that
// period; SDMA queues too — their ring read pointer saved to the MQD and restored, emu/sdma_engine.hpp)
// and `doorbells` (doorbells per process and GPU; CREATE_QUEUE past them fails with EBUSY as
// KFD's allocate_doorbell does). The other exhaustion knobs are machine_config's
// (sdma_queues_per_engine, max_queues_per_process, max_queues_per_device).
// Each rule fires with probability p at every event of its kind ("memory=0.001"), or exactly at
// the n-th event, once ("memory=#3"). The whole plan in text:
//   "seed=7,memory=0.001,hang=#2,irq=0.05,create_queue=0.1:ENOMEM|ENOSPC,alloc=0.01,reset=1e-5,
//    preempt=500us,doorbells=8"
// The injector counts events and injected faults per kind (fault_counts), for soak summaries.
// Thread safety: fault_plan is a value; fault_injector is internally synchronized.
#pragma once

#include <aqueduct/core/result.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::emu {

enum class fault_kind : std::uint8_t { memory, hang, irq, create_queue, alloc, reset };
inline constexpr std::size_t fault_kind_count = 6;
[[nodiscard]] constexpr const char* fault_kind_name(fault_kind k) noexcept {
  constexpr const char* names[fault_kind_count] = {"memory", "hang", "irq", "create_queue", "alloc", "reset"};
  return names[static_cast<std::size_t>(k)];
}

// When one kind of fault fires: with `probability` at each event, or at event `nth` (1-based), once.
struct fault_rule {
  double probability = 0;
  std::uint64_t nth = 0;
  [[nodiscard]] bool enabled() const noexcept { return probability > 0 || nth != 0; }
};

// Set (non-empty, not "0"): the fault plan of every emu::device created afterwards, in the text
// form above (it replaces the machine_config's plan).
inline constexpr const char* faults_env = "AQUEDUCT_EMU_FAULTS";

struct fault_plan {
  std::uint64_t seed = 0;  // 0: a fixed default (runs repeat); set one to vary them
  std::array<fault_rule, fault_kind_count> rules{};
  std::vector<int> create_queue_errnos{ENOMEM};  // picked in turn
  std::vector<int> alloc_errnos{ENOMEM};
  std::chrono::microseconds preempt{0};  // AQL, PM4 and SDMA queues: preempted every period (0: never)
  std::uint32_t doorbells = 0;           // per process and GPU (0: KFD's 1024)

  [[nodiscard]] fault_rule& operator[](fault_kind k) noexcept { return rules[static_cast<std::size_t>(k)]; }
  [[nodiscard]] const fault_rule& operator[](fault_kind k) const noexcept { return rules[static_cast<std::size_t>(k)]; }
  [[nodiscard]] bool any() const noexcept {
    for (const auto& r : rules)
      if (r.enabled()) return true;
    return preempt.count() != 0 || doorbells != 0;
  }

  // The text form (see the header comment). errc::invalid_argument names the item and says why.
  [[nodiscard]] static result<fault_plan> try_parse(std::string_view text) {
    fault_plan p;
    while (!text.empty()) {
      const auto comma = text.find(',');
      const std::string_view item = text.substr(0, comma);
      text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
      if (item.empty()) continue;
      const auto eq = item.find('=');
      auto bad = [&](const std::string& why) {
        return failure(errc::invalid_argument, std::string(faults_env) + ": '" + std::string(item) + "': " + why +
                                                   " (e.g. seed=7,memory=0.001,hang=#2,irq=0.05,"
                                                   "create_queue=0.1:ENOMEM|ENOSPC,alloc=0.01,reset=1e-5,"
                                                   "preempt=500us,doorbells=8)");
      };
      if (eq == std::string_view::npos) return bad("expected name=value");
      const std::string_view name = item.substr(0, eq);
      std::string_view value = item.substr(eq + 1);
      if (name == "seed") {
        if (!parse_uint(value, p.seed)) return bad("seed is a decimal integer");
        continue;
      }
      if (name == "doorbells") {
        std::uint64_t n = 0;
        if (!parse_uint(value, n) || n == 0 || n > 1024) return bad("doorbells is 1..1024");
        p.doorbells = static_cast<std::uint32_t>(n);
        continue;
      }
      if (name == "preempt") {
        std::uint64_t us = 0;
        const bool ms = value.ends_with("ms"), micro = value.ends_with("us");
        if (!(ms || micro) || !parse_uint(value.substr(0, value.size() - 2), us) || us == 0)
          return bad("preempt is a period such as 500us or 2ms");
        p.preempt = std::chrono::microseconds(ms ? us * 1000 : us);
        continue;
      }
      int kind = -1;
      for (std::size_t k = 0; k < fault_kind_count; ++k)
        if (name == fault_kind_name(static_cast<fault_kind>(k))) kind = static_cast<int>(k);
      if (kind < 0) return bad("unknown fault (memory, hang, irq, create_queue, alloc, reset, preempt, doorbells, seed)");
      std::vector<int>* errnos = kind == int(fault_kind::create_queue) ? &p.create_queue_errnos
                                 : kind == int(fault_kind::alloc)      ? &p.alloc_errnos
                                                                       : nullptr;
      if (const auto colon = value.find(':'); colon != std::string_view::npos) {
        if (!errnos) return bad("only create_queue and alloc take errnos");
        errnos->clear();
        std::string_view list = value.substr(colon + 1);
        value = value.substr(0, colon);
        while (!list.empty()) {
          const auto bar = list.find('|');
          const int e = errno_of(list.substr(0, bar));
          if (e == 0) return bad("unknown errno '" + std::string(list.substr(0, bar)) + "'");
          errnos->push_back(e);
          list = bar == std::string_view::npos ? std::string_view{} : list.substr(bar + 1);
        }
        if (errnos->empty()) return bad("no errno after ':'");
      }
      fault_rule& r = p.rules[static_cast<std::size_t>(kind)];
      if (value.starts_with('#')) {
        if (!parse_uint(value.substr(1), r.nth) || r.nth == 0) return bad("#N needs N >= 1");
      } else {
        const std::string v(value);
        char* end = nullptr;
        r.probability = std::strtod(v.c_str(), &end);
        if (v.empty() || end != v.c_str() + v.size() || !(r.probability >= 0 && r.probability <= 1))
          return bad("a probability in [0, 1] or #N");
      }
    }
    return p;
  }

  // The errnos the text form names (what CREATE_QUEUE and ALLOC_MEMORY_OF_GPU return, spec/kfd.md
  // §2.10 and §5.2), 0 for another name.
  [[nodiscard]] static int errno_of(std::string_view n) noexcept {
    struct entry {
      std::string_view name;
      int value;
    };
    static constexpr entry known[] = {{"EINVAL", EINVAL}, {"ENOMEM", ENOMEM}, {"ENOSPC", ENOSPC}, {"EPERM", EPERM},
                                      {"EFAULT", EFAULT}, {"EBUSY", EBUSY},   {"ESRCH", ESRCH},   {"ENODEV", ENODEV},
                                      {"EADDRINUSE", EADDRINUSE}, {"ENOTSUPP", 524}};
    for (const auto& e : known)
      if (e.name == n) return e.value;
    return 0;
  }

 private:
  static bool parse_uint(std::string_view s, std::uint64_t& out) noexcept {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc{} && ptr == s.data() + s.size();
  }
};

// Events seen and faults injected, per kind.
struct fault_counts {
  std::array<std::uint64_t, fault_kind_count> events{};
  std::array<std::uint64_t, fault_kind_count> injected{};
  [[nodiscard]] std::uint64_t operator[](fault_kind k) const noexcept { return injected[static_cast<std::size_t>(k)]; }
  [[nodiscard]] std::uint64_t total() const noexcept {
    std::uint64_t n = 0;
    for (auto v : injected) n += v;
    return n;
  }
  // "memory 3/120000, hang 1/120000, irq 0/5000 ..." (injected/events of the enabled kinds).
  [[nodiscard]] std::string describe() const {
    std::string s;
    for (std::size_t k = 0; k < fault_kind_count; ++k) {
      if (!s.empty()) s += ", ";
      s += std::string(fault_kind_name(static_cast<fault_kind>(k))) + " " + std::to_string(injected[k]) + "/" +
           std::to_string(events[k]);
    }
    return s;
  }
};

// The plan in force on one device: decides each event, counts, and runs the device's reset.
class fault_injector {
 public:
  explicit fault_injector(fault_plan p = {}) : plan_(std::move(p)), rng_(plan_.seed ? plan_.seed : 0x5eed'ae13'0d0c'0001ull) {}
  fault_injector(const fault_injector&) = delete;
  fault_injector& operator=(const fault_injector&) = delete;

  [[nodiscard]] const fault_plan& plan() const noexcept { return plan_; }
  [[nodiscard]] bool enabled(fault_kind k) const noexcept { return plan_[k].enabled(); }

  // One event of kind `k`: true when the plan says it faults (counted as injected).
  [[nodiscard]] bool fire(fault_kind k) noexcept {
    const fault_rule& r = plan_[k];
    if (!r.enabled()) return false;
    const std::size_t i = static_cast<std::size_t>(k);
    const std::uint64_t n = events_[i].fetch_add(1, std::memory_order_relaxed) + 1;
    bool yes = r.nth != 0 && n == r.nth;
    if (!yes && r.probability > 0) {
      std::lock_guard lock(mu_);
      yes = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < r.probability;
    }
    if (yes) injected_[i].fetch_add(1, std::memory_order_relaxed);
    return yes;
  }
  // The errno of an injected create_queue / alloc fault (the plan's list, in turn).
  [[nodiscard]] int next_errno(fault_kind k) noexcept {
    const auto& list = k == fault_kind::alloc ? plan_.alloc_errnos : plan_.create_queue_errnos;
    if (list.empty()) return ENOMEM;
    const std::uint64_t n = errno_turn_.fetch_add(1, std::memory_order_relaxed);
    return list[n % list.size()];
  }
  // A reset injected by the plan (counted) or asked for: runs the device's reset action.
  void reset(const std::string& why) {
    std::function<void(const std::string&)> f;
    {
      std::lock_guard lock(mu_);
      f = on_reset_;
    }
    if (f) f(why);
  }
  void count_reset() noexcept { injected_[static_cast<std::size_t>(fault_kind::reset)].fetch_add(1, std::memory_order_relaxed); }
  // Set by the device: what a reset does (stop every queue with errc::device_reset).
  void set_reset_action(std::function<void(const std::string&)> f) {
    std::lock_guard lock(mu_);
    on_reset_ = std::move(f);
  }

  [[nodiscard]] fault_counts counts() const noexcept {
    fault_counts c;
    for (std::size_t k = 0; k < fault_kind_count; ++k) {
      c.events[k] = events_[k].load(std::memory_order_relaxed);
      c.injected[k] = injected_[k].load(std::memory_order_relaxed);
    }
    return c;
  }

 private:
  fault_plan plan_;
  std::mutex mu_;  // rng_, on_reset_
  std::mt19937_64 rng_;
  std::function<void(const std::string&)> on_reset_;
  std::array<std::atomic<std::uint64_t>, fault_kind_count> events_{};
  std::array<std::atomic<std::uint64_t>, fault_kind_count> injected_{};
  std::atomic<std::uint64_t> errno_turn_{0};
};

}  // namespace aqueduct::emu
