# GPIPE_SANITIZE (clang only; the `sanitize` preset): every target built with
# AddressSanitizer and UndefinedBehaviorSanitizer, so that the whole test suite
# runs under both (scripts/sanitize), and with libFuzzer's coverage hooks, so
# that the same libraries serve the fuzz targets of tests/fuzz/.
option(GPIPE_SANITIZE "Build with ASan, UBSan and libFuzzer coverage (clang)" OFF)
if(GPIPE_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GPIPE_SANITIZE needs clang (libFuzzer): configure with the `sanitize` preset")
  endif()
  # `undefined` holds signed-integer-overflow and float-cast-overflow, the two
  # classes that integer nanoseconds from untrusted numbers would hit. No
  # recovery: the first finding fails the test or the fuzz run.
  set(GPIPE_SANITIZERS address,undefined)
  add_compile_options(-fsanitize=${GPIPE_SANITIZERS},fuzzer-no-link
                      -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${GPIPE_SANITIZERS})
endif()
