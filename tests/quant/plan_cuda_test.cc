// Every plan brisk quantize writes runs on CUDA (issue 27): each plan's file (the real all-MiniLM-L6-v2, written and
// read back as brisk quantize does: SmoothQuant input scales, static activation scales, bf16 and mixed layers) is
// loaded on cuda:0 and on the CPU, and the two encoders' embeddings of real sentences must agree. The CPU side keeps
// float attention, as the GPU does, so that what is compared is the linears. Where the GPU check made the int8
// file with `brisk quantize --plan int8` (BRISK_TEST_INT8_MODEL, scripts/gpu-check), that file is compared too.
//
// The bounds: both sides quantize the same activations per token (or with one static scale), but their LayerNorm,
// GeLU and GEMM accumulation orders differ in the last bits, and an int8 layer can turn that into a one-code step
// of an activation, which later layers carry (the CPU levels agree to 0.999 for int8, 0.998 for static scales,
// tests/quant/plan_isa_test.cc); f16 activations round every activation to 11 bits on top of that.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "brisk/core/device.h"
#include "brisk/model/fidelity.h"
#include "minilm_plans.h"

using namespace brisk;
using namespace brisk::quant;

namespace {

struct CudaPlanCase {
  const char* plan;
  bool smoothquant;
  double min_worst_cosine_f32;  // GPU with f32 activations against the CPU, worst sentence
  double min_worst_cosine_f16;
};

const CudaPlanCase kCudaPlans[] = {
    {"fp32", false, 0.99999, 0.9995}, {"bf16", false, 0.9999, 0.999},      {"int8", false, 0.998, 0.995},
    {"int8", true, 0.998, 0.995},     {"int8-static", false, 0.995, 0.99}, {"mixed", false, 0.998, 0.995},
};

// The GPU encoder of `m` against its CPU encoder (float attention), for f32 and f16 activations.
void check_on_cuda(const QuantizedModel& m, const std::vector<PackedSequences>& batches, double min_f32,
                   double min_f16) {
  EncoderOptions cpu_options;
  cpu_options.int8_attention = false;
  auto cpu = BertEncoder::create(m.config, m.weights, cpu_options);
  REQUIRE(cpu.ok());
  const std::vector<float> want = embed_all(**cpu, batches, Pooling::kMean).value();
  for (const DType activation : {DType::kF32, DType::kF16}) {
    INFO("activations " << dtype_name(activation));
    auto gpu = BertEncoder::create(m.config, m.weights, EncoderOptions{Device::kCUDA, activation, true});
    INFO(gpu.status().ToString());
    REQUIRE(gpu.ok());
    auto got = embed_all(**gpu, batches, Pooling::kMean);
    INFO(got.status().ToString());
    REQUIRE(got.ok());
    const Fidelity f = compare_embeddings(want, *got, m.config.hidden_size);
    INFO("worst cosine " << f.worst_cosine << ", mean " << f.mean_cosine);
    CHECK(f.worst_cosine >= (activation == DType::kF32 ? min_f32 : min_f16));
  }
}

}  // namespace

TEST_CASE("every plan's model file runs on cuda and matches the CPU encoder of the same file", "[quant][cuda]") {
  BRISK_SKIP_WITHOUT_CUDA();
  const std::string dir = testing::model_dir().string();
  const BertConfig config = BertConfig::from_json_file(dir + "/config.json").value();
  const EncoderWeights fp32 = EncoderWeights::load(dir, config).value();
  // One text alone (a single short request: the smallest int8 GEMM) and the rest together.
  const std::vector<PackedSequences> batches =
      testing::quant_test_batches(WordPieceTokenizer::from_model_dir(dir).value(), /*first_alone=*/true);
  auto reference_encoder = BertEncoder::create(config, fp32, Device::kCPU).value();
  const ActivationRanges ranges = calibrate(*reference_encoder, batches, CalibrationOptions{}, nullptr).value();
  SmoothQuantOptions smooth;
  smooth.absmax = channel_absmax(*reference_encoder, batches).value();
  testing::TempDir tmp;
  for (const CudaPlanCase& c : kCudaPlans) {
    INFO("plan " << c.plan << (c.smoothquant ? " +smoothquant 0.5" : ""));
    const QuantizedModel m =
        testing::write_plan_file(dir, config, fp32, c.plan, ranges, c.smoothquant ? &smooth : nullptr, tmp);
    check_on_cuda(m, batches, c.min_worst_cosine_f32, c.min_worst_cosine_f16);
  }
  if (const char* file = std::getenv("BRISK_TEST_INT8_MODEL"); file != nullptr && *file != '\0') {
    INFO("brisk quantize --plan int8 file " << file);
    auto m = load_quantized_model(file);
    INFO(m.status().ToString());
    REQUIRE(m.ok());
    check_on_cuda(*m, batches, 0.998, 0.995);
  }
}
