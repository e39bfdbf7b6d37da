# In-tree plugin helper: builds a plugin as a MODULE library into the build's plugin directory
# (<build>/<libdir>/agenthost/plugins/<name>/<name>.so + plugin.toml), where the host finds it with no
# configuration, and installs both under <prefix>/lib/agenthost/plugins/<name>/. The manifest comes
# from the plugin's own plugin.toml.in (MANIFEST), next to its sources.
include(${PROJECT_SOURCE_DIR}/sdk/cmake/AgentHostPluginHelpers.cmake)

function(agenthost_add_plugin)
  cmake_parse_arguments(P "" "NAME;MANIFEST;OUTPUT_DIR" "SOURCES;LINK" ${ARGN})
  if(NOT P_OUTPUT_DIR)
    set(P_OUTPUT_DIR ${AGENTHOST_PLUGIN_OUTPUT_DIR}/${P_NAME})
  endif()
  set(target plugin_${P_NAME})
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE AgentHostSDK::cpp agenthost_warnings ${P_LINK})
  set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  agenthost_plugin_manifest(TARGET ${target} NAME ${P_NAME} MANIFEST ${P_MANIFEST})
  if(P_OUTPUT_DIR STREQUAL "${AGENTHOST_PLUGIN_OUTPUT_DIR}/${P_NAME}")
    install(TARGETS ${target} LIBRARY DESTINATION ${AGENTHOST_INSTALL_PLUGIN_DIR}/${P_NAME} COMPONENT runtime)
    install(FILES ${P_OUTPUT_DIR}/plugin.toml DESTINATION ${AGENTHOST_INSTALL_PLUGIN_DIR}/${P_NAME} COMPONENT runtime)
  endif()
endfunction()
