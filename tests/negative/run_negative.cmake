# Compiles SOURCE twice: as is it must fail with the message given on its
# `// expect:` line; with FUSEX_NEGATIVE_CONTROL defined it must compile.
# CXX_FLAGS: the flags fusex's target gives its users (may be empty).
file(STRINGS ${SOURCE} expect_lines REGEX "^// expect: ")
list(GET expect_lines 0 expect_line)
string(REGEX REPLACE "^// expect: " "" expected "${expect_line}")

execute_process(
  COMMAND ${CXX} -std=c++20 ${CXX_FLAGS} -fsyntax-only -I${INCLUDE} -DFUSEX_NEGATIVE_CONTROL ${SOURCE}
  RESULT_VARIABLE control_rc OUTPUT_VARIABLE control_out ERROR_VARIABLE control_err)
if(NOT control_rc EQUAL 0)
  message(FATAL_ERROR "control build of ${SOURCE} failed; the test itself is broken:\n${control_err}")
endif()

execute_process(
  COMMAND ${CXX} -std=c++20 ${CXX_FLAGS} -fsyntax-only -I${INCLUDE} ${SOURCE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must be rejected with: ${expected}")
endif()
string(REGEX MATCH "${expected}" found "${out}${err}")
if(NOT found)
  message(FATAL_ERROR "${SOURCE} failed to compile, but without the expected message '${expected}':\n${err}")
endif()
message(STATUS "rejected as expected: ${found}")
