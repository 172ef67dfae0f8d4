# Warnings, ccache and sanitizers for every brisk target.
find_program(BRISK_CCACHE ccache)
if(BRISK_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER "${BRISK_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${BRISK_CCACHE}")
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${BRISK_CCACHE}")
endif()

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

add_library(brisk_warnings INTERFACE)
target_compile_options(brisk_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wno-unused-parameter>)

if(BRISK_SANITIZE)
  string(REPLACE ";" "," _brisk_san "${BRISK_SANITIZE}")
  add_compile_options(-fsanitize=${_brisk_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${_brisk_san})
endif()

# The fuzz preset: coverage instrumentation (libFuzzer's -fsanitize=fuzzer-no-link) plus ASan and UBSan on every
# brisk target; the fuzz targets themselves link libFuzzer (-fsanitize=fuzzer, tests/fuzz/CMakeLists.txt).
if(BRISK_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "BRISK_BUILD_FUZZERS needs clang (libFuzzer); use the fuzz preset (clang-14)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
