# The optional CUDA backend (exec/cuda/). Included by the top-level CMakeLists.txt after the
# executor's dependencies are found; sets PW_CUDA_ENABLED (ON or OFF) for the folders below.
#
# PW_WITH_CUDA: AUTO (default) enables the backend where nvcc and the CUDA toolkit are found
# (CMAKE_CUDA_COMPILER, CUDACXX, PATH, or /usr/local/cuda/bin; CUDAToolkit_ROOT when set) and
# otherwise prints one line saying it is skipped and why; ON fails configuration when they are missing; OFF never looks. Without
# the backend the build is the CPU build, unchanged.
#
# CMake 3.25 does not know CUDA's C++20 dialect (CUDA_STANDARD 20 fails), so CUDA targets get
# -std=c++20 as a CUDA-only compile option instead (pw_cuda_options).

set(PW_WITH_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO (where nvcc is found), ON, OFF")
set_property(CACHE PW_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${PW_WITH_CUDA}" pw_cuda_mode)
if(NOT pw_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "PW_WITH_CUDA: expected AUTO, ON or OFF, got '${PW_WITH_CUDA}'")
endif()
set(CMAKE_CUDA_ARCHITECTURES "90;80" CACHE STRING "CUDA architectures of the CUDA backend")

set(PW_CUDA_ENABLED OFF)
set(pw_cuda_why "")

function(pw_cuda_skip_or_fail why)
  if(pw_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "PW_WITH_CUDA=ON: ${why}")
  endif()
  set(pw_cuda_why "${why}" PARENT_SCOPE)
endfunction()

if(pw_cuda_mode STREQUAL "OFF")
  set(pw_cuda_why "PW_WITH_CUDA=OFF")
elseif(NOT PW_WITH_DNNL)
  pw_cuda_skip_or_fail("the executor is off (PW_WITH_DNNL=OFF)")
else()
  # The compiler: CMAKE_CUDA_COMPILER, else $CUDACXX, else nvcc in PATH or /usr/local/cuda/bin.
  # Nothing else is probed when none is there, so a machine without CUDA prints one line.
  if(CMAKE_CUDA_COMPILER)
    set(pw_nvcc "${CMAKE_CUDA_COMPILER}")
  elseif(DEFINED ENV{CUDACXX})
    set(pw_nvcc "$ENV{CUDACXX}")
  else()
    find_program(pw_nvcc nvcc PATHS /usr/local/cuda/bin NO_CACHE)
  endif()
  if(NOT pw_nvcc)
    pw_cuda_skip_or_fail("no nvcc in PATH or /usr/local/cuda/bin")
  elseif(NOT EXISTS "${pw_nvcc}")
    pw_cuda_skip_or_fail("no CUDA compiler at ${pw_nvcc}")
  elseif(DEFINED CUDAToolkit_ROOT AND NOT EXISTS "${CUDAToolkit_ROOT}")
    pw_cuda_skip_or_fail("no CUDA toolkit at CUDAToolkit_ROOT=${CUDAToolkit_ROOT}")
  else()
    set(CMAKE_CUDA_COMPILER "${pw_nvcc}" CACHE FILEPATH "CUDA compiler")
    include(CheckLanguage)
    check_language(CUDA)
    find_package(CUDAToolkit QUIET)
    # The static runtime is linked, cuBLASLt opened at run time (its target gives the header).
    if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cudart_static OR NOT TARGET CUDA::cublasLt)
      pw_cuda_skip_or_fail("nvcc found (${pw_nvcc}) but not the CUDA toolkit's static runtime and "
                           "cuBLASLt libraries")
    else()
      set(PW_CUDA_ENABLED ON)
    endif()
  endif()
endif()

if(PW_CUDA_ENABLED)
  if(NOT CMAKE_CUDA_COMPILER_LAUNCHER AND CMAKE_CXX_COMPILER_LAUNCHER)
    set(CMAKE_CUDA_COMPILER_LAUNCHER "${CMAKE_CXX_COMPILER_LAUNCHER}")  # ccache for nvcc too
  endif()
  enable_language(CUDA)
  message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, toolkit ${CUDAToolkit_VERSION}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES})")
  # For the .cu targets only: pw_options carries GCC flags (-Wall, sanitizers) nvcc rejects, so
  # kernels live in targets of their own that take plain pointers and include no project
  # header that needs another library.
  add_library(pw_cuda_options INTERFACE)
  target_include_directories(pw_cuda_options INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  target_compile_options(pw_cuda_options INTERFACE
    $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 -Xcompiler=-Wall -Xcompiler=-fPIC>)
else()
  message(STATUS "CUDA backend: skipped (${pw_cuda_why})")
endif()
