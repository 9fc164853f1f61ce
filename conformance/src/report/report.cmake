# The report writers of sbx-conform (human, TAP, JUnit, JSON, HTML) as the
# static library `sbxreport`, plus their tests. Included by
# conformance/CMakeLists.txt: include(${CMAKE_CURRENT_SOURCE_DIR}/src/report/report.cmake).
# Also includable from any project that has already defined the `sbx` target,
# the PkgConfig::CJSON/CMOCKA imported targets and sbx_add_test().
set(SBX_REPORT_DIR ${CMAKE_CURRENT_LIST_DIR})
get_filename_component(SBX_CONFORM_DIR ${SBX_REPORT_DIR}/../.. ABSOLUTE)

file(GLOB SBX_REPORT_SOURCES CONFIGURE_DEPENDS ${SBX_REPORT_DIR}/report*.c)
add_library(sbxreport STATIC ${SBX_REPORT_SOURCES})
sbx_project_target(sbxreport)
target_include_directories(sbxreport PUBLIC ${SBX_REPORT_DIR})
target_link_libraries(sbxreport PUBLIC sbx PkgConfig::CJSON)

if(BUILD_TESTING)
  set(SBX_REPORT_TESTS ${SBX_CONFORM_DIR}/tests/report)

  # The writers, one behaviour per test, on a fixture with every verdict and
  # hostile strings (also run under valgrind by ci/test).
  sbx_add_test(NAME conform_report_writers
    SOURCES ${SBX_REPORT_TESTS}/test_report.c
    LIBS sbxreport
    ARGS ${SBX_REPORT_TESTS}/fixture_report.json
    LABELS "unit;valgrind")

  # Renders a JSON report file in one format (used by the script tests).
  add_executable(conform_report_render ${SBX_REPORT_TESTS}/report_render.c)
  sbx_project_target(conform_report_render)
  target_link_libraries(conform_report_render PRIVATE sbxreport)

  # JUnit output validates against the committed Jenkins/Ant-style schema.
  add_test(NAME conform_report_junit_schema
    COMMAND sh ${SBX_REPORT_TESTS}/junit_schema_test.sh
            $<TARGET_FILE:conform_report_render> ${SBX_REPORT_TESTS})
  set_tests_properties(conform_report_junit_schema PROPERTIES
    LABELS integration TIMEOUT 60 SKIP_RETURN_CODE 77)

  find_program(SBX_PYTHON3 NAMES python3.11 python3)

  # The HTML report renders in headless Chromium and shows failure evidence.
  if(SBX_PYTHON3)
    add_test(NAME conform_report_html_chromium
      COMMAND ${SBX_PYTHON3} ${SBX_REPORT_TESTS}/html_chromium_test.py
              $<TARGET_FILE:conform_report_render> ${SBX_REPORT_TESTS})
    set_tests_properties(conform_report_html_chromium PROPERTIES
      LABELS "integration;browser" TIMEOUT 240 SKIP_RETURN_CODE 77)
  endif()

  # The Python adapter (conformance/adapters/) under python3 -m unittest.
  if(EXISTS ${SBX_CONFORM_DIR}/tests/adapters/test_adapter.py)
    if(SBX_PYTHON3)
      set(_sbx_adapter_env
        "SBX_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
        "SBX_CONFORM_DIR=${SBX_CONFORM_DIR}"
        "PYTHONDONTWRITEBYTECODE=1")
      if(TARGET sbx-mock)
        list(APPEND _sbx_adapter_env "SBX_MOCK_BIN=$<TARGET_FILE:sbx-mock>")
      else()
        list(APPEND _sbx_adapter_env "SBX_MOCK_BIN=") # end-to-end tests skip
      endif()
      add_test(NAME conform_python_adapter
        COMMAND ${SBX_PYTHON3} -m unittest discover -v
                -s ${SBX_CONFORM_DIR}/tests/adapters -p "test_*.py"
        WORKING_DIRECTORY ${SBX_CONFORM_DIR}/tests/adapters)
      set_tests_properties(conform_python_adapter PROPERTIES
        LABELS "integration;python" TIMEOUT 180 ENVIRONMENT "${_sbx_adapter_env}")
    endif()
  endif()
endif()
