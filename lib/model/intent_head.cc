// Few-shot intent heads: the examples file (label<TAB>text lines). The fit is in intent_fit.cc, the head file in
// intent_head_file.cc.
#include "brisk/model/intent_head.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "brisk/core/utf8.h"

namespace brisk {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// The label quoted for a message, shortened: it may be anything a file holds.
std::string quoted(std::string_view s) {
  constexpr size_t kMax = 60;
  return absl::StrCat("'", std::string(s.substr(0, kMax)), s.size() > kMax ? "...'" : "'");
}

}  // namespace

std::vector<int64_t> IntentExamples::counts() const {
  std::vector<int64_t> n(labels.size(), 0);
  for (int32_t id : label_ids) {
    if (id >= 0 && static_cast<size_t>(id) < n.size()) ++n[static_cast<size_t>(id)];
  }
  return n;
}

std::vector<std::string_view> IntentExamples::text_views() const { return {texts.begin(), texts.end()}; }

StatusOr<IntentExamples> parse_intent_examples(std::string_view text, const std::string& source) {
  if (static_cast<int64_t>(text.size()) > kMaxIntentExampleFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(source, " has ", text.size(), " bytes; expected at most ",
                                                   kMaxIntentExampleFileBytes, " (kMaxIntentExampleFileBytes)"));
  }
  IntentExamples out;
  std::unordered_map<std::string, int32_t> label_ids;
  std::vector<int64_t> first_line;                          // by label id
  std::unordered_map<std::string_view, size_t> text_index;  // text -> its first example (views into `text`)
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (++line_no > kMaxIntentExampleLines) {
      return absl::InvalidArgumentError(absl::StrCat(source, " has more than ", kMaxIntentExampleLines,
                                                     " lines; expected at most that many (kMaxIntentExampleLines)"));
    }
    const std::string where = absl::StrCat(source, ":", line_no);
    if (size_t bad = first_invalid_utf8(line); bad != line.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": invalid UTF-8 at byte ", bad, " of the line; expected UTF-8 text"));
    }
    const std::string_view stripped = trim(line);
    if (stripped.empty() || stripped.front() == '#') continue;
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": no tab in the line; expected 'label<TAB>text' (or a '#' comment, or a blank line)"));
    }
    const std::string_view label = trim(line.substr(0, tab));
    const std::string_view example = trim(line.substr(tab + 1));
    if (label.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the label before the tab is empty; expected a label"));
    }
    for (char c : label) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": the label contains the control character 0x",
                                                       absl::Hex(static_cast<unsigned char>(c)),
                                                       "; expected printable text"));
      }
    }
    if (example.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the text after the tab is empty; expected an example text for ", quoted(label)));
    }
    auto [it, added] = label_ids.try_emplace(std::string(label), static_cast<int32_t>(out.labels.size()));
    if (added) {
      out.labels.emplace_back(label);
      first_line.push_back(line_no);
    }
    if (auto [t, fresh] = text_index.try_emplace(example, out.texts.size()); !fresh) {
      const int32_t other = out.label_ids[t->second];
      if (other != it->second) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": the text is labelled ", quoted(label), " but line ", out.lines[t->second], " labels it ",
            quoted(out.labels[static_cast<size_t>(other)]), "; expected one label per text"));
      }
    }
    out.texts.emplace_back(example);
    out.label_ids.push_back(it->second);
    out.lines.push_back(line_no);
  }
  const std::vector<int64_t> counts = out.counts();
  for (size_t id = 0; id < counts.size(); ++id) {
    if (counts[id] < kMinExamplesPerIntent) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", first_line[id], ": intent ", quoted(out.labels[id]),
                                                     " has ", counts[id], counts[id] == 1 ? " example" : " examples",
                                                     "; expected at least ", kMinExamplesPerIntent, " per intent"));
    }
  }
  if (static_cast<int64_t>(out.labels.size()) < kMinIntents) {
    return absl::InvalidArgumentError(absl::StrCat(source, " has ", out.labels.size(),
                                                   out.labels.size() == 1 ? " intent" : " intents",
                                                   "; expected at least ", kMinIntents, " ('label<TAB>text' lines)"));
  }
  return out;
}

StatusOr<IntentExamples> read_intent_examples(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat("examples file '", path, "' does not exist"));
    }
    return absl::InvalidArgumentError(absl::StrCat("examples file '", path, "': ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("examples file '", path, "' is not a regular file; expected a label<TAB>text file"));
  }
  if (st.st_size > kMaxIntentExampleFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat("examples file '", path, "' has ", st.st_size,
                                                   " bytes; expected at most ", kMaxIntentExampleFileBytes,
                                                   " (kMaxIntentExampleFileBytes)"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("examples file '", path, "' could not be opened"));
  // Read at most one byte past the cap, in case the file grew after stat().
  std::string text(static_cast<size_t>(st.st_size) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("examples file '", path, "' could not be read"));
  text.resize(static_cast<size_t>(in.gcount()));
  return parse_intent_examples(text, path);
}

}  // namespace brisk
