// Private to lib/kernels: the CPU bodies of brisk/kernels/decoder_ops.h (arguments already checked).
#pragma once

#include <cstdint>

#include "brisk/core/status.h"
#include "brisk/kernels/decoder_ops.h"

namespace brisk::kernels::cpu {

void rms_norm(const float* x, const float* gamma, float eps, float* out, int64_t rows, int64_t cols);
Status rotary_qk(float* qkv, int64_t ld, int64_t rows, const int32_t* positions, const RotaryShape& shape);
void silu_mul(const float* gate_up, int64_t rows, int64_t width, float* out);

}  // namespace brisk::kernels::cpu
