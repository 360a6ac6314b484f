// aqueduct/runtime/system.hpp — `system`: the entry point. The real KFD when /dev/kfd works,
// else the emulated machine; its agents; clean shutdown.
//
// Layer: runtime. `system::open()` chooses the device once:
//   1. open_options::device == emulated, or open_options::machine set → the emulator;
//   2. else $AQUEDUCT_EMULATE: a machine ("mi300x", "mi300x,rx7900xtx", "2*rx7900xtx") → the
//      emulator; "off" / "0" / "none" → the real device only;
//   3. else /dev/kfd. When there is no /dev/kfd at all (open fails with ENOENT), the emulated
//      `default_machine` (how_chosen() says why). A /dev/kfd that exists but cannot be used (no
//      permission, KFD too old, no GPU) is an error that says why and how to ask for the emulator
//      — never a silent fallback (a user not in the `render` group must not benchmark a simulator
//      without knowing).
// $AQUEDUCT_EMU_ADVERSARIAL=1 turns on the emulated AQL processors' adversarial mode (read by
// emu::device at creation; sanitizer runs).
// The device file is type-erased here, once (runtime/any_device.hpp); the KFD process context
// (kfd::driver), memory, queues and events below are the same code for both. The emulated device
// runs its own engines (started by CREATE_QUEUE, stopped inside DESTROY_QUEUE); the emulator is
// reached only through runtime/emulator.hpp.
// Shutdown: destroy queues, buffers, executables and signals first (queues drain, DESTROY_QUEUE
// stops the emulated engine); the system then destroys the agents' doorbell pages, signal memory
// and events, the event page and the device.
// Thread safety: a system is moved/destroyed by one thread; agents() may be used from any.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/linux_device.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/any_device.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/runtime/emulator.hpp>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace aqueduct::runtime {

enum class device_choice : std::uint8_t { automatic, real, emulated };

// The machine emulated when nothing names one.
inline constexpr std::string_view default_machine = "mi300x";
// The environment variable that selects emulation (see the header comment).
inline constexpr const char* emulate_env = "AQUEDUCT_EMULATE";

struct open_options {
  device_choice device = device_choice::automatic;
  std::string machine;  // emulated machine; empty: $AQUEDUCT_EMULATE, else default_machine
  std::filesystem::path sysfs_root = kfd::default_sysfs_root();
  std::filesystem::path kfd_path = kfd::default_kfd_path;
};

class system {
 public:
  system() = default;
  system(system&&) noexcept = default;
  system& operator=(system&&) noexcept = default;
  ~system() = default;

  [[nodiscard]] static result<system> try_open(const open_options& o = {}) {
    std::string machine = o.machine;
    std::string why;
    device_choice choice = o.device;
    if (choice == device_choice::automatic && !machine.empty()) choice = device_choice::emulated;
    if (choice != device_choice::real && machine.empty()) {
      if (const char* env = std::getenv(emulate_env); env && *env) {
        const std::string_view v(env);
        if (v == "off" || v == "0" || v == "none" || v == "no") {
          if (choice == device_choice::automatic) choice = device_choice::real;
        } else {
          machine = v;
          why = std::string(emulate_env) + "=" + machine;
          if (choice == device_choice::automatic) choice = device_choice::emulated;
        }
      }
    }
    if (choice != device_choice::emulated) {
      auto real = try_open_real(o);
      if (real || choice == device_choice::real) return real;
      const std::string_view d = real.detail();
      if (real.get_failure().os_errno() != ENOENT)
        return failure(real.get_failure().code(),
                       std::string(d) + " — " + o.kfd_path.string() +
                           " exists but cannot be used, so aqueduct does not fall back to the emulator on its own. "
                           "If it is a permission problem, add the user to the 'render' (and 'video') group. To "
                           "use the emulated device instead, set " + emulate_env + "=" + std::string(default_machine) +
                           " (or another preset) or call system::open_emulated()",
                       real.get_failure().os_errno());
      why = "no " + o.kfd_path.string() + " (" + std::string(d.substr(0, d.find(';'))) + ")";
    }
    if (machine.empty()) machine = default_machine;
    if (why.empty()) why = o.machine.empty() ? "emulation requested" : "open_options::machine";
    AQUEDUCT_TRY(auto cfg, emu::machine_config::try_parse(machine));
    return try_open_emulated(std::move(cfg), "emulated " + machine + ": " + why);
  }
  [[nodiscard]] static system open(const open_options& o = {}) { return try_open(o).value(); }

  // The real device only.
  [[nodiscard]] static result<system> try_open_real(const open_options& o = {}) {
    AQUEDUCT_TRY(auto dev, kfd::linux_device::try_open(o.sysfs_root, o.kfd_path));
    auto s = try_adopt(std::move(dev), nullptr, o.kfd_path.string());
    if (!s && std::string_view(s.detail()).find(o.kfd_path.string()) == std::string_view::npos)
      return failure(s.get_failure().code(), o.kfd_path.string() + ": " + std::string(s.detail()), s.get_failure().os_errno());
    return s;
  }
  // An emulated machine ("mi300x,rx7900xtx") or configuration.
  [[nodiscard]] static result<system> try_open_emulated(std::string_view machine = default_machine) {
    AQUEDUCT_TRY(auto cfg, emu::machine_config::try_parse(machine));
    return try_open_emulated(std::move(cfg), "emulated " + std::string(machine));
  }
  [[nodiscard]] static system open_emulated(std::string_view machine = default_machine) {
    return try_open_emulated(machine).value();
  }
  [[nodiscard]] static result<system> try_open_emulated(emu::machine_config cfg, std::string why = "emulated machine") {
    AQUEDUCT_TRY(auto f, detail::try_open_emulated_file(std::move(cfg)));
    return try_adopt(std::move(f.file), f.device, std::move(why));
  }
  // Any device file (either model, or a wrapper of one, e.g. a counting one in tests). When it
  // wraps an emulator, pass that as `emulator` (host kernels register there; it must outlive the
  // system).
  template <kfd::device_file F>
  [[nodiscard]] static result<system> try_adopt(F file, emu::device* emulator = nullptr, std::string why = {}) {
    any_device_file erased;
    if constexpr (std::is_same_v<F, any_device_file>) {
      erased = std::move(file);
    } else {
      erased = any_device_file(std::move(file));
    }
    if (!emulator) emulator = detail::emulated_device_in(erased);
    AQUEDUCT_TRY(auto drv, kfd::driver<any_device_file>::try_open(std::move(erased)));
    auto st = std::make_shared<detail::system_state>(std::move(drv));
    st->emulator = emulator;
    st->why = std::move(why);
    system s;
    for (const kfd::node* n : st->driver.topo().gpu_nodes()) {
      AQUEDUCT_TRY(auto tname, arch::visit_family(n->gfx_target_version(),
                                                  static_cast<std::uint32_t>(n->properties.simd_arrays_per_engine),
                                                  [](auto t) { return decltype(t)::name(); }));
      AQUEDUCT_TRY_VOID(st->ref().try_acquire_vm(*n));
      auto& a = st->agents.emplace_back();
      a.sys = st.get();
      a.node = n;
      a.fam = *arch::family_of(n->gfx_target_version());
      a.target_name = std::move(tname);
    }
    if (st->agents.empty())
      return failure(errc::not_found, "the KFD topology at " + st->driver.topo().root.string() + " lists no GPU");
    st->make_memory_event();  // GPU memory faults wake every wait (detail/device_faults.hpp)
    for (auto& a : st->agents) s.agents_.emplace_back(a);
    s.s_ = std::move(st);
    return s;
  }

  // An empty system (default-constructed or moved-from) has no agents and no device: the
  // queries below say so; default_agent() and driver() stop the program with that message.
  [[nodiscard]] bool emulated() const noexcept { return s_ && s_->emulator != nullptr; }
  [[nodiscard]] std::span<const agent> agents() const noexcept { return agents_; }
  [[nodiscard]] const agent& default_agent() const noexcept {
    AQUEDUCT_VERIFY(!agents_.empty(), "system::default_agent() on an empty system (default-constructed or moved-from)");
    return agents_.front();
  }
  // How the device was chosen ("/dev/kfd", "emulated mi300x: AQUEDUCT_EMULATE=mi300x" ...).
  [[nodiscard]] const std::string& how_chosen() const noexcept {
    static const std::string empty = "no device: the system is empty (default-constructed or moved-from)";
    return s_ ? s_->why : empty;
  }
  // The emulated device (tests, diagnostics), or nullptr on /dev/kfd.
  [[nodiscard]] emu::device* emulator() const noexcept { return s_ ? s_->emulator : nullptr; }
  [[nodiscard]] kfd::kfd_version kfd_version() const noexcept { return s_ ? s_->driver.version() : kfd::kfd_version{}; }
  [[nodiscard]] kfd::driver_ref<any_device_file> driver() const noexcept {
    AQUEDUCT_VERIFY(s_ != nullptr, "system::driver() on an empty system (default-constructed or moved-from)");
    return s_->ref();
  }
  [[nodiscard]] explicit operator bool() const noexcept { return s_ != nullptr; }

  [[nodiscard]] std::string describe() const {
    if (!s_) return how_chosen();
    std::string d = (emulated() ? "emulated KFD " : "KFD ") + std::to_string(kfd_version().major) + "." +
                    std::to_string(kfd_version().minor) + " [" + how_chosen() + "], " + std::to_string(agents_.size()) +
                    " agent(s)";
    for (std::size_t i = 0; i < agents_.size(); ++i) d += "\n  agent " + std::to_string(i) + ": " + agents_[i].describe();
    return d;
  }

 private:
  std::vector<agent> agents_;  // handles into s_->agents
  std::shared_ptr<detail::system_state> s_;  // shared with what it made (detail::keep_alive)
};

}  // namespace aqueduct::runtime
