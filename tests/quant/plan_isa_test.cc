// Every plan loads and runs at every ISA level this CPU has. The quantized file does not depend on the CPU, only
// the loading path does: each plan's file (the real all-MiniLM-L6-v2, written and read back as brisk quantize
// does) is loaded under each cap (set_cpu_isa_cap, which brisk's kernels pick their implementation from when a
// Linear is created and when an op runs) and embeds real sentences:
// - close to a double-precision reference of the fp32 model's embeddings (double_reference.h), as its precision
//   allows;
// - the same at every level, up to the float differences of the levels' vector kernels (the int8 kernels are exact
//   integer arithmetic with one shared epilogue, so only LayerNorm, softmax, GeLU and pooling differ, and bf16
//   activations where the CPU has avx512_bf16);
// - on the kernel each level should pick (the encoder's linear_kernels());
// and no oneDNN matmul the encoder created runs oneDNN's reference implementation.
#include <algorithm>
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/dnnl_matmul.h"
#include "brisk/core/cpu_features.h"
#include "brisk/kernels/attention.h"
#include "kernels/kernel_test_util.h"
#include "double_reference.h"
#include "minilm_plans.h"

using namespace brisk;
using namespace brisk::quant;

namespace {

struct PlanCase {
  const char* plan;
  bool smoothquant;
  double min_mean_cosine;  // against the double-precision reference of the fp32 model, at every level
  double min_worst_cosine;
  // Against the scalar level's embeddings. The levels' LayerNorm, softmax and GeLU differ in the last bits; an
  // int8 layer can turn such a difference into a one-code step of an activation, which the layers after it carry,
  // more so with one static scale per tensor; bf16 activations (avx512_bf16 only) differ more again. A broken kernel
  // (a saturating one, say) lands far below these bounds.
  double min_level_agreement;
  const char* linear_kernel_at_avx2;  // a substring of linear_kernels() at the avx2 level
  // int8 against float self-attention at the same level (the int8 plans, on a level that prefers int8 attention).
  double min_int8_attention_agreement = 1.0;
};

const PlanCase kPlans[] = {
    {"fp32", false, 0.999999, 0.999999, 0.999999, "f32: oneDNN"},
    {"bf16", false, 0.999, 0.998, 0.9999, "widened to f32 at load"},
    {"int8", false, 0.99, 0.97, 0.999, "i8: avx2 vpmaddwd", 0.995},
    {"int8", true, 0.995, 0.98, 0.999, "i8: avx2 vpmaddwd", 0.995},
    {"int8-static", false, 0.95, 0.9, 0.998, "i8: avx2 vpmaddwd", 0.96},
    {"mixed", false, 0.99, 0.97, 0.998, "i8: avx2 vpmaddwd"},
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& e : v) s += (s.empty() ? "" : "; ") + e;
  return s;
}

}  // namespace

TEST_CASE("every plan's model file loads and runs at every ISA level the CPU has", "[quant][isa]") {
  const auto before = kernels::cpu::dnnl_matmul_implementations();
  const std::string dir = testing::model_dir().string();
  const BertConfig config = BertConfig::from_json_file(dir + "/config.json").value();
  const EncoderWeights fp32 = EncoderWeights::load(dir, config).value();
  const std::vector<PackedSequences> batches =
      testing::quant_test_batches(WordPieceTokenizer::from_model_dir(dir).value());
  const std::vector<float> exact = testing::double_reference_mean_embeddings(config, fp32, batches);
  auto reference_encoder = BertEncoder::create(config, fp32, Device::kCPU).value();
  const ActivationRanges ranges = calibrate(*reference_encoder, batches, CalibrationOptions{}, nullptr).value();
  SmoothQuantOptions smooth;
  smooth.absmax = channel_absmax(*reference_encoder, batches).value();

  // The levels this CPU has, up to the process's cap (BRISK_ISA=avx2 rehearses an AVX2-only machine).
  std::vector<CpuIsa> levels;
  for (CpuIsa isa : kAllCpuIsas) {
    if (cpu_supports(isa) && isa <= cpu_isa()) levels.push_back(isa);
  }
  testing::TempDir tmp;
  for (const PlanCase& c : kPlans) {
    INFO("plan " << c.plan << (c.smoothquant ? " +smoothquant 0.5" : ""));
    const QuantizedModel loaded =
        testing::write_plan_file(dir, config, fp32, c.plan, ranges, c.smoothquant ? &smooth : nullptr, tmp);

    // The first level's embeddings, per attention kind (float, int8): levels are compared within a kind.
    std::vector<float> first_level[2];
    for (const CpuIsa isa : levels) {
      INFO("ISA level " << cpu_isa_name(isa));
      testing::IsaCapGuard guard(isa);
      auto encoder = BertEncoder::create(loaded.config, loaded.weights, Device::kCPU);
      REQUIRE(encoder.ok());
      const std::string kernels = joined((*encoder)->linear_kernels());
      INFO("linear kernels: " << kernels);
      if (isa == CpuIsa::kAvx2) CHECK_THAT(kernels, Catch::Contains(c.linear_kernel_at_avx2));
      if (isa >= CpuIsa::kAvx512Vnni && std::string(c.plan).find("int8") == 0) {
        CHECK_THAT(kernels, Catch::Contains("i8: avx512_vnni vpdpbusd"));
      }
      // int8 attention runs on the int8 layers where the level prefers it (avx_vnni, AVX-512), and nowhere else.
      const bool int8_qkv = std::string(c.plan).find("int8") == 0;
      CHECK((*encoder)->int8_attention_layers() ==
            (int8_qkv && kernels::int8_attention_preferred() ? config.num_hidden_layers : 0));
      if (std::string(c.plan) == "bf16") {
        CHECK((kernels.find("widened") != std::string::npos) == (isa < CpuIsa::kAvx512Bf16));
      }
      auto got = embed_all(**encoder, batches, Pooling::kMean);
      REQUIRE(got.ok());
      const Fidelity vs_exact = compare_embeddings(exact, *got, config.hidden_size);
      INFO("against the double-precision reference: mean " << vs_exact.mean_cosine << ", worst "
                                                           << vs_exact.worst_cosine);
      CHECK(vs_exact.mean_cosine >= c.min_mean_cosine);
      CHECK(vs_exact.worst_cosine >= c.min_worst_cosine);
      std::vector<float>& first = first_level[(*encoder)->int8_attention_layers() > 0 ? 1 : 0];
      if (first.empty()) {
        first = *got;
      } else {
        const Fidelity vs_first = compare_embeddings(first, *got, config.hidden_size);
        // Two levels' int8 attention (avx_vnni's ymm and the AVX-512 levels' zmm) each stay within
        // min_int8_attention_agreement of float attention; their softmaxes differ in the last bits, which can move
        // a probability's 8-bit code by one (measured: worst cosine 0.997 for int8, 0.992 for int8-static).
        const bool int8_attention = (*encoder)->int8_attention_layers() > 0;
        CHECK(vs_first.worst_cosine >= (int8_attention ? std::min(c.min_level_agreement, c.min_int8_attention_agreement)
                                                       : c.min_level_agreement));
      }
    }
    if (!first_level[0].empty() && !first_level[1].empty()) {
      const Fidelity attention = compare_embeddings(first_level[0], first_level[1], config.hidden_size);
      INFO("int8 against float attention: worst cosine " << attention.worst_cosine);
      CHECK(attention.worst_cosine >= c.min_int8_attention_agreement);
    }
  }
  // The matmul primitives created by this test's encoders (the registry counts the whole process's).
  const auto after = kernels::cpu::dnnl_matmul_implementations();
  int64_t created = 0;
  for (const auto& [impl, count] : after) {
    const int64_t mine = count - (before.count(impl) ? before.at(impl) : 0);
    INFO("oneDNN implementation " << impl << ": " << mine << " primitives");
    created += mine;
    if (mine > 0) CHECK(impl.rfind("ref", 0) != 0);
  }
  CHECK(created > 0);
}
