// Few-shot intent heads (SetFit-style): a softmax-regression layer fitted on frozen sentence embeddings from a few
// labelled examples per intent, its file, and the examples file it is fitted from. No Python and no GPU at fit time:
// `brisk fit-intents` embeds the examples with brisk::Runtime, fits here, and writes the head file that
// RuntimeOptions::classification_head reads.
//
//   BRISK_ASSIGN_OR_RETURN(IntentExamples ex, read_intent_examples("intents.tsv"));   // label<TAB>text lines
//   BRISK_ASSIGN_OR_RETURN(std::vector<float> emb, rt->embed(ex.text_views()));       // rows x dim
//   IntentFitStats stats;
//   BRISK_ASSIGN_OR_RETURN(ClassificationHead head,
//                          fit_intent_head(emb, rt->embedding_dim(), ex.label_ids, ex.labels, {}, &stats));
//   BRISK_RETURN_IF_ERROR(save_intent_head("head.safetensors",
//                                          {.head = head, .embedding_model_id = rt->cache_model_id(), ...}));
//
// The fit. fit_intent_head minimises, in double precision,
//   J(W, b) = (1/n) sum_i s_i CE(softmax(W x_i + b), y_i) + (l2/2) ||W||_F^2,    s_i = n / (k n_{y_i})
// over W [k, dim] and b [k] (the biases are not penalised): multinomial logistic regression with class-balanced
// sample weights (each intent weighs the same in total, however many examples it has; sum_i s_i = n). This is
// scikit-learn's LogisticRegression(C = 1 / (l2 n), class_weight="balanced", solver="lbfgs") objective divided by
// C n: the same minimiser (tests/data/make_intent_golden.py checks the probabilities against it). J is strictly
// convex in W; the gradient of b sums to zero over the classes, so from b = 0 the iterates stay on the sum-zero
// biases and the minimiser is unique. The solver is full-batch L-BFGS (10 pairs) with a backtracking Armijo line
// search, from W = 0, b = 0, stopping when the largest gradient entry is at most `tolerance` (converged), after
// max_iterations, or when three iterations in a row change J by less than 64 ulp (a tolerance below rounding noise);
// single-threaded and deterministic (the same inputs give the same bits).
//
// The head file (save_intent_head / load_intent_head) is a safetensors file with two f32 tensors,
//   intent_head.weight [labels, dim]   intent_head.bias [labels]
// and the metadata
//   format "brisk-intent-head", version "1", labels (a JSON array of the label names, by id),
//   embedding_model_id (Runtime::cache_model_id() of the embedding model at fit time: a runtime over another
//   model refuses the head), unknown_threshold (a decimal in [0, 1]), fit_options and training_stats (JSON objects).
//
// Thread safety: every function here is reentrant; distinct calls may run concurrently (save_intent_head for
// distinct paths). The structs are plain values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"
#include "brisk/model/classification_head.h"

namespace brisk {

// ---- examples ---------------------------------------------------------------------------------------------------

// Limits of an examples file: past them read_intent_examples refuses it.
inline constexpr int64_t kMaxIntentExampleLines = 100000;
inline constexpr int64_t kMaxIntentExampleFileBytes = int64_t{64} << 20;
// At least this many examples per intent, and this many intents.
inline constexpr int64_t kMinExamplesPerIntent = 2;
inline constexpr int64_t kMinIntents = 2;

// Labelled examples, one per example line in file order; labels by id in order of first appearance.
struct BRISK_API IntentExamples {
  std::vector<std::string> labels;  // distinct label names; an id is an index here
  std::vector<std::string> texts;   // one per example
  std::vector<int32_t> label_ids;   // one per example
  std::vector<int64_t> lines;       // one per example: its 1-based line in the file

  int64_t size() const { return static_cast<int64_t>(texts.size()); }
  // Examples of each label, by id.
  std::vector<int64_t> counts() const;
  // Views of texts, for Runtime::embed (valid while this object is).
  std::vector<std::string_view> text_views() const;
};

// Reads a UTF-8 text file of `label<TAB>text` lines (the text is everything after the first tab; both are trimmed of
// spaces; CRLF line ends are accepted). Blank lines and lines whose first non-space character is '#' are skipped.
// Errors name the file and line: a missing tab, an empty label or text, a label with control characters, invalid
// UTF-8, one text given two labels, an intent with fewer than kMinExamplesPerIntent examples, fewer than kMinIntents
// intents, and more than kMaxIntentExampleLines lines or kMaxIntentExampleFileBytes bytes.
BRISK_API StatusOr<IntentExamples> read_intent_examples(const std::string& path);
// The same over text in memory; `source` names it in errors (a path, "stdin").
BRISK_API StatusOr<IntentExamples> parse_intent_examples(std::string_view text, const std::string& source);

// ---- fitting ----------------------------------------------------------------------------------------------------

struct BRISK_API IntentFitOptions {
  // Weight of (1/2)||W||^2 against the mean weighted cross-entropy (see the objective above); > 0. The default
  // suits L2-normalised embeddings and ~8 examples per intent: on examples/intent_router's data (12 intents,
  // all-MiniLM-L6-v2) 1e-2 (scikit-learn's C = 1 at n = 100) leaves the probabilities flat (median top probability
  // 0.30 for held-out in-scope questions, 0.12 out of scope), 1e-3 spreads them (0.74 and 0.18) with the same
  // top-1 accuracy, so that one threshold tells the two apart.
  double l2 = 1e-3;
  int max_iterations = 1000;  // L-BFGS iterations, in [1, 1000000]
  double tolerance = 1e-6;    // stop when max |dJ/dtheta| <= tolerance; > 0
};

struct BRISK_API IntentFitStats {
  int iterations = 0;
  bool converged = false;                   // the gradient reached the tolerance (else max_iterations, or J stalled)
  double objective = 0.0;                   // J at the result
  double gradient_norm = 0.0;               // max |dJ/dtheta| at the result
  double training_accuracy = 0;             // fraction of the examples whose top label (with the f32 head) is their own
  std::vector<int64_t> examples_per_label;  // by label id
};

// Fits the head on `embeddings` (rows x dim f32, row-major, rows = label_ids.size()) with label_ids in
// [0, labels.size()). The head reads the model's sentence embedding (Input::kSentenceEmbedding) through one f32
// DenseLayer [labels, dim] with no activation; its probabilities are label_probabilities' softmax. Errors: no rows,
// embeddings.size() != rows x dim, a non-finite embedding, a label id out of range, a label without examples, fewer
// than two labels, bad options. Not converging within max_iterations is not an error (see stats->converged).
BRISK_API StatusOr<ClassificationHead> fit_intent_head(std::span<const float> embeddings, int64_t dim,
                                                       std::span<const int32_t> label_ids,
                                                       const std::vector<std::string>& labels,
                                                       const IntentFitOptions& options = {},
                                                       IntentFitStats* stats = nullptr);

// ---- the head file ----------------------------------------------------------------------------------------------

inline constexpr const char* kIntentHeadFormat = "brisk-intent-head";
inline constexpr const char* kIntentHeadVersion = "1";
inline constexpr int64_t kMaxIntentLabels = 100000;
inline constexpr int64_t kMaxIntentHeadDim = 65536;

struct BRISK_API IntentHeadFile {
  ClassificationHead head;         // Input::kSentenceEmbedding, one DenseLayer (kNone), one label per row
  std::string embedding_model_id;  // Runtime::cache_model_id() of the model whose embeddings the head reads
  // A router answers "unknown" when the top probability is below this; in [0, 1].
  float unknown_threshold = 0.5f;
  IntentFitOptions fit_options;
  IntentFitStats training_stats;
};

// Writes the file (see the top of this header) through write_safetensors: a temporary file renamed into place.
// Errors: a head that is not one f32 layer over the sentence embedding with distinct non-empty labels, non-finite
// weights, an empty embedding_model_id, a threshold outside [0, 1].
BRISK_API Status save_intent_head(const std::string& path, const IntentHeadFile& file);
// Reads and checks everything: the format and version, the labels (a JSON array of distinct non-empty strings,
// 2 to kMaxIntentLabels), exactly the two tensors, f32, shapes [labels, dim] and [labels] (dim <= kMaxIntentHeadDim),
// finite values, embedding_model_id, unknown_threshold and the two JSON objects. Errors name the file and what is
// wrong; NotFound when the file is missing.
BRISK_API StatusOr<IntentHeadFile> load_intent_head(const std::string& path);
// Whether `path` is a safetensors file whose metadata says format "brisk-intent-head" (reads the header only; the
// file may still fail load_intent_head).
BRISK_API bool is_intent_head_file(const std::string& path);

}  // namespace brisk
