// ProgressBar: the `brisk` tool's progress display for long steps (calibration, auto plans, sensitivity sweeps),
// handed to the library as a brisk::Progress callback.
//
//   ProgressBar bar;                                   // draws on stderr
//   options.progress = bar.callback();                 // the bar must outlive the call that reports to it
//
// On a terminal it redraws one line in place (at most ten times a second, and always at the end of a stage):
//   calibrate [##########..................] 31/78  40%  elapsed 12s  eta 18s
// When stderr is not a terminal (a log file, a CI job) it prints a plain line when a stage starts, every 5% or
// more, and when done reaches total, so logs stay short.
//
// Thread safety: update() and the callback may be called from any thread; calls are serialised by a mutex.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include "brisk/model/encoder.h"
#include "printable.h"

namespace brisk::cli {

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ProgressBar(std::FILE* out = stderr) : ProgressBar(out, ::isatty(::fileno(out)) == 1) {}
  ProgressBar(std::FILE* out, bool terminal) : out_(out), terminal_(terminal) {}
  ~ProgressBar() { finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // A callback that reports to this bar.
  Progress callback() {
    return [this](std::string_view stage, int64_t done, int64_t total) { update(stage, done, total); };
  }

  void update(std::string_view stage, int64_t done, int64_t total) {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = Clock::now();
    // A new stage (or the same one starting over) restarts the clock.
    const bool new_stage = stage != stage_ || done < last_done_ || !started_;
    if (new_stage) {
      end_line();
      stage_ = std::string(stage);
      start_ = now;
      last_printed_percent_ = -1;
      started_ = true;
    }
    last_done_ = done;
    const bool last = total <= 0 || done >= total;
    const int percent = total > 0 ? static_cast<int>(100 * std::min(done, total) / total) : 100;
    if (terminal_) {
      if (!new_stage && !last && now - last_draw_ < std::chrono::milliseconds(100)) return;
      last_draw_ = now;
      std::string line = format_line(done, total, percent, now);
      const size_t width = line.size();
      if (width < drawn_width_) line.append(drawn_width_ - width, ' ');  // cover a longer previous line
      fmt::print(out_, "\r{}", line);
      drawn_width_ = width;
      line_open_ = true;
      if (last) end_line();
    } else {
      if (!new_stage && !last && percent < last_printed_percent_ + 5) return;
      if (last && last_printed_percent_ == 100) return;  // the final line once
      last_printed_percent_ = percent;
      fmt::print(out_, "{}\n", format_line(done, total, percent, now));
    }
    std::fflush(out_);
  }

  // Ends a line left open on the terminal (the destructor calls it).
  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    end_line();
  }

 private:
  static constexpr int kBarWidth = 30;

  static std::string duration(double seconds) {
    const int64_t s = static_cast<int64_t>(seconds + 0.5);
    if (s < 60) return fmt::format("{}s", s);
    if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
    return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  }

  std::string format_line(int64_t done, int64_t total, int percent, Clock::time_point now) const {
    const int filled =
        total > 0 ? static_cast<int>(kBarWidth * std::clamp<int64_t>(done, 0, total) / total) : kBarWidth;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    std::string eta = "?";
    if (total > 0 && done >= total) {
      eta = "0s";
    } else if (done > 0 && total > 0) {
      eta = duration(elapsed * static_cast<double>(total - done) / static_cast<double>(done));
    }
    return fmt::format(
        "{} [{}{}] {}/{}  {}%  elapsed {}  eta {}", printable(stage_), std::string(static_cast<size_t>(filled), '#'),
        std::string(static_cast<size_t>(kBarWidth - filled), '.'), done, total, percent, duration(elapsed), eta);
  }

  void end_line() {
    if (!line_open_) return;
    fmt::print(out_, "\n");
    std::fflush(out_);
    line_open_ = false;
    drawn_width_ = 0;
  }

  std::FILE* out_;
  bool terminal_;
  std::mutex mu_;
  std::string stage_;
  bool started_ = false, line_open_ = false;
  int64_t last_done_ = 0;
  int last_printed_percent_ = -1;
  size_t drawn_width_ = 0;
  Clock::time_point start_{}, last_draw_{};
};

}  // namespace brisk::cli
