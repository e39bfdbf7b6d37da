# The C plugin skeleton of docs/plugin-abi.md, compiled and run, so the page cannot go stale.
#
# Every fenced code block preceded by a line `<!-- compiled-by-tests: NAME -->` is appended, in page order,
# to the file NAME. skeleton.c is compiled as C11 with -Wall -Wextra -Werror -pedantic against the
# SDK (source tree) into the library plugin.toml names; the plugin.toml must declare the header's
# ABI version; the built agenthost must load the plugin and its `ping` tool must answer "pong".
# Inputs: SOURCE_DIR, WORK_DIR, C_COMPILER, AGENTHOST.
cmake_minimum_required(VERSION 3.25)  # policies of if(IN_LIST), while(), string(JSON)
include(${CMAKE_CURRENT_LIST_DIR}/../integration/agenthost_driver.cmake)

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/snippets)
set(page ${SOURCE_DIR}/docs/plugin-abi.md)
file(READ ${page} doc)

# Walk the page from marker to marker (string positions: a CMake list would split code at ';').
# A marker starts a line; the same words inside prose are not one.
set(marker "\n<!-- compiled-by-tests: ")
set(names "")
set(rest "${doc}")
while(TRUE)
  string(FIND "${rest}" "${marker}" at)
  if(at EQUAL -1)
    break()
  endif()
  string(LENGTH "${marker}" marker_len)
  math(EXPR at "${at} + ${marker_len}")
  string(SUBSTRING "${rest}" ${at} -1 rest)
  # NAME --> \n```lang\n CODE \n```
  if(NOT rest MATCHES "^([A-Za-z0-9_.-]+) -->\n```[a-z]*\n")
    string(SUBSTRING "${rest}" 0 80 context)
    message(FATAL_ERROR "${page}: a compiled-by-tests marker must be followed by a fenced block: ${context}")
  endif()
  set(name ${CMAKE_MATCH_1})
  string(LENGTH "${CMAKE_MATCH_0}" header_len)
  string(SUBSTRING "${rest}" ${header_len} -1 rest)
  string(FIND "${rest}" "\n```" fence_end)
  if(fence_end EQUAL -1)
    message(FATAL_ERROR "${page}: the block for ${name} is not closed")
  endif()
  string(SUBSTRING "${rest}" 0 ${fence_end} code)
  file(APPEND ${WORK_DIR}/snippets/${name} "${code}\n")
  list(APPEND names ${name})
endwhile()
foreach(required skeleton.c plugin.toml)
  if(NOT required IN_LIST names)
    message(FATAL_ERROR "${page} has no block marked <!-- compiled-by-tests: ${required} -->")
  endif()
endforeach()
list(REMOVE_DUPLICATES names)
message(STATUS "extracted from ${page}: ${names}")

# The manifest: its abi must be the header's, its library names the file we build.
file(STRINGS ${SOURCE_DIR}/sdk/include/agenthost/agenthost.h version_line REGEX "^#define AH_ABI_VERSION_STRING ")
string(REGEX MATCH "\"([0-9]+\\.[0-9]+)\"" _ "${version_line}")
set(abi ${CMAKE_MATCH_1})
file(READ ${WORK_DIR}/snippets/plugin.toml manifest)
if(NOT manifest MATCHES "\nabi = \"([^\"]*)\"" OR NOT CMAKE_MATCH_1 STREQUAL abi)
  message(FATAL_ERROR "${page}: the plugin.toml example says abi = \"${CMAKE_MATCH_1}\", the header says ${abi}")
endif()
if(NOT manifest MATCHES "\nlibrary = \"([^\"]+)\"")
  message(FATAL_ERROR "${page}: the plugin.toml example names no library")
endif()
set(library ${CMAKE_MATCH_1})
if(NOT manifest MATCHES "^name = \"([^\"]+)\"")
  message(FATAL_ERROR "${page}: the plugin.toml example does not start with its name")
endif()
set(plugin_name ${CMAKE_MATCH_1})

set(plugin_dir ${WORK_DIR}/plugins/${plugin_name})
file(MAKE_DIRECTORY ${plugin_dir})
file(COPY ${WORK_DIR}/snippets/plugin.toml DESTINATION ${plugin_dir})
ah_run(${C_COMPILER} -std=c11 -Wall -Wextra -Werror -pedantic -fPIC -shared -fvisibility=hidden
       -I${SOURCE_DIR}/sdk/include ${WORK_DIR}/snippets/skeleton.c -o ${plugin_dir}/${library})
message(STATUS "skeleton.c compiled cleanly (C11, -Wall -Wextra -Werror -pedantic)")

ah_write_config(${WORK_DIR}/agenthost.toml ${WORK_DIR} ${WORK_DIR}/plugins)
ah_expect_loaded(${AGENTHOST} ${WORK_DIR}/agenthost.toml ${plugin_name} "[\"ping\",\"my_plugin_version\"]")
ah_mcp_call(${AGENTHOST} ${WORK_DIR}/agenthost.toml ${WORK_DIR} ping "{}" result)
ah_expect_tool_text("${result}" "pong" OFF)
message(STATUS "the skeleton of ${page} loads and its tool answers")
