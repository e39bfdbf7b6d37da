# Helpers for test scripts (cmake -P) that drive the built `agenthost` binary the way a user does:
# `agenthost --config F plugins --json` to see a plugin load, `agenthost --config F mcp` (JSON-RPC
# lines on stdin) to run one of its tools. Include it, then call the functions below.

# ah_run(<command> <args>…): runs a command, fails the test on a non-zero exit, and leaves its
# standard output in `last_output` in the caller's scope.
function(ah_run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "failed (${rc}): ${command}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# ah_run_tests(<working dir> <pattern> <what> <command> <args>…): runs a language's own test runner
# (cargo test, go test), prints its output, fails on a non-zero exit, and fails when the output does
# not match <pattern>: the test named there must have run, not been filtered out or renamed away.
function(ah_run_tests dir pattern what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${dir} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${out}")
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "${command} failed (${rc}):\n${out}\n${err}")
  endif()
  if(NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "${what} did not run")
  endif()
endfunction()

# ah_expect_entry_only(<library>): the library exports ah_plugin_init_v1 and nothing else (checked
# with nm when it is installed).
function(ah_expect_entry_only library)
  find_program(NM nm)
  if(NOT NM)
    return()
  endif()
  ah_run(${NM} -D --defined-only ${library})
  string(REGEX MATCHALL " [TDB] [^\n]+" exported "${last_output}")
  if(NOT exported STREQUAL " T ah_plugin_init_v1")
    message(FATAL_ERROR "the plugin must export ah_plugin_init_v1 only; it exports:\n${last_output}")
  endif()
endfunction()

# ah_write_config(<file> <work_dir> <plugin_dir>): a configuration that loads the plugins of
# <plugin_dir> only (no build-tree or installed plugins) and keeps its data under <work_dir>.
function(ah_write_config file work_dir plugin_dir)
  file(WRITE ${file} "data_dir = \"${work_dir}/data\"
plugin_dirs = [\"${plugin_dir}\"]
default_plugin_dirs = false
")
endfunction()

# ah_expect_loaded(<agenthost> <config> <plugin name> <expected tools as a JSON array>):
# `plugins --json` must list the plugin as loaded, with exactly these tools in this order.
function(ah_expect_loaded agenthost config name expected_tools)
  ah_run(${agenthost} --config ${config} plugins --json)
  set(json "${last_output}")
  string(JSON count LENGTH "${json}" plugins)
  if(count EQUAL 0)
    message(FATAL_ERROR "no plugin found at all:\n${json}")
  endif()
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON plugin_name GET "${json}" plugins ${i} name)
    if(plugin_name STREQUAL name)
      string(JSON status GET "${json}" plugins ${i} status)
      string(JSON tools GET "${json}" plugins ${i} tools)
      string(JSON same_tools EQUAL "${tools}" "${expected_tools}")
      if(NOT status STREQUAL "loaded" OR NOT same_tools)
        message(FATAL_ERROR "${name} is '${status}' with tools ${tools} (expected loaded, ${expected_tools}):\n${json}")
      endif()
      message(STATUS "${name}: loaded, tools ${tools}")
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "${name} is not listed:\n${json}")
endfunction()

# ah_mcp_call(<agenthost> <config> <work_dir> <tool> <arguments JSON object> <out_var>):
# runs the tool through `agenthost mcp` on stdio (initialize, then tools/call) and stores the
# call's JSON-RPC "result" object ({"content": [{"type": "text", "text": …}], "isError": …}) in
# <out_var>. A JSON-RPC error fails the test.
function(ah_mcp_call agenthost config work_dir tool arguments out_var)
  file(WRITE ${work_dir}/mcp-in.jsonl
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"cmake-test\",\"version\":\"0\"}}}\n"
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"${tool}\",\"arguments\":${arguments}}}\n")
  execute_process(COMMAND ${agenthost} --config ${config} mcp INPUT_FILE ${work_dir}/mcp-in.jsonl
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 20)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "agenthost mcp failed (${rc}):\n${out}\n${err}")
  endif()
  # One JSON object per line. Walk the lines by position: a CMake list would split them at ';'.
  set(rest "${out}")
  while(NOT rest STREQUAL "")
    string(FIND "${rest}" "\n" newline)
    if(newline EQUAL -1)
      set(line "${rest}")
      set(rest "")
    else()
      string(SUBSTRING "${rest}" 0 ${newline} line)
      math(EXPR next "${newline} + 1")
      string(SUBSTRING "${rest}" ${next} -1 rest)
    endif()
    string(JSON id ERROR_VARIABLE no_id GET "${line}" id)
    if(NOT no_id AND id EQUAL 2)
      string(JSON result ERROR_VARIABLE no_result GET "${line}" result)
      if(no_result)
        message(FATAL_ERROR "tools/call ${tool} answered with an error: ${line}")
      endif()
      set(${out_var} "${result}" PARENT_SCOPE)
      return()
    endif()
  endwhile()
  message(FATAL_ERROR "no answer to tools/call ${tool}:\n${out}\n${err}")
endfunction()

# ah_expect_tool_text(<result> <expected text> <expected isError: ON|OFF>): the first content item
# of an MCP tool result is exactly <expected text>, and isError is as expected.
function(ah_expect_tool_text result expected expect_error)
  string(JSON text GET "${result}" content 0 text)
  string(JSON is_error GET "${result}" isError)
  if(NOT text STREQUAL expected OR NOT is_error STREQUAL expect_error)
    message(FATAL_ERROR "expected text '${expected}' with isError ${expect_error}, got:\n${result}")
  endif()
endfunction()
