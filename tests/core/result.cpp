// Tests for core/result.hpp.
#include <aqueduct/core/result.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <string>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;

namespace {
aq::result<int> parse_positive(int v) {
  if (v <= 0) return aq::failure(aq::errc::invalid_argument, "value " + std::to_string(v) + " is not positive");
  return v;
}
aq::result<int> twice(int v) {
  AQUEDUCT_TRY(int p, parse_positive(v));
  return 2 * p;
}
aq::result<void> check(int v) {
  AQUEDUCT_TRY_VOID(parse_positive(v));
  return aq::ok();
}
}  // namespace

TEST_CASE("result holds a value or a failure") {
  auto good = parse_positive(3);
  REQUIRE(good.has_value());
  CHECK(*good == 3);
  CHECK(good.value() == 3);

  auto bad = parse_positive(-1);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error() == aq::errc::invalid_argument);
  CHECK(bad.detail() == "value -1 is not positive");
  CHECK(bad.value_or(7) == 7);
  CHECK(bad.error().category().name() == std::string("aqueduct"));
  CHECK(bad.error().message() == "invalid argument");
}

TEST_CASE("value() of a failure throws aqueduct::error with the detail") {
  auto bad = parse_positive(0);
  try {
    (void)bad.value();
    FAIL("value() did not throw");
  } catch (const aq::error& e) {
    CHECK(e.code() == aq::errc::invalid_argument);
    CHECK(std::string(e.what()).find("value 0 is not positive") != std::string::npos);
    CHECK(e.get_failure().describe() == "invalid argument: value 0 is not positive");
  }
}

TEST_CASE("AQUEDUCT_TRY propagates failures and unwraps values") {
  CHECK(*twice(4) == 8);
  CHECK(twice(-2).error() == aq::errc::invalid_argument);
  CHECK(check(1).has_value());
  CHECK(check(0).error() == aq::errc::invalid_argument);
}

TEST_CASE("result of a move-only type moves and destroys exactly once") {
  static int live = 0;
  struct probe {
    probe() { ++live; }
    probe(probe&&) noexcept { ++live; }
    probe(const probe&) = delete;
    ~probe() { --live; }
  };
  {
    aq::result<probe> r{std::in_place};
    CHECK(live == 1);
    aq::result<probe> m = std::move(r);
    CHECK(live == 2);  // the moved-from probe still exists until r dies
    aq::result<probe> f = aq::errc::timeout;
    f = std::move(m);
    CHECK(f.has_value());
  }
  CHECK(live == 0);
}

TEST_CASE("errc values convert to std::error_code and compare") {
  std::error_code ec = aq::errc::queue_full;
  CHECK(ec == aq::errc::queue_full);
  CHECK(ec != aq::errc::timeout);
  CHECK(ec.message() == "queue full");
}

TEST_CASE("value() on a failure throws aqueduct::error carrying the failure, lvalue and rvalue alike") {
  auto expect_error = [](auto&& call) {
    try {
      call();
      FAIL("value() did not throw");
    } catch (const aq::error& e) {
      CHECK(e.code() == aq::errc::invalid_argument);
      CHECK(e.get_failure() == aq::errc::invalid_argument);
      CHECK(e.get_failure().detail() == "value -2 is not positive");
    }
  };
  expect_error([] { (void)parse_positive(-2).value(); });  // value() && (moves the failure out)
  expect_error([] {
    auto r = parse_positive(-2);
    (void)r.value();  // value() &
  });
  // A move-only value type taken out of a temporary, as `q.try_reserve(n).value()` does.
  auto make = [](int v) -> aq::result<std::unique_ptr<int>> {
    if (v <= 0) return aq::failure(aq::errc::invalid_argument, "value " + std::to_string(v) + " is not positive");
    return std::make_unique<int>(v);
  };
  CHECK(*make(4).value() == 4);
  expect_error([&] { (void)make(-2).value(); });
}

}  // namespace AQ_UNITY_ID
