# llmhost_layer(NAME DEPS ...): a static library `llmhost_NAME` from every .cpp
# in src/NAME. Sources are globbed so that adding a file needs no CMake edit.
function(llmhost_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(NOT LLMHOST_HAVE_CUDA)  # host code of the CUDA backend needs its toolkit
    list(FILTER srcs EXCLUDE REGEX "^${CMAKE_CURRENT_SOURCE_DIR}/cuda/")
  endif()
  if(srcs)
    add_library(llmhost_${name} STATIC ${srcs})
    target_include_directories(llmhost_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(llmhost_${name} PUBLIC ${ARG_DEPS})
  else()  # a layer with headers only (so far)
    add_library(llmhost_${name} INTERFACE)
    target_include_directories(llmhost_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(llmhost_${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# llmhost_test(LAYER DEPS ...): one GoogleTest binary per layer from
# tests/LAYER/*_test.cpp, registered with CTest.
function(llmhost_test layer)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${layer}/*_test.cpp)
  if(NOT srcs)
    return()
  endif()
  add_executable(${layer}_tests ${srcs})
  target_include_directories(${layer}_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${layer}_tests PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${layer}_tests PRIVATE
    LLMHOST_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    LLMHOST_BINARY_DIR="${PROJECT_BINARY_DIR}")
  # Test code is compiled for build time: the code under test keeps its
  # optimization, the tests' own bodies (mostly gtest macros) need little.
  # (The sanitizer build keeps its -O1: at -O0 under ASan the grammar,
  # tokenizer and chat suites, whose test code loops over case tables, ran
  # 2-2.6x longer than the compile time it saved.)
  if(CMAKE_BUILD_TYPE STREQUAL "Release" AND NOT (LLMHOST_SANITIZE OR LLMHOST_FUZZ))
    target_compile_options(${layer}_tests PRIVATE -O1)
  endif()
  set_target_properties(${layer}_tests PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 6)
  add_test(NAME ${layer} COMMAND ${layer}_tests --gtest_brief=1)
  set_tests_properties(${layer} PROPERTIES TIMEOUT 1200)
endfunction()
