# bench.dispatch_smoke: run bench_dispatch with a tiny minimum time and one repetition; pass when
# it exits 0, prints every expected benchmark name and the summary, and reports no error.
# Times are never checked (DESIGN.md §6).
execute_process(COMMAND ${EXE} --benchmark_min_time=0.001 --benchmark_repetitions=1 --benchmark_color=false
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 50)
# Google Benchmark prints the context to stderr and the table to stdout.
set(out "${err}${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bench_dispatch exited with ${rc}\n${out}")
endif()
set(expected
  "machine.cpu_model" "machine.kernel" "published, other hardware"
  "publish/aqueduct_sp/batch:1/threads:1"
  "publish/aqueduct_sp/batch:64/threads:1"
  "publish/aqueduct_mp/batch:8/threads:2"
  "publish/peer_hsa_protocol/batch:1/threads:1"
  "publish/peer_hsa_protocol/batch:64/threads:2"
  "publish/peer_mutex_ring/batch:8/threads:2"
  "publish/peer_naive_memcpy_INCORRECT/batch:1/threads:1"
  "e2e/aql/dispatch_wait/real_time"
  "e2e/aql/dispatch_wait_block/real_time"
  "e2e/aql/pipelined/dispatches:64/real_time"
  "e2e/pm4/dispatch_wait/real_time"
  "e2e/pm4/pipelined/dispatches:64/real_time"
  "publish_isolated/aqueduct_sp/batch:8/threads:1"
  "publish_isolated/peer_hsa_protocol/batch:64/threads:1"
  "publish/aqueduct_sp_prebuilt/batch:64/threads:1"
  "aqueduct.commit"
  "queue/boost_spsc/real_time"
  "queue/moodycamel_rwq/real_time"
  "queue/moodycamel_cq/producers:2/real_time"
  "pingpong/real_time"
  "commands/pm4_dispatch_aqueduct"
  "commands/pm4_dispatch_peer_by_hand"
  "commands/sdma_copy_aqueduct"
  "commands/sdma_copy_peer_by_hand"
  "ratios: aqueduct / peer")
foreach(name IN LISTS expected)
  string(FIND "${out}" "${name}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "bench_dispatch output lacks '${name}'\n${out}")
  endif()
endforeach()
string(REGEX MATCH "publish_isolated batch:1/threads:1 +aqueduct_sp +/ peer_hsa_protocol +=" ratio "${out}")
if(NOT ratio)
  message(FATAL_ERROR "bench_dispatch printed no aqueduct_sp / peer_hsa_protocol ratio\n${out}")
endif()
string(FIND "${out}" "ERROR OCCURRED" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "a benchmark reported an error\n${out}")
endif()
message(STATUS "bench_dispatch smoke: all expected benchmarks ran")
