// The C API's request paths beyond brisk_embed: submits with per-request options (priority, deadline, cache tags),
// classification and reranking.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "brisk.h"
#include "brisk_internal.h"

using namespace brisk_capi;

namespace {

// The path that answered the request whose callback runs on this thread (brisk_callback_answer_path).
thread_local brisk_answer_path g_answer_path = BRISK_ANSWER_MODEL;

class AnswerPathScope {
 public:
  explicit AnswerPathScope(brisk::AnswerPath path)
      : previous_(g_answer_path) {  // a callback may submit, and so complete another request, inside its own
    g_answer_path = static_cast<brisk_answer_path>(path);
  }
  ~AnswerPathScope() { g_answer_path = previous_; }
  AnswerPathScope(const AnswerPathScope&) = delete;
  AnswerPathScope& operator=(const AnswerPathScope&) = delete;

 private:
  brisk_answer_path previous_;
};

static_assert(static_cast<int>(brisk::AnswerPath::kModel) == BRISK_ANSWER_MODEL &&
              static_cast<int>(brisk::AnswerPath::kCache) == BRISK_ANSWER_CACHE &&
              static_cast<int>(brisk::AnswerPath::kFallback) == BRISK_ANSWER_FALLBACK &&
              static_cast<int>(brisk::AnswerPath::kStaleCache) == BRISK_ANSWER_STALE);

// Where a submit writes the traceparent to propagate (brisk_request_options.traceparent_out): once, before the
// request's callback runs (which may free the buffer) or when the submit returns, whichever comes first. Shared with
// the callback; the runtime fills `context` before the request is queued.
struct TraceparentOut {
  std::mutex mu;
  char* buf = nullptr;
  bool written = false;
  brisk::TraceContext context;  // all-zero trace id: none was set

  // The traceparent into buf, or "" (already there) when the submit had no trace_parent.
  void write_once() {
    std::lock_guard<std::mutex> lock(mu);
    if (written || buf == nullptr) return;
    written = true;
    if (context.trace_id == brisk::TraceId{}) return;
    const std::string text = brisk::format_traceparent(context);
    std::memcpy(buf, text.c_str(), text.size() + 1);
  }
};

// The C request options (a prefix of them, per struct_size, over the defaults; NULL: the defaults) as C++ ones.
brisk_status request_options(const char* function, const brisk_request_options* in, brisk::ClassifyRequestOptions& out,
                             TraceparentOut& trace_out) {
  brisk_request_options o;
  brisk_request_options_init(&o, sizeof o);
  if (in != nullptr) {
    if (in->struct_size < offsetof(brisk_request_options, priority) + sizeof(int32_t)) {
      return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": options->struct_size is " +
                                              std::to_string(in->struct_size) +
                                              "; expected sizeof(brisk_request_options), set by "
                                              "brisk_request_options_init");
    }
    o = over_defaults(*in, brisk_request_options_init);
  }
  if (o.deadline_ms < 0) {
    return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": deadline_ms is " + std::to_string(o.deadline_ms) +
                                            "; expected >= 0 milliseconds from now (0: no deadline)");
  }
  if (o.num_cache_tags > 0 && o.cache_tags == nullptr) return null_argument(function, "options->cache_tags");
  out.priority = o.priority;
  // Saturating: milliseconds past the nanosecond range mean no deadline, never a signed overflow.
  constexpr int64_t kMaxMs = std::chrono::nanoseconds::max().count() / 1'000'000;
  out.timeout = o.deadline_ms > kMaxMs ? std::chrono::nanoseconds::max()
                                       : std::chrono::nanoseconds(std::chrono::milliseconds(o.deadline_ms));
  for (size_t i = 0; i < o.num_cache_tags; ++i) {
    if (o.cache_tags[i] == nullptr) {
      return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": options->cache_tags[" + std::to_string(i) +
                                              "] is NULL; expected a NUL-terminated tag");
    }
    out.cache_tags.emplace_back(o.cache_tags[i]);
  }
  out.top_k = o.top_k;
  if (o.allow_stale != 0 && o.allow_stale != 1) {
    return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": options->allow_stale is " +
                                            std::to_string(o.allow_stale) + "; expected 0 or 1");
  }
  out.allow_stale = o.allow_stale == 1;
  if (o.trace_parent != nullptr) out.trace_parent = o.trace_parent;
  if (o.traceparent_out != nullptr) {
    constexpr size_t kTraceparentBytes = 56;  // version 00's 55 characters and the NUL
    if (o.traceparent_out_len < kTraceparentBytes) {
      return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": options->traceparent_out_len is " +
                                              std::to_string(o.traceparent_out_len) + "; expected at least 56 bytes");
    }
    o.traceparent_out[0] = '\0';
    trace_out.buf = o.traceparent_out;
    out.trace_context_out = &trace_out.context;
  }
  return BRISK_OK;
}

// The checks of a submit before it queues: *request_id cleared, runtime, text and callback given, options parsed.
brisk_status submit_arguments(const char* function, const brisk_runtime* runtime, const char* text, bool has_callback,
                              const brisk_request_options* options, uint64_t* request_id,
                              brisk::ClassifyRequestOptions& out, TraceparentOut& trace_out) {
  if (request_id != nullptr) *request_id = 0;
  if (runtime == nullptr) return null_argument(function, "runtime");
  if (text == nullptr) return null_argument(function, "text");
  if (!has_callback) return null_argument(function, "callback");
  return request_options(function, options, out, trace_out);
}

// A submit's outcome: its id into *request_id (when given), or its error.
brisk_status submitted(const brisk::StatusOr<uint64_t>& id, uint64_t* request_id, TraceparentOut& trace_out) {
  if (!id.ok()) return from_status(id.status());
  if (request_id != nullptr) *request_id = *id;
  trace_out.write_once();
  return BRISK_OK;
}

// texts[0..n) as views; an error naming the NULL entry.
brisk_status text_views(const char* function, const char* what, const char* const* texts, size_t n,
                        std::vector<std::string_view>& views) {
  if (texts == nullptr) return null_argument(function, what);
  views.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (texts[i] == nullptr) {
      return fail(BRISK_INVALID_ARGUMENT, std::string(function) + ": " + what + "[" + std::to_string(i) +
                                              "] is NULL; expected a NUL-terminated UTF-8 string");
    }
    views[i] = texts[i];
  }
  return BRISK_OK;
}

brisk_label_score to_c(const brisk_runtime& rt, const brisk::LabelScore& s) {
  return brisk_label_score{s.id, s.score, rt.labels[static_cast<size_t>(s.id)].c_str()};
}

}  // namespace

extern "C" {

brisk_status brisk_request_options_init(brisk_request_options* options, size_t struct_size) {
  if (options == nullptr) return null_argument("brisk_request_options_init", "options");
  if (struct_size < offsetof(brisk_request_options, priority) + sizeof(int32_t)) {
    return fail(BRISK_INVALID_ARGUMENT, "brisk_request_options_init: struct_size is " + std::to_string(struct_size) +
                                            "; expected sizeof(brisk_request_options)");
  }
  brisk_request_options defaults;
  std::memset(&defaults, 0, sizeof defaults);
  defaults.top_k = brisk::ClassifyRequestOptions{}.top_k;
  write_defaults(options, struct_size, defaults);
  return BRISK_OK;
}

brisk_answer_path brisk_callback_answer_path(void) { return g_answer_path; }

brisk_status brisk_submit_embed_ex(brisk_runtime* runtime, const char* text, const brisk_request_options* options,
                                   brisk_embed_callback callback, void* user_data, uint64_t* request_id) {
  constexpr const char* kFn = "brisk_submit_embed_ex";
  return guarded(kFn, [&]() -> brisk_status {
    brisk::ClassifyRequestOptions ro;
    auto trace_out = std::make_shared<TraceparentOut>();
    if (brisk_status s = submit_arguments(kFn, runtime, text, callback != nullptr, options, request_id, ro, *trace_out);
        s != BRISK_OK) {
      return s;
    }
    auto done = [callback, user_data, trace_out](uint64_t id, brisk::StatusOr<std::vector<float>> r,
                                                 brisk::AnswerPath path) {
      trace_out->write_once();
      const AnswerPathScope scope(path);
      if (r.ok()) {
        callback(user_data, id, BRISK_OK, r->data(), r->size(), "");
      } else {
        const std::string message(r.status().message());
        callback(user_data, id, code_of(r.status()), nullptr, 0, message.c_str());
      }
    };
    return submitted(runtime->runtime->submit(text, ro, std::move(done)), request_id, *trace_out);
  });
}

brisk_status brisk_submit_embed(brisk_runtime* runtime, const char* text, int32_t priority, int64_t deadline_ms,
                                brisk_embed_callback callback, void* user_data, uint64_t* request_id) {
  brisk_request_options o;
  brisk_request_options_init(&o, sizeof o);
  o.priority = priority;
  o.deadline_ms = deadline_ms;
  return brisk_submit_embed_ex(runtime, text, &o, callback, user_data, request_id);
}

brisk_status brisk_num_labels(const brisk_runtime* runtime, size_t* out_num_labels) {
  if (runtime == nullptr) return null_argument("brisk_num_labels", "runtime");
  if (out_num_labels == nullptr) return null_argument("brisk_num_labels", "out_num_labels");
  *out_num_labels = runtime->labels.size();
  return BRISK_OK;
}

const char* brisk_label_name(const brisk_runtime* runtime, size_t label_id) {
  if (runtime == nullptr || label_id >= runtime->labels.size()) return nullptr;
  return runtime->labels[label_id].c_str();
}

brisk_status brisk_classify(brisk_runtime* runtime, const char* const* texts, size_t n, int32_t top_k,
                            brisk_label_score* out, size_t out_len) {
  constexpr const char* kFn = "brisk_classify";
  return guarded(kFn, [&]() -> brisk_status {
    if (runtime == nullptr) return null_argument(kFn, "runtime");
    if (runtime->labels.empty()) return from_status(runtime->runtime->classify({}, top_k).status());  // says why
    std::vector<std::string_view> views;
    if (n > 0) {
      if (brisk_status s = text_views(kFn, "texts", texts, n, views); s != BRISK_OK) return s;
      if (out == nullptr) return null_argument(kFn, "out");
    }
    if (top_k > 0 && out_len / static_cast<size_t>(top_k) < n) {
      return fail(BRISK_INVALID_ARGUMENT, std::string(kFn) + ": out_len is " + std::to_string(out_len) +
                                              " entries; expected at least n * top_k = " + std::to_string(n) + " * " +
                                              std::to_string(top_k));
    }
    auto labels = runtime->runtime->classify(views, top_k);
    if (!labels.ok()) return from_status(labels.status());
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < (*labels)[i].size(); ++k) {
        out[i * static_cast<size_t>(top_k) + k] = to_c(*runtime, (*labels)[i][k]);
      }
    }
    return BRISK_OK;
  });
}

brisk_status brisk_submit_classify(brisk_runtime* runtime, const char* text, const brisk_request_options* options,
                                   brisk_classify_callback callback, void* user_data, uint64_t* request_id) {
  constexpr const char* kFn = "brisk_submit_classify";
  return guarded(kFn, [&]() -> brisk_status {
    brisk::ClassifyRequestOptions ro;
    auto trace_out = std::make_shared<TraceparentOut>();
    if (brisk_status s = submit_arguments(kFn, runtime, text, callback != nullptr, options, request_id, ro, *trace_out);
        s != BRISK_OK) {
      return s;
    }
    auto done = [runtime, callback, user_data, trace_out](
                    uint64_t id, brisk::StatusOr<std::vector<brisk::LabelScore>> r, brisk::AnswerPath path) {
      trace_out->write_once();
      const AnswerPathScope scope(path);
      if (!r.ok()) {
        const std::string message(r.status().message());
        return callback(user_data, id, code_of(r.status()), nullptr, 0, message.c_str());
      }
      std::vector<brisk_label_score> labels;
      labels.reserve(r->size());
      for (const brisk::LabelScore& s : *r) labels.push_back(to_c(*runtime, s));
      callback(user_data, id, BRISK_OK, labels.data(), labels.size(), "");
    };
    return submitted(runtime->runtime->submit_classify(text, ro, std::move(done)), request_id, *trace_out);
  });
}

brisk_status brisk_rerank(brisk_runtime* runtime, const char* query, const char* const* passages, size_t n,
                          int32_t raw_scores, brisk_rerank_result* out, size_t out_len) {
  constexpr const char* kFn = "brisk_rerank";
  return guarded(kFn, [&]() -> brisk_status {
    if (runtime == nullptr) return null_argument(kFn, "runtime");
    if (query == nullptr) return null_argument(kFn, "query");
    if (raw_scores != 0 && raw_scores != 1) {
      return fail(BRISK_INVALID_ARGUMENT, std::string(kFn) + ": raw_scores is " + std::to_string(raw_scores) +
                                              "; expected 0 (sigmoid) or 1 (logits)");
    }
    std::vector<std::string_view> views;
    if (n > 0) {
      if (brisk_status s = text_views(kFn, "passages", passages, n, views); s != BRISK_OK) return s;
      if (out == nullptr) return null_argument(kFn, "out");
      if (out_len < n) {
        return fail(BRISK_INVALID_ARGUMENT, std::string(kFn) + ": out_len is " + std::to_string(out_len) +
                                                " entries; expected at least n = " + std::to_string(n));
      }
    }
    brisk::RerankOptions ro;
    ro.raw_scores = raw_scores == 1;
    auto ranked = runtime->runtime->rerank(query, views, ro);
    if (!ranked.ok()) return from_status(ranked.status());
    for (size_t i = 0; i < ranked->size(); ++i) out[i] = brisk_rerank_result{(*ranked)[i].index, (*ranked)[i].score};
    return BRISK_OK;
  });
}

}  // extern "C"
