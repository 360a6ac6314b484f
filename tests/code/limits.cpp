// code: the work of parsing and reading is bounded by the input (issue 13 bugs 14 and 15). Each
// case runs in a child process under RLIMIT_AS = 2 GiB, so an allocation proportional to a lying
// count (or an endless read) shows as the child dying of std::bad_alloc instead of as a machine
// running out of memory; the parent checks that the child returned a clean error.
#include <aqueduct/code/bytes.hpp>
#include <aqueduct/code/metadata.hpp>
#include <aqueduct/config.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace code = aqueduct::code;

namespace {

// Runs f in a child limited to `as_bytes` of address space: the child's exit status (0 when f
// returned true, 1 when false, 3 on an escaped exception, the signal otherwise + 128).
int in_child(const std::function<bool()>& f, std::uint64_t as_bytes = std::uint64_t{2} << 30) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!AQUEDUCT_ASAN && !AQUEDUCT_TSAN) {  // sanitizers reserve terabytes of shadow: no limit there
      rlimit r{as_bytes, as_bytes};
      ::setrlimit(RLIMIT_AS, &r);
    }
    int rc = 3;
    try {
      rc = f() ? 0 : 1;
    } catch (...) {
    }
    ::_exit(rc);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// n bytes of msgpack: `levels` nested array32 headers, each counting all the bytes after it
// (the largest count the "remaining bytes" check lets through), then nils.
std::vector<std::byte> nested_arrays(std::size_t n, unsigned levels) {
  std::vector<std::byte> b(n, std::byte{0xc0});
  std::size_t pos = 0;
  for (unsigned l = 0; l < levels; ++l) {
    const auto count = static_cast<std::uint32_t>(n - pos - 5);
    b[pos] = std::byte{0xdd};
    for (int k = 0; k < 4; ++k) b[pos + 1 + k] = static_cast<std::byte>(count >> (24 - 8 * k));
    pos += 5;
  }
  return b;
}

}  // namespace

// Bug 14: counts equal to the remaining bytes reserved count x sizeof(value) at every level: a
// 64 MiB note took 6.3 GB, a 256 MiB note let std::bad_alloc escape try_parse_metadata.
TEST_CASE("bug 14: msgpack counts that the bytes barely allow cost memory bounded by the input") {
  for (std::size_t mib : {64u, 256u}) {
    CAPTURE(mib);
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = in_child([&] {
      const auto note = nested_arrays(mib << 20, 8);
      auto md = code::try_parse_metadata(code::byte_span(note.data(), note.size()));
      return !md.has_value() && md.error() == aq::errc::malformed_code_object &&
             std::string(md.detail()).find("max_values") != std::string::npos;
    });
    CHECK(rc == 0);  // before the fix: 3 (bad_alloc) or 134 (abort)
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
  }
  // Control: a small array of nils still parses (the budget is not a blanket refusal).
  const auto small = nested_arrays(4096, 1);
  auto v = code::msgpack::try_parse(code::byte_span(small.data(), small.size()));
  REQUIRE(v.has_value());
  CHECK(v->items.size() == 4091);
}

// Bug 15: aqueduct-objdump /dev/zero read until std::bad_alloc.
TEST_CASE("bug 15: try_read_file refuses a device and bounds every read") {
  const int rc = in_child([] {
    auto r = code::try_read_file("/dev/zero");
    return !r.has_value() && std::string(r.detail()).find("/dev/zero") != std::string::npos &&
           std::string(r.detail()).find("device") != std::string::npos;
  });
  CHECK(rc == 0);
  // A regular file over the caller's limit: refused, naming the limit.
  const std::string path = "/tmp/aqueduct-limits-" + std::to_string(::getpid());
  { std::ofstream(path, std::ios::binary) << std::string(100'000, 'x'); }
  auto big = code::try_read_file(path, 65'536);
  REQUIRE_FALSE(big.has_value());
  CHECK(std::string(big.detail()).find("65536") != std::string::npos);
  auto fits = code::try_read_file(path, 100'000);  // control: exactly the limit
  REQUIRE(fits.has_value());
  CHECK(fits->size() == 100'000u);
  ::unlink(path.c_str());
  // A missing file: the errno text (strerror(ENOENT) is "No such file or directory" in glibc).
  auto missing = code::try_read_file("/nonexistent/aqueduct.co");
  REQUIRE_FALSE(missing.has_value());
  CHECK(std::string(missing.detail()).find("No such file or directory") != std::string::npos);
}

}  // namespace AQ_UNITY_ID
