// The auto-tuner's coordinate-descent search, its early-stopping rule and the load-test evaluator.
#include "brisk/runtime/auto_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>

namespace brisk::tune {

namespace {

// Whether max_inflight_batches f is a distinct setting with e executors: 0 (= e), or a real limit below e.
bool inflight_limits(int f, int e) { return f == 0 || (f > 0 && f < e); }

// One dimension of the search: its name and the candidates it yields from an incumbent (invalid ones left out).
struct Dimension {
  std::string name;
  std::function<std::vector<Candidate>(const Candidate&)> values;
};

std::vector<Dimension> dimensions(const SearchSpace& space) {
  std::vector<Dimension> dims;
  dims.push_back({"threads", [&space](const Candidate& in) {
                    std::vector<Candidate> out;
                    for (auto [e, t] : space.thread_splits) {
                      Candidate c = in;
                      c.executor_threads = e;
                      c.num_threads = t;
                      if (!inflight_limits(c.max_inflight_batches, e)) c.max_inflight_batches = 0;
                      out.push_back(c);
                    }
                    return out;
                  }});
  dims.push_back({"max_batch_size", [&space](const Candidate& in) {
                    std::vector<Candidate> out;
                    for (size_t b : space.max_batch_sizes) {
                      Candidate c = in;
                      c.max_batch_size = b;
                      c.preferred_batch_multiple = std::min(c.preferred_batch_multiple, b);
                      out.push_back(c);
                    }
                    return out;
                  }});
  dims.push_back({"preferred_batch_multiple", [&space](const Candidate& in) {
                    std::vector<Candidate> out;
                    for (size_t m : space.preferred_multiples) {
                      if (m > in.max_batch_size) continue;
                      Candidate c = in;
                      c.preferred_batch_multiple = m;
                      out.push_back(c);
                    }
                    return out;
                  }});
  dims.push_back({"max_queue_delay_ms", [&space](const Candidate& in) {
                    std::vector<Candidate> out;
                    for (double d : space.queue_delays_ms) {
                      Candidate c = in;
                      c.max_queue_delay_ms = d;
                      out.push_back(c);
                    }
                    return out;
                  }});
  dims.push_back({"max_inflight_batches", [&space](const Candidate& in) {
                    std::vector<Candidate> out;
                    for (int f : space.inflight) {
                      if (!inflight_limits(f, in.executor_threads)) continue;
                      Candidate c = in;
                      c.max_inflight_batches = f;
                      out.push_back(c);
                    }
                    return out;
                  }});
  return dims;
}

Measurement average(const std::vector<Measurement>& ms) {
  Measurement a;
  if (ms.empty()) return a;
  for (const Measurement& m : ms) {
    a.goodput += m.goodput;
    a.p50_ms += m.p50_ms;
    a.p99_ms += m.p99_ms;
    a.refused_share += m.refused_share;
    a.bad_share += m.bad_share;
    a.mean_batch += m.mean_batch;
  }
  const double n = static_cast<double>(ms.size());
  a.goodput /= n;
  a.p50_ms /= n;
  a.p99_ms /= n;
  a.refused_share /= n;
  a.bad_share /= n;
  a.mean_batch /= n;
  return a;
}

std::string utc_now_iso() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string to_string(const Candidate& c) {
  return fmt::format("exec {} x threads {}, batch {}, multiple {}, delay {} ms, inflight {}", c.executor_threads,
                     c.num_threads, c.max_batch_size, c.preferred_batch_multiple, c.max_queue_delay_ms,
                     c.max_inflight_batches);
}

Candidate candidate_of(const RuntimeOptions& o, int cores) {
  const batch::BatchPolicy& b = o.batching;
  Candidate c;
  c.executor_threads = b.executor_threads;
  c.num_threads = o.num_threads > 0 ? o.num_threads : std::max(1, cores);
  c.max_batch_size = b.max_batch_size;
  c.preferred_batch_multiple = b.preferred_batch_multiple;
  c.max_queue_delay_ms = std::chrono::duration<double, std::milli>(b.max_queue_delay).count();
  c.max_inflight_batches = b.max_inflight_batches;
  return c;
}

RuntimeOptions with_candidate(RuntimeOptions o, const Candidate& c) {
  o.num_threads = c.num_threads;
  batch::BatchPolicy& b = o.batching;
  b.executor_threads = c.executor_threads;
  b.max_batch_size = c.max_batch_size;
  b.preferred_batch_multiple = c.preferred_batch_multiple;
  b.max_queue_delay =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(c.max_queue_delay_ms));
  b.max_inflight_batches = c.max_inflight_batches;
  return o;
}

size_t SearchSpace::grid_size() const {
  size_t n = 0;
  for (auto [e, t] : thread_splits) {
    (void)t;
    for (size_t b : max_batch_sizes) {
      for (size_t m : preferred_multiples) {
        if (m > b) continue;
        for (int f : inflight) n += inflight_limits(f, e) ? queue_delays_ms.size() : 0;
      }
    }
  }
  return n;
}

SearchSpace default_search_space(int cores) {
  cores = std::max(1, cores);
  SearchSpace s;
  for (int e = 1; e <= cores; e *= 2) {
    if (cores % e == 0) s.thread_splits.push_back({e, cores / e});
  }
  if (cores > 1) s.thread_splits.push_back({1, cores / 2});
  s.max_batch_sizes = {4, 8, 16, 32, 64};
  s.preferred_multiples = {1, 2, 4, 8};
  s.queue_delays_ms = {0, 1, 2, 5};
  s.inflight = {0, 1};
  return s;
}

bool better(const Measurement& a, const Measurement& b, const SearchOptions& o) {
  const bool a_meets = a.p99_ms <= o.slo_p99_ms && a.goodput > 0, b_meets = b.p99_ms <= o.slo_p99_ms && b.goodput > 0;
  if (a_meets != b_meets) return a_meets;
  if (a.goodput > b.goodput * (1 + o.goodput_noise)) return true;
  if (a.goodput < b.goodput * (1 - o.goodput_noise)) return false;
  return a.p99_ms < b.p99_ms * (1 - o.p99_noise);
}

bool should_stop_early(const load_test::Progress& p, const Measurement* incumbent, size_t min_requests) {
  if (incumbent == nullptr || p.submitted < min_requests) return false;
  const double bad = static_cast<double>(p.late + p.refused) / static_cast<double>(p.submitted);
  return bad > std::max(0.03, incumbent->bad_share * 1.1 + 0.02);
}

StatusOr<SearchResult> search_policy(const Candidate& defaults, const SearchSpace& space, const Evaluator& evaluate,
                                     const SearchOptions& options) {
  SearchResult result;
  result.defaults = defaults;
  std::vector<std::pair<Candidate, Measurement>> seen;  // every candidate measured by the search, once
  auto lookup = [&](const Candidate& c) -> const Measurement* {
    for (const auto& [sc, m] : seen) {
      if (sc == c) return &m;
    }
    return nullptr;
  };

  BRISK_ASSIGN_OR_RETURN(Measurement incumbent_m, evaluate(defaults, nullptr));
  ++result.evaluations;
  seen.push_back({defaults, incumbent_m});
  result.trials.push_back({defaults, incumbent_m, 0, "defaults", true});
  Candidate incumbent = defaults;

  const std::vector<Dimension> dims = dimensions(space);
  result.stop_reason = "max rounds";
  bool stop = false;
  for (int round = 1; round <= options.max_rounds && !stop; ++round) {
    result.rounds = round;
    bool improved = false;
    for (const Dimension& dim : dims) {
      Candidate best = incumbent;
      Measurement best_m = incumbent_m;
      for (const Candidate& c : dim.values(incumbent)) {
        if (c == incumbent) continue;
        const Measurement* known = lookup(c);
        Measurement m;
        if (known != nullptr) {
          m = *known;
        } else {
          if (options.out_of_time && options.out_of_time()) {
            result.stop_reason = "budget";
            stop = true;
            break;
          }
          if (result.evaluations >= options.max_evaluations) {
            result.stop_reason = "max evaluations";
            stop = true;
            break;
          }
          BRISK_ASSIGN_OR_RETURN(m, evaluate(c, &incumbent_m));
          ++result.evaluations;
          seen.push_back({c, m});
          result.trials.push_back({c, m, round, dim.name, false});
        }
        if (!m.stopped_early && better(m, best_m, options)) {
          best = c;
          best_m = m;
        }
      }
      if (!(best == incumbent)) {
        incumbent = best;
        incumbent_m = best_m;
        improved = true;
        for (Trial& t : result.trials) {
          if (t.candidate == best && t.round > 0) t.adopted = true;
        }
      }
      if (stop) break;
    }
    if (!stop && !improved) {
      result.stop_reason = "no improvement";
      stop = true;
    }
  }
  result.winner = incumbent;

  // The final comparison: winner and defaults measured again, interleaved, so that both see the same machine.
  std::vector<Measurement> defaults_runs, winner_runs;
  for (int r = 0; r < std::max(1, options.final_repeats); ++r) {
    for (int k = 0; k < 2; ++k) {
      const bool winner_turn = (r % 2 == 0) == (k == 1);  // D W, W D, D W, ...
      if (winner_turn && result.winner == defaults) continue;
      const Candidate& c = winner_turn ? result.winner : defaults;
      BRISK_ASSIGN_OR_RETURN(Measurement m, evaluate(c, nullptr));
      (winner_turn ? winner_runs : defaults_runs).push_back(m);
      result.trials.push_back({c, m, -1, winner_turn ? "final: winner" : "final: defaults", false});
    }
  }
  result.defaults_final = average(defaults_runs);
  result.winner_final = result.winner == defaults ? result.defaults_final : average(winner_runs);
  result.winner_confirmed =
      !(result.winner == defaults) && !better(result.defaults_final, result.winner_final, options);
  result.chosen = result.winner_confirmed ? result.winner : defaults;
  result.chosen_final = result.winner_confirmed ? result.winner_final : result.defaults_final;
  return result;
}

Evaluator evaluate_with_load_test(LoadEvaluatorOptions options) {
  return [o = std::move(options)](const Candidate& c, const Measurement* incumbent) -> StatusOr<Measurement> {
    BRISK_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt, Runtime::create(with_candidate(o.base, c)));
    if (o.warmup_s > 0) {  // first passes, and the measured batches reject_predicted_late needs
      load_test::OpenLoopOptions warm = o.load;
      warm.duration_s = o.warmup_s;
      warm.seed = load_test::mix_seed(o.load.seed, 0x77);
      warm.keep_going = nullptr;
      BRISK_RETURN_IF_ERROR(load_test::run_open_loop(*rt, o.texts, warm).status());
    }
    load_test::OpenLoopOptions run = o.load;
    if (incumbent != nullptr) {
      const Measurement inc = *incumbent;
      run.keep_going = [inc](const load_test::Progress& p) { return !should_stop_early(p, &inc); };
    }
    BRISK_ASSIGN_OR_RETURN(load_test::OpenLoopResult r, load_test::run_open_loop(*rt, o.texts, run));
    Measurement m;
    m.goodput = r.goodput();
    m.p50_ms = r.p50_ms;
    m.p99_ms = r.p99_ms;
    m.refused_share = r.refused_share();
    m.bad_share = r.offered ? 1.0 - static_cast<double>(r.good) / static_cast<double>(r.offered) : 1.0;
    m.mean_batch = r.mean_batch;
    m.stopped_early = r.stopped_early;
    return m;
  };
}

ServingPolicy policy_of_result(const SearchResult& result, const RuntimeOptions& base) {
  ServingPolicy p = policy_of(with_candidate(base, result.chosen));
  PolicyProvenance& v = p.provenance;
  v.tool = "brisk tune";
  v.brisk_version = BRISK_VERSION_STRING;
  v.date = utc_now_iso();
  v.model = base.model_dir;
  v.p50_ms = result.chosen_final.p50_ms;
  v.p99_ms = result.chosen_final.p99_ms;
  v.goodput_per_s = result.chosen_final.goodput;
  v.refused_share = result.chosen_final.refused_share;
  v.defaults_p50_ms = result.defaults_final.p50_ms;
  v.defaults_p99_ms = result.defaults_final.p99_ms;
  v.defaults_goodput_per_s = result.defaults_final.goodput;
  v.defaults_refused_share = result.defaults_final.refused_share;
  v.candidates = static_cast<double>(result.evaluations);
  return p;
}

}  // namespace brisk::tune
