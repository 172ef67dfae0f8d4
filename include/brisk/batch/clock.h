// The batcher's clocks are brisk's shared clocks (brisk/core/clock.h), named here for brisk::batch code.
#pragma once

#include "brisk/core/clock.h"

namespace brisk::batch {

using brisk::Clock;
using brisk::Duration;
using brisk::kNoDeadline;
using brisk::ManualClock;
using brisk::SteadyClock;
using brisk::TimePoint;

}  // namespace brisk::batch
