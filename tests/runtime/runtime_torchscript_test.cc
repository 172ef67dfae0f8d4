// A Runtime over the TorchScript backend (RuntimeOptions::torchscript): the same embeddings and logits as Python torch
// on traced tiny modules (tests/data/make_task_golden.py), through the tokenizer, the batcher and concurrent submits.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <fstream>
#include <thread>
#include <vector>

#include "brisk/runtime/runtime.h"
#include "test_util.h"

namespace {

using brisk::Runtime;
using brisk::RuntimeOptions;
using brisk::TorchScriptOutput;

std::string ts_dir() { return (brisk::testing::test_data_dir() / "tasks" / "torchscript").string(); }

nlohmann::json golden() {
  std::ifstream in(ts_dir() + "/golden.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

RuntimeOptions ts_options(const std::string& module, TorchScriptOutput output = TorchScriptOutput::kAuto) {
  RuntimeOptions o;
  o.model_dir = ts_dir();
  o.max_seq_len = 24;
  o.num_threads = brisk::testing::compute_threads();
  o.cache.result_cache_bytes = 0;
  o.torchscript.emplace();
  o.torchscript->module = ts_dir() + "/" + module;
  o.torchscript->output = output;
  return o;
}

// nullptr (after checking why) in a build without libtorch.
std::unique_ptr<Runtime> create(const RuntimeOptions& o) {
  auto rt = Runtime::create(o);
  if (rt.status().code() == absl::StatusCode::kUnimplemented) {
    CHECK_THAT(std::string(rt.status().message()), Catch::Contains("BRISK_WITH_TORCH"));
    brisk::testing::skip_test_case("brisk was built without libtorch (BRISK_WITH_TORCH=OFF)");
    return nullptr;
  }
  INFO(rt.status());
  REQUIRE(rt.ok());
  return std::move(*rt);
}

}  // namespace

TEST_CASE("torchscript: embeddings and logits equal Python torch through the runtime") {
  const nlohmann::json g = golden();
  std::vector<std::string> texts;
  for (const auto& item : g["items"]) texts.push_back(item["text"].get<std::string>());
  std::vector<std::string_view> views(texts.begin(), texts.end());

  RuntimeOptions eo = ts_options("encoder.pt");
  eo.pooling = brisk::Pooling::kMean;
  eo.normalize = true;
  auto encoder = create(eo);
  if (encoder == nullptr) return;
  REQUIRE(encoder->info().backend == "torchscript");
  REQUIRE(encoder->info().task == "embedding");
  auto emb = encoder->embed(views);
  REQUIRE(emb.ok());
  const size_t dim = static_cast<size_t>(encoder->embedding_dim());
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto& want = g["items"][i]["mean_pooled_normalized"];
    REQUIRE(want.size() == dim);
    for (size_t k = 0; k < dim; ++k) REQUIRE(std::abs((*emb)[i * dim + k] - want[k].get<float>()) <= 1e-4f);
  }

  auto classifier = create(ts_options("classifier.pt", TorchScriptOutput::kLogits));
  REQUIRE(classifier->info().labels == std::vector<std::string>{"billing", "card_lost", "greeting"});
  auto logits = classifier->logits(views);
  REQUIRE(logits.ok());
  for (size_t i = 0; i < texts.size(); ++i) {
    for (size_t k = 0; k < 3; ++k) {
      REQUIRE(std::abs((*logits)[i * 3 + k] - g["items"][i]["logits"][k].get<float>()) <= 1e-4f);
    }
  }
}

TEST_CASE("torchscript: concurrent submits through the batcher equal the synchronous results") {
  auto rt = create(ts_options("classifier.pt", TorchScriptOutput::kLogits));
  if (rt == nullptr) return;
  const nlohmann::json g = golden();
  constexpr int kThreads = 4, kPerThread = 25;
  std::atomic<int> done{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const size_t item = static_cast<size_t>((t + i) % 6);
        brisk::ClassifyRequestOptions o;
        o.top_k = 3;
        auto id = rt->submit_classify(g["items"][item]["text"].get<std::string>(), o,
                                      [&, item](uint64_t, brisk::StatusOr<std::vector<brisk::LabelScore>> r) {
                                        // The golden logits' argmax is the top label.
                                        const auto& l = g["items"][item]["logits"];
                                        size_t best = 0;
                                        for (size_t k = 1; k < 3; ++k) {
                                          if (l[k].get<float>() > l[best].get<float>()) best = k;
                                        }
                                        if (!r.ok() || (*r)[0].id != static_cast<int64_t>(best)) wrong++;
                                        done++;
                                      });
        if (!id.ok()) wrong++, done++;
      }
    });
  }
  for (auto& th : threads) th.join();
  while (done.load() < kThreads * kPerThread) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(wrong.load() == 0);
  REQUIRE(rt->batch_stats().batches < static_cast<uint64_t>(kThreads * kPerThread));
}

TEST_CASE("torchscript: a bad module is refused with a clear error") {
  for (const char* module : {"not_a_module.pt", "wrong_inputs.pt", "missing.pt"}) {
    INFO(module);
    auto rt = Runtime::create(ts_options(module));
    REQUIRE(!rt.ok());
    if (rt.status().code() == absl::StatusCode::kUnimplemented) continue;  // no libtorch in this build
    REQUIRE_THAT(std::string(rt.status().message()), Catch::Contains(module));
  }
}
