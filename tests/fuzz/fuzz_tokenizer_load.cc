// libFuzzer target: tokenizer loading. The input is split at NUL bytes into tokenizer.json, vocab.txt and
// tokenizer_config.json, written to scratch model folders: one with all three (from_model_dir reads
// tokenizer.json), one without tokenizer.json (vocab.txt plus tokenizer_config.json), and vocab.txt alone through
// from_vocab_file. A tokenizer that loads must encode a fixed text within its vocabulary and length.
#include "brisk/model/tokenizer.h"
#include "fuzz_util.h"

namespace {

void check(const brisk::StatusOr<brisk::WordPieceTokenizer>& tok) {
  if (!tok.ok()) {
    if (tok.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return;
  }
  const int max_len = 12;
  auto ids = tok->encode("Hello, wörld! [MASK] 日本語 unaffable", max_len);
  if (!ids.ok()) return;
  if (ids->size() > size_t(max_len) || ids->size() < 2) brisk_fuzz::invariant_failed("encode length");
  for (int32_t id : *ids) {
    if (id < 0 || id >= tok->vocab_size()) brisk_fuzz::invariant_failed("id out of range", std::to_string(id));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = brisk_fuzz::split(data, size, '\0', 3);
  const auto full = brisk_fuzz::scratch_dir() / "full";
  const auto plain = brisk_fuzz::scratch_dir() / "plain";
  std::filesystem::create_directories(full);
  std::filesystem::create_directories(plain);
  std::error_code ec;
  brisk_fuzz::write_file(full / "tokenizer.json", parts[0]);
  for (const auto& dir : {full, plain}) {
    if (parts.size() > 1) {
      brisk_fuzz::write_file(dir / "vocab.txt", parts[1]);
    } else {
      std::filesystem::remove(dir / "vocab.txt", ec);
    }
    if (parts.size() > 2) {
      brisk_fuzz::write_file(dir / "tokenizer_config.json", parts[2]);
    } else {
      std::filesystem::remove(dir / "tokenizer_config.json", ec);
    }
  }
  check(brisk::WordPieceTokenizer::from_model_dir(full.string()));
  if (parts.size() > 1) {
    check(brisk::WordPieceTokenizer::from_model_dir(plain.string()));
    check(brisk::WordPieceTokenizer::from_vocab_file((plain / "vocab.txt").string()));
  }
  return 0;
}
