# The project's dependencies, all from Debian's packages (scripts/setup installs them).
find_package(fmt REQUIRED)
# GPIPE_PORTABLE: binaries that run on a machine without this one's Debian
# packages (the lent GPU machine, which has the CUDA toolkit and little else):
# fmt header-only, OpenBLAS and the GCC runtimes linked statically.
option(GPIPE_PORTABLE "Link the non-CUDA dependencies statically" OFF)
if(GPIPE_PORTABLE)
  set(GPIPE_FMT fmt::fmt-header-only)
  add_link_options(-static-libstdc++ -static-libgcc)
else()
  set(GPIPE_FMT fmt::fmt)
endif()
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
# Boost.Graph is header-only for what we use; it stays inside schedules/*.cpp.
find_package(Boost 1.74 REQUIRED)
find_package(Threads REQUIRED)
# PyTorch profiler traces may be gzip (interop/gzip_text.hpp). Linked
# statically: the lent GPU machine has no libz.so.1 (scripts/device-bundle
# checks what the bundle's programs need of it).
set(ZLIB_USE_STATIC_LIBS ON)
find_package(ZLIB REQUIRED)
if(GPIPE_BUILD_TESTS OR NOT DEFINED GPIPE_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
endif()
# OpenBLAS for the CPU executor's GEMMs (libopenblas-dev). Its own cblas.h, which
# also declares openblas_set_num_threads (each stage's worker runs GEMMs on its
# own thread, so OpenBLAS must not spawn more).
if(GPIPE_PORTABLE)
  find_library(OPENBLAS_LIBRARY NAMES libopenblas.a REQUIRED)
  # The static OpenBLAS needs its Fortran runtime, also static.
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libgfortran.a
                  OUTPUT_VARIABLE GPIPE_GFORTRAN_A OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libquadmath.a
                  OUTPUT_VARIABLE GPIPE_QUADMATH_A OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND OPENBLAS_LIBRARY ${GPIPE_GFORTRAN_A} ${GPIPE_QUADMATH_A})
else()
  find_library(OPENBLAS_LIBRARY NAMES openblas REQUIRED)
endif()
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  PATH_SUFFIXES openblas-pthread openblas x86_64-linux-gnu/openblas-pthread REQUIRED)
add_library(gpipe_openblas INTERFACE)
target_link_libraries(gpipe_openblas INTERFACE ${OPENBLAS_LIBRARY})
target_include_directories(gpipe_openblas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
# Open MPI (libopenmpi-dev) for ranks as processes on the CPU: gpipe-run under
# mpirun or srun. Off in the portable build, whose machine has no MPI library.
if(GPIPE_PORTABLE)
  set(GPIPE_MPI_DEFAULT OFF)
else()
  set(GPIPE_MPI_DEFAULT ON)
endif()
option(GPIPE_MPI "Build the CPU backend's MPI link (ranks as processes)" ${GPIPE_MPI_DEFAULT})
if(GPIPE_MPI)
  set(MPI_CXX_SKIP_MPICXX ON)  # MPI's C API from C++, without the deprecated C++ bindings
  find_package(MPI COMPONENTS CXX REQUIRED)
endif()
