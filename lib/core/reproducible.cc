// Reproducible arithmetic's per-thread flag. See include/brisk/core/internal/reproducible.h.
#include "brisk/core/internal/reproducible.h"

namespace brisk::internal {
namespace {
thread_local bool t_reproducible = false;
}  // namespace

bool reproducible_arithmetic() { return t_reproducible; }

ReproducibleScope::ReproducibleScope(bool on) : previous_(t_reproducible) { t_reproducible = on || previous_; }

ReproducibleScope::~ReproducibleScope() { t_reproducible = previous_; }

}  // namespace brisk::internal
