// aqueduct/arch.hpp — the arch layer: families and their traits, the processor table, compile-time
// targets with the GFX11 PRIV policy and visit_family, CWSR sizing. See docs/arch.md.
#pragma once

#include <aqueduct/arch/cwsr.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/arch/processors.hpp>
#include <aqueduct/arch/target.hpp>
