// A fixture for tests/lint/fixed_arch.cmake (lint.fixed_arch_selftest): a queue that visits a
// variant of typed rings on every submission must be reported. Layer: runtime (fixture only).
#pragma once
#include <variant>

struct ring_a { int submit() { return 1; } };
struct ring_b { int submit() { return 2; } };
struct queue {
  std::variant<ring_a, ring_b> r;
  int submit() { return std::visit([](auto& q) { return q.submit(); }, r); }
};
