# Helpers every module uses, so that warnings, test labels and fuzz replay are
# set up the same way everywhere.

# Apply the project's warnings and feature macros to a target.
function(sbx_project_target target)
  target_compile_options(${target} PRIVATE ${SBX_WARNINGS})
  target_compile_definitions(${target} PRIVATE ${SBX_DEFINES})
endfunction()

# sbx_add_test(NAME name SOURCES a.c... [LIBS ...] [LABELS unit|integration|valgrind...]
#              [ARGS ...] [TIMEOUT s])
# Builds a test program and registers it with ctest. Label "valgrind" marks
# tests that ci/test also runs under valgrind (memcheck).
function(sbx_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  sbx_project_target(${T_NAME})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} PkgConfig::CMOCKA)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "SBX_SOURCE_DIR=${CMAKE_SOURCE_DIR};SBX_BINARY_DIR=${CMAKE_BINARY_DIR};SBX_FIXTURES_DIR=${SBX_FIXTURES_DIR}")
endfunction()

# sbx_add_fuzzer(NAME name SOURCE file.c LIBS ... CORPUS dir [DICT file])
# Always builds <name>_replay (the target plus fuzz/replay_main.c) and runs it
# over the corpus as a ctest test, so gcc builds replay every corpus file. With
# SBX_FUZZ (or SBX_LIB_FUZZING_ENGINE) it also builds <name>, the libFuzzer
# binary, linked with -fsanitize=fuzzer or with SBX_LIB_FUZZING_ENGINE.
function(sbx_add_fuzzer)
  cmake_parse_arguments(F "" "NAME;SOURCE;CORPUS;DICT" "LIBS" ${ARGN})
  add_executable(${F_NAME}_replay ${F_SOURCE} ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
  sbx_project_target(${F_NAME}_replay)
  target_link_libraries(${F_NAME}_replay PRIVATE ${F_LIBS})
  add_test(NAME fuzz_replay_${F_NAME} COMMAND ${F_NAME}_replay ${F_CORPUS})
  set_tests_properties(fuzz_replay_${F_NAME} PROPERTIES LABELS "fuzz" TIMEOUT 300)
  if(SBX_FUZZ OR NOT SBX_LIB_FUZZING_ENGINE STREQUAL "")
    add_executable(${F_NAME} ${F_SOURCE})
    sbx_project_target(${F_NAME})
    if(SBX_LIB_FUZZING_ENGINE STREQUAL "")
      target_link_libraries(${F_NAME} PRIVATE ${F_LIBS})
      target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer)
    else()
      separate_arguments(engine UNIX_COMMAND "${SBX_LIB_FUZZING_ENGINE}")
      target_link_libraries(${F_NAME} PRIVATE ${F_LIBS} ${engine})
    endif()
  endif()
endfunction()
