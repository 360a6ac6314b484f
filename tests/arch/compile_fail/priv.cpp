// Compile-fail tests for the GFX11 PRIV policy (arch/target.hpp). Built once per CASE by
// tests/arch/CMakeLists.txt: CASE 0 is the positive control and must compile; every other case
// must fail to compile with a diagnostic naming the reason.
#include <aqueduct/arch/target.hpp>

namespace arch = aqueduct::arch;

#if CASE == 0  // control: the affected target sets PRIV, an unaffected one builds RSRC1 without it
static_assert(arch::gfx11_priv_target::set_pm4_priv(0) == (1u << 20));
static_assert(arch::gfx11_target::pm4_compute_pgm_rsrc1(1u << 20) == 0);
#elif CASE == 1  // an unaffected GFX11 part (e.g. gfx1103 with one array, gfx1150) cannot set PRIV
constexpr auto x = arch::gfx11_target::set_pm4_priv(0);
#elif CASE == 2  // nor can GFX12
constexpr auto x = arch::gfx12_target::set_pm4_priv(0);
#elif CASE == 3  // the workaround cannot be attached to a non-GFX11 family
constexpr auto x = arch::target<arch::gfx94x_tag, arch::gfx11_pm4_priv>::pm4_priv;
#endif

int main() { return 0; }
