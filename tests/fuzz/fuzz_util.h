// Helpers shared by the libFuzzer targets: a per-process scratch folder for parsers that only read paths, input
// splitting, and a trap that makes libFuzzer report a broken invariant as a crash.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace brisk_fuzz {

// A folder under $TMPDIR (or /tmp) for this process, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/brisk_fuzz_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("brisk fuzz: mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return std::filesystem::path(pattern);
  }();
  return dir;
}

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) {
    std::perror("brisk fuzz: write");
    std::abort();
  }
}

// Splits the input at `sep` (one byte) into at most `max_parts` parts; the last part keeps any further separators.
inline std::vector<std::string_view> split(const uint8_t* data, size_t size, char sep, size_t max_parts) {
  std::vector<std::string_view> parts;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (parts.size() + 1 < max_parts) {
    const size_t k = rest.find(sep);
    if (k == std::string_view::npos) break;
    parts.push_back(rest.substr(0, k));
    rest.remove_prefix(k + 1);
  }
  parts.push_back(rest);
  return parts;
}

// A broken invariant: print why and trap, so that libFuzzer saves the input as a crash.
[[noreturn]] inline void invariant_failed(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "brisk fuzz: invariant violated: %s %s\n", what, detail.c_str());
  __builtin_trap();
}

}  // namespace brisk_fuzz
