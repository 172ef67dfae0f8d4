// Packed multi-head self-attention against a double-precision reference, with sequences of different lengths
// (including empty ones) packed back to back.
#include <cmath>
#include <cstring>

#include "kernels/cpu/attention_int8.h"
#include "brisk/core/internal/reproducible.h"
#include "brisk/core/parallel.h"
#include "brisk/kernels/attention.h"
#include "kernel_test_util.h"

using brisk::testing::random_floats;

namespace {

std::vector<double> reference_attention(const std::vector<float>& qkv, const std::vector<int64_t>& offsets,
                                        int64_t heads, int64_t d) {
  const int64_t hidden = heads * d;
  std::vector<double> out(static_cast<size_t>(offsets.back() * hidden), 0.0);
  for (size_t b = 0; b + 1 < offsets.size(); ++b) {
    const int64_t begin = offsets[b], len = offsets[b + 1] - offsets[b];
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < len; ++i) {
        std::vector<double> s(static_cast<size_t>(len));
        double mx = -INFINITY;
        for (int64_t j = 0; j < len; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) {
            dot +=
                double(qkv[(begin + i) * 3 * hidden + h * d + c]) * qkv[(begin + j) * 3 * hidden + hidden + h * d + c];
          }
          s[j] = dot / std::sqrt(double(d));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (double& v : s) sum += (v = std::exp(v - mx));
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < len; ++j) acc += s[j] / sum * qkv[(begin + j) * 3 * hidden + 2 * hidden + h * d + c];
          out[(begin + i) * hidden + h * d + c] = acc;
        }
      }
    }
  }
  return out;
}

}  // namespace

// The sequence table of a packed batch: sequence b at rows [offsets[b], offsets[b + 1]).
struct Sequences {
  std::vector<int32_t> starts, lengths;
  brisk::kernels::AttentionRows rows() const {
    int64_t max_len = 0;
    for (int32_t len : lengths) max_len = std::max<int64_t>(max_len, len);
    return {starts.data(), lengths.data(), static_cast<int64_t>(starts.size()), max_len};
  }
};

Sequences packed(const std::vector<int64_t>& offsets) {
  Sequences s;
  for (size_t b = 0; b + 1 < offsets.size(); ++b) {
    s.starts.push_back(static_cast<int32_t>(offsets[b]));
    s.lengths.push_back(static_cast<int32_t>(offsets[b + 1] - offsets[b]));
  }
  return s;
}

TEST_CASE("self_attention matches the reference on packed sequences", "[kernels][attention][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t heads = GENERATE(1, 3, 12);
  const int64_t d = GENERATE(8, 32);
  // Few sequences (heads split between workers) and many (one sequence per work item).
  const std::vector<int64_t> lengths = GENERATE(std::vector<int64_t>{5, 1, 0, 17, 64, 2},
                                                std::vector<int64_t>{3, 40, 1, 9, 0, 33, 7, 7, 2, 64, 12, 5, 30, 1});
  std::vector<int64_t> offsets{0};
  for (int64_t len : lengths) offsets.push_back(offsets.back() + len);
  const int64_t hidden = heads * d;
  auto qkv = random_floats(static_cast<size_t>(offsets.back() * 3 * hidden), -2.f, 2.f, 11);
  std::vector<float> ctx(static_cast<size_t>(offsets.back() * hidden), -7.f);
  const Sequences seqs = packed(offsets);
  REQUIRE(brisk::kernels::self_attention(brisk::Device::kCPU, qkv.data(), nullptr, seqs.rows(), offsets.back(), heads,
                                         d, ctx.data())
              .ok());
  CHECK_CLOSE(ctx, reference_attention(qkv, offsets, heads, d), 2e-5, 2e-5);
}

TEST_CASE("self_attention on a padded layout matches the packed one and zeroes the pad rows", "[kernels][attention]") {
  const int64_t heads = 2, d = 8, hidden = heads * d;
  const std::vector<int64_t> lengths{3, 0, 5};
  const int64_t max_len = 5;
  std::vector<int64_t> offsets{0};
  for (int64_t len : lengths) offsets.push_back(offsets.back() + len);
  const auto packed_qkv = random_floats(static_cast<size_t>(offsets.back() * 3 * hidden), -2.f, 2.f, 5);
  // The same tokens at rows b * max_len + i; pad rows hold junk, which must not leak into real rows.
  const int64_t rows = static_cast<int64_t>(lengths.size()) * max_len;
  auto padded_qkv = random_floats(static_cast<size_t>(rows * 3 * hidden), -50.f, 50.f, 6);
  Sequences seqs;
  for (size_t b = 0; b < lengths.size(); ++b) {
    seqs.starts.push_back(static_cast<int32_t>(b * max_len));
    seqs.lengths.push_back(static_cast<int32_t>(lengths[b]));
    std::copy_n(packed_qkv.begin() + offsets[b] * 3 * hidden, lengths[b] * 3 * hidden,
                padded_qkv.begin() + static_cast<int64_t>(b) * max_len * 3 * hidden);
  }
  std::vector<float> ctx(static_cast<size_t>(rows * hidden), -7.f);
  REQUIRE(brisk::kernels::self_attention(brisk::Device::kCPU, padded_qkv.data(), nullptr, seqs.rows(), rows, heads, d,
                                         ctx.data())
              .ok());
  const std::vector<double> want = reference_attention(packed_qkv, offsets, heads, d);
  for (size_t b = 0; b < lengths.size(); ++b) {
    for (int64_t i = 0; i < max_len; ++i) {
      for (int64_t c = 0; c < hidden; ++c) {
        const float got = ctx[static_cast<size_t>((static_cast<int64_t>(b) * max_len + i) * hidden + c)];
        const double expect = i < lengths[b] ? want[static_cast<size_t>((offsets[b] + i) * hidden + c)] : 0.0;
        REQUIRE(std::fabs(got - expect) <= 2e-5 + 2e-5 * std::fabs(expect));
      }
    }
  }
}

TEST_CASE("self_attention adds a separate QKV bias as if the projection had it", "[kernels][attention]") {
  const int64_t heads = 3, d = 8, hidden = heads * d;
  const std::vector<int64_t> offsets{0, 4, 11};
  const auto qkv = random_floats(static_cast<size_t>(11 * 3 * hidden), -2.f, 2.f, 8);
  const auto bias = random_floats(static_cast<size_t>(3 * hidden), -1.f, 1.f, 9);
  std::vector<float> biased = qkv;
  for (size_t i = 0; i < biased.size(); ++i) biased[i] += bias[i % bias.size()];
  std::vector<float> ctx(static_cast<size_t>(11 * hidden));
  const Sequences seqs = packed(offsets);
  REQUIRE(brisk::kernels::self_attention(brisk::Device::kCPU, qkv.data(), bias.data(), seqs.rows(), 11, heads, d,
                                         ctx.data())
              .ok());
  CHECK_CLOSE(ctx, reference_attention(biased, offsets, heads, d), 2e-5, 2e-5);
}

TEST_CASE("self_attention rejects bad arguments", "[kernels][attention]") {
  std::vector<float> buf(96);
  const Sequences one = packed({0, 1});
  const auto call = [&](const float* qkv, const brisk::kernels::AttentionRows& s, int64_t rows, int64_t heads) {
    return brisk::kernels::self_attention(brisk::Device::kCPU, qkv, nullptr, s, rows, heads, 32, buf.data());
  };
  CHECK_FALSE(call(nullptr, one.rows(), 1, 1).ok());
  CHECK_FALSE(call(buf.data(), one.rows(), 1, 0).ok());
  CHECK(call(buf.data(), {nullptr, nullptr, 0, 0}, 1, 1).ok());
  // A sequence past the rows, or longer than max_len, names itself.
  Sequences past = packed({0, 1});
  past.starts[0] = 1;
  const auto status = call(buf.data(), past.rows(), 1, 1);
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(status.message()), Catch::Contains("sequence 0 is rows [1, 2)"));
  brisk::kernels::AttentionRows short_max = one.rows();
  short_max.max_len = 0;
  CHECK_FALSE(call(buf.data(), short_max, 1, 1).ok());
  // f16 data is a CUDA form; cpu names what it expects.
  std::vector<brisk::float16_t> half(96);
  const auto f16 =
      brisk::kernels::self_attention(brisk::Device::kCPU, half.data(), nullptr, one.rows(), 1, 1, 32, half.data());
  CHECK_THAT(std::string(f16.message()), Catch::Contains("expected f32"));
}

TEST_CASE("check_attention_rows checks a host table before it goes to a device", "[kernels][attention]") {
  using brisk::kernels::check_attention_rows;
  // Two sequences of 3 and 2 rows packed into 5 rows, max_len 3.
  std::vector<int32_t> starts{0, 3}, lengths{3, 2};
  const auto table = [&](int64_t max_len) {
    return brisk::kernels::AttentionRows{starts.data(), lengths.data(), 2, max_len};
  };
  CHECK(check_attention_rows("encoder", table(3), 5).ok());
  CHECK(check_attention_rows("encoder", {nullptr, nullptr, 0, 0}, 0).ok());
  // Past the rows: the message names the op, the sequence and the bounds.
  const auto past = check_attention_rows("encoder", table(3), 4);
  CHECK(past.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(past.message()),
             Catch::Contains("encoder: sequence 1 is rows [3, 5)") && Catch::Contains("expected within [0, 4)"));
  // Longer than max_len: the device kernels would clamp it, so it is refused here.
  CHECK_THAT(std::string(check_attention_rows("encoder", table(2), 5).message()),
             Catch::Contains("sequence 0") && Catch::Contains("max_len = 2"));
  lengths[1] = -1;
  CHECK_FALSE(check_attention_rows("encoder", table(3), 5).ok());
  lengths[1] = 2;
  starts[0] = -1;
  CHECK_FALSE(check_attention_rows("encoder", table(3), 5).ok());
  CHECK_FALSE(check_attention_rows("encoder", {nullptr, lengths.data(), 2, 3}, 5).ok());
}

// ---- int8 attention ----

namespace {

// Max and mean absolute difference.
std::pair<double, double> abs_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0, sum = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(got[i] - want[i]);
    worst = std::max(worst, e);
    sum += e;
  }
  return {worst, got.empty() ? 0.0 : sum / static_cast<double>(got.size())};
}

}  // namespace

TEST_CASE("self_attention_int8 stays within the int8 error of the reference", "[kernels][attention][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  // head_dim 12 pads k to a multiple of 4, 80 takes two panels of values; 130 tokens take three panels of keys.
  const int64_t heads = GENERATE(1, 4);
  const int64_t d = GENERATE(8, 12, 32, 80);
  const std::vector<int64_t> lengths = GENERATE(std::vector<int64_t>{5, 1, 0, 17, 130, 2},
                                                std::vector<int64_t>{3, 40, 1, 9, 0, 33, 7, 7, 2, 64, 12, 5, 30, 1});
  std::vector<int64_t> offsets{0};
  for (int64_t len : lengths) offsets.push_back(offsets.back() + len);
  const int64_t hidden = heads * d;
  const auto qkv = random_floats(static_cast<size_t>(offsets.back() * 3 * hidden), -2.f, 2.f, 21);
  std::vector<float> ctx(static_cast<size_t>(offsets.back() * hidden), -7.f);
  const Sequences seqs = packed(offsets);
  REQUIRE(brisk::kernels::self_attention_int8(brisk::Device::kCPU, qkv.data(), seqs.rows(), offsets.back(), heads, d,
                                              ctx.data())
              .ok());
  // V is in [-2, 2]: its codes are within 2 / 254 of it, and the weights' codes move each weight by at most 1/510
  // of the row's largest; Q and K's codes move a score by ~|q||k| / 127. Measured worst 0.03, mean 0.004.
  const auto [worst, mean] = abs_error(ctx, reference_attention(qkv, offsets, heads, d));
  INFO("worst " << worst << ", mean " << mean);
  CHECK(worst < 0.08);
  CHECK(mean < 0.012);
}

TEST_CASE("self_attention_int8 follows a dominant key and zeroes the pad rows", "[kernels][attention][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  // Sequence 0: every query aligned with key 2 alone, at scores of ~1e3 (exp underflows to 0 elsewhere); the
  // context is then V's row 2, within its quantisation step. Rows 6 and 7 belong to no sequence.
  const int64_t heads = 2, d = 16, hidden = heads * d, rows = 8;
  auto qkv = random_floats(static_cast<size_t>(rows * 3 * hidden), -1.f, 1.f, 31);
  for (int64_t t = 0; t < 6; ++t) {
    for (int64_t c = 0; c < hidden; ++c) {
      qkv[t * 3 * hidden + c] = 10.f;                                      // Q
      qkv[t * 3 * hidden + hidden + c] = t == 2 ? 10.f : -10.f * (t % 2);  // K
    }
  }
  Sequences seqs;
  seqs.starts = {0};
  seqs.lengths = {6};
  std::vector<float> ctx(static_cast<size_t>(rows * hidden), -7.f);
  REQUIRE(brisk::kernels::self_attention_int8(brisk::Device::kCPU, qkv.data(), seqs.rows(), rows, heads, d, ctx.data())
              .ok());
  for (int64_t t = 0; t < 6; ++t) {
    for (int64_t c = 0; c < hidden; ++c) {
      INFO("token " << t << " channel " << c);
      CHECK(std::fabs(ctx[t * hidden + c] - qkv[2 * 3 * hidden + 2 * hidden + c]) <= 1.0f / 127.f);
    }
  }
  for (int64_t i = 6 * hidden; i < rows * hidden; ++i) REQUIRE(ctx[static_cast<size_t>(i)] == 0.0f);
}

TEST_CASE("self_attention_int8 rejects bad arguments and other devices", "[kernels][attention]") {
  std::vector<float> buf(96);
  const Sequences one = packed({0, 1});
  CHECK_FALSE(brisk::kernels::self_attention_int8(brisk::Device::kCPU, nullptr, one.rows(), 1, 1, 32, buf.data()).ok());
  CHECK_FALSE(
      brisk::kernels::self_attention_int8(brisk::Device::kCPU, buf.data(), one.rows(), 1, 0, 32, buf.data()).ok());
  Sequences past = packed({0, 1});
  past.starts[0] = 1;
  const auto status =
      brisk::kernels::self_attention_int8(brisk::Device::kCPU, buf.data(), past.rows(), 1, 1, 32, buf.data());
  CHECK_THAT(std::string(status.message()), Catch::Contains("self_attention_int8: sequence 0 is rows [1, 2)"));
  const auto cuda =
      brisk::kernels::self_attention_int8(brisk::Device::kCUDA, buf.data(), one.rows(), 1, 1, 32, buf.data());
  CHECK(cuda.code() == absl::StatusCode::kUnimplemented);
  CHECK_THAT(std::string(cuda.message()), Catch::Contains("expected cpu"));
}

TEST_CASE("int8 attention's vector kernels write the scalar reference's codes", "[kernels][attention]") {
  namespace cpu = brisk::kernels::cpu;
  struct Level {
    const char* name;
    brisk::CpuIsa isa;
    cpu::Int8Kernel kernel;
  };
  int ran = 0;
  for (const Level& level : {Level{"avx2", brisk::CpuIsa::kAvx2, cpu::Int8Kernel::kAvx2},
                             Level{"avx512", brisk::CpuIsa::kAvx512, cpu::Int8Kernel::kAvx512}}) {
    if (!brisk::cpu_supports(level.isa)) continue;
    ++ran;
    const cpu::AttentionInt8Kernels vec = cpu::attention_int8_kernels(level.kernel);
    const cpu::AttentionInt8Kernels ref = cpu::attention_int8_kernels(cpu::Int8Kernel::kScalar);
    for (const int64_t len : {1, 7, 64, 131}) {
      for (const int64_t d : {8, 12, 32, 80}) {
        INFO(level.name << ": len " << len << ", d " << d);
        const int64_t ld = 3 * d + 5;
        auto x = random_floats(static_cast<size_t>(len * ld), -3.f, 3.f, 41);
        const auto same_pack = [&](const cpu::Int8PackedWeights& a, const cpu::Int8PackedWeights& b, int64_t n) {
          REQUIRE(a.k_padded == b.k_padded);
          REQUIRE(a.n_padded == b.n_padded);
          for (int64_t j = 0; j < n; ++j) {
            REQUIRE(a.compensation[static_cast<size_t>(j)] == b.compensation[static_cast<size_t>(j)]);
            for (int64_t g = 0; g < a.k_padded / 4; ++g) {
              REQUIRE(std::memcmp(cpu::packed_group(a, j, g), cpu::packed_group(b, j, g), 4) == 0);
            }
          }
        };
        // Column maxima over the rows, and quantization with scales from them.
        std::vector<float> av(static_cast<size_t>(ld)), ar(static_cast<size_t>(ld));
        vec.column_absmax(x.data(), ld, len, ld, av.data());
        ref.column_absmax(x.data(), ld, len, ld, ar.data());
        CHECK(av == ar);
        const float inv = cpu::s8_inverse(*std::max_element(ar.begin(), ar.begin() + d));
        // Q goes through the GEMM's own quantize rows, with one static scale and rows ld floats apart: this level's
        // s16 codes equal the scalar kernel's u8 codes (q + 128) minus 128, and the padding is the code of 0.
        const int64_t ldc = (d + 3) / 4 * 4;
        const float q_scale = cpu::s8_scale(*std::max_element(ar.begin(), ar.begin() + d));
        std::vector<int16_t> qv(static_cast<size_t>(len * ldc), 7);
        std::vector<uint8_t> qr(static_cast<size_t>(len * ldc), 7);
        std::vector<float> sv(static_cast<size_t>(len)), sr(static_cast<size_t>(len));
        cpu::int8_row_kernels(level.kernel)
            .quantize({x.data(), ld, nullptr, d, ldc, qv.data(), sv.data(), q_scale}, 0, len);
        cpu::int8_row_kernels(cpu::Int8Kernel::kScalar)
            .quantize({x.data(), ld, nullptr, d, ldc, qr.data(), sr.data(), q_scale}, 0, len);
        CHECK(sv == sr);
        for (size_t i = 0; i < qv.size(); ++i) REQUIRE(qv[i] == int{qr[i]} - 128);
        for (int64_t t = 0; t < len; ++t) {
          for (int64_t c = d; c < ldc; ++c) REQUIRE(qv[static_cast<size_t>(t * ldc + c)] == 0);
        }
        cpu::Int8PackedWeights kv, kr;
        vec.pack_keys(x.data(), ld, len, d, inv, kv);
        ref.pack_keys(x.data(), ld, len, d, inv, kr);
        same_pack(kv, kr, len);
        std::vector<float> inverses(static_cast<size_t>((d + 15) / 16 * 16), 0.0f);
        for (int64_t c = 0; c < d; ++c) inverses[c] = cpu::s8_inverse(ar[c]);
        vec.pack_values(x.data(), ld, len, d, inverses.data(), kv);
        ref.pack_values(x.data(), ld, len, d, inverses.data(), kr);
        same_pack(kv, kr, d);
        // Softmax codes from integer scores, 7 rows at a stride past len (the vector kernels take rows in groups
        // of 4 or 2, then one by one): the vector exp is shorter than std::exp, so a code may move by one; a row's
        // scale is 1 / the sum of its codes. Scores up to +-3000 times 0.3e-3 or 30e-3: at the second, most
        // weights underflow to a code of 0.
        const int64_t ldp = (len + 3) / 4 * 4;
        const int64_t rows = 7, lds = len + 5;
        std::vector<int32_t> scores(static_cast<size_t>(rows * lds));
        for (size_t i = 0; i < scores.size(); ++i)
          scores[i] = static_cast<int32_t>(std::lround(x[i % x.size()] * 1000));
        for (const float scale : {0.3e-3f, 30e-3f}) {
          for (const bool wide : {false, true}) {
            INFO("softmax scale " << scale << (wide ? ", int16 codes" : ", uint8 codes"));
            const auto n = static_cast<size_t>(rows * ldp);
            std::vector<int16_t> cv(n, -1), cr(n, -1);
            std::vector<uint8_t> bv(n + 64, 7), br(n, 7);
            std::vector<float> rv(rows), rr(rows);
            vec.softmax_codes(scores.data(), lds, rows, len, scale, wide ? static_cast<void*>(cv.data()) : bv.data(),
                              ldp, wide, rv.data());
            ref.softmax_codes(scores.data(), lds, rows, len, scale, wide ? static_cast<void*>(cr.data()) : br.data(),
                              ldp, wide, rr.data());
            for (int64_t i = 0; i < rows; ++i) {
              INFO("row " << i);
              int64_t sum = 0, max_code = 0;
              for (int64_t j = 0; j < ldp; ++j) {
                const size_t at = static_cast<size_t>(i * ldp + j);
                const int got = wide ? cv[at] : bv[at], want = wide ? cr[at] : br[at];
                REQUIRE(std::abs(got - want) <= 1);
                if (j >= len) REQUIRE(got == 0);
                sum += got;
                max_code = std::max<int64_t>(max_code, got);
              }
              CHECK(max_code == 255);
              CHECK(rv[static_cast<size_t>(i)] == 1.0f / static_cast<float>(sum));
            }
            if (!wide) CHECK(bv[n] == 7);  // nothing written past the last row's ldp
          }
        }
      }
    }
  }
  if (ran == 0) BRISK_SKIP("this CPU has neither avx2 nor avx512: only the scalar kernels exist here");
}

TEST_CASE(
    "self_attention under reproducible arithmetic: the reference's values, the scalar level's bits at every "
    "level and thread count",
    "[kernels][attention][isa]") {
  BRISK_FOR_EACH_CPU_ISA();
  const int64_t heads = 3, d = 32, hidden = heads * d;
  const std::vector<int64_t> lengths = GENERATE(std::vector<int64_t>{5, 1, 0, 17, 64, 2},
                                                std::vector<int64_t>{3, 40, 1, 9, 0, 33, 7, 7, 2, 64, 12, 5, 30, 1});
  std::vector<int64_t> offsets{0};
  for (int64_t len : lengths) offsets.push_back(offsets.back() + len);
  const auto qkv = random_floats(static_cast<size_t>(offsets.back() * 3 * hidden), -2.f, 2.f, 12);
  const Sequences seqs = packed(offsets);
  auto run = [&](brisk::CpuIsa level, int threads) {
    brisk::testing::IsaCapGuard cap(level);
    const brisk::ScopedNumThreads scoped(threads);
    const brisk::internal::ReproducibleScope scope;
    CHECK_FALSE(brisk::kernels::int8_attention_preferred());
    std::vector<float> ctx(static_cast<size_t>(offsets.back() * hidden), -7.f);
    REQUIRE(brisk::kernels::self_attention(brisk::Device::kCPU, qkv.data(), nullptr, seqs.rows(), offsets.back(), heads,
                                           d, ctx.data())
                .ok());
    return ctx;
  };
  const std::vector<float> scalar = run(brisk::CpuIsa::kScalar, 1);
  CHECK_CLOSE(scalar, reference_attention(qkv, offsets, heads, d), 2e-5, 2e-5);
  for (int threads : {1, 2, 3}) {
    INFO(threads << " threads");
    const std::vector<float> here = run(isa, threads);
    CHECK(std::memcmp(here.data(), scalar.data(), scalar.size() * sizeof(float)) == 0);
  }
}
