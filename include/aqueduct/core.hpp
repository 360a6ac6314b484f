// aqueduct/core.hpp — the core layer: results and errors, assertions, strong units, bit fields.
#pragma once

#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
