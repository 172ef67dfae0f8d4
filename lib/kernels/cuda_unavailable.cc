// The CUDA entry points of a build without CUDA (BRISK_WITH_CUDA=OFF, or no nvcc found): each returns
// UNIMPLEMENTED naming the build option, so that a cuda device fails clearly at the op that was asked for it.
#include "cuda/cuda_kernels.h"

namespace brisk::kernels::cuda {
namespace {

Status no_cuda(const char* op) {
  return absl::UnimplementedError(absl::StrCat(op, " on cuda: this brisk build has no CUDA support (configured with ",
                                               "BRISK_WITH_CUDA=OFF or without nvcc); expected device cpu, or a ",
                                               "build with -DBRISK_WITH_CUDA=ON"));
}

}  // namespace

template <typename T>
Status layer_norm_bias_residual(const T*, const T*, const T*, const T*, const T*, float, T*, int8_t*, float*, int64_t,
                                int64_t) {
  return no_cuda("layer_norm_bias_residual");
}
template <typename T>
Status bias_gelu(T*, const T*, int64_t, int64_t, GeluApproximation) {
  return no_cuda("bias_gelu");
}
template <typename T>
Status masked_softmax(T*, int64_t, int64_t, int64_t, int64_t, int64_t, const int32_t*, float) {
  return no_cuda("masked_softmax");
}
template <typename T>
Status split_qkv_heads(const T*, const T*, const AttentionRows&, int64_t, int64_t, T*, T*, T*) {
  return no_cuda("split_qkv_heads");
}
template <typename T>
Status merge_heads(const T*, const AttentionRows&, int64_t, int64_t, int64_t, T*) {
  return no_cuda("merge_heads");
}
template <typename T>
Status self_attention(const T*, const T*, const AttentionRows&, int64_t, int64_t, int64_t, T*) {
  return no_cuda("self_attention");
}
template <typename T>
Status embed_layer_norm(const EmbeddingTables<T>&, const int32_t*, const int32_t*, const int32_t*, float, T*, int64_t) {
  return no_cuda("embed_layer_norm");
}
template <typename T>
Status pool_sequences(const T*, const int32_t*, const int32_t*, int64_t, int64_t, int64_t, SequencePooling, bool,
                      float*) {
  return no_cuda("pool_sequences");
}
Status l2_normalize(float*, int64_t, int64_t, float) { return no_cuda("l2_normalize"); }
Status vector_unary(UnaryOp, const float*, float*, int64_t) { return no_cuda("vector_exp/erf/tanh"); }
template <typename T>
Status quantize_rows_int8(const T*, int64_t, int64_t, Int8RowQuant, int8_t*, float*) {
  return no_cuda("quantize_rows_int8");
}
template <typename T>
Status dequantize_rows_int8(const int32_t*, const float*, const float*, int64_t, const T*, GemmEpilogue, T*, int64_t,
                            int64_t, int64_t) {
  return no_cuda("dequantize_rows_int8");
}
template <typename From, typename To>
Status convert(const From*, To*, int64_t) {
  return no_cuda("convert");
}
Status copy_bytes(void*, const void*, size_t) { return no_cuda("copy_bytes"); }
Status synchronize() { return no_cuda("synchronize"); }
StatusOr<std::shared_ptr<const Linear::Impl>> make_linear(const Tensor&, const Tensor&, const QuantScales&, DType) {
  return no_cuda("Linear");
}
uint64_t int8_fallback_calls() { return 0; }
void force_int8_fallback_for_testing(bool) {}

#define BRISK_INSTANTIATE(T)                                                                                           \
  template Status layer_norm_bias_residual<T>(const T*, const T*, const T*, const T*, const T*, float, T*, int8_t*,    \
                                              float*, int64_t, int64_t);                                               \
  template Status bias_gelu<T>(T*, const T*, int64_t, int64_t, GeluApproximation);                                     \
  template Status masked_softmax<T>(T*, int64_t, int64_t, int64_t, int64_t, int64_t, const int32_t*, float);           \
  template Status split_qkv_heads<T>(const T*, const T*, const AttentionRows&, int64_t, int64_t, T*, T*, T*);          \
  template Status merge_heads<T>(const T*, const AttentionRows&, int64_t, int64_t, int64_t, T*);                       \
  template Status self_attention<T>(const T*, const T*, const AttentionRows&, int64_t, int64_t, int64_t, T*);          \
  template Status embed_layer_norm<T>(const EmbeddingTables<T>&, const int32_t*, const int32_t*, const int32_t*,       \
                                      float, T*, int64_t);                                                             \
  template Status pool_sequences<T>(const T*, const int32_t*, const int32_t*, int64_t, int64_t, int64_t,               \
                                    SequencePooling, bool, float*);                                                    \
  template Status quantize_rows_int8<T>(const T*, int64_t, int64_t, Int8RowQuant, int8_t*, float*);                    \
  template Status dequantize_rows_int8<T>(const int32_t*, const float*, const float*, int64_t, const T*, GemmEpilogue, \
                                          T*, int64_t, int64_t, int64_t);
BRISK_FOR_EACH_FLOAT_TYPE(BRISK_INSTANTIATE)
#undef BRISK_INSTANTIATE

#define BRISK_INSTANTIATE_CONVERT(From, To) template Status convert<From, To>(const From*, To*, int64_t);
BRISK_FOR_EACH_CONVERSION(BRISK_INSTANTIATE_CONVERT)
#undef BRISK_INSTANTIATE_CONVERT

}  // namespace brisk::kernels::cuda
