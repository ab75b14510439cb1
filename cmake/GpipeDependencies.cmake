# The project's dependencies, all from Debian's packages (scripts/setup installs them).
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
# Boost.Graph is header-only for what we use; it stays inside schedules/*.cpp.
find_package(Boost 1.74 REQUIRED)
find_package(Threads REQUIRED)
if(GPIPE_BUILD_TESTS OR NOT DEFINED GPIPE_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
endif()
# OpenBLAS for the CPU executor's GEMMs (libopenblas-dev). Its own cblas.h, which
# also declares openblas_set_num_threads (each stage's worker runs GEMMs on its
# own thread, so OpenBLAS must not spawn more).
find_library(OPENBLAS_LIBRARY NAMES openblas REQUIRED)
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  PATH_SUFFIXES openblas-pthread openblas x86_64-linux-gnu/openblas-pthread REQUIRED)
add_library(gpipe_openblas INTERFACE)
target_link_libraries(gpipe_openblas INTERFACE ${OPENBLAS_LIBRARY})
target_include_directories(gpipe_openblas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
