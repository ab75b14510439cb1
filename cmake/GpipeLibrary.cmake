# gpipe_library(NAME DEPENDS ...): one library per folder of DESIGN.md, made of
# every .cpp in that folder and its subfolders except the command-line tools
# (tool/) and CUDA sources (*.cu, built only when GPIPE_CUDA is on).
function(gpipe_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;PRIVATE" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  list(FILTER sources EXCLUDE REGEX "/tool/")
  if(GPIPE_CUDA)
    file(GLOB_RECURSE cuda_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cu)
    list(APPEND sources ${cuda_sources})
  endif()
  if(sources)
    add_library(${name} STATIC ${sources})
    target_link_libraries(${name} PUBLIC ${ARG_DEPENDS} PRIVATE ${ARG_PRIVATE})
  else()
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${ARG_DEPENDS})
  endif()
endfunction()
