# Compares the ABI of agenthost.h (as seen through sdk/abi/abi_surface.c) with the committed
# baseline. Fails on an incompatible change: anything but growth at the end of a struct (ABI rule 1)
# or new functions. Growth passes with a note to refresh the baseline (scripts/update-abi-baseline).
# Inputs: ABIDW, ABIDIFF, LIBRARY, BASELINE, WORK_DIR.
if(NOT ABIDW OR NOT ABIDIFF)
  message(FATAL_ERROR "abidw/abidiff not found: install Debian's abigail-tools")
endif()
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${ABIDW} --no-corpus-path --out-file ${WORK_DIR}/current.xml ${LIBRARY}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "abidw failed: ${err}")
endif()
execute_process(COMMAND ${ABIDIFF} --harmless ${BASELINE} ${WORK_DIR}/current.xml
                RESULT_VARIABLE rc OUTPUT_VARIABLE report ERROR_VARIABLE err)
message(STATUS "abidiff exit status ${rc}\n${report}${err}")
math(EXPR error_bits "${rc} & 3")
math(EXPR change_bit "${rc} & 4")
math(EXPR incompatible_bit "${rc} & 8")
if(error_bits)
  message(FATAL_ERROR "abidiff could not compare (status ${rc})")
endif()
if(incompatible_bit)
  message(FATAL_ERROR "INCOMPATIBLE ABI change against ${BASELINE}: see the report above")
endif()
if(change_bit)
  # Allowed: members appended at the end of a struct (size grows, no offset moves), enumerators
  # appended. Anything that moves, removes or retypes something breaks plugins already built.
  # (Indirect reports such as "type of 'f' changed: in pointed to type …" only echo a growth.)
  string(REGEX MATCHALL "[^\n]*(offset changed|deletion|[1-9][0-9]* Removed|enumerator change|value changed|type name changed|name of ')[^\n]*" breaking "${report}")
  if(breaking)
    string(REPLACE ";" "\n" breaking "${breaking}")
    message(FATAL_ERROR "Incompatible ABI change against ${BASELINE}:\n${breaking}")
  endif()
  message(WARNING "The ABI grew compatibly; refresh the baseline with scripts/update-abi-baseline, bump AH_ABI_MINOR, list the new members in sdk/abi/abi_layout.c and run scripts/update-abi-layout.")
endif()
