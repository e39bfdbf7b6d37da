# docs/abi-layout.md is what sdk/abi/abi_layout.c prints when compiled against agenthost.h, and the
# sizes it derives for minor 0 are the real sizes of the ABI 1.0 header (tests/fixtures/sdk-1.0).
# Inputs: GENERATOR (built against the current header), GENERATOR_1_0 (built against the 1.0
# header), DOC (the committed page), WORK_DIR.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../integration/agenthost_driver.cmake)
file(MAKE_DIRECTORY ${WORK_DIR})

ah_run(${GENERATOR})
file(WRITE ${WORK_DIR}/abi-layout.md "${last_output}")
file(READ ${DOC} committed)
if(NOT committed STREQUAL last_output)
  find_program(DIFF diff)
  set(report "")
  if(DIFF)
    execute_process(COMMAND ${DIFF} -u ${DOC} ${WORK_DIR}/abi-layout.md OUTPUT_VARIABLE report)
  endif()
  message(FATAL_ERROR "${DOC} is not what the header gives (${WORK_DIR}/abi-layout.md). After a deliberate "
                      "ABI change, regenerate it with scripts/update-abi-layout.\n${report}")
endif()
message(STATUS "${DOC} matches the header")

# The per-minor sizes are derived from each member's minor; for 1.0 they can be checked for real.
ah_run(${GENERATOR} --sizes 0)
set(derived "${last_output}")
ah_run(${GENERATOR_1_0} --sizes 0)
if(NOT derived STREQUAL last_output)
  message(FATAL_ERROR "the 1.0 sizes derived from the current header:\n${derived}\ndiffer from the ABI 1.0 header's:\n${last_output}")
endif()
message(STATUS "the 1.0 column matches the ABI 1.0 header")
