// A consumer of the installed package: includes the public headers and uses a few of them.
#include <aqueduct/config.hpp>
#include <aqueduct/core.hpp>

#include <cstdio>

int main() {
  aqueduct::result<int> r = 41;
  aqueduct::gpu_va va(0x1000);
  if (!r || (va + aqueduct::byte_count(0x1000)).value != 0x2000) return 1;
  std::printf("aqueduct %d.%d.%d consumer ok\n", aqueduct::version_major, aqueduct::version_minor,
              aqueduct::version_patch);
  return 0;
}
