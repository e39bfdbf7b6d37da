# The Go example plugin (examples/go-echo-plugin), with Debian's golang-go and cgo, offline, its
# build output outside the source tree.
#   MODE=test   : gofmt, `go vet` and `go test`: the tools, the panic guard, the result object.
#   MODE=plugin : `go build -buildmode=c-shared` with the version script, the library exports the
#                 entry point only, then the built agenthost loads it (`plugins --json`) and runs its
#                 tools over `agenthost mcp`, in process and again sandboxed (isolation = "sandbox",
#                 nothing granted).
# Skipped (ctest SKIP_REGULAR_EXPRESSION "SKIPPED: go") only when go is not installed.
# Inputs: MODE, SOURCE_DIR, WORK_DIR; AGENTHOST (plugin).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/agenthost_driver.cmake)

find_program(GO go)
if(NOT GO)
  message(STATUS "SKIPPED: go is not installed (Debian package golang-go; scripts/install-deps installs it)")
  return()
endif()

set(module ${SOURCE_DIR}/examples/go-echo-plugin)
file(REMOVE_RECURSE ${WORK_DIR}/plugins ${WORK_DIR}/data)
file(MAKE_DIRECTORY ${WORK_DIR})
# Offline and out of the source tree: no module proxy (the example needs the standard library only),
# caches under the build tree.
set(ENV{GOPROXY} off)
set(ENV{GOFLAGS} -mod=mod)
set(ENV{GOCACHE} ${WORK_DIR}/../go-cache)
set(ENV{GOPATH} ${WORK_DIR}/../go-path)
set(ENV{CGO_ENABLED} 1)

if(MODE STREQUAL "test")
  find_program(GOFMT gofmt HINTS /usr/lib/go/bin)
  if(GOFMT)
    execute_process(COMMAND ${GOFMT} -l . WORKING_DIRECTORY ${module} OUTPUT_VARIABLE unformatted)
    if(NOT unformatted STREQUAL "")
      message(FATAL_ERROR "not gofmt-formatted (run gofmt -w):\n${unformatted}")
    endif()
  endif()
  execute_process(COMMAND ${GO} vet . WORKING_DIRECTORY ${module} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "go vet failed (${rc}):\n${err}")
  endif()
  ah_run_tests(${module} "--- PASS: TestAPanickingToolIsAFailedCall" "the panic guard's test" ${GO} test -count=1 -v .)
  return()
endif()

if(NOT MODE STREQUAL "plugin")
  message(FATAL_ERROR "MODE must be test or plugin")
endif()
set(plugin_dir ${WORK_DIR}/plugins/example_go)
file(MAKE_DIRECTORY ${plugin_dir})
execute_process(COMMAND ${GO} build -buildmode=c-shared "-ldflags=-extldflags=-Wl,--version-script=${module}/exports.map"
                        -o ${plugin_dir}/libexample_go.so .
                WORKING_DIRECTORY ${module} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go build failed (${rc}):\n${err}")
endif()
file(REMOVE ${plugin_dir}/libexample_go.h)  # cgo's header for C callers; the host needs none
file(COPY ${module}/plugin.toml DESTINATION ${plugin_dir})

# Only the entry point is exported: the version script keeps the Go runtime's symbols local.
ah_expect_entry_only(${plugin_dir}/libexample_go.so)

function(check_tools config)
  ah_expect_loaded(${AGENTHOST} ${config} example_go "[\"go_echo\", \"go_add\"]")
  # Escapes, a control character and non-ASCII text survive the trip host -> Go -> host.
  ah_mcp_call(${AGENTHOST} ${config} ${WORK_DIR} go_echo [=[{"text": "quote \" backslash \\ tab \t ünï 🙂"}]=] result)
  ah_expect_tool_text("${result}" "quote \" backslash \\ tab \t ünï 🙂" OFF)
  ah_mcp_call(${AGENTHOST} ${config} ${WORK_DIR} go_add [=[{"a": 2, "b": 3.5}]=] result)
  ah_expect_tool_text("${result}" "5.5" OFF)
  string(JSON sum GET "${result}" structuredContent sum)
  if(NOT sum EQUAL 5.5)
    message(FATAL_ERROR "go_add: structuredContent.sum is ${sum}:\n${result}")
  endif()
  # A tool that ran and failed reaches the client as an error result, not a broken plugin.
  ah_mcp_call(${AGENTHOST} ${config} ${WORK_DIR} go_add [=[{"a": 1e308, "b": 1e308}]=] result)
  ah_expect_tool_text("${result}" "the sum does not fit a double" ON)
endfunction()

ah_write_config(${WORK_DIR}/agenthost.toml ${WORK_DIR} ${WORK_DIR}/plugins)
check_tools(${WORK_DIR}/agenthost.toml)

# Sandboxed: its own process under the kernel's rules, nothing granted. The Go runtime starts there.
ah_write_config(${WORK_DIR}/sandboxed.toml ${WORK_DIR} ${WORK_DIR}/plugins)
file(APPEND ${WORK_DIR}/sandboxed.toml "[plugins.example_go]\nisolation = \"sandbox\"\n")
ah_run(${AGENTHOST} --config ${WORK_DIR}/sandboxed.toml plugins --json)
string(JSON isolation GET "${last_output}" plugins 0 isolation)
if(NOT isolation STREQUAL "sandbox")
  message(FATAL_ERROR "example_go runs with isolation '${isolation}', expected sandbox:\n${last_output}")
endif()
check_tools(${WORK_DIR}/sandboxed.toml)
message(STATUS "the Go plugin built with cgo loads in agenthost, in process and sandboxed, and its tools run")
