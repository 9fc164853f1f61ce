# --list names every check id of the spec's catalogue (spec ids with a
# trailing "…" are families: at least their first member must be listed).
#   -DCONFORM=path -DSPEC=backend-conformance.md (optional)
execute_process(COMMAND ${CONFORM} --list RESULT_VARIABLE rc OUTPUT_VARIABLE all)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--list exited ${rc}")
endif()
set(ids CAP-001 CAP-002 CAP-003 CAP-004 CAP-005 REF-001 REF-002 REF-003 FB-001 FB-013
    CLN-001 CLN-002 CLN-003 CLN-004 RES-001 RES-002 RES-003 RES-004 CON-001 CON-002
    CREATEOS-001 CREATEOS-002 CREATEOS-003 CREATEOS-004 CREATEOS-005 CREATEOS-006 CREATEOS-007
    COMP-001 EXEC-001 GATE-001)
if(SPEC AND EXISTS ${SPEC})
  file(READ ${SPEC} spec)
  string(REGEX MATCHALL "\\| [A-Z]+-[0-9][0-9][0-9] \\|" rows "${spec}")
  foreach(r ${rows})
    string(REGEX MATCH "[A-Z]+-[0-9]+" id "${r}")
    list(APPEND ids ${id})
  endforeach()
endif()
list(REMOVE_DUPLICATES ids)
foreach(id ${ids})
  string(FIND "${all}" "${id} " at)
  if(at EQUAL -1)
    message(FATAL_ERROR "--list lacks ${id}")
  endif()
endforeach()
