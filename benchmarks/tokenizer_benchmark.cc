// WordPieceTokenizer throughput on typical customer-service questions (the request path), in tokens/s.
// Needs the all-MiniLM-L6-v2 vocabulary (scripts/setup; BRISK_MODEL_DIR overrides the location).
//   build/benchmarks/brisk_tokenizer_benchmark --benchmark_filter=Encode
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/model/tokenizer.h"
#include "brisk/runtime/runtime.h"

namespace {

const brisk::StatusOr<brisk::WordPieceTokenizer>& tokenizer() {
  static const auto tok = brisk::WordPieceTokenizer::from_model_dir(brisk::default_model_dir());
  return tok;
}

const std::vector<std::string_view> kQuestions = {
    "How do I reset my online banking password?",
    "What is the daily withdrawal limit for my debit card?",
    "I lost my credit card, how can I block it?",
    "Where is my order? It was supposed to arrive yesterday.",
    "Can I return an item without the original receipt?",
    "Do you ship to Canada and how much does it cost?",
    "Why was I charged a monthly maintenance fee of $4.99?",
    "I'd like a café au lait delivered to São Paulo, is that possible?",
    "How long does an international wire transfer take?",
    "The product arrived damaged, I want a refund for order #A-12345.",
    "Is there a fee for paying off my loan early?",
    "What are your opening hours on Sunday?",
    "Can I speak to a human agent please",
    "My card was declined at the store even though I have money in my account.",
    "How do I apply a discount code at checkout?",
    "我的信用卡被冻结了，怎么办？",
};

bool ready(benchmark::State& state) {
  if (!tokenizer().ok()) {
    state.SkipWithError(std::string(tokenizer().status().message()).c_str());
    return false;
  }
  return true;
}

// One question at a time, as a request handler does; run with 1 and 2 threads sharing one tokenizer.
void BM_EncodeQuestion(benchmark::State& state) {
  if (!ready(state)) return;
  const auto& tok = *tokenizer();
  std::vector<int32_t> ids;
  int64_t tokens = 0, bytes = 0;
  size_t i = 0;
  for (auto _ : state) {
    const std::string_view q = kQuestions[i++ % kQuestions.size()];
    if (!tok.encode_into(q, 128, ids).ok()) state.SkipWithError("encode failed");
    benchmark::DoNotOptimize(ids.data());
    tokens += static_cast<int64_t>(ids.size());
    bytes += static_cast<int64_t>(q.size());
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_EncodeQuestion)->Threads(1)->Threads(2)->UseRealTime();

// A padded batch of 32 questions, as the batcher forms it.
void BM_EncodeBatch32(benchmark::State& state) {
  if (!ready(state)) return;
  const auto& tok = *tokenizer();
  std::vector<std::string_view> batch;
  for (size_t i = 0; i < 32; ++i) batch.push_back(kQuestions[i % kQuestions.size()]);
  int64_t tokens = 0;
  for (auto _ : state) {
    auto b = tok.encode_batch(batch, 128);
    if (!b.ok()) state.SkipWithError("encode_batch failed");
    benchmark::DoNotOptimize(b->input_ids.data());
    for (int32_t n : b->lengths) tokens += n;
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EncodeBatch32);

// A 1 MB document truncated to 512 tokens: tokenizing stops at 512, only the UTF-8 check reads all of it.
void BM_EncodeLongTruncated(benchmark::State& state) {
  if (!ready(state)) return;
  const auto& tok = *tokenizer();
  std::string text;
  while (text.size() < (1u << 20)) {
    for (auto q : kQuestions) text.append(q).push_back(' ');
  }
  std::vector<int32_t> ids;
  int64_t tokens = 0;
  for (auto _ : state) {
    if (!tok.encode_into(text, 512, ids).ok()) state.SkipWithError("encode failed");
    tokens += static_cast<int64_t>(ids.size());
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EncodeLongTruncated);

}  // namespace
