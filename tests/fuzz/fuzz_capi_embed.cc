// libFuzzer target: brisk_embed through the C API on arbitrary bytes. One runtime is created once from the real
// model ($BRISK_MODEL_DIR or the default folder) with max_seq_len 16, one thread and the caches off, so every
// call reaches the tokenizer and the model. The input is split at '\n' into 1 to 4 NUL-terminated texts.
// Invariants: BRISK_OK with finite embeddings, or BRISK_INVALID_ARGUMENT with a message (invalid UTF-8); the
// runtime keeps working after an error.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "brisk.h"
#include "fuzz_util.h"

namespace {

struct Runtime {
  brisk_runtime* rt = nullptr;
  size_t dim = 0;
};

const Runtime& runtime() {
  static const Runtime r = [] {
    brisk_runtime_options opts;
    brisk_runtime_options_init(&opts, sizeof opts);
    opts.model_dir = brisk_default_model_dir();
    opts.num_threads = 1;
    opts.max_seq_len = 16;
    opts.cache_result_bytes = 0;
    opts.cache_token_entries = 0;
    Runtime out;
    if (brisk_runtime_create(&opts, &out.rt) != BRISK_OK || brisk_embedding_dim(out.rt, &out.dim) != BRISK_OK) {
      std::fprintf(stderr, "fuzz_capi_embed: cannot create a runtime from %s (set BRISK_MODEL_DIR): %s\n",
                   opts.model_dir, brisk_last_error());
      std::exit(1);
    }
    return out;  // never destroyed: libFuzzer exits without running static destructors in order
  }();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Runtime& r = runtime();
  const auto parts = brisk_fuzz::split(data, size, '\n', 4);
  std::vector<std::string> texts(parts.begin(), parts.end());  // std::string adds the NUL
  std::vector<const char*> ptrs;
  for (const std::string& t : texts) ptrs.push_back(t.c_str());
  std::vector<float> out(texts.size() * r.dim, NAN);
  const brisk_status s = brisk_embed(r.rt, ptrs.data(), ptrs.size(), out.data(), out.size());
  if (s == BRISK_OK) {
    for (float v : out) {
      if (!std::isfinite(v)) brisk_fuzz::invariant_failed("non-finite embedding");
    }
  } else if (s == BRISK_INVALID_ARGUMENT) {
    const char* e = brisk_last_error();
    if (e == nullptr || *e == '\0') brisk_fuzz::invariant_failed("an error without a message");
  } else {
    brisk_fuzz::invariant_failed("unexpected status", brisk_status_string(s));
  }
  return 0;
}
