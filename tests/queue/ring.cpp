// queue/ring.hpp: reservation against a read index (requirement 3) for one and many producers,
// with indexes set by hand; the expected outcomes follow from `write + n - read <= slots`.
#include <aqueduct/queue/ring.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace q = aqueduct::ring;

TEST_CASE("single producer: claims up to the ring size past the read index, never more") {
  alignas(8) std::uint64_t write = 0, read = 0;
  q::ring_reserver<q::producer::single> r(write, read, 8);
  q::ring_span s;
  REQUIRE(r.try_claim(5, s));
  CHECK(s.begin == 0);
  CHECK(s.count == 5);
  CHECK(write == 0);  // the shared write index moves at commit only
  CHECK_FALSE(r.try_claim(4, s));  // 5 + 4 > 8
  REQUIRE(r.try_claim(3, s));
  CHECK(s.begin == 5);
  CHECK_FALSE(r.try_claim(1, s));
  read = 1;  // the consumer finished one packet
  REQUIRE(r.try_claim(1, s));
  CHECK(s.begin == 8);  // slot 0 again
  r.commit({0, 5});
  CHECK(write == 5);
  r.commit({8, 1});
  CHECK(write == 9);
  r.commit({5, 3});  // late commit of an earlier span: the write index never decreases
  CHECK(write == 9);
}

TEST_CASE("single producer: rollback only of the latest claim") {
  alignas(8) std::uint64_t write = 100, read = 100;
  q::ring_reserver<q::producer::single> r(write, read, 4);
  q::ring_span a, b;
  REQUIRE(r.try_claim(1, a));
  REQUIRE(r.try_claim(2, b));
  CHECK(a.begin == 100);
  CHECK(b.begin == 101);
  CHECK_FALSE(r.try_rollback(a));  // b was claimed after it
  CHECK(r.try_rollback(b));
  q::ring_span c;
  REQUIRE(r.try_claim(3, c));
  CHECK(c.begin == 101);
}

TEST_CASE("multi producer: the claim is a CAS on the shared write index, bounded by the read index") {
  alignas(8) std::uint64_t write = 0, read = 0;
  q::ring_reserver<q::producer::multi> r(write, read, 4);
  q::ring_span a, b;
  REQUIRE(r.try_claim(3, a));
  CHECK(write == 3);
  CHECK_FALSE(r.try_claim(2, b));
  CHECK(write == 3);  // a failed claim changes nothing
  read = 2;
  REQUIRE(r.try_claim(2, b));
  CHECK(b.begin == 3);
  CHECK(write == 5);
  CHECK_FALSE(r.try_rollback(a));  // not the latest
  CHECK(r.try_rollback(b));
  CHECK(write == 3);
}

TEST_CASE("multi producer: concurrent claims partition the index space") {
  alignas(8) std::uint64_t write = 0, read = 0;
  q::ring_reserver<q::producer::multi> r(write, read, 1u << 20);
  constexpr int per = 20000;
  std::vector<std::vector<std::uint64_t>> got(2);
  std::atomic<int> refused{0};
  auto work = [&](int t) {
    q::ring_reserver<q::producer::multi> mine(write, read, 1u << 20);
    for (int i = 0; i < per; ++i) {
      q::ring_span s;
      if (!mine.try_claim(1 + (i % 3), s)) {
        refused.fetch_add(1);
        continue;
      }
      for (std::uint32_t k = 0; k < s.count; ++k) got[t].push_back(s.begin + k);
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  std::vector<char> seen(write, 0);
  for (auto& v : got)
    for (auto i : v) seen[i]++;
  std::size_t ones = 0;
  for (char c : seen) ones += c == 1;
  CHECK(refused.load() == 0);
  CHECK(write == 2 * 39999);  // per thread: 6666 rounds of 1+2+3, then 1+2
  CHECK(ones == write);  // every index claimed exactly once
  CHECK(r.write_index() == write);
}

}  // namespace AQ_UNITY_ID
