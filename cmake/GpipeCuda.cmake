# CUDA is optional: on by default where a toolkit is found, so the CUDA code is
# always compiled where it can be (CI included) and never required where it cannot.
include(CheckLanguage)
if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(_gpipe_cuda_default ON)
else()
  set(_gpipe_cuda_default OFF)
endif()
option(GPIPE_CUDA "Build the CUDA backend (cuBLAS, CUPTI, NCCL)" ${_gpipe_cuda_default})
if(GPIPE_CUDA)
  # Before enable_language, which otherwise caches nvcc's own default (75).
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures")  # Hopper: H100, H200
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  # CMake before 3.26 does not know nvcc's C++20 flag ("requires the language
  # dialect CUDA20"); nvcc has taken -std=c++20 since 12.0.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  message(STATUS "gpipe: CUDA backend ON (${CUDAToolkit_VERSION})")
else()
  message(STATUS "gpipe: CUDA backend OFF (no CUDA toolkit found)")
endif()
