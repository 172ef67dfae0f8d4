// SemanticCache (brisk/cache/semantic_cache.h): per-tenant HNSW indexes, slots with expiry, tags and LRU
// ticks, and the guarded nearest-question lookup. Persistence is in semantic_cache_io.cc.
#include "brisk/cache/semantic_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <shared_mutex>

#include "absl/strings/str_cat.h"
#include "brisk/core/internal/bounded_input.h"
#include "semantic_cache_impl.h"

namespace brisk::cache {

std::string_view to_string(SemanticMissReason reason) {
  switch (reason) {
    case SemanticMissReason::kHit: return "hit";
    case SemanticMissReason::kNoCandidate: return "no candidate";
    case SemanticMissReason::kBelowThreshold: return "below threshold";
    case SemanticMissReason::kRejectedByGuard: return "rejected by guard";
    case SemanticMissReason::kExpired: return "expired";
    case SemanticMissReason::kInvalidInput: return "invalid input";
    case SemanticMissReason::kRejectedByVerifier: return "rejected by verifier";
  }
  return "unknown";
}

Status SemanticCacheOptions::validate() const {
  auto bad = [](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("SemanticCacheOptions: ", av(what)));
  };
  if (dim == 0 || dim > 65536) return bad(absl::StrCat("dim is ", dim, "; expected 1..65536 (the embedding length)"));
  if (!std::isfinite(threshold) || threshold < -1.0f || threshold > 1.0f)
    return bad(absl::StrCat("threshold is ", threshold, "; expected a cosine in [-1, 1]"));
  if (M < 2 || M > 1024) return bad(absl::StrCat("M is ", M, "; expected 2..1024"));
  if (ef_construction < 1 || ef_construction > 100000)
    return bad(absl::StrCat("ef_construction is ", ef_construction, "; expected 1..100000"));
  if (ef_search < 1 || ef_search > 100000) return bad(absl::StrCat("ef_search is ", ef_search, "; expected 1..100000"));
  if (max_entries == 0 || max_entries > (size_t{1} << 31))
    return bad(absl::StrCat("max_entries is ", max_entries, "; expected 1..2^31 (per tenant)"));
  if (max_tenants == 0 || max_tenants > (size_t{1} << 20))
    return bad(absl::StrCat("max_tenants is ", max_tenants, "; expected 1..2^20"));
  if (default_ttl <= Duration::zero())
    return bad("default_ttl must be > 0 (Duration::max() for entries that never expire)");
  if (candidates < 1 || candidates > 1024) return bad(absl::StrCat("candidates is ", candidates, "; expected 1..1024"));
  if (embedding_model_id.size() > 4096)
    return bad(absl::StrCat("embedding_model_id is ", embedding_model_id.size(), " bytes; expected at most 4096"));
  for (size_t i = 0; i < guards.size(); ++i)
    if (!guards[i]) return bad(absl::StrCat("guards[", i, "] is null; expected a guard (or remove the entry)"));
  if (!std::isfinite(verifier_threshold))
    return bad(absl::StrCat("verifier_threshold is ", verifier_threshold,
                            "; expected a finite score on the verifier's own scale"));
  if (verifier_cosine_floor.has_value()) {
    if (!verifier)
      return bad(absl::StrCat("verifier_cosine_floor is ", *verifier_cosine_floor,
                              " but verifier is empty; expected a verifier to confirm candidates below threshold"));
    if (!std::isfinite(*verifier_cosine_floor) || *verifier_cosine_floor < -1.0f || *verifier_cosine_floor > threshold)
      return bad(absl::StrCat("verifier_cosine_floor is ", *verifier_cosine_floor, "; expected a cosine in [-1, ",
                              threshold, "] (at most threshold)"));
  }
  return absl::OkStatus();
}

namespace {

// Checks `e` and writes it L2-normalised into `out`.
Status normalized_embedding(std::span<const float> e, size_t dim, std::string_view what, std::vector<float>& out) {
  if (e.size() != dim)
    return absl::InvalidArgumentError(
        absl::StrCat(av(what), ": embedding has ", e.size(), " floats; expected dim = ", dim));
  double ss = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    if (!std::isfinite(e[i]))
      return absl::InvalidArgumentError(
          absl::StrCat(av(what), ": embedding[", i, "] is ", e[i], "; expected finite values"));
    ss += double(e[i]) * double(e[i]);
  }
  if (!(ss > 0) || !std::isfinite(ss))
    return absl::InvalidArgumentError(absl::StrCat(av(what), ": embedding has zero norm; expected a non-zero vector"));
  double inv = 1.0 / std::sqrt(ss);
  out.resize(dim);
  for (size_t i = 0; i < dim; ++i) out[i] = static_cast<float>(double(e[i]) * inv);
  return absl::OkStatus();
}

StatusOr<std::string> checked_question(std::string_view question, std::string_view what) {
  auto nq = normalize_question(question);
  if (!nq.ok()) return absl::InvalidArgumentError(absl::StrCat(av(what), ": ", nq.status().message()));
  if (nq->empty())
    return absl::InvalidArgumentError(absl::StrCat(av(what), ": question is empty; expected a non-empty question"));
  return nq;
}

// Removes a live slot; the caller holds t.mu exclusively.
void remove_slot(SemanticTenant& t, uint32_t label) {
  SemanticSlot& s = t.slots[label];
  if (!s.live) return;
  (void)t.index->remove(label);  // cannot fail for a live label; the slot is freed either way
  for (const std::string& tag : s.tags) {
    auto it = t.by_tag.find(tag);
    if (it == t.by_tag.end()) continue;
    it->second.erase(label);
    if (it->second.empty()) t.by_tag.erase(it);
  }
  t.by_key.erase(s.key);
  s.live = false;
  s.key.clear();
  s.question.clear();
  s.answer.clear();
  s.tags.clear();
  s.embedding.clear();
  t.free_labels.push_back(label);
  --t.live;
}

}  // namespace

SemanticCache::SemanticCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SemanticCache::~SemanticCache() = default;

StatusOr<std::unique_ptr<SemanticCache>> SemanticCache::create(SemanticCacheOptions options) {
  BRISK_RETURN_IF_ERROR(options.validate());
  auto impl = std::make_unique<Impl>();
  impl->clock = options.clock ? options.clock : std::make_shared<SteadyClock>();
  impl->guard_rejections = std::make_unique<std::atomic<uint64_t>[]>(options.guards.size());
  impl->options = std::move(options);
  return std::unique_ptr<SemanticCache>(new SemanticCache(std::move(impl)));
}

const SemanticCacheOptions& SemanticCache::options() const { return impl_->options; }

Status SemanticCache::Impl::tenant_limit(std::string_view tenant_name) const {
  if (tenants.size() < options.max_tenants) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "SemanticCache: tenant '", shown_text(tenant_name), "' would be tenant ", tenants.size() + 1,
      "; expected at most max_tenants (", options.max_tenants, ") for the cache's life: use an existing tenant"));
}

Status SemanticCache::admit_tenant(std::string_view tenant_name) const {
  std::shared_lock lock(impl_->tenants_mu);
  if (impl_->tenants.contains(av(tenant_name))) return absl::OkStatus();
  return impl_->tenant_limit(tenant_name);
}

Status SemanticCache::Impl::insert_until(std::string_view tenant_name, std::string_view question,
                                         std::span<const float> embedding, std::string answer,
                                         std::vector<std::string> tags, TimePoint expires) {
  std::vector<float> vec;
  BRISK_RETURN_IF_ERROR(normalized_embedding(embedding, options.dim, "SemanticCache::insert", vec));
  BRISK_ASSIGN_OR_RETURN(std::string nq, checked_question(question, "SemanticCache::insert"));
  std::string key = question_key(nq);

  SemanticTenant* t;
  {
    std::unique_lock lock(tenants_mu);
    auto it = tenants.find(av(tenant_name));
    if (it == tenants.end()) {
      BRISK_RETURN_IF_ERROR(tenant_limit(tenant_name));
      it = tenants.emplace(std::string(tenant_name), std::make_unique<SemanticTenant>()).first;
      it->second->name = std::string(tenant_name);
    }
    t = it->second.get();
  }
  // Tags are a set: a duplicate would be indexed once but unindexed twice.
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());

  std::unique_lock lock(t->mu);
  if (!t->index) {
    internal::HnswParams p;
    p.dim = options.dim;
    p.M = static_cast<size_t>(options.M);
    p.ef_construction = static_cast<size_t>(options.ef_construction);
    p.ef_search = static_cast<size_t>(std::max(options.ef_search, options.candidates));
    p.max_elements = options.max_entries;
    BRISK_ASSIGN_OR_RETURN(t->index, internal::HnswIndex::create(p));
  }

  uint32_t label;
  bool replacing = false;
  if (auto it = t->by_key.find(key); it != t->by_key.end()) {
    label = it->second;
    BRISK_RETURN_IF_ERROR(t->index->add(label, vec.data()));  // updates the live element in place
    SemanticSlot& s = t->slots[label];
    for (const std::string& tag : s.tags) {
      auto ti = t->by_tag.find(tag);
      if (ti == t->by_tag.end()) continue;
      ti->second.erase(label);
      if (ti->second.empty()) t->by_tag.erase(ti);
    }
    replacing = true;
  } else {
    if (t->live >= options.max_entries) {
      // Make room: every expired entry goes first; then the least recently used live one.
      TimePoint now = clock->now();
      uint32_t victim = UINT32_MAX;
      uint64_t oldest = UINT64_MAX;
      for (uint32_t l = 0; l < t->slots.size(); ++l) {
        SemanticSlot& s = t->slots[l];
        if (!s.live) continue;
        if (s.expires <= now) {
          remove_slot(*t, l);
          counters.expirations.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        uint64_t used = s.last_used.load(std::memory_order_relaxed);
        if (used < oldest) {
          oldest = used;
          victim = l;
        }
      }
      if (t->live >= options.max_entries && victim != UINT32_MAX) {
        remove_slot(*t, victim);
        counters.evictions.fetch_add(1, std::memory_order_relaxed);
      }
    }
    bool fresh = t->free_labels.empty();
    label = fresh ? static_cast<uint32_t>(t->slots.size()) : t->free_labels.back();
    if (fresh) t->slots.emplace_back();
    Status st = t->index->add(label, vec.data());
    if (!st.ok()) {
      if (fresh) t->slots.pop_back();
      return st;
    }
    if (!fresh) t->free_labels.pop_back();
    t->by_key.emplace(key, label);
    ++t->live;
  }

  SemanticSlot& s = t->slots[label];
  s.live = true;
  ++s.generation;
  s.key = std::move(key);
  s.question = std::move(nq);
  s.answer = std::move(answer);
  s.tags = std::move(tags);
  s.embedding = std::move(vec);
  s.expires = expires;
  s.last_used.store(tick.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  for (const std::string& tag : s.tags) t->by_tag[tag].insert(label);
  (replacing ? counters.replacements : counters.inserts).fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

Status SemanticCache::insert(std::string_view tenant, std::string_view question, std::span<const float> embedding,
                             std::string answer, const PutOptions& options) {
  if (options.ttl < Duration::zero())
    return absl::InvalidArgumentError(
        absl::StrCat("SemanticCache::insert: ttl is ", options.ttl.count(), " ns; expected >= 0 (0: default_ttl)"));
  Duration ttl = options.ttl > Duration::zero() ? options.ttl : impl_->options.default_ttl;
  return impl_->insert_until(tenant, question, embedding, std::move(answer), options.tags,
                             deadline_after(impl_->clock->now(), ttl));
}

SemanticLookup SemanticCache::lookup(std::string_view tenant_name, std::string_view question,
                                     std::span<const float> embedding) {
  Impl& m = *impl_;
  auto& c = m.counters;
  c.lookups.fetch_add(1, std::memory_order_relaxed);
  SemanticLookup r;
  auto invalid = [&](Status st) {
    r.reason = SemanticMissReason::kInvalidInput;
    r.error = std::move(st);
    c.invalid.fetch_add(1, std::memory_order_relaxed);
    return r;
  };
  std::vector<float> vec;
  if (Status st = normalized_embedding(embedding, m.options.dim, "SemanticCache::lookup", vec); !st.ok())
    return invalid(std::move(st));
  auto nq = checked_question(question, "SemanticCache::lookup");
  if (!nq.ok()) return invalid(nq.status());

  SemanticTenant* t = nullptr;
  {
    std::shared_lock lock(m.tenants_mu);
    if (auto it = m.tenants.find(av(tenant_name)); it != m.tenants.end()) t = it->second.get();
  }
  if (t == nullptr) {
    c.no_candidate.fetch_add(1, std::memory_order_relaxed);
    return r;
  }

  TimePoint now = m.clock->now();
  const bool verifying = static_cast<bool>(m.options.verifier);
  const float floor = verifying ? m.options.verifier_cosine_floor.value_or(m.options.threshold) : m.options.threshold;
  std::vector<std::pair<uint32_t, uint64_t>> expired_seen;  // (label, generation)
  bool decided = false;                                     // the reason is set by a candidate
  size_t decided_at = SIZE_MAX;                             // that candidate's rank
  // With a verifier: the candidates that passed cosine, expiry and guards, copied out to be verified unlocked.
  struct Pending {
    size_t rank;
    uint32_t label;
    uint64_t generation;
    float sim;
    std::string question;
    std::vector<float> embedding;
  };
  std::vector<Pending> pending;
  std::optional<std::pair<float, std::string>> nearest;  // a miss below the floor: the nearest entry
  {
    std::shared_lock lock(t->mu);
    std::vector<std::pair<float, uint32_t>> cands;
    if (t->index && t->live > 0) cands = t->index->search(vec.data(), static_cast<size_t>(m.options.candidates));
    for (size_t rank = 0; rank < cands.size(); ++rank) {
      const auto [raw_sim, label] = cands[rank];
      if (label >= t->slots.size()) continue;
      const SemanticSlot& s = t->slots[label];
      if (!s.live) continue;
      float sim = std::min(raw_sim, 1.0f);
      if (sim < floor) break;  // the rest are further away
      auto about = [&](SemanticMissReason reason) {
        if (decided) return;
        decided = true;
        decided_at = rank;
        r.reason = reason;
        r.similarity = sim;
        r.cached_question = s.question;
      };
      if (s.expires <= now) {
        expired_seen.emplace_back(label, s.generation);
        about(SemanticMissReason::kExpired);
        continue;
      }
      const SemanticGuard* vetoed = nullptr;
      for (size_t i = 0; i < m.options.guards.size(); ++i) {
        if (!m.options.guards[i]->accept(*nq, s.question)) {
          m.guard_rejections[i].fetch_add(1, std::memory_order_relaxed);
          vetoed = m.options.guards[i].get();
          break;
        }
      }
      if (vetoed != nullptr) {
        if (!decided) r.guard = std::string(vetoed->name());
        about(SemanticMissReason::kRejectedByGuard);
        continue;
      }
      if (verifying) {
        pending.push_back(Pending{rank, label, s.generation, sim, s.question, s.embedding});
        continue;
      }
      r = SemanticLookup{};
      r.hit = true;
      r.reason = SemanticMissReason::kHit;
      r.answer = s.answer;
      r.similarity = sim;
      r.cached_question = s.question;
      s.last_used.store(m.tick.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      break;
    }
    if (!r.hit && !decided && pending.empty() && !cands.empty() && cands.front().second < t->slots.size())
      nearest.emplace(std::min(cands.front().first, 1.0f), t->slots[cands.front().second].question);
  }

  // The verifier, with no lock held: candidates in rank order until one is accepted and still there.
  for (Pending& p : pending) {
    const Impl::Verdict v = m.verify(SemanticPair{*nq, p.question, vec, p.embedding, p.sim});
    if (v.accepted) {
      std::shared_lock lock(t->mu);
      const SemanticSlot& s = t->slots[p.label];
      if (!s.live || s.generation != p.generation) continue;  // removed or replaced meanwhile: not found
      r = SemanticLookup{};
      r.hit = true;
      r.reason = SemanticMissReason::kHit;
      r.answer = s.answer;
      r.similarity = p.sim;
      r.cached_question = std::move(p.question);
      r.verified = true;
      r.verifier_score = v.score;
      s.last_used.store(m.tick.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      break;
    }
    if (p.rank < decided_at) {  // the nearest decisive candidate so far: it names the miss
      decided = true;
      decided_at = p.rank;
      r.reason = SemanticMissReason::kRejectedByVerifier;
      r.similarity = p.sim;
      r.cached_question = p.question;
      r.guard.clear();
      r.verified = true;
      r.verifier_score = v.score;
      r.error = v.error;
    }
  }
  if (nearest.has_value()) {
    r.reason = SemanticMissReason::kBelowThreshold;
    r.similarity = nearest->first;
    r.cached_question = std::move(nearest->second);
  }

  switch (r.reason) {
    case SemanticMissReason::kHit: c.hits.fetch_add(1, std::memory_order_relaxed); break;
    case SemanticMissReason::kNoCandidate: c.no_candidate.fetch_add(1, std::memory_order_relaxed); break;
    case SemanticMissReason::kBelowThreshold: c.below_threshold.fetch_add(1, std::memory_order_relaxed); break;
    case SemanticMissReason::kRejectedByGuard: c.rejected.fetch_add(1, std::memory_order_relaxed); break;
    case SemanticMissReason::kExpired: c.expired.fetch_add(1, std::memory_order_relaxed); break;
    case SemanticMissReason::kInvalidInput: c.invalid.fetch_add(1, std::memory_order_relaxed); break;
    case SemanticMissReason::kRejectedByVerifier: c.rejected_by_verifier.fetch_add(1, std::memory_order_relaxed); break;
  }

  if (!expired_seen.empty()) {  // remove what this lookup found expired, unless it changed meanwhile
    std::unique_lock lock(t->mu);
    for (const auto& [label, generation] : expired_seen) {
      SemanticSlot& s = t->slots[label];
      if (s.live && s.generation == generation && s.expires <= now) {
        remove_slot(*t, label);
        c.expirations.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  return r;
}

namespace {

std::vector<SemanticTenant*> all_tenants(SemanticCache::Impl& m) {
  std::shared_lock lock(m.tenants_mu);
  std::vector<SemanticTenant*> out;
  out.reserve(m.tenants.size());
  for (auto& [name, t] : m.tenants) out.push_back(t.get());
  return out;
}

}  // namespace

bool SemanticCache::erase(std::string_view tenant_name, std::string_view question) {
  auto nq = normalize_question(question);
  if (!nq.ok()) return false;
  std::string key = question_key(*nq);
  SemanticTenant* t = nullptr;
  {
    std::shared_lock lock(impl_->tenants_mu);
    if (auto it = impl_->tenants.find(av(tenant_name)); it != impl_->tenants.end()) t = it->second.get();
  }
  if (t == nullptr) return false;
  std::unique_lock lock(t->mu);
  auto it = t->by_key.find(key);
  if (it == t->by_key.end()) return false;
  remove_slot(*t, it->second);
  impl_->counters.erasures.fetch_add(1, std::memory_order_relaxed);
  return true;
}

size_t SemanticCache::invalidate_tag(std::string_view tag) {
  size_t removed = 0;
  for (SemanticTenant* t : all_tenants(*impl_)) {
    std::unique_lock lock(t->mu);
    auto it = t->by_tag.find(av(tag));
    if (it == t->by_tag.end()) continue;
    std::vector<uint32_t> labels(it->second.begin(), it->second.end());  // remove_slot edits by_tag
    for (uint32_t label : labels) remove_slot(*t, label);
    removed += labels.size();
  }
  impl_->counters.invalidations.fetch_add(removed, std::memory_order_relaxed);
  return removed;
}

size_t SemanticCache::purge_expired() {
  size_t removed = 0;
  TimePoint now = impl_->clock->now();
  for (SemanticTenant* t : all_tenants(*impl_)) {
    std::unique_lock lock(t->mu);
    for (uint32_t l = 0; l < t->slots.size(); ++l) {
      if (t->slots[l].live && t->slots[l].expires <= now) {
        remove_slot(*t, l);
        ++removed;
      }
    }
  }
  impl_->counters.expirations.fetch_add(removed, std::memory_order_relaxed);
  return removed;
}

size_t SemanticCache::size(std::string_view tenant_name) const {
  std::shared_lock lock(impl_->tenants_mu);
  auto it = impl_->tenants.find(av(tenant_name));
  if (it == impl_->tenants.end()) return 0;
  std::shared_lock tlock(it->second->mu);
  return it->second->live;
}

size_t SemanticCache::size() const {
  size_t n = 0;
  for (SemanticTenant* t : all_tenants(*impl_)) {
    std::shared_lock lock(t->mu);
    n += t->live;
  }
  return n;
}

SemanticCacheStats SemanticCache::stats() const {
  const auto& c = impl_->counters;
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  SemanticCacheStats s;
  s.lookups = get(c.lookups);
  s.hits = get(c.hits);
  s.no_candidate = get(c.no_candidate);
  s.below_threshold = get(c.below_threshold);
  s.rejected = get(c.rejected);
  s.expired = get(c.expired);
  s.invalid = get(c.invalid);
  s.rejected_by_verifier = get(c.rejected_by_verifier);
  s.misses = s.no_candidate + s.below_threshold + s.rejected + s.expired + s.invalid + s.rejected_by_verifier;
  for (size_t i = 0; i < impl_->options.guards.size(); ++i)
    s.rejections_by_guard.emplace_back(std::string(impl_->options.guards[i]->name()), get(impl_->guard_rejections[i]));
  s.inserts = get(c.inserts);
  s.replacements = get(c.replacements);
  s.expirations = get(c.expirations);
  s.evictions = get(c.evictions);
  s.invalidations = get(c.invalidations);
  s.erasures = get(c.erasures);
  s.verifier_calls = get(c.verifier_calls);
  s.verifier_accepted = get(c.verifier_accepted);
  s.verifier_rejected = get(c.verifier_rejected);
  s.verifier_errors = get(c.verifier_errors);
  s.verifier_latency_ns = impl_->verifier_ns.snapshot();
  s.entries = size();
  {
    std::shared_lock lock(impl_->tenants_mu);
    s.tenants = impl_->tenants.size();
  }
  return s;
}

std::vector<SemanticRecord> SemanticCache::Impl::snapshot() const {
  std::vector<const SemanticTenant*> ts;
  {
    std::shared_lock lock(tenants_mu);
    for (const auto& [name, t] : tenants) ts.push_back(t.get());
  }
  std::sort(ts.begin(), ts.end(), [](const SemanticTenant* a, const SemanticTenant* b) { return a->name < b->name; });
  TimePoint now = clock->now();
  std::vector<SemanticRecord> out;
  for (const SemanticTenant* t : ts) {
    std::shared_lock lock(t->mu);
    std::vector<std::pair<uint64_t, const SemanticSlot*>> live;
    for (const SemanticSlot& s : t->slots)
      if (s.live && s.expires > now) live.emplace_back(s.last_used.load(std::memory_order_relaxed), &s);
    std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [used, s] : live) {
      SemanticRecord rec;
      rec.tenant = t->name;
      rec.question = s->question;
      rec.answer = s->answer;
      rec.tags = s->tags;
      rec.ttl_left = s->expires == TimePoint::max() ? Duration::max() : s->expires - now;
      rec.embedding = s->embedding;
      out.push_back(std::move(rec));
    }
  }
  return out;
}

}  // namespace brisk::cache
