// Error checks for every CUDA runtime, cuBLASLt and cuDNN call: the message names the call.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <stdexcept>
#include <string>

namespace remat::cuda {

[[noreturn]] inline void throw_call_error(const char* lib, const char* call, const std::string& what,
                                          const char* file, int line) {
  throw std::runtime_error(std::string(lib) + " call failed: " + call + " -> " + what + " (" + file + ":" +
                           std::to_string(line) + ")");
}

}  // namespace remat::cuda

#define CUDA_CHECK(call)                                                                              \
  do {                                                                                                \
    cudaError_t remat_err_ = (call);                                                                  \
    if (remat_err_ != cudaSuccess)                                                                    \
      ::remat::cuda::throw_call_error("CUDA", #call, cudaGetErrorString(remat_err_), __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK(call)                                                                              \
  do {                                                                                                  \
    cublasStatus_t remat_st_ = (call);                                                                  \
    if (remat_st_ != CUBLAS_STATUS_SUCCESS)                                                             \
      ::remat::cuda::throw_call_error("cuBLASLt", #call, "status " + std::to_string((int)remat_st_),    \
                                      __FILE__, __LINE__);                                              \
  } while (0)

#define CUDNN_CHECK(call)                                                                              \
  do {                                                                                                 \
    cudnnStatus_t remat_st_ = (call);                                                                  \
    if (remat_st_ != CUDNN_STATUS_SUCCESS)                                                             \
      ::remat::cuda::throw_call_error("cuDNN", #call, cudnnGetErrorString(remat_st_), __FILE__, __LINE__); \
  } while (0)
