# The Rust example plugin (examples/rust-echo-plugin), with cargo, offline, outside the source tree.
#   MODE=layout : `cargo test`: the #[repr(C)] bindings against a layout table freshly printed by
#                 sdk/abi/abi_layout.c compiled from the header (plus the crate's own unit tests:
#                 JSON, the panic guard, the plugin driven through its entry point).
#   MODE=plugin : `cargo build`, then the built agenthost loads the library (`plugins --json`) and
#                 runs its tools over `agenthost mcp`.
# Skipped (ctest SKIP_REGULAR_EXPRESSION "SKIPPED: cargo") only when cargo is not installed.
# Inputs: MODE, SOURCE_DIR, TARGET_DIR (CARGO_TARGET_DIR), WORK_DIR; LAYOUT_GENERATOR (layout);
# AGENTHOST (plugin).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/agenthost_driver.cmake)

find_program(CARGO cargo)
if(NOT CARGO)
  message(STATUS "SKIPPED: cargo is not installed (Debian package cargo; scripts/install-deps installs it)")
  return()
endif()

set(crate ${SOURCE_DIR}/examples/rust-echo-plugin)
# Builds land under the build tree; --locked keeps cargo from rewriting the committed Cargo.lock.
set(ENV{CARGO_TARGET_DIR} ${TARGET_DIR})
set(cargo_args --offline --locked --manifest-path ${crate}/Cargo.toml)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

if(MODE STREQUAL "layout")
  ah_run(${LAYOUT_GENERATOR})
  file(WRITE ${WORK_DIR}/abi-layout.md "${last_output}")
  set(ENV{AH_ABI_LAYOUT} ${WORK_DIR}/abi-layout.md)
  ah_run_tests(${crate} "test tests::layout_matches_the_c_header \\.\\.\\. ok" "the layout test" ${CARGO} test ${cargo_args})
  return()
endif()

if(NOT MODE STREQUAL "plugin")
  message(FATAL_ERROR "MODE must be layout or plugin")
endif()
ah_run(${CARGO} build ${cargo_args})
set(library ${TARGET_DIR}/debug/libexample_rust.so)
if(NOT EXISTS ${library})
  message(FATAL_ERROR "cargo build produced no ${library}")
endif()

# A plugin folder: the library and its manifest, side by side.
set(plugin_dir ${WORK_DIR}/plugins/example_rust)
file(MAKE_DIRECTORY ${plugin_dir})
file(COPY ${library} ${crate}/plugin.toml DESTINATION ${plugin_dir})

# Only the entry point is exported (a Rust cdylib exports its #[no_mangle] pub functions only).
ah_expect_entry_only(${plugin_dir}/libexample_rust.so)

ah_write_config(${WORK_DIR}/agenthost.toml ${WORK_DIR} ${WORK_DIR}/plugins)
ah_expect_loaded(${AGENTHOST} ${WORK_DIR}/agenthost.toml example_rust "[\"rust_echo\", \"rust_add\"]")

# Escapes, a control character and non-ASCII text survive the trip host -> Rust -> host.
ah_mcp_call(${AGENTHOST} ${WORK_DIR}/agenthost.toml ${WORK_DIR} rust_echo
            [=[{"text": "quote \" backslash \\ tab \t ünï 🙂"}]=] result)
ah_expect_tool_text("${result}" "quote \" backslash \\ tab \t ünï 🙂" OFF)

ah_mcp_call(${AGENTHOST} ${WORK_DIR}/agenthost.toml ${WORK_DIR} rust_add [=[{"a": 2, "b": 3.5}]=] result)
ah_expect_tool_text("${result}" "5.5" OFF)
string(JSON sum GET "${result}" structuredContent sum)
if(NOT sum EQUAL 5.5)
  message(FATAL_ERROR "rust_add: structuredContent.sum is ${sum}:\n${result}")
endif()

# A tool that ran and failed reaches the client as an error result, not a broken plugin.
ah_mcp_call(${AGENTHOST} ${WORK_DIR}/agenthost.toml ${WORK_DIR} rust_add [=[{"a": 1e308, "b": 1e308}]=] result)
ah_expect_tool_text("${result}" "the sum does not fit a double" ON)
message(STATUS "the Rust plugin built with cargo loads in agenthost and its tools run")
