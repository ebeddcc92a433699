# Each layer but backend is a unity build (8 sources a translation unit): CI
# has two cores, and most of a source's compile time is the headers. The
# files below define internal names (in an anonymous namespace, or static)
# that another file of their layer defines too; they are compiled alone, so
# that no call can meet the other file's function. backend stays out: its CPU
# kernels select instruction sets per file.
set(LLMHOST_UNITY_SKIP
  chat/jinja_json.cpp
  chat/jinja_methods.cpp
  chat/jinja_ops.cpp
  chat/json_scan.cpp
  chat/python_literal.cpp
  chat/tool_call_grammar.cpp
  chat/tool_format_deepseek.cpp
  chat/tool_format_glm45.cpp
  chat/tool_format_hermes.cpp
  chat/tool_format_kimi.cpp
  chat/tool_format_qwen3_coder.cpp
  cli/cmd_bench.cpp
  cli/cmd_client.cpp
  cli/cmd_generate.cpp
  cli/cmd_grammar_check.cpp
  cli/cmd_parse_output.cpp
  cli/cmd_pull.cpp
  cli/cmd_score.cpp
  cli/cmd_serve.cpp
  cli/cmd_synth.cpp
  cli/cmd_template.cpp
  cli/cmd_tokenizer.cpp
  formats/inspect.cpp
  formats/safetensors_model.cpp
  grammar/json_schema_merge.cpp
  grammar/json_schema_objects.cpp
  grammar/mask_entry.cpp
  grammar/token_walk.cpp
  kv/fingerprint.cpp
  kv/weights_digest.cpp
  model/arch.cpp
  model/forward.cpp
  model/random_model.cpp
  model/synth_model.cpp
  model/weight_slice.cpp
  pool/engine_pool.cpp
  pool/hf_cache_revisions.cpp
  pool/hub_file_select.cpp
  pool/model_discovery.cpp
  pool/model_removal.cpp
  pool/pool_admin.cpp
  pool/pool_admission.cpp
  pool/pool_kv_budget.cpp
  server/anthropic_request.cpp
  server/anthropic_response.cpp
  server/host_guard.cpp
  server/http_server.cpp
  server/ollama_request.cpp
  server/ollama_response.cpp
  server/openai_request.cpp
  server/openai_response.cpp
  server/output_constraint.cpp
  server/responses_response.cpp
  server/routes_admin.cpp
  server/routes_bench.cpp
  server/routes_dashboard.cpp
  server/routes_embeddings.cpp
  server/routes_inference.cpp
  server/structured_output_request.cpp
  tokenizer/bpe_model.cpp
  tokenizer/decoder.cpp
  tokenizer/gguf_vocab.cpp
  tokenizer/normalizer.cpp
  tokenizer/post_processor.cpp
  tokenizer/pre_tokenizer.cpp
  tokenizer/precompiled.cpp
  tokenizer/tokenizer.cpp
  tokenizer/unigram_model.cpp
  tokenizer/wordpiece_model.cpp)

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
    if(NOT name STREQUAL "backend")
      set_target_properties(llmhost_${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
      foreach(f ${LLMHOST_UNITY_SKIP})
        if(f MATCHES "^${name}/")
          set_source_files_properties(${PROJECT_SOURCE_DIR}/src/${f} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
        endif()
      endforeach()
    endif()
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
