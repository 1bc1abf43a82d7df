# Optional dependencies of the fusex INTERFACE target, shared by the build
# tree and the installed package config.
#  - CBLAS (OpenBLAS preferred): host matmul; defines FUSEX_HAS_CBLAS.
#  - OpenMP: parallel host executor (C++ translation units).
#  - CUDA::cublas: device matmul, when CUDA is enabled.
include(CMakeFindDependencyMacro)
include(CheckCXXSourceCompiles)
include(CMakePushCheckState)

macro(fusex_find_dependencies)
  if(NOT TARGET BLAS::BLAS)
    set(BLA_VENDOR OpenBLAS)
    find_package(BLAS QUIET)
    if(NOT BLAS_FOUND)
      unset(BLA_VENDOR)
      find_package(BLAS QUIET)
    endif()
  endif()
  set(FUSEX_CBLAS_OK OFF)
  if(TARGET BLAS::BLAS)
    cmake_push_check_state(RESET)
    set(CMAKE_REQUIRED_LIBRARIES BLAS::BLAS)
    set(CMAKE_REQUIRED_QUIET ON)
    check_cxx_source_compiles([=[
      #include <cblas.h>
      int main() { double a = 1, b = 1, c = 0; cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0, &a, 1, &b, 1, 0.0, &c, 1); return c == 1 ? 0 : 1; }
    ]=] FUSEX_CBLAS_LINKS)
    cmake_pop_check_state()
    if(FUSEX_CBLAS_LINKS)
      set(FUSEX_CBLAS_OK ON)
    endif()
  endif()
  find_package(OpenMP QUIET COMPONENTS CXX)
  if(CMAKE_CUDA_COMPILER AND NOT TARGET CUDA::cublas)
    find_package(CUDAToolkit QUIET)
  endif()
endmacro()

function(fusex_link_dependencies target)
  fusex_find_dependencies()
  if(FUSEX_CBLAS_OK)
    target_link_libraries(${target} INTERFACE BLAS::BLAS)
    target_compile_definitions(${target} INTERFACE FUSEX_HAS_CBLAS)
    message(STATUS "fusex: host matmul through CBLAS")
  else()
    message(STATUS "fusex: no CBLAS found; host matmul uses a built-in loop")
  endif()
  if(OpenMP_CXX_FOUND)
    target_link_libraries(${target} INTERFACE OpenMP::OpenMP_CXX)
    # nvcc hands host code to the host compiler, which needs the flag too.
    target_compile_options(${target} INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${OpenMP_CXX_FLAGS}>)
  endif()
  if(TARGET CUDA::cublas)
    target_link_libraries(${target} INTERFACE $<$<LINK_LANGUAGE:CUDA>:CUDA::cublas>)
  endif()
endfunction()
