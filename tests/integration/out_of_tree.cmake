# Installs agenthost (SDK included) into a fresh prefix, checks that the CMake package, pkg-config
# and the generated manifests carry the header's ABI version, builds the C example plugin out of
# tree against the INSTALLED SDK — once with find_package, once with pkg-config — and runs the
# installed host on each result: the plugin must load and its tools must run, with no host rebuild.
# The install is made in one folder and moved to another before use: the installed host finds its
# bundled plugins, web panel and plugin runner relative to itself, and no build path is in it.
# Inputs: SOURCE_DIR, BINARY_DIR, WORK_DIR.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
  set(last_error "${err}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/installed-here --strip)
file(RENAME ${WORK_DIR}/installed-here ${prefix})
foreach(f include/agenthost/agenthost.h include/agenthost/agenthost_helpers.h include/agenthost/plugin.hpp
          lib/cmake/AgentHostSDK/AgentHostSDKConfig.cmake
          share/pkgconfig/agenthost-sdk.pc bin/agenthost)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install is missing ${f}")
  endif()
endforeach()

# One source of the ABI version: the installed header. The CMake package version, the pkg-config
# Version and every generated plugin.toml must say the same (read here from AH_ABI_VERSION_STRING,
# while the build derives it from AH_ABI_MAJOR / AH_ABI_MINOR).
file(STRINGS ${prefix}/include/agenthost/agenthost.h version_line REGEX "^#define AH_ABI_VERSION_STRING ")
if(NOT version_line MATCHES "\"([0-9]+)\\.([0-9]+)\"")
  message(FATAL_ERROR "no AH_ABI_VERSION_STRING in the installed header: ${version_line}")
endif()
set(abi_major ${CMAKE_MATCH_1})
set(abi_minor ${CMAKE_MATCH_2})
set(abi "${abi_major}.${abi_minor}")
math(EXPR next_minor "${abi_minor} + 1")
math(EXPR next_major "${abi_major} + 1")

# find_package: the header's version is found (exactly), an older minor of the same major is
# accepted, a newer minor and another major are refused.
file(WRITE ${WORK_DIR}/version-probe/CMakeLists.txt "cmake_minimum_required(VERSION 3.16)
project(version_probe LANGUAGES NONE)
foreach(request ${abi} ${abi_major}.0 ${abi_major}.${next_minor} ${next_major}.0)
  find_package(AgentHostSDK \${request} QUIET PATHS ${prefix} NO_DEFAULT_PATH)
  message(STATUS \"probe \${request}: found=\${AgentHostSDK_FOUND} version=\${AgentHostSDK_VERSION} abi=\${AGENTHOST_ABI_VERSION}\")
  unset(AgentHostSDK_FOUND)
  unset(AGENTHOST_ABI_VERSION)
endforeach()
find_package(AgentHostSDK ${abi} EXACT REQUIRED PATHS ${prefix} NO_DEFAULT_PATH)
")
run(${CMAKE_COMMAND} -S ${WORK_DIR}/version-probe -B ${WORK_DIR}/version-probe/build)
foreach(expected "probe ${abi}: found=1 version=${abi} abi=${abi}"
                 "probe ${abi_major}.0: found=1 version=${abi} abi=${abi}"
                 "probe ${abi_major}.${next_minor}: found=0"
                 "probe ${next_major}.0: found=0")
  string(FIND "${last_output}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "find_package(AgentHostSDK): expected '${expected}' (header says ${abi}):\n${last_output}")
  endif()
endforeach()

# The C++ helper's target: COMPONENTS cpp finds nlohmann_json for the plugin, and a C++ plugin built
# against AgentHostSDK::cpp alone (no nlohmann_json of its own) compiles.
file(WRITE ${WORK_DIR}/cpp-probe/CMakeLists.txt "cmake_minimum_required(VERSION 3.16)
project(cpp_probe LANGUAGES CXX)
find_package(AgentHostSDK ${abi} REQUIRED COMPONENTS cpp PATHS ${prefix} NO_DEFAULT_PATH)
add_library(cpp_probe MODULE probe.cpp)
target_link_libraries(cpp_probe PRIVATE AgentHostSDK::cpp)
")
file(WRITE ${WORK_DIR}/cpp-probe/probe.cpp [=[
#include <agenthost/plugin.hpp>
using namespace agenthost::sdk;
class Probe : public ToolPlugin {
public:
    explicit Probe(Host host) : ToolPlugin(host) {}
    std::vector<Tool> tools() override { return {{"probe", "answers", {{"type", "object"}}, AH_TOOL_READ_ONLY}}; }
    ToolResult call(const Call&) override { return ToolResult::ok("ok"); }
};
AGENTHOST_PLUGIN(Probe, "probe", "0.1.0", 0)
]=])
run(${CMAKE_COMMAND} -S ${WORK_DIR}/cpp-probe -B ${WORK_DIR}/cpp-probe/build)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/cpp-probe/build)
message(STATUS "AgentHostSDK::cpp: a C++ plugin builds against the installed package")

# The MANIFEST form: the plugin's own plugin.toml.in, written beside the library even when the
# output folder is set after the call; a template with another name, or without the placeholders,
# fails at configure time naming the fix (not later, when the host loads the plugin).
file(COPY ${WORK_DIR}/cpp-probe/probe.cpp DESTINATION ${WORK_DIR}/manifest-probe)
file(WRITE ${WORK_DIR}/manifest-probe/good.toml.in [=[
# a comment: name = "not-this"
name="probe"
kind = "tool"
library = "@AGENTHOST_PLUGIN_LIBRARY@"
abi = "@AGENTHOST_ABI_VERSION@"
version = "0.1.0"
description = "answers"

[settings.limit]
type = "integer"
default = 5
]=])
file(WRITE ${WORK_DIR}/manifest-probe/other_name.toml.in "name = \"other\"\nkind = \"tool\"\nlibrary = \"@AGENTHOST_PLUGIN_LIBRARY@\"\nabi = \"@AGENTHOST_ABI_VERSION@\"\nversion = \"1\"\n")
file(WRITE ${WORK_DIR}/manifest-probe/no_abi.toml.in "name = \"probe\"\nkind = \"tool\"\nlibrary = \"@AGENTHOST_PLUGIN_LIBRARY@\"\nabi = \"@AGENTHOST_ABI@\"\nversion = \"1\"\n")
file(WRITE ${WORK_DIR}/manifest-probe/CMakeLists.txt "cmake_minimum_required(VERSION 3.16)
project(manifest_probe LANGUAGES CXX)
find_package(AgentHostSDK ${abi} REQUIRED COMPONENTS cpp PATHS ${prefix} NO_DEFAULT_PATH)
add_library(probe MODULE probe.cpp)
target_link_libraries(probe PRIVATE AgentHostSDK::cpp)
agenthost_plugin_manifest(TARGET probe NAME probe MANIFEST \${CMAKE_CURRENT_SOURCE_DIR}/\${TEMPLATE})
set_target_properties(probe PROPERTIES LIBRARY_OUTPUT_DIRECTORY \${CMAKE_BINARY_DIR}/plugins/probe)
")
run(${CMAKE_COMMAND} -S ${WORK_DIR}/manifest-probe -B ${WORK_DIR}/manifest-probe/good -DTEMPLATE=good.toml.in)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/manifest-probe/good)
set(probe_dir ${WORK_DIR}/manifest-probe/good/plugins/probe)
if(NOT EXISTS ${probe_dir}/probe.so OR NOT EXISTS ${probe_dir}/plugin.toml)
  file(GLOB_RECURSE found ${WORK_DIR}/manifest-probe/good/*.toml ${WORK_DIR}/manifest-probe/good/*.so)
  message(FATAL_ERROR "the manifest is not beside the library in ${probe_dir}: ${found}")
endif()
file(STRINGS ${probe_dir}/plugin.toml written REGEX "^(abi|library) = ")
if(NOT written STREQUAL "library = \"probe.so\";abi = \"${abi}\"")
  message(FATAL_ERROR "the written manifest says: ${written}")
endif()
# (CMake reflows error text, so only single words are looked for.)
foreach(case "other_name.toml.in|\"other\"," "no_abi.toml.in|\"@AGENTHOST_ABI_VERSION@\"")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 template)
  list(GET parts 1 expected)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/manifest-probe -B ${WORK_DIR}/manifest-probe/${template}-build
                          -DTEMPLATE=${template} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(FIND "${err}" "${expected}" at)
  if(rc EQUAL 0 OR at EQUAL -1)
    message(FATAL_ERROR "${template}: expected configure to fail with '${expected}' (rc ${rc}):\n${err}")
  endif()
endforeach()
message(STATUS "agenthost_plugin_manifest(MANIFEST): written beside the library, mistakes named at configure time")

# pkg-config: Version and the abi_version variable.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} ${prefix}/share/pkgconfig)
run(${PKG_CONFIG} --modversion agenthost-sdk)
string(STRIP "${last_output}" modversion)
run(${PKG_CONFIG} --variable=abi_version agenthost-sdk)
string(STRIP "${last_output}" pc_abi)
if(NOT modversion STREQUAL abi OR NOT pc_abi STREQUAL abi)
  message(FATAL_ERROR "pkg-config says Version ${modversion}, abi_version ${pc_abi}; the header says ${abi}")
endif()
unset(ENV{PKG_CONFIG_PATH})

# Generated manifests (the in-tree plugins, installed) declare the header's version.
function(check_manifest_abi manifest)
  file(STRINGS ${manifest} abi_line REGEX "^abi = ")
  if(NOT abi_line STREQUAL "abi = \"${abi}\"")
    message(FATAL_ERROR "${manifest} says '${abi_line}', the header says ${abi}")
  endif()
endfunction()
check_manifest_abi(${prefix}/lib/agenthost/plugins/scripted/plugin.toml)
message(STATUS "ABI ${abi}: header, CMake package, pkg-config and manifests agree")

# Relocated: with no config at all, the moved install loads its own bundled plugins (and only
# those: the demo's example plugin is not installed), finds its web panel and runs an isolated
# plugin through its own runner. No path of the build or of the first install is in the binaries.
if(EXISTS ${prefix}/lib/agenthost/plugins/example_c)
  message(FATAL_ERROR "the demo's example plugin was installed as a bundled plugin")
endif()
foreach(binary agenthost agenthost-plugin-runner)
  file(STRINGS ${prefix}/bin/${binary} baked REGEX "${BINARY_DIR}|installed-here")
  if(baked)
    message(FATAL_ERROR "bin/${binary} holds a build or install path: ${baked}")
  endif()
endforeach()
file(MAKE_DIRECTORY ${WORK_DIR}/home)
set(bare_env ${CMAKE_COMMAND} -E env HOME=${WORK_DIR}/home XDG_DATA_HOME=${WORK_DIR}/home/data XDG_CONFIG_HOME=${WORK_DIR}/home/config
             --unset=AGENTHOST_CONFIG)
execute_process(COMMAND ${bare_env} ${prefix}/bin/agenthost plugins --json WORKING_DIRECTORY ${WORK_DIR}/home
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the moved install's plugins --json failed (${rc}):\n${out}\n${err}")
endif()
string(JSON count LENGTH "${out}" plugins)
if(count LESS 5)
  message(FATAL_ERROR "the moved install found ${count} plugins:\n${out}")
endif()
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${out}" plugins ${i} name)
  string(JSON status GET "${out}" plugins ${i} status)
  string(JSON file GET "${out}" plugins ${i} file)
  string(JSON kind GET "${out}" plugins ${i} kind)
  # A provider plugin no table uses is found, checked, and left unopened ("unused"); the default
  # one (scripted) is opened like every tool plugin.
  set(found_well FALSE)
  if(status STREQUAL "loaded" OR (kind STREQUAL "provider" AND status STREQUAL "unused"))
    set(found_well TRUE)
  endif()
  if(name STREQUAL "scripted" AND NOT status STREQUAL "loaded")
    set(found_well FALSE)
  endif()
  if(NOT file MATCHES "^${prefix}/lib/agenthost/plugins/" OR NOT found_well)
    message(FATAL_ERROR "the moved install's plugin ${name} is ${status} from ${file}:\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${bare_env} ${prefix}/bin/agenthost config WORKING_DIRECTORY ${WORK_DIR}/home
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(JSON web_dir GET "${out}" server web_dir)
if(NOT web_dir STREQUAL "${prefix}/share/agenthost/web" OR NOT EXISTS ${web_dir}/index.html)
  message(FATAL_ERROR "the moved install's web panel is looked for in '${web_dir}'")
endif()
message(STATUS "relocated: plugins, web panel and runner found beside the moved executable")

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
  check_manifest_abi(${build}/example_c/plugin.toml)

  # Only the out-of-tree plugin and the installed scripted provider: no build-tree plugins.
  file(WRITE ${WORK_DIR}/${mode}.toml "data_dir = \"${WORK_DIR}/data-${mode}\"
plugin_dirs = [\"${build}\", \"${prefix}/lib/agenthost/plugins/scripted\"]
default_plugin_dirs = false
[plugins.scripted]
cassette = \"${WORK_DIR}/cassette.json\"
")
  if(mode STREQUAL "pkg_config")  # in its own process: through the moved install's plugin runner
    file(APPEND ${WORK_DIR}/${mode}.toml "[plugins.example_c]\nisolation = \"process\"\n")
  endif()
  run(${prefix}/bin/agenthost --config ${WORK_DIR}/${mode}.toml plugins --json)
  string(JSON count LENGTH "${last_output}" plugins)
  set(found FALSE)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${last_output}" plugins ${i} name)
    string(JSON status GET "${last_output}" plugins ${i} status)
    string(JSON file GET "${last_output}" plugins ${i} file)
    if(name STREQUAL "example_c")
      string(JSON plugin_abi GET "${last_output}" plugins ${i} abi)
      if(NOT status STREQUAL "loaded" OR NOT file MATCHES "^${build}" OR NOT plugin_abi STREQUAL abi)
        message(FATAL_ERROR "${mode}: example_c is ${status} (abi ${plugin_abi}) from ${file}:\n${last_output}")
      endif()
      set(found TRUE)
    endif()
  endforeach()
  if(NOT found)
    message(FATAL_ERROR "${mode}: the out-of-tree plugin was not listed:\n${last_output}")
  endif()

  run(${prefix}/bin/agenthost --config ${WORK_DIR}/${mode}.toml run "use the plugin")
  foreach(expected "← echo: out of tree" "← add: 5" "finished")
    string(FIND "${last_output}${last_error}" "${expected}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${mode}: the turn did not show '${expected}':\n${last_output}")
    endif()
  endforeach()
  message(STATUS "${mode}: out-of-tree plugin built against the installed SDK and loaded")
endforeach()

# The C provider example builds against the installed SDK alone, and the host loads it.
set(build ${WORK_DIR}/build-provider)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/c-provider-plugin -B ${build} -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${build})
check_manifest_abi(${build}/example_provider_c/plugin.toml)
file(WRITE ${WORK_DIR}/provider.toml "data_dir = \"${WORK_DIR}/data-provider\"
plugin_dirs = [\"${build}\"]
default_plugin_dirs = false
[provider]
use = \"example_provider_c\"
base_url = \"http://127.0.0.1:9\"
model = \"tiny\"
")
run(${prefix}/bin/agenthost --config ${WORK_DIR}/provider.toml plugins)
string(REGEX MATCH "example_provider_c +provider +1.0.0 +abi [0-9.]+ +loaded" listed "${last_output}")
if(NOT listed)
  message(FATAL_ERROR "the out-of-tree provider example is not loaded:\n${last_output}")
endif()
message(STATUS "provider example: built against the installed SDK and loaded")
