# bench.graph_smoke: bench_graph runs every benchmark once, briefly, and prints its targets table.
execute_process(COMMAND ${EXE} --benchmark_repetitions=1 --benchmark_min_time=0.01
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bench_graph failed (${rc}):\n${out}\n${err}")
endif()
foreach(name task_call ready_signal resume eager_dispatch capture instantiate node_update replay replay_indirect_10000 replay_indirect_1_long replay_indirect_cold_10000 chain_wall_replay while_host_10000 while_host_1_long "issue 12 targets")
  string(FIND "${out}" "${name}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "bench_graph output lacks '${name}':\n${out}")
  endif()
endforeach()
