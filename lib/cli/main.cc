// brisk: the command-line tool over the C++ API (brisk::Runtime).
//
//   brisk embed [--model DIR] [--max-seq-len N] [--pooling mean|cls] [--no-normalize] [--replace-invalid-utf8]
//               [--torchscript FILE [--torchscript-output auto|hidden|pooled]] [--threads N] [DEVICE FLAGS] [TEXT...]
//       One JSON line per text: {"text":...,"embedding":[...]}. Without TEXT, embeds each line of stdin in
//       batches, so it also works as a filter over a large file: output line N belongs to input line N (an empty
//       line is an empty text); a line that cannot be embedded gets {"line":N,"error":...} and exit code 1.
//   brisk tokenize [--model DIR] [--max-seq-len N] [--replace-invalid-utf8] [TEXT...]
//       One JSON line per text: {"text":...,"ids":[...]}, the ids the model's tokenizer gives it (special tokens
//       included; --max-seq-len 0, the default, cuts nothing), from TEXT or each line of stdin as embed reads them.
//   brisk info [--model DIR] [--head FILE] [--torchscript FILE [--torchscript-output O]] [DEVICE FLAGS]
//       The model's ModelInfo as one JSON object (with its backend, task, labels, multi_label and
//       classification_head), plus embedding_dim (0 for a classification model) and brisk_version.
//   brisk classify [--model DIR] [--head FILE] [--top-k K] [--logits] [--torchscript FILE] [TEXT...]
//       One JSON line {"text","labels":[{"label","id","score"}...]} per text, top K labels best first (tasks.h).
//   brisk rerank [--model DIR] --query Q [--raw-scores] [--top-k K] [PASSAGE...]
//       One JSON object {"query","results":[{"index","score","passage"}...]}, best first (tasks.h).
//   brisk quantize --model DIR --plan int8|int8-static|bf16|mixed|auto|RULES --calib FILE --out FILE
//       Writes one quantized model file and prints the per-layer report and the sizes (see quantize.h).
//   brisk sensitivity --model DIR|model.pt --texts FILE --mode sweep|zero --out DIR
//       Pruning sensitivity: sensitivity.csv, .json and .svg in DIR (see prune.h).
//   brisk prune --model DIR --calib FILE --out DIR [--heads A] [--ffn A] [--guided --target-flops F] [--reconstruct]
//       Writes a structurally pruned model directory (see prune.h).
//   brisk fit-intents --model DIR --examples intents.tsv --out head.safetensors [--l2 X] [--unknown-threshold P]
//       Fits a few-shot intent head on the model's embeddings of label<TAB>text examples (see fit_intents.h).
//   brisk fit-verifier --model DIR --pairs pairs.tsv --out verifier.safetensors [--target-precision 0.95]
//       Fits a semantic-cache verifier on labelled question pairs (see fit_verifier.h).
//   brisk tune --model DIR --rate R --slo-p99-ms S [--mix faq|mixed|FILE] [--budget-s B] [--out policy.json] [--json]
//       Searches the batching policy with the most goodput within the P99 SLO under open-loop load; writes it as a
//       policy file that --policy (and RuntimeOptions::policy_path) loads (see tune.h).
//   brisk bench [--model DIR] --batch B --seq T [--mixed] [--iters N] [--warmup N] [--threads N] [DEVICE FLAGS]
//               [--json]
//       Embeds B synthetic texts of exactly T tokens ("[CLS] hello x (T-2) [SEP]", checked with the model's
//       tokenizer; --word W for another word than the first of hello, the, a, 1, . that is one token) N times; prints
//       throughput (B / median batch time) and batch latency P50/P90/P99.
//       --mixed: text i has 8 + i*(T-8)/(B-1) tokens instead (lengths spread evenly from 8 to T), the batch
//       that padding removal (--no-remove-padding to compare) is for.
//       --json prints one JSON object instead ({"batch","seq","device","dtype","seq_per_s","p50_ms",...});
//       --samples adds "samples_ms", every timed iteration, for scripts that pool runs (benchmarks/peers).
//   brisk plan --rate QPS --slo-p99-ms S [--bench FILE] [--json] | brisk plan [--model DIR] --measure-out FILE
//       Replicas needed for the SLO from the batch service-time curve: exact M/M/c, the field report's approximation
//       and a simulation of the batcher, side by side (see plan.h); without --bench it measures the curve first.
//
// --torchscript (embed, info, classify, rerank) runs a TorchScript module instead of brisk's encoder; --model then
// gives the tokenizer, config.json (labels) and the pooling files. --max-seq-len and --replace-invalid-utf8 also apply
// to classify and rerank.
//
// DEVICE FLAGS (embed, info, bench, classify, rerank): --device cpu|cuda|cuda:N (default cpu); --dtype f32|f16|bf16,
// the activations' dtype (default: the device's, f32 on cpu and f16 on cuda); --no-remove-padding (pad every text to
// the batch's longest instead of running the dense layers on real tokens only); --device-memory-limit BYTES (cuda: the
// most GPU memory brisk may hold, e.g. 512M or 2G; 0 = no cap).
//
// --model is a model directory or a quantized model file (brisk quantize's output); it defaults to $BRISK_MODEL_DIR,
// else ~/.cache/brisk/models/all-MiniLM-L6-v2. Exit codes: 0 success; 1 an error (printed as "brisk: error: <message>"
// on stderr); 2 bad command-line flags. Messages pass through printable(): paths, texts and file contents in them
// cannot drive the terminal.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/strip.h"
#include "brisk.h"
#include "brisk/core/stats.h"
#include "brisk/core/cpu_features.h"
#include "brisk/core/parallel.h"
#include "brisk/core/device.h"
#include "brisk/core/status.h"
#include "brisk/model/tokenizer.h"
#include "brisk/model/loader.h"
#include "brisk/runtime/runtime.h"
#include "fit_intents.h"
#include "fit_verifier.h"
#include "literal_args.h"
#include "tune.h"
#include "model_flags.h"
#include "output.h"
#include "plan.h"
#include "printable.h"
#include "prune.h"
#include "quantize.h"
#include "tasks.h"

namespace {

using brisk::Status;
using brisk::StatusOr;
using brisk::cli::printable;
using json = nlohmann::json;

using brisk::cli::kExitError;
using brisk::cli::kExitOk;
using brisk::cli::kExitUsage;
using brisk::cli::report_error;

using brisk::cli::DeviceFlags;
using brisk::cli::ModelFlags;
using namespace brisk::cli::model_flag_groups;

// ---------------------------------------------------------------------------------------------------------------
// embed

// Writes {"text":...,"embedding":[...]} with the shortest float representations that round-trip.
void print_embedding_line(std::string_view text, std::span<const float> row, std::string& buf) {
  buf.clear();
  buf += R"({"text":)";
  buf += brisk::cli::json_string(text);
  buf += R"(,"embedding":[)";
  for (size_t i = 0; i < row.size(); ++i) {
    if (i > 0) buf += ',';
    brisk::cli::append_float(buf, row[i]);
  }
  buf += "]}\n";
  std::fwrite(buf.data(), 1, buf.size(), stdout);
}

// `prompt` (--prompt-name's) goes in front of each text it embeds; the printed text is the text as given.
Status embed_and_print(const brisk::Runtime& rt, std::span<const std::string> texts, const std::string& prompt,
                       std::string& buf) {
  if (texts.empty()) return absl::OkStatus();
  std::vector<std::string> prompted;
  for (const std::string& t : texts) prompted.push_back(prompt + t);
  std::vector<std::string_view> views(prompted.begin(), prompted.end());
  BRISK_ASSIGN_OR_RETURN(std::vector<float> emb, rt.embed(views));
  const size_t dim = static_cast<size_t>(rt.embedding_dim());
  if (emb.size() != texts.size() * dim) {
    return absl::InternalError(fmt::format("embed returned {} floats for {} texts of dimension {}; expected {}",
                                           emb.size(), texts.size(), dim, texts.size() * dim));
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    print_embedding_line(texts[i], std::span<const float>(emb).subspan(i * dim, dim), buf);
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

int run_embed(const ModelFlags& flags, const std::string& prompt_name, const std::vector<std::string>& args) {
  auto rt = brisk::Runtime::create(flags.runtime_options());
  if (!rt.ok()) return report_error(rt.status());
  std::string prompt;
  if (!prompt_name.empty()) {
    auto p = brisk::prompt_for((*rt)->info(), prompt_name);
    if (!p.ok()) return report_error(p.status());
    prompt = *std::move(p);
  }
  std::string buf;
  if (!args.empty()) {
    Status s = embed_and_print(**rt, args, prompt, buf);
    return s.ok() ? kExitOk : report_error(s);
  }
  // stdin: one text per line (an empty line too: its embedding is that of [CLS] [SEP]).
  return brisk::cli::run_over_stdin_lines(
      [&](std::span<const std::string> texts) { return embed_and_print(**rt, texts, prompt, buf); });
}

// ---------------------------------------------------------------------------------------------------------------
// tokenize

// Writes {"text":...,"ids":[...]}: the ids the encoder is given for the text, the template's special tokens
// included (as Hugging Face's tokenizer(text)["input_ids"]), cut to max_seq_len (0: not cut).
Status tokenize_and_print(const brisk::TextTokenizer& tok, std::span<const std::string> texts, int max_seq_len,
                          std::string& buf) {
  std::vector<std::vector<int32_t>> ids(texts.size());  // all first: a refused text prints nothing of the call
  for (size_t t = 0; t < texts.size(); ++t) {
    BRISK_ASSIGN_OR_RETURN(ids[t],
                           tok.encode(texts[t], max_seq_len > 0 ? max_seq_len : std::numeric_limits<int>::max()));
  }
  for (size_t t = 0; t < texts.size(); ++t) {
    buf = R"({"text":)" + brisk::cli::json_string(texts[t]) + R"(,"ids":[)";
    for (size_t i = 0; i < ids[t].size(); ++i) buf += fmt::format("{}{}", i > 0 ? "," : "", ids[t][i]);
    buf += "]}\n";
    std::fwrite(buf.data(), 1, buf.size(), stdout);
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

int run_tokenize(const ModelFlags& flags, const std::vector<std::string>& args) {
  auto tok = brisk::load_model_tokenizer(flags.model_dir, flags.replace_invalid_utf8);
  if (!tok.ok()) return report_error(tok.status());
  std::string buf;
  if (!args.empty()) {
    Status s = tokenize_and_print(*tok, args, flags.max_seq_len, buf);
    return s.ok() ? kExitOk : report_error(s);
  }
  return brisk::cli::run_over_stdin_lines(
      [&](std::span<const std::string> texts) { return tokenize_and_print(*tok, texts, flags.max_seq_len, buf); });
}

// ---------------------------------------------------------------------------------------------------------------
// info

int run_info(const ModelFlags& flags) {
  auto rt = brisk::Runtime::create(flags.runtime_options());
  if (!rt.ok()) return report_error(rt.status());
  const brisk::ModelInfo& m = (*rt)->info();
  json j = {
      {"model_dir", m.model_dir},
      {"model_type", m.model_type},
      {"weights_file", m.weights_file},
      {"num_parameters", m.num_parameters},
      {"hidden_size", m.hidden_size},
      {"num_layers", m.num_layers},
      {"num_heads", m.num_heads},
      {"intermediate_size", m.intermediate_size},
      {"vocab_size", m.vocab_size},
      {"max_seq_len", m.max_seq_len},
      {"pooling", pooling_name(m.pooling)},
      {"normalize", m.normalize},
      {"prompts", m.prompts},
      {"device", m.device == brisk::Device::kCUDA ? brisk::device_string(flags.device.spec)
                                                  : std::string(brisk::device_name(m.device))},
      {"activation_dtype", brisk::dtype_name(m.activation_dtype)},
      {"quantization", m.quantization.empty() ? "fp32" : m.quantization},
      {"embedding_dim", (*rt)->embedding_dim()},
      {"backend", m.backend},
      {"backend_description", (*rt)->backend_info().description},
      {"task", m.task},
      {"labels", m.labels},
      {"multi_label", m.multi_label},
      {"classification_head", m.classification_head},
      {"cpu", brisk::cpu_model_description()},
      {"cpu_isa", m.cpu_isa},
      {"cpu_isa_detected", brisk::cpu_isa_name(brisk::detected_cpu_isa())},
      {"linear_kernels", m.linear_kernels},
      {"int8_attention_layers", m.int8_attention_layers},
      {"brisk_version", brisk_version_string()},
  };
  fmt::print("{}\n", j.dump(2, ' ', false, json::error_handler_t::replace));
  return kExitOk;
}

// ---------------------------------------------------------------------------------------------------------------
// bench

struct BenchFlags {
  int batch = 1;
  int seq = 16;
  int iters = 20;
  int warmup = 3;
  bool json_output = false;
  bool samples = false;  // with json_output: every timed iteration's ms, in run order
  bool mixed = false;    // lengths spread evenly from 8 to seq instead of all seq
  std::string word;      // "": the first of kBenchWords that is one token of the model's vocabulary
};

// Words tried for the synthetic texts when --word is not given: WordPiece's "hello"; a SentencePiece or BPE
// vocabulary may hold only the shorter ones as one token (benchmarks/peers/engines.py tries the same, in this order).
constexpr const char* kBenchWords[] = {"hello", "the", "a", "1", "."};

// Tokens of text i of `batch`: all `seq`, or with `mixed` spread evenly from min(8, seq) to seq (the last is seq),
// a batch whose padding is what padding removal saves.
std::vector<int> bench_lengths(int batch, int seq, bool mixed) {
  std::vector<int> lengths(static_cast<size_t>(batch), seq);
  if (!mixed || batch == 1) return lengths;
  const int lo = std::min(8, seq);
  for (int i = 0; i < batch; ++i) {
    lengths[static_cast<size_t>(i)] =
        lo + static_cast<int>(std::lround(static_cast<double>(i) * (seq - lo) / static_cast<double>(batch - 1)));
  }
  return lengths;
}

// A text that tokenizes to exactly `seq` tokens ([CLS] + seq-2 copies of a one-token word + [SEP]),
// verified with the model's own tokenizer.
StatusOr<std::string> synthetic_text(const brisk::TextTokenizer& tok, const std::string& model_dir,
                                     const std::string& word, int seq) {
  std::string text;
  for (int i = 0; i < seq - 2; ++i) {
    if (i > 0) text += ' ';
    text += word;
  }
  // A limit above seq, so that a word of several word pieces shows up as too many tokens.
  BRISK_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.encode(text, seq + 8));
  if (static_cast<int>(ids.size()) != seq) {
    return absl::FailedPreconditionError(fmt::format(
        "--word '{}' x {} tokenizes to {}{} tokens with the tokenizer of {}, expected exactly {} (--seq); "
        "pick a word that is a single token of the vocabulary",
        word, seq - 2, static_cast<int>(ids.size()) == seq + 8 ? "at least " : "", ids.size(), model_dir, seq));
  }
  return text;
}

int run_bench(const ModelFlags& flags, const BenchFlags& b) {
  brisk::RuntimeOptions opts = flags.runtime_options();
  opts.max_seq_len = b.seq;  // truncation at T keeps every row at exactly T tokens
  // One forward pass per call: the whole batch in one pass, within the padded-token budget.
  opts.batching.max_batch_size = std::max(opts.batching.max_batch_size, static_cast<size_t>(b.batch));
  opts.batching.max_batch_tokens = std::max(opts.batching.max_batch_tokens, static_cast<size_t>(b.batch * b.seq));
  opts.cache.result_cache_bytes = 0;  // the same text every time: measure the model, not the caches
  opts.cache.token_cache_entries = 0;
  auto rt = brisk::Runtime::create(opts);
  if (!rt.ok()) return report_error(rt.status());
  auto tok = brisk::load_model_tokenizer(flags.model_dir);
  if (!tok.ok()) return report_error(tok.status());
  if ((*rt)->info().max_seq_len < b.seq) {
    return report_error(absl::InvalidArgumentError(
        fmt::format("--seq {} exceeds the model's maximum sequence length {}", b.seq, (*rt)->info().max_seq_len)));
  }
  std::string word = b.word;
  for (size_t i = 0; word.empty() && i < std::size(kBenchWords); ++i) {
    if (synthetic_text(*tok, flags.model_dir, kBenchWords[i], b.seq).ok()) word = kBenchWords[i];
  }
  if (word.empty()) {
    return report_error(absl::FailedPreconditionError(
        fmt::format("none of the words {} is one token of the vocabulary of {}; expected --word with a word that is",
                    fmt::join(kBenchWords, ", "), flags.model_dir)));
  }
  const std::vector<int> lengths = bench_lengths(b.batch, b.seq, b.mixed);
  std::vector<std::string> distinct(static_cast<size_t>(b.seq) + 1);  // the text of each length, made once
  std::vector<std::string_view> texts;
  int64_t tokens_per_call = 0;
  for (int len : lengths) {
    std::string& text = distinct[static_cast<size_t>(len)];
    if (text.empty()) {
      auto made = synthetic_text(*tok, flags.model_dir, word, len);
      if (!made.ok()) return report_error(made.status());
      text = *std::move(made);
    }
    texts.push_back(text);
    tokens_per_call += len;
  }

  std::vector<float> out(static_cast<size_t>(b.batch) * static_cast<size_t>((*rt)->embedding_dim()));
  for (int i = 0; i < b.warmup; ++i) {
    if (Status s = (*rt)->embed(texts, out); !s.ok()) return report_error(s);
  }
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(b.iters));
  const uint64_t passes_before = (*rt)->forward_passes();
  for (int i = 0; i < b.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status s = (*rt)->embed(texts, out);
    const auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) return report_error(s);
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  const double passes_per_call =
      static_cast<double>((*rt)->forward_passes() - passes_before) / static_cast<double>(b.iters);
  const std::vector<double> samples_in_order = ms;
  double mean = 0;
  for (double v : ms) mean += v;
  mean /= static_cast<double>(ms.size());
  std::sort(ms.begin(), ms.end());
  const double p50 = brisk::percentile_of_sorted(ms, 50), p90 = brisk::percentile_of_sorted(ms, 90),
               p99 = brisk::percentile_of_sorted(ms, 99);
  const double seq_per_s = b.batch / (p50 / 1e3);
  const double tokens_per_s = static_cast<double>(tokens_per_call) / (p50 / 1e3);
  const int threads = opts.num_threads;
  const std::string device = brisk::device_string(flags.device.spec);
  const std::string dtype = brisk::dtype_name((*rt)->info().activation_dtype);  // effective, as the runtime chose

  if (b.json_output) {
    json j = {{"batch", b.batch},
              {"seq", b.seq},
              {"mixed", b.mixed},
              {"word", word},
              {"tokens_per_call", tokens_per_call},
              {"iters", b.iters},
              {"warmup", b.warmup},
              {"threads", threads},
              {"device", device},
              {"dtype", dtype},
              {"remove_padding", opts.remove_padding},
              {"int8_attention_layers", (*rt)->info().int8_attention_layers},
              {"device_memory_limit", opts.device_memory_limit},
              {"seq_per_s", seq_per_s},
              {"tokens_per_s", tokens_per_s},
              {"p50_ms", p50},
              {"p90_ms", p90},
              {"p99_ms", p99},
              {"mean_ms", mean},
              {"min_ms", ms.front()},
              {"max_ms", ms.back()},
              {"passes_per_call", passes_per_call},
              {"late_parallel_regions", brisk::late_parallel_regions()},
              {"model_dir", flags.model_dir},
              {"brisk_version", brisk_version_string()}};
    if (b.samples) j["samples_ms"] = samples_in_order;
    fmt::print("{}\n", j.dump(-1, ' ', false, json::error_handler_t::replace));
    return kExitOk;
  }
  fmt::print(
      "brisk bench: {}, batch {}, seq {} tokens{} of '{}', threads {}, {} iterations after {} warm-up\n",
      flags.model_dir, b.batch, b.seq,
      b.mixed ? fmt::format(" (mixed: {} to {}, {} in all)", lengths.front(), lengths.back(), tokens_per_call) : "",
      word, threads == 0 ? std::string("auto") : std::to_string(threads), b.iters, b.warmup);
  fmt::print("  device      {} ({}{})\n", device, dtype,
             flags.device.spec.type == brisk::Device::kCUDA
                 ? (opts.remove_padding ? ", padding removed" : ", padded to the longest")
                 : "");
  fmt::print("  throughput  {:10.1f} seq/s  ({:.0f} tokens/s; batch / median batch time)\n", seq_per_s, tokens_per_s);
  fmt::print(
      "  latency     p50 {:.3f} ms  p90 {:.3f} ms  p99 {:.3f} ms  (per batch; mean {:.3f}, min {:.3f}, "
      "max {:.3f})\n",
      p50, p90, p99, mean, ms.front(), ms.back());
  fmt::print("  passes      {:.2f} forward passes per call\n", passes_per_call);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "brisk: fast transformer-encoder inference (embeddings, classification, reranking) from the command line",
      "brisk"};
  app.require_subcommand(1);
  // CLI11 quotes the offending arguments in its errors: through printable() like every other message.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return CLI::FailureMessage::help(a, CLI::Error(e.get_name(), printable(e.what()), e.get_exit_code()));
  });
  app.set_version_flag("--version", std::string(brisk_version_string()));

  ModelFlags embed_flags, info_flags, bench_flags, classify_flags, rerank_flags;
  std::vector<std::string> embed_texts;
  BenchFlags bench;

  CLI::App* embed = app.add_subcommand("embed", "print one JSON line {\"text\",\"embedding\"} per text");
  embed_flags.add_to(*embed, kTextFlags | kPoolingFlags | kTorchScriptFlags);
  embed->add_option("TEXT", embed_texts, "texts to embed; none: read one text per line from stdin");
  std::string embed_prompt_name;
  embed->add_option("--prompt-name", embed_prompt_name,
                    "put the model's prompt of this name in front of each text, as sentence-transformers' "
                    "encode(prompt_name=...) does: a name of config_sentence_transformers.json's prompts (query, "
                    "passage, ...; brisk info lists them)");

  ModelFlags tokenize_flags;
  std::vector<std::string> tokenize_texts;
  CLI::App* tokenize_cmd =
      app.add_subcommand("tokenize", "print one JSON line {\"text\",\"ids\"} per text: the model tokenizer's ids");
  tokenize_cmd->add_option("--model", tokenize_flags.model_dir, "model directory or quantized model file")
      ->capture_default_str();
  tokenize_cmd->add_option("--max-seq-len", tokenize_flags.max_seq_len, "ids per text at most; 0 = all")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  tokenize_cmd->add_flag("--replace-invalid-utf8", tokenize_flags.replace_invalid_utf8,
                         "drop bytes that are not valid UTF-8 instead of failing on them");
  tokenize_cmd->add_option("TEXT", tokenize_texts, "texts to tokenize; none: read one text per line from stdin");

  CLI::App* info = app.add_subcommand("info", "print the model's configuration as JSON");
  info_flags.add_to(*info, kHeadFlag | kTorchScriptFlags);

  brisk::cli::ClassifyFlags classify;
  CLI::App* classify_cmd = app.add_subcommand(
      "classify", "print one JSON line {\"text\",\"labels\"} per text: its top labels with probabilities");
  classify_flags.add_to(*classify_cmd, kTextFlags | kHeadFlag | kTorchScriptFlags);
  classify.add_to(*classify_cmd);

  brisk::cli::RerankFlags rerank;
  CLI::App* rerank_cmd = app.add_subcommand(
      "rerank", "score passages against a query with a cross-encoder; print them sorted, best first, as JSON");
  rerank_flags.add_to(*rerank_cmd, kTextFlags | kTorchScriptFlags);
  rerank.add_to(*rerank_cmd);

  CLI::App* bench_cmd = app.add_subcommand("bench", "measure embed throughput and latency on synthetic texts");
  bench_flags.add_to(*bench_cmd, 0);
  bench_cmd->add_option("--batch", bench.batch, "texts per embed call")->check(CLI::Range(1, 4096))->required();
  bench_cmd->add_option("--seq", bench.seq, "tokens per text, [CLS] and [SEP] included")
      ->check(CLI::Range(2, 8192))
      ->required();
  bench_cmd->add_option("--iters", bench.iters, "timed iterations")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  bench_cmd->add_option("--warmup", bench.warmup, "untimed iterations first")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  bench_cmd->add_option("--word", bench.word,
                        "the repeated word; must be one token (default: the first of hello, the, a, 1, . that is)");
  bench_cmd->add_option("--pooling", bench_flags.pooling, "mean or cls")->check(CLI::IsMember({"mean", "cls"}));
  bench_cmd->add_flag("--mixed", bench.mixed,
                      "text lengths spread evenly from 8 to --seq tokens instead of all --seq (padding removal)");
  bench_cmd->add_flag("--json", bench.json_output, "print one JSON object instead of the report");
  bench_cmd->add_flag("--samples", bench.samples, "with --json: add samples_ms, every timed iteration in ms")
      ->needs("--json");

  brisk::cli::QuantizeFlags quantize_flags;
  CLI::App* quantize_cmd =
      app.add_subcommand("quantize", "write a quantized model file (int8, bf16, mixed or an automatic plan)");
  quantize_flags.add_to(*quantize_cmd);
  brisk::cli::SensitivityFlags sensitivity_flags;
  CLI::App* sensitivity_cmd =
      app.add_subcommand("sensitivity", "pruning sensitivity analysis: csv, json and an svg plot");
  sensitivity_flags.add_to(*sensitivity_cmd);
  brisk::cli::PruneFlags prune_flags;
  CLI::App* prune_cmd = app.add_subcommand("prune", "remove heads, ffn neurons or layers; write a smaller model");
  prune_flags.add_to(*prune_cmd);
  brisk::cli::FitIntentsFlags fit_intents_flags;
  CLI::App* fit_intents_cmd =
      app.add_subcommand("fit-intents", "fit a few-shot intent head on labelled examples (label<TAB>text)");
  fit_intents_flags.add_to(*fit_intents_cmd);
  brisk::cli::FitVerifierFlags fit_verifier_flags;
  CLI::App* fit_verifier_cmd = app.add_subcommand(
      "fit-verifier", "fit a semantic-cache verifier on labelled question pairs, calibrated to a target precision");
  fit_verifier_flags.add_to(*fit_verifier_cmd);
  brisk::cli::TuneFlags tune_flags;
  CLI::App* tune_cmd = app.add_subcommand(
      "tune", "find the batching policy with the most goodput within a P99 SLO; write it as a policy file");
  tune_flags.add_to(*tune_cmd);
  brisk::cli::PlanFlags plan_flags;
  CLI::App* plan_cmd = app.add_subcommand("plan", "replicas needed for a P99 SLO at a rate, from the batch time curve");
  plan_flags.add_to(*plan_cmd);

  brisk::cli::unguard_all_options(app);
  try {
    if (app.get_name().empty()) app.name(argv[0]);
    std::vector<std::string> args = brisk::cli::guard_list_shaped_args(argc, argv);
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help/version (code 0) or the error and usage
    return code == 0 ? kExitOk : kExitUsage;
  }

  // Values CLI11 cannot check (the device, sizes), with brisk's own message; bad flags exit 2 as CLI11's do.
  for (auto [cmd, flags] : {std::pair{embed, &embed_flags},
                            {info, &info_flags},
                            {bench_cmd, &bench_flags},
                            {classify_cmd, &classify_flags},
                            {rerank_cmd, &rerank_flags}}) {
    if (!cmd->parsed()) continue;
    if (Status s = flags->validate(); !s.ok()) {
      report_error(s);
      return kExitUsage;
    }
  }
  for (auto [cmd, s] : {std::pair{classify_cmd, classify.validate()}, {rerank_cmd, rerank.validate()}}) {
    if (cmd->parsed() && !s.ok()) {
      report_error(s);
      return kExitUsage;
    }
  }

  try {
    if (embed->parsed()) return run_embed(embed_flags, embed_prompt_name, embed_texts);
    if (info->parsed()) return run_info(info_flags);
    if (tokenize_cmd->parsed()) return run_tokenize(tokenize_flags, tokenize_texts);
    if (bench_cmd->parsed()) return run_bench(bench_flags, bench);
    if (classify_cmd->parsed()) return brisk::cli::run_classify(classify_flags.runtime_options(), classify);
    if (rerank_cmd->parsed()) return brisk::cli::run_rerank(rerank_flags.runtime_options(), rerank);
    if (quantize_cmd->parsed()) return brisk::cli::run_quantize(quantize_flags);
    if (sensitivity_cmd->parsed()) return brisk::cli::run_sensitivity(sensitivity_flags);
    if (prune_cmd->parsed()) return brisk::cli::run_prune(prune_flags);
    if (fit_intents_cmd->parsed()) return brisk::cli::run_fit_intents(fit_intents_flags);
    if (fit_verifier_cmd->parsed()) return brisk::cli::run_fit_verifier(fit_verifier_flags);
    if (tune_cmd->parsed()) return brisk::cli::run_tune(tune_flags);
    if (plan_cmd->parsed()) return brisk::cli::run_plan(plan_flags);
  } catch (const std::exception& e) {  // e.g. std::bad_alloc; the library itself reports errors as Status
    fmt::print(stderr, "brisk: error: {}\n", printable(e.what()));
    return kExitError;
  }
  return kExitUsage;
}
