# Installs agenthost (SDK included) into a fresh prefix, builds the C example plugin out of tree
# against the INSTALLED SDK — once with find_package, once with pkg-config — and runs the installed
# host on each result: the plugin must load and its tools must run, with no host rebuild.
# Inputs: SOURCE_DIR, BINARY_DIR, WORK_DIR.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix})
foreach(f include/agenthost/agenthost.h include/agenthost/plugin.hpp lib/cmake/AgentHostSDK/AgentHostSDKConfig.cmake
          share/pkgconfig/agenthost-sdk.pc bin/agenthost)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install is missing ${f}")
  endif()
endforeach()

# The cassette makes the scripted model call both tools of the out-of-tree plugin.
file(WRITE ${WORK_DIR}/cassette.json [=[
{"replies": [
  {"tool_calls": [{"name": "echo", "arguments": {"text": "out of tree"}}, {"name": "add", "arguments": {"a": 2, "b": 3}}]},
  {"text": "finished"}]}
]=])

foreach(mode find_package pkg_config)
  set(build ${WORK_DIR}/build-${mode})
  if(mode STREQUAL "pkg_config")
    set(ENV{PKG_CONFIG_PATH} ${prefix}/share/pkgconfig)
    run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/c-echo-plugin -B ${build} -DEXAMPLE_C_USE_PKG_CONFIG=ON)
  else()
    run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/c-echo-plugin -B ${build} -DCMAKE_PREFIX_PATH=${prefix})
  endif()
  run(${CMAKE_COMMAND} --build ${build})

  # Only the out-of-tree plugin and the installed scripted provider: no build-tree plugins.
  file(WRITE ${WORK_DIR}/${mode}.toml "data_dir = \"${WORK_DIR}/data-${mode}\"
plugin_dirs = [\"${build}\", \"${prefix}/lib/agenthost/plugins/scripted\"]
default_plugin_dirs = false
[plugins.scripted]
cassette = \"${WORK_DIR}/cassette.json\"
")
  run(${prefix}/bin/agenthost --config ${WORK_DIR}/${mode}.toml plugins --json)
  string(JSON count LENGTH "${last_output}" plugins)
  set(found FALSE)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${last_output}" plugins ${i} name)
    string(JSON status GET "${last_output}" plugins ${i} status)
    string(JSON file GET "${last_output}" plugins ${i} file)
    if(name STREQUAL "example_c")
      if(NOT status STREQUAL "loaded" OR NOT file MATCHES "^${build}")
        message(FATAL_ERROR "${mode}: example_c is ${status} from ${file}:\n${last_output}")
      endif()
      set(found TRUE)
    endif()
  endforeach()
  if(NOT found)
    message(FATAL_ERROR "${mode}: the out-of-tree plugin was not listed:\n${last_output}")
  endif()

  run(${prefix}/bin/agenthost --config ${WORK_DIR}/${mode}.toml run "use the plugin")
  foreach(expected "← echo: out of tree" "← add: 5" "finished")
    string(FIND "${last_output}" "${expected}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${mode}: the turn did not show '${expected}':\n${last_output}")
    endif()
  endforeach()
  message(STATUS "${mode}: out-of-tree plugin built against the installed SDK and loaded")
endforeach()
