# gpipe_library(NAME DEPENDS ... [EXCLUDE regex] [PCH_FROM TARGET]): one
# library per folder of docs/layout.md, made of every .cpp in that folder and
# its subfolders except what EXCLUDE matches, and CUDA sources (*.cu, built
# only when GPIPE_CUDA is on). Built as unity files (gpipe_unity), with the
# common precompiled headers, or PCH_FROM's (gpipe_reuse_precompiled).
function(gpipe_library name)
  cmake_parse_arguments(ARG "" "EXCLUDE;PCH_FROM" "DEPENDS;PRIVATE" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(ARG_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "${ARG_EXCLUDE}")
  endif()
  if(GPIPE_CUDA)
    file(GLOB_RECURSE cuda_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cu)
    if(ARG_EXCLUDE)
      list(FILTER cuda_sources EXCLUDE REGEX "${ARG_EXCLUDE}")
    endif()
    list(APPEND sources ${cuda_sources})
  endif()
  if(sources)
    add_library(${name} STATIC ${sources})
    target_link_libraries(${name} PUBLIC ${ARG_DEPENDS} PRIVATE ${ARG_PRIVATE})
    if(ARG_PCH_FROM)
      gpipe_reuse_precompiled(${name} ${ARG_PCH_FROM})
    else()
      gpipe_precompile(${name})
    endif()
    gpipe_unity(${name})
  else()
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${ARG_DEPENDS})
  endif()
endfunction()

# gpipe_precompile(TARGET [HEADER...]): the standard and third-party
# headers that most of the target's C++ files parse, compiled once per target
# (precompiled headers). With four builds in CI (default, ThreadSanitizer,
# sanitizers, the GPU bundle's check) the same headers were parsed about 1,400
# times: CLI11 takes 5 s a file, nlohmann/json 1.6 s, GoogleTest 1.2 s.
# Without HEADERs, the common list below; with them, those too (CLI/CLI.hpp
# for the command-line targets, gtest/gtest.h for the tests). C++ only: nvcc
# compiles the .cu files as before. GPIPE_PRECOMPILED_HEADERS=OFF builds
# without them.
option(GPIPE_PRECOMPILED_HEADERS "Precompile the common headers of each target" ON)
set(GPIPE_PCH_HEADERS algorithm cstdint functional map memory optional string string_view vector
    fmt/format.h nlohmann/json.hpp)
function(gpipe_precompile target)
  if(NOT GPIPE_PRECOMPILED_HEADERS)
    return()
  endif()
  set(wanted ${ARGN})
  if(NOT wanted)
    set(wanted ${GPIPE_PCH_HEADERS})
  endif()
  set(headers)
  foreach(header IN LISTS wanted)
    list(APPEND headers "$<$<COMPILE_LANGUAGE:CXX>:<${header}$<ANGLE-R>>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${headers})
  # GCC 12 warns of out-of-bounds copies inside its own std::string when a
  # string is built by operator+ (GCC bugs 105329 and 105651, false
  # positives); from headers that come in through a precompiled header it no
  # longer treats them as a system header's, so sweep_csv_head() and four
  # tests printed them. Not warnings clang or GCC 13 give.
  set(gcc12 "$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>")
  target_compile_options(${target} PRIVATE
    "$<${gcc12}:-Wno-array-bounds;-Wno-stringop-overread;-Wno-stringop-overflow>")
endfunction()

# gpipe_reuse_precompiled(TARGET OWNER): TARGET's files take OWNER's
# precompiled headers instead of compiling their own. Only for targets that
# compile with exactly OWNER's options and definitions (the same -O, no
# definition of their own, nothing such as GPIPE_HAVE_MPI from a library
# they link): GCC would quietly parse the headers again where they differ,
# and clang (the sanitize preset) stops with an error. Each precompiled header
# took 6 to 12 s of CPU, about 250 s of the 1,280 s of the default build,
# compiled once per target for the same headers.
function(gpipe_reuse_precompiled target owner)
  if(NOT GPIPE_PRECOMPILED_HEADERS)
    return()
  endif()
  target_precompile_headers(${target} REUSE_FROM ${owner})
  set(gcc12 "$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>")
  target_compile_options(${target} PRIVATE
    "$<${gcc12}:-Wno-array-bounds;-Wno-stringop-overread;-Wno-stringop-overflow>")
endfunction()

# gpipe_unity(TARGET): the target's C++ files compiled together, up to 16 to a
# file (a unity build). The command-line files each instantiated the same
# CLI11, fmt and nlohmann/json templates: the tools' 22 files took 149 s of
# CPU at -O2, 37 s as two unity files (CI builds them three times). Names in
# anonymous namespaces must then differ across a target's files; gpipe_exec's
# layer files share the layout's names and stay out (SKIP_UNITY_BUILD_INCLUSION
# in exec/CMakeLists.txt). A change to one file recompiles its unity file:
# GPIPE_UNITY_BUILD=OFF for file-by-file work.
option(GPIPE_UNITY_BUILD "Compile each library's and test program's C++ files together (unity build)" ON)
function(gpipe_unity target)
  if(GPIPE_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  endif()
endfunction()
