// The process-wide oneDNN CPU engine shared by every oneDNN-backed kernel.
#pragma once

#include "oneapi/dnnl/dnnl.hpp"

namespace brisk {

inline const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

}  // namespace brisk
