// WordPieceTokenizer::encode_pair: [CLS] first [SEP] second [SEP] with Hugging Face tokenizers' "longest_first"
// truncation, for cross-encoders. Each text goes through the single-text path (encode_into), so normalisation,
// special-token handling and UTF-8 checks are those of encode().
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "brisk/model/tokenizer.h"

namespace brisk {

PairLengths longest_first_lengths(size_t first_len, size_t second_len, size_t budget) {
  if (first_len <= budget && second_len <= budget - first_len) return {first_len, second_len};  // fits
  const bool first_is_shorter = first_len <= second_len;  // a tie counts the first text as the shorter
  const size_t shorter = first_is_shorter ? first_len : second_len;
  size_t keep_shorter, keep_longer;
  if (shorter <= budget / 2) {  // only the longer text is cut
    keep_shorter = shorter;
    keep_longer = budget - shorter;
  } else {  // both are cut; the longer text gets the odd piece
    keep_shorter = budget / 2;
    keep_longer = budget - budget / 2;
  }
  return first_is_shorter ? PairLengths{keep_shorter, keep_longer} : PairLengths{keep_longer, keep_shorter};
}

StatusOr<EncodedPair> WordPieceTokenizer::encode_pair(std::string_view first, std::string_view second,
                                                      int max_seq_len) const {
  if (max_seq_len < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("encode_pair: max_seq_len is ", max_seq_len,
                     "; expected at least 3 for a pair ([CLS] first [SEP] second [SEP])"));
  }
  // Both texts whole, each as [CLS] pieces [SEP]: the truncation rule needs their full lengths.
  constexpr int kWhole = std::numeric_limits<int>::max();
  EncodedPair out;
  if (Status st = encode_into(first, kWhole, out.ids); !st.ok()) {
    return Status(st.code(), absl::StrCat("encode_pair: first text: ", st.message()));
  }
  std::vector<int32_t> rest;
  if (Status st = encode_into(second, kWhole, rest); !st.ok()) {
    return Status(st.code(), absl::StrCat("encode_pair: second text: ", st.message()));
  }
  const PairLengths keep =
      longest_first_lengths(out.ids.size() - 2, rest.size() - 2, static_cast<size_t>(max_seq_len) - 3);
  out.ids.resize(1 + keep.first);  // [CLS] and the kept pieces of the first text
  out.ids.push_back(sep_id());
  out.second_start = static_cast<int32_t>(out.ids.size());
  out.ids.insert(out.ids.end(), rest.begin() + 1, rest.begin() + 1 + static_cast<ptrdiff_t>(keep.second));
  out.ids.push_back(sep_id());
  return out;
}

}  // namespace brisk
