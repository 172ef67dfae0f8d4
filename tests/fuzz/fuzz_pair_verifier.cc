// libFuzzer target: PairVerifier::load on arbitrary files. A verifier that loads scores a pair of its dimension to a
// probability in [0, 1] (and refuses one of another dimension), and saves and loads again to the same scores and
// threshold.
#include <cmath>
#include <vector>

#include "brisk/runtime/pair_verifier.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = brisk_fuzz::scratch_dir() / "verifier.safetensors";
  brisk_fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto v = brisk::PairVerifier::load(path.string());
  if (!v.ok()) {
    if (v.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  if (v->dim() < 1 || !(v->threshold() >= 0.0f && v->threshold() <= 1.0f)) {
    brisk_fuzz::invariant_failed("a loaded verifier of the wrong form");
  }
  if (v->dim() > 4096) return 0;  // a legal but large file: scoring it proves nothing more
  const auto d = static_cast<size_t>(v->dim());
  std::vector<float> u(d, 0.0f), w(d, 0.0f);
  u[0] = 1.0f;
  w[d - 1] = 1.0f;
  const brisk::cache::SemanticPair pair{"Can I close my account?", "can I open 2 accounts", u, w, 0.0f};
  auto s = v->score(pair);
  if (!s.ok() || !(*s >= 0.0f && *s <= 1.0f)) brisk_fuzz::invariant_failed("a score outside [0, 1]");
  std::vector<float> other(d + 1, 0.0f);
  if (v->score(brisk::cache::SemanticPair{"a", "b", other, other, 0.0f}).ok()) {
    brisk_fuzz::invariant_failed("a score of embeddings of another length");
  }
  const auto again_path = brisk_fuzz::scratch_dir() / "verifier_again.safetensors";
  if (auto st = v->save(again_path.string()); !st.ok()) {
    brisk_fuzz::invariant_failed("save of a loaded verifier", std::string(st.message()));
  }
  auto again = brisk::PairVerifier::load(again_path.string(), v->embedding_model_id());
  if (!again.ok()) brisk_fuzz::invariant_failed("reload of a saved verifier", std::string(again.status().message()));
  if (again->threshold() != v->threshold() || *again->score(pair) != *s) {
    brisk_fuzz::invariant_failed("a saved verifier reloads differently");
  }
  return 0;
}
