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
