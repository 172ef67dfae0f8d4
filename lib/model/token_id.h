// Internal to lib/model's tokenizers: the ids a tokenizer file may give a token, [0, 2^30). An int32 with room to
// spare, so that a hostile id is refused before any cast to int32 or any table sized by it.
#pragma once

#include <cstdint>

namespace brisk::detail {

inline constexpr int64_t kTokenIdLimit = int64_t{1} << 30;

inline bool is_token_id(int64_t id) { return id >= 0 && id < kTokenIdLimit; }

}  // namespace brisk::detail
