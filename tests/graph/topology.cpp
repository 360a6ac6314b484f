// graph: a topology-changing update (exec_graph::try_update with a graph whose nodes, queues or
// edges differ) re-lowers only the queue segments it changes: the other segments keep their
// prebuilt packets (their bytes, their indirect buffers and their lowering count unchanged) while
// the results equal host arithmetic for several replays in both replay modes; a new cross-queue
// edge re-lowers both segments and orders them (without it the consumer reads a stale value); a
// replay in flight keeps its packets and kernargs; what cannot be done segment by segment (other
// queues, graph memory) is instantiated anew and says why. Expected values: host arithmetic (u32).
#include "kernels.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;
using namespace graph_test;
using namespace std::chrono_literals;

namespace {

// A segment's prebuilt packets in every slot, as bytes (AQL packets, or PM4/SDMA dwords), and in
// indirect mode where its buffers are: what "left alone" means.
struct segment_snapshot {
  std::vector<std::vector<std::byte>> packets;
  std::vector<std::uint64_t> ib_va;
  std::uint64_t lowerings = 0;
  friend bool operator==(const segment_snapshot&, const segment_snapshot&) = default;
};
segment_snapshot snapshot(const g::exec_graph& e, std::uint32_t seg) {
  const auto& sg = e.state().segs[seg];
  segment_snapshot s;
  for (std::size_t k = 0; k < sg.slots.size(); ++k) {
    const auto& c = sg.slots[k];
    std::vector<std::byte> b;
    if (!c.aql.empty()) {
      b.resize(c.aql.size() * sizeof c.aql[0]);
      std::memcpy(b.data(), c.aql.data(), b.size());
    } else {
      b.resize(c.cmds.dwords().size() * 4);
      std::memcpy(b.data(), c.cmds.dwords().data(), b.size());
    }
    s.packets.push_back(std::move(b));
    if (sg.indirect()) s.ib_va.push_back(sg.ib[k].va().value);
  }
  s.lowerings = sg.lowerings;
  return s;
}

// x -(AQL)-> y = a*x + b -(PM4)-> w = y + c -(SDMA)-> v = w; with `extra`, an AQL kernel
// u = x + d first (a node on the AQL queue only: the PM4 and SDMA segments are the same).
struct three_queues {
  rig& r;
  std::uint32_t n = 256;
  rt::buffer<std::uint32_t> x, y, w, v, u;
  g::node_id extra{}, scale{}, offset{}, move{};
  explicit three_queues(rig& rr) : r(rr), x(r.host_buffer(n)), y(r.host_buffer(n)), w(r.host_buffer(n)), v(r.host_buffer(n)), u(r.host_buffer(n)) {
    for (std::uint32_t i = 0; i < n; ++i) x[i] = i * 2654435761u + 7;
  }
  g::task<void> run(bool with_extra, std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
    extra = {};
    if (with_extra) extra = co_await g::on(r.aql).dispatch(r.add_k, rt::grid{n}, rt::block{64}, u, x, d, n).label("extra");
    scale = co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, y, x, a, b, n).label("scale");
    offset = co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, w, y, c, n).label("offset");
    move = co_await g::on(r.sdma).copy(v, w).label("move");
  }
  // Elements that are not host arithmetic (u: only with the extra node).
  std::uint32_t wrong(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d, bool with_extra) const {
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      bad += v[i] != a * x[i] + b + c;
      if (with_extra) bad += u[i] != x[i] + d;
    }
    return bad;
  }
};

const char* name(g::replay_mode m) { return m == g::replay_mode::indirect ? "indirect" : "ring copy"; }

}  // namespace

TEST_CASE("a node added to or removed from one queue re-lowers that segment only") {
  for (const g::replay_mode mode : {g::replay_mode::ring_copy, g::replay_mode::indirect}) {
    CAPTURE(name(mode));
    rig r;
    three_queues t(r);
    const g::task_graph plain = g::capture(t.run(false, 3, 4, 5, 6));
    const g::node_id plain_scale = t.scale, plain_move = t.move;
    const g::task_graph more = g::capture(t.run(true, 3, 4, 5, 6));
    auto exec = g::instantiate(plain, {.replay_slots = 3, .mode = mode});
    REQUIRE(exec.segments() == 3);  // AQL, PM4, SDMA: in order of first use
    for (int i = 0; i < 4; ++i) exec.wait(exec.launch());
    CHECK(t.wrong(3, 4, 5, 6, false) == 0);

    const segment_snapshot aql0 = snapshot(exec, 0), pm4 = snapshot(exec, 1), sdma = snapshot(exec, 2);
    REQUIRE(exec.try_update(more));
    const g::update_report& rep = exec.last_update();
    CHECK(rep.topology_changed);
    CHECK_FALSE(rep.reinstantiated);
    CHECK(rep.relowered == std::vector<bool>{true, false, false});
    CHECK(rep.kept == 3);
    CHECK(rep.added == 1);
    CHECK(rep.removed == 0);
    REQUIRE(rep.moved.size() == plain.size());
    CHECK(rep.moved[plain_scale.value] == t.scale);  // the old ids, in the new graph
    CHECK(rep.moved[plain_move.value] == t.move);

    std::mt19937 rng(12);
    for (int i = 0; i < 6; ++i) {  // every slot, twice: new arguments through the new graph's ids
      const std::uint32_t a = rng(), b = rng(), c = rng(), d = rng();
      REQUIRE(exec.try_set_args(t.extra, t.u, t.x, d, t.n));
      REQUIRE(exec.try_set_args(t.scale, t.y, t.x, a, b, t.n));
      REQUIRE(exec.try_set_args(t.offset, t.w, t.y, c, t.n));
      exec.wait(exec.launch());
      CHECK(t.wrong(a, b, c, d, true) == 0);
    }
    CHECK(snapshot(exec, 1) == pm4);  // bytes, indirect buffers and lowering count as before the update
    CHECK(snapshot(exec, 2) == sdma);
    CHECK(snapshot(exec, 0).lowerings == aql0.lowerings + 3);  // once per slot
    CHECK(snapshot(exec, 0).packets != aql0.packets);

    // And back: the extra node removed.
    REQUIRE(exec.try_update(g::capture(t.run(false, 9, 8, 7, 0))));
    CHECK(exec.last_update().relowered == std::vector<bool>{true, false, false});
    CHECK(exec.last_update().removed == 1);
    std::fill_n(t.u.data(), t.n, 0u);
    for (int i = 0; i < 4; ++i) {
      exec.wait(exec.launch());
      CHECK(t.wrong(9, 8, 7, 0, false) == 0);
    }
    CHECK(std::count(t.u.data(), t.u.data() + t.n, 0u) == t.n);  // the removed node ran no more
    CHECK(snapshot(exec, 1) == pm4);
    CHECK(snapshot(exec, 2) == sdma);
  }
}

// Under ThreadSanitizer this case is skipped: its graph without the edge is a deliberate data race
// between the producer's store and the copy's read (tests/graph/replay.cpp skips its own so).
TEST_CASE("a new cross-queue edge re-lowers both segments it joins and orders them" * doctest::skip(AQUEDUCT_TSAN != 0)) {
  for (const g::replay_mode mode : {g::replay_mode::ring_copy, g::replay_mode::indirect}) {
    CAPTURE(name(mode));
    rig r;
    auto src = r.host_buffer(4), dst = r.host_buffer(4), other = r.host_buffer(4);
    g::node_id producer{};
    // The slow producer (AQL, 50 ms) writes src[0]; the SDMA copy reads it. Without the edge
    // (two when_all branches) the copy runs at once and reads what src held before.
    auto prog = [&](bool edge, std::uint32_t value) -> g::task<void> {
      auto produce = [&]() -> g::task<void> {
        producer = co_await g::on(r.aql).dispatch(r.slow_store_k, rt::grid{1}, rt::block{1}, src, 0u, value).label("produce");
      };
      auto consume = [&]() -> g::task<void> { co_await g::on(r.sdma).copy(dst, src).label("consume"); };
      auto unrelated = [&]() -> g::task<void> {
        co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, other, 0u, 5u).label("unrelated");
      };
      auto in_order = [&]() -> g::task<void> {
        co_await produce();
        co_await consume();
      };
      if (edge)  // the queues in the same order of first use: PM4, AQL, SDMA
        co_await g::when_all(unrelated(), in_order());
      else
        co_await g::when_all(unrelated(), produce(), consume());
    };
    auto exec = g::instantiate(g::capture(prog(false, 1)), {.mode = mode});
    REQUIRE(exec.segments() == 3);
    const segment_snapshot pm4 = snapshot(exec, 0);
    exec.wait(exec.launch());
    CHECK(dst[0] == 0);  // no edge: the copy read src before the producer wrote it
    src[0] = 0;

    REQUIRE(exec.try_update(g::capture(prog(true, 1))));
    CHECK_FALSE(exec.last_update().reinstantiated);
    CHECK(exec.last_update().relowered == std::vector<bool>{false, true, true});  // the producer signals, the copy waits
    for (std::uint32_t i = 0; i < 4; ++i) {
      const std::uint32_t value = 1000 + i;
      REQUIRE(exec.try_set_args(producer, src, 0u, value));
      exec.wait(exec.launch());
      CHECK(dst[0] == value);
    }
    CHECK(snapshot(exec, 0) == pm4);  // PM4, joined by neither: left alone
  }
}

TEST_CASE("a host node added between two queues re-lowers the segment that now waits for it") {
  rig r;
  auto a = r.host_buffer(1), b = r.host_buffer(1);
  std::vector<std::uint32_t> seen;
  g::node_id st{};
  auto prog = [&](bool host) -> g::task<void> {
    st = co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, a, 0u, 5u).label("store");
    if (host)
      co_await g::host([&] {
        seen.push_back(a[0]);  // the kernel before it has finished
        a[0] *= 10;
      }).label("times ten");
    co_await g::on(r.sdma).copy(b.va(), a.va(), 4).label("copy");  // and the copy after it waits for it
  };
  auto exec = g::instantiate(g::capture(prog(false)));
  exec.wait(exec.launch());
  CHECK(b[0] == 5);
  const segment_snapshot aql = snapshot(exec, 0);
  REQUIRE(exec.try_update(g::capture(prog(true))));
  CHECK_FALSE(exec.last_update().reinstantiated);
  // The store's signal was waited for already (by the copy): its AQL packet stays; the host now
  // waits for it too (its mailbox, set in each slot), and the copy waits for the host node.
  CHECK(exec.last_update().relowered == std::vector<bool>{false, true});
  CHECK(exec.has_host_nodes());
  auto run = [&]() -> g::task<void> {
    for (std::uint32_t i = 0; i < 6; ++i) {
      REQUIRE(exec.try_set_args(st, a, 0u, 7u + i));
      co_await g::replay(exec);
      CHECK(b[0] == (7 + i) * 10);
    }
  };
  g::sync_wait(run());
  CHECK(seen == std::vector<std::uint32_t>{7, 8, 9, 10, 11, 12});
  CHECK(snapshot(exec, 0) == aql);
  {  // the store's signal raises the graph's event in every slot now (the host sleeps on it)
    const auto& st8 = exec.state();
    const std::uint32_t sig = st8.p.placed[st8.p.scopes[0].to_flat[st.value]].signal;
    REQUIRE(sig != g::detail::no_index);
    for (std::uint32_t slot = 0; slot < st8.slots(); ++slot) CHECK(st8.signal(slot, sig)->event_mailbox_ptr == st8.event.mailbox_va().value);
  }

  REQUIRE(exec.try_update(g::capture(prog(false))));  // and without it again
  CHECK_FALSE(exec.last_update().reinstantiated);
  CHECK(exec.last_update().removed == 1);
  for (std::uint32_t i = 0; i < 4; ++i) {
    exec.wait(exec.launch());  // no host node: a plain launch again
    CHECK(b[0] == 5);
  }
  CHECK(seen.size() == 6);
}

TEST_CASE("a topology update never touches a replay in flight") {
  for (const g::replay_mode mode : {g::replay_mode::ring_copy, g::replay_mode::indirect}) {
    CAPTURE(name(mode));
    rig r;
    auto out = r.host_buffer(4);
    auto gate = r.gpu.make_signal(1);
    g::node_id kept{}, added{};
    auto prog = [&](bool more, std::uint32_t value) -> g::task<void> {
      co_await g::until(gate, aq::abi::signal_condition::eq, 0);  // the device waits for the host's gate
      if (more) added = co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, out, 1u, 222u).label("added");
      kept = co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, out, 0u, value).label("kept");
      co_await g::on(r.sdma).fill(out.va() + aq::byte_count(8), 7u, 4).label("fill");
    };
    auto exec = g::instantiate(g::capture(prog(false, 111)), {.replay_slots = 2, .mode = mode});
    const auto first = exec.launch();  // slot 0, held at the gate
    std::this_thread::sleep_for(20ms);
    REQUIRE_FALSE(exec.done(first));
    const segment_snapshot held = snapshot(exec, 0);
    std::vector<std::byte> ib;
    if (mode == g::replay_mode::indirect) {  // what the PM4 engine is running now
      const auto& b = exec.state().segs[0].ib[0];
      ib.assign(static_cast<const std::byte*>(b.host()), static_cast<const std::byte*>(b.host()) + held.packets[0].size());
    }
    REQUIRE(exec.try_update(g::capture(prog(true, 333))));
    CHECK(exec.last_update().relowered == std::vector<bool>{true, false});
    CHECK(snapshot(exec, 0) == held);  // nothing re-lowered yet: each slot when it is next used
    if (mode == g::replay_mode::indirect) {
      const auto& b = exec.state().segs[0].ib[0];
      CHECK(std::memcmp(b.host(), ib.data(), ib.size()) == 0);
    }
    gate.store(0);
    exec.wait(first);
    CHECK(out[0] == 111);  // the replay in flight kept its kernargs
    CHECK(out[1] == 0);    // and its packets: the added node was not in it
    CHECK(out[2] == 7);
    for (std::uint32_t i = 0; i < 3; ++i) {
      REQUIRE(exec.try_set_args(kept, out, 0u, 333u + i));
      exec.wait(exec.launch());
      CHECK(out[0] == 333 + i);
      CHECK(out[1] == 222);
    }
    (void)added;
  }
}

TEST_CASE("what cannot be updated segment by segment is instantiated anew, and says why") {
  rig r;
  three_queues t(r);
  SUBCASE("another set of queues") {
    auto two = [&](std::uint32_t a, std::uint32_t b, std::uint32_t c) -> g::task<void> {
      t.scale = co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{t.n}, rt::block{64}, t.y, t.x, a, b, t.n).label("scale");
      t.offset = co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{t.n}, rt::block{64}, t.v, t.y, c, t.n).label("offset");
    };
    auto exec = g::instantiate(g::capture(two(1, 2, 3)));
    exec.wait(exec.launch());
    CHECK(t.wrong(1, 2, 3, 0, false) == 0);
    REQUIRE(exec.try_update(g::capture(t.run(false, 4, 5, 6, 0))));
    CHECK(exec.last_update().topology_changed);
    CHECK(exec.last_update().reinstantiated);
    CHECK(contains(exec.last_update().reason, "queues"));
    CHECK(exec.segments() == 3);
    for (std::uint32_t i = 0; i < 3; ++i) {
      REQUIRE(exec.try_set_args(t.offset, t.w, t.y, 6u + i, t.n));
      exec.wait(exec.launch());
      CHECK(t.wrong(4, 5, 6 + i, 0, false) == 0);
    }
  }
  SUBCASE("graph memory") {
    auto with_memory = [&](std::uint32_t a, std::uint32_t b, std::uint32_t c) -> g::task<void> {
      auto tmp = co_await g::alloc<std::uint32_t>(r.gpu, t.n).label("tmp");
      t.scale = co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{t.n}, rt::block{64}, tmp, t.x, a, b, t.n).label("scale");
      t.offset = co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{t.n}, rt::block{64}, t.w, tmp, c, t.n).label("offset");
      t.move = co_await g::on(r.sdma).copy(t.v, t.w).label("move");
      co_await g::free(tmp);
    };
    auto exec = g::instantiate(g::capture(t.run(false, 1, 2, 3, 0)));
    exec.wait(exec.launch());
    REQUIRE(exec.try_update(g::capture(with_memory(7, 8, 9))));
    CHECK(exec.last_update().reinstantiated);
    CHECK(contains(exec.last_update().reason, "graph memory"));
    exec.wait(exec.launch());
    CHECK(t.wrong(7, 8, 9, 0, false) == 0);
  }
}

TEST_CASE("a new node its queue cannot run is refused by the update, which leaves the exec graph as it was") {
  for (const g::replay_mode mode : {g::replay_mode::ring_copy, g::replay_mode::indirect}) {
    CAPTURE(name(mode));
    rig r;
    three_queues t(r);
    const g::task_graph plain = g::capture(t.run(false, 3, 4, 5, 0));
    auto exec = g::instantiate(plain, {.mode = mode});
    exec.wait(exec.launch());
    const segment_snapshot before[] = {snapshot(exec, 0), snapshot(exec, 1), snapshot(exec, 2)};

    g::task_graph stamp_on_aql = plain;  // a timestamp on the AQL queue (a copy would be a shader copy there)
    g::node bad = plain[t.move];
    bad.kind = g::node_kind::timestamp;
    bad.queue = plain[t.scale].queue;
    bad.deps = {t.scale.value};
    (void)stamp_on_aql.add(bad);
    auto r1 = exec.try_update(stamp_on_aql);
    REQUIRE_FALSE(r1);
    CHECK(r1.get_failure() == aq::errc::not_supported);
    CHECK(contains(r1.get_failure().detail(), "\"move\""));
    CHECK(contains(r1.get_failure().detail(), "AQL queue runs kernels, copies and fills (shader copies) only"));

    g::task_graph big_args = plain;  // a kernel node with more argument bytes than its kernel takes
    g::node k = plain[t.offset];
    k.args.resize(k.kernel.kernarg_size + 64);
    k.deps = {t.offset.value};
    (void)big_args.add(k);
    auto r2 = exec.try_update(big_args);
    REQUIRE_FALSE(r2);
    CHECK(r2.get_failure() == aq::errc::invalid_argument);
    CHECK(contains(r2.get_failure().detail(), "more argument bytes"));

    CHECK(exec.graph().size() == plain.size());  // the old graph, ids and packets
    for (std::uint32_t s = 0; s < 3; ++s) CHECK(snapshot(exec, s) == before[s]);
    for (std::uint32_t i = 0; i < 4; ++i) {
      REQUIRE(exec.try_set_args(t.offset, t.w, t.y, 10u + i, t.n));
      exec.wait(exec.launch());
      CHECK(t.wrong(3, 4, 10 + i, 0, false) == 0);
    }
  }
}

}  // namespace AQ_UNITY_ID
