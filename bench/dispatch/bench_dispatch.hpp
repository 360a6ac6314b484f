// bench/dispatch/bench_dispatch.hpp — the parts of bench_dispatch (one executable): host publish
// cost with same-run peers (publish.cpp), end-to-end emulated dispatch (e2e.cpp), and main
// (main.cpp: machine context, published peer figures, median ratio table).
#pragma once

#include <string_view>

namespace bench {

// The emulated machine of the end-to-end benchmarks (an emu/presets.hpp name).
inline constexpr std::string_view e2e_machine = "mi300x";

void register_publish_benchmarks();
void register_e2e_benchmarks();
void register_peer_benchmarks();  // peers_gbench.cpp: queues, ping-pong, PM4/SDMA commands
void shutdown_e2e();  // destroy the emulated queues and system (before exit)

}  // namespace bench
