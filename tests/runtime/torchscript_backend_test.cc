// The torchscript backend against transformers and torch: tests/data/make_task_golden.py traced bert_cls's BertModel
// (encoder.pt: last_hidden_state, pooler_output) and BertForSequenceClassification (classifier.pt: logits) and
// recorded, per text run alone, the hidden states, their mean (L2-normalised) and first-token pooling, the pooler
// output and the logits (tests/data/tasks/torchscript/golden.json). brisk must give the same rows for each text
// alone and for all texts in one mixed-length batch, from any number of threads, and clear errors for bad modules.
// In a build without libtorch make_torchscript_backend returns Unimplemented naming BRISK_WITH_TORCH, and the
// libtorch-only tests return early after checking that.
#include "brisk/runtime/torchscript_backend.h"

#include "brisk/prune/torchscript.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

using brisk::Backend;
using brisk::BackendOutput;
using brisk::PackedSequences;
using brisk::Pooling;
using brisk::TorchScriptOptions;
using brisk::TorchScriptOutput;
using json = nlohmann::json;

std::string msg(const absl::Status& s) { return std::string(s.message()); }
bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string data_file(const std::string& name) {
  return (brisk::testing::test_data_dir() / "tasks" / "torchscript" / name).string();
}

const json& golden() {
  static const json g = [] {
    std::ifstream in(data_file("golden.json"));
    return json::parse(in);
  }();
  return g;
}
const json& items() { return golden().at("items"); }

const std::vector<std::string> kLabels = {"billing", "card_lost", "greeting"};  // config.json's id2label

TorchScriptOptions options(const std::string& file, TorchScriptOutput output = TorchScriptOutput::kAuto,
                           int index = -1) {
  TorchScriptOptions o;
  o.module = data_file(file);
  o.output = output;
  o.output_index = index;
  return o;
}

brisk::StatusOr<std::unique_ptr<Backend>> make(const TorchScriptOptions& o, Pooling pooling = Pooling::kMean,
                                               bool normalize = true, std::vector<std::string> labels = {},
                                               int64_t pad_token_id = 0) {
  return brisk::make_torchscript_backend(o, pooling, normalize, std::move(labels), /*multi_label=*/false, pad_token_id);
}

std::unique_ptr<Backend> require(brisk::StatusOr<std::unique_ptr<Backend>> b) {
  INFO(b.status());
  REQUIRE(b.ok());
  return std::move(*b);
}

// False (after checking the message) in a build without libtorch.
bool have_torch() {
  auto b = make(options("encoder.pt"));
  if (b.status().code() == absl::StatusCode::kUnimplemented) {
    CHECK(contains(msg(b.status()), "BRISK_WITH_TORCH"));
    brisk::testing::skip_test_case("brisk was built without libtorch (BRISK_WITH_TORCH=OFF)");
    return false;
  }
  INFO(b.status());
  REQUIRE(b.ok());
  return true;
}

PackedSequences batch_of(const std::vector<size_t>& which) {
  PackedSequences p;
  for (size_t i : which) p.add(items()[i].at("ids").get<std::vector<int32_t>>());
  return p;
}

std::vector<float> run(const Backend& backend, const PackedSequences& batch) {
  std::vector<float> out(size_t(batch.size() * backend.info().output_dim), -1.0f);
  brisk::Status s = backend.run(batch, out);
  INFO(s);
  REQUIRE(s.ok());
  return out;
}

// The golden row of item i for a key; "mean_pooled" (not recorded) is the mean of its recorded hidden states.
std::vector<float> expected_row(size_t i, const std::string& key, bool normalize = false) {
  const json& it = items()[i];
  std::vector<float> row;
  if (key == "mean_pooled") {
    const json& hidden = it.at("last_hidden_state");
    row.assign(hidden[0].size(), 0.0f);
    for (const json& tok : hidden)
      for (size_t k = 0; k < row.size(); ++k) row[k] += tok[k].get<float>() / float(hidden.size());
  } else {
    row = it.at(key).get<std::vector<float>>();
  }
  if (normalize) {
    double n = 0;
    for (float v : row) n += double(v) * v;
    for (float& v : row) v = float(v / std::sqrt(n));
  }
  return row;
}

void check_rows(const std::vector<float>& got, const std::vector<size_t>& which, const std::string& key,
                bool normalize = false) {
  const size_t n = got.size() / which.size();
  for (size_t r = 0; r < which.size(); ++r) {
    const std::vector<float> want = expected_row(which[r], key, normalize);
    REQUIRE(want.size() == n);
    for (size_t k = 0; k < n; ++k) {
      INFO(key << " of item " << which[r] << " (row " << r << "), element " << k);
      CHECK(std::abs(got[r * n + k] - want[k]) <= 1e-4f);
    }
  }
}

const std::vector<size_t> kAll = {0, 1, 2, 3, 4, 5};

// Each item alone, then all in one batch (lengths 2 to 24, padded to 24), then in another order.
void check_against_golden(const Backend& backend, const std::string& key, bool normalize = false) {
  for (size_t i : kAll) check_rows(run(backend, batch_of({i})), {i}, key, normalize);
  check_rows(run(backend, batch_of(kAll)), kAll, key, normalize);
  const std::vector<size_t> shuffled = {3, 5, 0, 2, 4, 1};
  check_rows(run(backend, batch_of(shuffled)), shuffled, key, normalize);
}

TEST_CASE("torchscript_backend: each output equals transformers, alone and in a mixed batch") {
  if (!have_torch()) return;
  SECTION("hidden state, mean pooled and normalised (auto picks output 0)") {
    auto b = require(make(options("encoder.pt")));
    CHECK(b->info().output == BackendOutput::kEmbedding);
    CHECK(b->info().output_dim == 32);
    CHECK(contains(b->info().description, "last_hidden_state"));
    check_against_golden(*b, "mean_pooled_normalized");
  }
  SECTION("hidden state, mean pooled, not normalised; kModelDefault is mean") {
    auto b = require(make(options("encoder.pt", TorchScriptOutput::kLastHiddenState), Pooling::kModelDefault, false));
    check_against_golden(*b, "mean_pooled");
  }
  SECTION("hidden state, first token") {
    auto b = require(make(options("encoder.pt", TorchScriptOutput::kLastHiddenState), Pooling::kCls, false));
    check_against_golden(*b, "cls_pooled");
    auto normalized = require(make(options("encoder.pt", TorchScriptOutput::kLastHiddenState, 0), Pooling::kCls));
    check_against_golden(*normalized, "cls_pooled", /*normalize=*/true);
  }
  SECTION("the module's pooled output") {
    auto b = require(make(options("encoder.pt", TorchScriptOutput::kPooled), Pooling::kMean, false));
    CHECK(b->info().output == BackendOutput::kEmbedding);
    CHECK(contains(b->info().description, "output 1 (pooled"));
    check_against_golden(*b, "pooler_output");
    auto normalized = require(make(options("encoder.pt", TorchScriptOutput::kAuto, 1)));
    CHECK(contains(normalized->info().description, "output 1 (pooled, normalized"));
    check_against_golden(*normalized, "pooler_output", /*normalize=*/true);
  }
  SECTION("logits, with config.json's labels (auto) or LABEL_<i>") {
    auto b = require(make(options("classifier.pt"), Pooling::kMean, true, kLabels));
    CHECK(b->info().output == BackendOutput::kLogits);
    CHECK(b->info().output_dim == 3);
    CHECK(b->info().labels == kLabels);
    check_against_golden(*b, "logits");
    auto unnamed = require(make(options("classifier.pt", TorchScriptOutput::kLogits)));
    CHECK(unnamed->info().labels == std::vector<std::string>{"LABEL_0", "LABEL_1", "LABEL_2"});
    check_against_golden(*unnamed, "logits");
  }
}

TEST_CASE("torchscript_backend: info and the auto rule") {
  if (!have_torch()) return;
  auto enc = require(make(options("encoder.pt"), Pooling::kMean, true, kLabels));  // labels do not make it logits
  const brisk::BackendInfo& info = enc->info();
  CHECK(info.name == "torchscript");
  CHECK(contains(info.description, "encoder.pt"));
  CHECK(contains(info.description, "output 0 (last_hidden_state, mean pooling, normalized)"));
  CHECK(info.output == BackendOutput::kEmbedding);
  CHECK(info.labels.empty());
  CHECK(info.device == brisk::Device::kCPU);
  CHECK(info.activation_dtype == brisk::DType::kF32);
  // Only a [B, N] output and no labels: a pooled embedding.
  auto cls = require(make(options("classifier.pt"), Pooling::kMean, false));
  CHECK(cls->info().output == BackendOutput::kEmbedding);
  CHECK(contains(cls->info().description, "(pooled)"));
  check_against_golden(*cls, "logits");
  // Logits asked for on the encoder: its first [B, N] output, so 3 labels cannot name 32 logits.
  auto wrong = make(options("encoder.pt", TorchScriptOutput::kLogits), Pooling::kMean, true, kLabels);
  CHECK(wrong.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(contains(msg(wrong.status()), "logits of width 32"));
}

TEST_CASE("torchscript_backend: forward()'s argument names and types, as the backend reads them") {
  if (!have_torch()) return;
  auto model = brisk::prune::TorchScriptModel::load(data_file("encoder.pt"));
  REQUIRE(model.ok());
  auto args = model->forward_arguments();
  REQUIRE(args.ok());
  REQUIRE(args->size() == 3);
  const std::vector<std::string> names = {"input_ids", "attention_mask", "token_type_ids"};
  for (size_t i = 0; i < 3; ++i) {
    CHECK((*args)[i].name == names[i]);
    CHECK((*args)[i].type == "Tensor");
    CHECK((*args)[i].tensor);
    CHECK(!(*args)[i].has_default);
  }
}

TEST_CASE("torchscript_backend: rows do not depend on the padding id or the batch, and token types reach the module") {
  if (!have_torch()) return;
  auto b = require(make(options("encoder.pt"), Pooling::kMean, true, {}, /*pad_token_id=*/1));
  check_rows(run(*b, batch_of(kAll)), kAll, "mean_pooled_normalized");
  // Token types 1 instead of 0 change the rows: the third input is token_type_ids.
  PackedSequences typed = batch_of({0});
  typed.token_type_ids.assign(typed.input_ids.size(), 1);
  const std::vector<float> with_types = run(*b, typed), without = run(*b, batch_of({0}));
  double diff = 0;
  for (size_t k = 0; k < without.size(); ++k) diff = std::max(diff, double(std::abs(with_types[k] - without[k])));
  CHECK(diff > 1e-3);
}

TEST_CASE("torchscript_backend: concurrent run() from 4 threads gives the same rows") {
  if (!have_torch()) return;
  for (const char* file : {"encoder.pt", "classifier.pt"}) {
    auto b = require(make(options(file), Pooling::kMean, true, kLabels));
    const std::string key = std::string(file) == "encoder.pt" ? "mean_pooled_normalized" : "logits";
    const std::vector<std::vector<size_t>> batches = {kAll, {5}, {3, 1}, {2, 4, 0}};
    std::vector<std::vector<float>> reference;
    for (const auto& which : batches) reference.push_back(run(*b, batch_of(which)));
    std::vector<int> mismatches(4, 0), failures(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int iter = 0; iter < 12; ++iter) {
          const size_t k = size_t(t + iter) % batches.size();
          const PackedSequences batch = batch_of(batches[k]);
          std::vector<float> out(reference[k].size());
          if (!b->run(batch, out).ok()) {
            ++failures[size_t(t)];
            continue;
          }
          for (size_t i = 0; i < out.size(); ++i)
            if (std::abs(out[i] - reference[k][i]) > 1e-5f) ++mismatches[size_t(t)];
        }
      });
    }
    for (auto& th : threads) th.join();
    INFO(file);
    for (int t = 0; t < 4; ++t) {
      CHECK(failures[size_t(t)] == 0);
      CHECK(mismatches[size_t(t)] == 0);
    }
    for (size_t k = 0; k < batches.size(); ++k) check_rows(reference[k], batches[k], key);
  }
}

TEST_CASE("torchscript_backend: the activation estimate follows the documented formula") {
  if (!have_torch()) return;
  auto enc = require(make(options("encoder.pt")));
  auto cls = require(make(options("classifier.pt"), Pooling::kMean, true, kLabels));
  const brisk::BatchShape shape{.size = 2, .max_cost = 10, .total_cost = 15};
  // H = 32 (the hidden state; for the classifier its word embedding table [vocab, 32]), one head of 64 at most.
  const size_t want = (2 * 10 * 16 * 32 + 2 * 1 * 10 * 10) * sizeof(float);
  CHECK(enc->estimate_activation_bytes(shape) == want);
  CHECK(cls->estimate_activation_bytes(shape) == want);
  CHECK(enc->estimate_activation_bytes({.size = 4, .max_cost = 10, .total_cost = 40}) >
        enc->estimate_activation_bytes(shape));
}

TEST_CASE("torchscript_backend: bad modules and options are clear errors") {
  SECTION("missing file") {
    auto b = make(options("no_such_module.pt"));
    if (b.status().code() == absl::StatusCode::kUnimplemented) {
      CHECK(contains(msg(b.status()), "BRISK_WITH_TORCH"));
      return;
    }
    CHECK(b.status().code() == absl::StatusCode::kNotFound);
    CHECK(contains(msg(b.status()), "no_such_module.pt"));
  }
  if (!have_torch()) return;
  SECTION("not a TorchScript module") {
    auto b = make(options("not_a_module.pt"));
    CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(b.status()), "not_a_module.pt"));
    CHECK(contains(msg(b.status()), "not a readable TorchScript module"));
  }
  SECTION("forward(x) instead of the token inputs") {
    auto b = make(options("wrong_inputs.pt"));
    CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(b.status()), "wrong_inputs.pt"));
    CHECK(contains(msg(b.status()), "forward(x: Tensor)"));
    CHECK(contains(msg(b.status()), "expected forward(input_ids, attention_mask)"));
  }
  SECTION("logits with the wrong number of labels") {
    auto b = make(options("classifier.pt"), Pooling::kMean, true, {"billing", "card_lost"});
    CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(b.status()), "classifier.pt"));
    CHECK(contains(msg(b.status()), "2 labels (billing, card_lost) for logits of width 3"));
  }
  SECTION("output_index out of range") {
    auto b = make(options("encoder.pt", TorchScriptOutput::kAuto, 2));
    CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(b.status()), "encoder.pt: output_index is 2"));
    CHECK(contains(msg(b.status()), "expected an index below 2"));
    auto negative = make(options("encoder.pt", TorchScriptOutput::kAuto, -2));
    CHECK(negative.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(negative.status()), "output_index is -2"));
  }
  SECTION("an output of the wrong shape for the mode") {
    auto b = make(options("classifier.pt", TorchScriptOutput::kLastHiddenState));
    CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(b.status()), "expected a last hidden state [2, 3, H]"));
    auto pooled_as_hidden = make(options("encoder.pt", TorchScriptOutput::kLastHiddenState, 1));
    CHECK(pooled_as_hidden.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(pooled_as_hidden.status()), "output 1 has shape [2, 32]"));
  }
  SECTION("max pooling, an empty path") {
    auto b = make(options("encoder.pt"), Pooling::kMax);
    CHECK(b.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(b.status()), "pooling is max"));
    auto empty = make(TorchScriptOptions{});
    CHECK(empty.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(empty.status()), "TorchScriptOptions::module is empty"));
  }
  SECTION("run(): a wrong output size, an empty sequence, bad offsets") {
    auto b = require(make(options("encoder.pt")));
    std::vector<float> small(10);
    brisk::Status s = b->run(batch_of({0}), small);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(s), "holds 10 floats; expected 32"));
    PackedSequences empty_seq = batch_of({0});
    empty_seq.add(std::vector<int32_t>{});
    std::vector<float> out(64);
    s = b->run(empty_seq, out);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(s), "sequence 1 of the batch has 0 tokens"));
    PackedSequences bad = batch_of({0});
    bad.offsets.back() += 3;
    s = b->run(bad, std::span<float>(out.data(), 32));
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(s), "offsets"));
    // An id past the vocabulary: libtorch's error, with the module's path.
    PackedSequences oov;
    oov.add(std::vector<int32_t>{2, 100000, 3});
    s = b->run(oov, std::span<float>(out.data(), 32));
    CHECK(!s.ok());
    CHECK(contains(msg(s), "encoder.pt"));
    CHECK(contains(msg(s), "forward() with 3 input(s) failed"));
    // An empty batch is fine and writes nothing.
    CHECK(b->run(PackedSequences{}, std::span<float>()).ok());
  }
}

}  // namespace
