// Epoch-based reclamation (brisk/cache/internal/epoch.h).
//
// Why it is safe. A reader announces epoch e (state = e << 1 | 1), then fences (seq_cst) before it loads any
// pointer. A writer unlinks an object, fences, then reads the epoch r it stamps the object with. try_advance fences,
// then reads every announcement, and moves the epoch from E to E + 1 only when each active reader announced E.
// For the object to be freed the epoch must go from r + 1 to r + 2, and that advance's fence follows the writer's
// fence in the single order of seq_cst fences. A reader whose announcement that advance did not see fenced after
// it, so its loads see the unlink and cannot reach the object; a reader it did see had announced r + 1, after the
// writer's fence, with the same result; a reader still active from before announces r or less and stops the
// advance. Leaving a guard is a release store, and the scan's loads acquire, so a freed object's last reads by a
// reader happen before the free.
#include "brisk/cache/internal/epoch.h"

#include <algorithm>

namespace brisk::cache::internal {

namespace {

// Gives a thread's record back to the domain when the thread exits.
struct RecordOwner {
  std::atomic<bool>* in_use = nullptr;
  ~RecordOwner() {
    if (in_use != nullptr) in_use->store(false, std::memory_order_release);
  }
};

// This thread's record. (Not initial-exec TLS, which would save a __tls_get_addr call per hit: a library loaded
// with dlopen, as by Python's ctypes, may find no static TLS space left for it.)
thread_local EpochDomain::Record* this_thread_record = nullptr;

}  // namespace

EpochDomain& EpochDomain::global() {
  static constinit EpochDomain domain;  // constant-initialized and trivially destroyed: no guard, usable at exit
  return domain;
}

EpochDomain::Record* EpochDomain::register_thread() {
  Record* mine = nullptr;
  for (Record* r = records_.load(std::memory_order_acquire); r != nullptr; r = r->next) {
    bool free = false;
    if (!r->in_use.load(std::memory_order_relaxed) && r->in_use.compare_exchange_strong(free, true)) {
      mine = r;
      break;
    }
  }
  if (mine == nullptr) {
    mine = new Record();  // kept for the life of the process: the list only grows
    Record* head = records_.load(std::memory_order_relaxed);
    do {
      mine->next = head;
    } while (!records_.compare_exchange_weak(head, mine, std::memory_order_release, std::memory_order_relaxed));
  }
  thread_local RecordOwner owner;
  owner.in_use = &mine->in_use;
  return mine;
}

EpochDomain::Record* EpochDomain::enter() {
  Record* r = this_thread_record;
  if (r == nullptr) r = this_thread_record = global().register_thread();
  if (r->depth++ == 0) {
    r->state.store((global().epoch_.load(std::memory_order_relaxed) << 1) | 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  return r;
}

uint64_t EpochDomain::retire_epoch() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return epoch_.load(std::memory_order_relaxed);
}

uint64_t EpochDomain::try_advance() {
  uint64_t e = epoch_.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (Record* r = records_.load(std::memory_order_acquire); r != nullptr; r = r->next) {
    const uint64_t s = r->state.load(std::memory_order_acquire);
    if ((s & 1) != 0 && (s >> 1) != e) return e;
  }
  if (epoch_.compare_exchange_strong(e, e + 1, std::memory_order_seq_cst)) return e + 1;
  return e;  // another thread advanced it: e holds the epoch now
}

RetireList::~RetireList() {
  for (const Item& item : items_) item.deleter(item.object);
}

void RetireList::retire(void* object, Deleter deleter) {
  items_.push_back({object, deleter, kUnsealed});
  if (++since_collect_ >= kCollectEvery) collect();
}

void RetireList::collect() {
  since_collect_ = 0;
  if (items_.empty()) return;
  // Stamp what was retired since the last collect, all with one fence: an epoch read later than the unlink is a
  // later (safe) stamp than one read right after it.
  if (items_.back().epoch == kUnsealed) {
    const uint64_t stamp = EpochDomain::global().retire_epoch();
    for (auto it = items_.rbegin(); it != items_.rend() && it->epoch == kUnsealed; ++it) it->epoch = stamp;
  }
  // Twice: an object needs the epoch two past its own, and the readers that blocked the first step may have left.
  EpochDomain& domain = EpochDomain::global();
  uint64_t now = domain.try_advance();
  if (items_.back().epoch + 2 > now) now = domain.try_advance();
  const auto first_kept =
      std::find_if(items_.begin(), items_.end(), [&](const Item& item) { return item.epoch + 2 > now; });
  for (auto it = items_.begin(); it != first_kept; ++it) it->deleter(it->object);
  items_.erase(items_.begin(), first_kept);
}

}  // namespace brisk::cache::internal
