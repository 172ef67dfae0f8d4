// libFuzzer target: HfTokenizer (tokenizer.json beyond WordPiece: the Unigram pipeline) loading and encoding. The
// input is split at NUL bytes into a tokenizer.json, a text and a second text. A file that loads must encode both
// texts when they are UTF-8 (and refuse them with an error naming the byte offset when not), with every id in
// [0, vocab_size) and at most max_seq_len ids (16); its normalizer must accept the text; a pair must hold at most
// max_seq_len ids too. An error must have a message.
#include <string>

#include "brisk/core/utf8.h"
#include "brisk/model/hf_tokenizer.h"
#include "fuzz_util.h"

namespace {

constexpr int kMaxSeqLen = 16;

void check_ids(const brisk::HfTokenizer& tok, const std::vector<int32_t>& ids, const char* what) {
  if (ids.size() > size_t{kMaxSeqLen}) brisk_fuzz::invariant_failed(what, "longer than max_seq_len");
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.vocab_size()) brisk_fuzz::invariant_failed(what, "id " + std::to_string(id));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = brisk_fuzz::split(data, size, '\0', 3);
  auto tok = brisk::HfTokenizer::from_json(parts[0], "fuzz tokenizer.json");
  if (!tok.ok()) {
    if (tok.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  const std::string_view text = parts.size() > 1 ? parts[1] : "Hello <mask> wörld, 日本語 👍🏽";
  const std::string_view second = parts.size() > 2 ? parts[2] : "ｆｕｌｌ　ｗｉｄｔｈ";
  const bool valid = brisk::is_valid_utf8(text);
  auto ids = tok->encode(text, kMaxSeqLen);
  if (ids.ok()) {
    if (!valid) brisk_fuzz::invariant_failed("encode accepted a text that is not UTF-8");
    check_ids(*tok, *ids, "encode");
    if (!tok->normalize(text).ok() || !tok->tokenize(text).ok()) brisk_fuzz::invariant_failed("normalize/tokenize");
  } else {
    // Refused: text that is not UTF-8 (the message names the offset), or a template with kMaxSeqLen or more special
    // tokens (the message names max_seq_len).
    const std::string message(ids.status().message());
    const bool named = valid ? message.find("max_seq_len") != std::string::npos
                             : message.find("not UTF-8 at byte") != std::string::npos;
    if (!named) brisk_fuzz::invariant_failed("encode error", message);
  }
  auto pair = tok->encode_pair(text, second, kMaxSeqLen);
  if (pair.ok()) check_ids(*tok, pair->ids, "encode_pair");
  return 0;
}
