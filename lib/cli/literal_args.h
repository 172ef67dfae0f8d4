// Arguments taken as written. CLI11 2.1 reads an argument shaped "[...]" given to a vector option (embed's TEXT...,
// rerank's PASSAGE...) as a list: `brisk tokenize "[MASK]"` tokenized "MASK", "[a,b]" gave two texts and "[]" none,
// even after "--". So main() guards every such argument before parsing, and a transform on every option takes the
// guard off again:
//
//   ... build the app ...
//   unguard_all_options(app);                                        // "[MASK]\x1f" -> "[MASK]"
//   std::vector<std::string> args = guard_list_shaped_args(argc, argv);   // "[MASK]" -> "[MASK]\x1f", reversed
//   app.parse(args);                                                  // CLI11 takes the arguments last first
//
// The guard is one kGuard byte appended to "[...]" followed by any number of kGuard bytes, and removed from the
// same shape with at least one: a one-to-one mapping, so every argument reaches its option exactly as written.
// Not thread-safe: call on the thread that parses.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::cli {

inline constexpr char kGuard = '\x1f';  // ASCII unit separator

// "[" ... "]" followed by `min_guards` or more kGuard bytes.
inline bool list_shaped(std::string_view s, size_t min_guards) {
  size_t guards = 0;
  while (guards < s.size() && s[s.size() - 1 - guards] == kGuard) ++guards;
  const std::string_view core = s.substr(0, s.size() - guards);
  return guards >= min_guards && core.size() >= 2 && core.front() == '[' && core.back() == ']';
}

// argv[1..argc) with every list-shaped argument guarded, last first (as CLI::App::parse(std::vector&) takes them).
inline std::vector<std::string> guard_list_shaped_args(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {
    args.emplace_back(argv[i]);
    if (list_shaped(args.back(), 0)) args.back().push_back(kGuard);
  }
  return args;
}

// Adds the transform that takes the guard off to every option of `app` and of its subcommands, recursively.
inline void unguard_all_options(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    opt->transform([](std::string s) {
      if (list_shaped(s, 1)) s.pop_back();
      return s;
    });
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) unguard_all_options(*sub);
}

}  // namespace brisk::cli
