// The synchronous path of Runtime: one forward pass of the backend on the calling thread (compute), and the rows of
// embed(), classify() and rerank(): from the result cache, else through the batcher's thread (rows_for).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "brisk/core/internal/finite.h"
#include "brisk/core/parallel.h"
#include "runtime_impl.h"

namespace brisk {

namespace {

// The first non-finite value of a row of the backend's output, as an error naming the backend and the element.
Status check_finite_row(const RuntimeImpl& impl, const float* row) {
  const int64_t j = first_non_finite(row, static_cast<int64_t>(impl.output_dim));
  if (j < 0) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("the ", impl.info.backend, " backend of model '", model_label(impl.info),
                                          "' produced ", row[j], " at element ", j, " of ", impl.output_dim,
                                          " for this input; expected finite values (the result was neither ",
                                          "served nor cached: a corrupt model file or a faulty backend)"));
}

}  // namespace

Status RuntimeImpl::compute(std::span<const TokenizedInput> inputs, float* out,
                            std::span<const std::vector<std::string>> cache_tags,
                            std::vector<Status>* row_errors) const {
  const uint64_t epoch = caches->invalidation_epoch();
  {
    ScopedNumThreads threads(options.num_threads);
    PackedSequences packed;
    const bool pairs = pair_token_types && std::any_of(inputs.begin(), inputs.end(),
                                                       [](const TokenizedInput& in) { return in.second_start > 0; });
    for (const TokenizedInput& in : inputs) {
      packed.add(in.ids);
      if (!pairs) continue;
      const size_t first = in.second_start > 0 ? static_cast<size_t>(in.second_start) : in.ids.size();
      packed.token_type_ids.resize(packed.token_type_ids.size() + first, 0);
      packed.token_type_ids.resize(packed.input_ids.size(), 1);
    }
    BRISK_RETURN_IF_ERROR(backend->run(packed, {out, inputs.size() * output_dim}));
    forward_passes.add(1);
  }
  if (row_errors != nullptr) row_errors->assign(inputs.size(), absl::OkStatus());
  Status first_error;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (Status finite = check_finite_row(*this, out + i * output_dim); !finite.ok()) {
      nonfinite_outputs.add(1);
      if (row_errors != nullptr) (*row_errors)[i] = finite;
      if (first_error.ok()) first_error = finite;
      continue;
    }
    caches->store(result_cache_key(inputs[i]), {out + i * output_dim, output_dim},
                  i < cache_tags.size() ? cache_tags[i] : std::span<const std::string>{}, epoch);
  }
  return row_errors != nullptr ? absl::OkStatus() : first_error;
}

Status RuntimeImpl::rows_for(std::span<TokenizedInput> inputs, std::span<float* const> rows) {
  // One lookup for all of them: with a Redis tier, one MGET for every L1 miss.
  std::vector<std::vector<int32_t>> keys;
  keys.reserve(inputs.size());
  for (const TokenizedInput& in : inputs) keys.push_back(result_cache_key(in));
  const std::vector<std::span<const int32_t>> key_spans(keys.begin(), keys.end());
  std::vector<std::optional<std::vector<float>>> hits = caches->lookup_many(key_spans);
  std::vector<TokenizedInput> misses;
  std::vector<float*> miss_rows;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (hits[i]) {
      std::copy(hits[i]->begin(), hits[i]->end(), rows[i]);
      continue;
    }
    misses.push_back(std::move(inputs[i]));
    miss_rows.push_back(rows[i]);
  }
  return compute_rows(misses, miss_rows);
}

Status RuntimeImpl::compute_here(std::span<const TokenizedInput> inputs, std::span<float* const> rows) {
  const size_t dim = output_dim;
  const size_t limit = options.batching.max_batch_size;
  std::vector<float> out(std::min(limit, inputs.size()) * dim);
  for (size_t begin = 0; begin < inputs.size(); begin += limit) {
    const size_t n = std::min(limit, inputs.size() - begin);
    BRISK_RETURN_IF_ERROR(compute(inputs.subspan(begin, n), out.data()));
    for (size_t k = 0; k < n; ++k) std::copy_n(out.begin() + static_cast<ptrdiff_t>(k * dim), dim, rows[begin + k]);
  }
  return absl::OkStatus();
}

Status RuntimeImpl::compute_rows(std::span<const TokenizedInput> inputs, std::span<float* const> rows) {
  if (inputs.empty()) return absl::OkStatus();
  if (options.batching.executor_threads == 0 || batcher->on_batcher_thread()) return compute_here(inputs, rows);
  const size_t limit = options.batching.max_batch_size;
  std::mutex mu;
  std::condition_variable cv;
  size_t pending = 0;  // this call's inputs in the batcher
  Status first_error;
  Status here;
  for (size_t begin = 0; begin < inputs.size();) {
    const size_t n = std::min(limit, inputs.size() - begin);
    {
      // At most two groups queued: the executor stays busy, and one call does not fill the queue.
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return pending <= limit; });
      if (!first_error.ok()) break;
      pending += n;
    }
    std::vector<TaskRequest> group;
    std::vector<TaskBatcher::Callback> callbacks;
    group.reserve(n);
    callbacks.reserve(n);
    for (size_t k = begin; k < begin + n; ++k) {
      group.push_back(TaskRequest{inputs[k], {}});  // a copy: a refused group is run here from inputs
      callbacks.push_back([&, row = rows[k]](uint64_t, StatusOr<std::vector<float>> e) {
        std::lock_guard lock(mu);
        if (e.ok()) {
          std::copy(e->begin(), e->end(), row);
        } else if (first_error.ok()) {
          first_error = e.status();
        }
        --pending;
        cv.notify_all();
      });
    }
    if (batcher->submit_all(std::move(group), {}, std::move(callbacks)).ok()) {
      begin += n;
      continue;
    }
    std::unique_lock lock(mu);
    pending -= n;
    if (pending > 0) {  // our own groups fill the queue: wait for them, then try again
      cv.wait(lock, [&] { return pending == 0; });
      continue;
    }
    lock.unlock();
    here = compute_here(inputs.subspan(begin, n), rows.subspan(begin, n));
    if (!here.ok()) break;
    begin += n;
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return pending == 0; });
  return first_error.ok() ? here : first_error;
}

}  // namespace brisk
