// Where HF tokenizers' character tables disagree with utf8proc's Unicode 15 data. The `tokenizers` crate
// classifies punctuation, Mn and Cf with the `unicode_categories` crate, which predates Unicode 9, and its NFD
// lacks some newer decompositions. These ranges were measured by running every code point through
// tokenizers 0.19.1 (BertNormalizer + BertPreTokenizer) and through brisk, so brisk splits text exactly as HF.
#include <algorithm>
#include <cstdint>
#include <iterator>

#include "tokenizer_unicode.h"

namespace brisk::detail {

namespace {

struct Range {
  int32_t first, last;
  HfCharOverride what;
};

constexpr Range kRanges[] = {
    {0x61D, 0x61D, kVerbatim},     {0x7FD, 0x7FD, kVerbatim},     {0x890, 0x891, kVerbatim},
    {0x898, 0x89F, kVerbatim},     {0x8CA, 0x8E2, kVerbatim},     {0x9FD, 0x9FE, kVerbatim},
    {0xA76, 0xA76, kVerbatim},     {0xAFA, 0xAFF, kVerbatim},     {0xB55, 0xB55, kVerbatim},
    {0xC04, 0xC04, kVerbatim},     {0xC3C, 0xC3C, kVerbatim},     {0xC77, 0xC77, kVerbatim},
    {0xC84, 0xC84, kVerbatim},     {0xD00, 0xD00, kVerbatim},     {0xD3B, 0xD3C, kVerbatim},
    {0xD81, 0xD81, kVerbatim},     {0xEBA, 0xEBA, kVerbatim},     {0xECE, 0xECE, kVerbatim},
    {0x166D, 0x166D, kPunct},      {0x1734, 0x1734, kMark},       {0x180F, 0x180F, kVerbatim},
    {0x1885, 0x1886, kVerbatim},   {0x1ABF, 0x1ACE, kVerbatim},   {0x1B7D, 0x1B7E, kVerbatim},
    {0x1DF6, 0x1DFB, kVerbatim},   {0x2E43, 0x2E4F, kVerbatim},   {0x2E52, 0x2E5D, kVerbatim},
    {0xA82C, 0xA82C, kVerbatim},   {0xA8C5, 0xA8C5, kVerbatim},   {0xA8FF, 0xA8FF, kVerbatim},
    {0xA9BD, 0xA9BD, kVerbatim},   {0x10D24, 0x10D27, kVerbatim}, {0x10EAB, 0x10EAD, kVerbatim},
    {0x10EFD, 0x10EFF, kVerbatim}, {0x10F46, 0x10F50, kVerbatim}, {0x10F55, 0x10F59, kVerbatim},
    {0x10F82, 0x10F89, kVerbatim}, {0x11070, 0x11070, kVerbatim}, {0x11073, 0x11074, kVerbatim},
    {0x110C2, 0x110C2, kVerbatim}, {0x110CD, 0x110CD, kVerbatim}, {0x111C9, 0x111C9, kPunct},
    {0x111CF, 0x111CF, kVerbatim}, {0x1123E, 0x1123E, kVerbatim}, {0x11241, 0x11241, kVerbatim},
    {0x1133B, 0x1133B, kVerbatim}, {0x11438, 0x1143F, kVerbatim}, {0x11442, 0x11444, kVerbatim},
    {0x11446, 0x11446, kVerbatim}, {0x1144B, 0x1144F, kVerbatim}, {0x1145A, 0x1145B, kVerbatim},
    {0x1145D, 0x1145E, kVerbatim}, {0x11660, 0x1166C, kVerbatim}, {0x116B9, 0x116B9, kVerbatim},
    {0x1182F, 0x11837, kVerbatim}, {0x11839, 0x1183B, kVerbatim}, {0x11938, 0x11938, kVerbatim},
    {0x1193B, 0x1193C, kVerbatim}, {0x1193E, 0x1193E, kVerbatim}, {0x11943, 0x11946, kVerbatim},
    {0x119D4, 0x119D7, kVerbatim}, {0x119DA, 0x119DB, kVerbatim}, {0x119E0, 0x119E0, kVerbatim},
    {0x119E2, 0x119E2, kVerbatim}, {0x11A01, 0x11A0A, kVerbatim}, {0x11A33, 0x11A38, kVerbatim},
    {0x11A3B, 0x11A47, kVerbatim}, {0x11A51, 0x11A56, kVerbatim}, {0x11A59, 0x11A5B, kVerbatim},
    {0x11A8A, 0x11A96, kVerbatim}, {0x11A98, 0x11A9C, kVerbatim}, {0x11A9E, 0x11AA2, kVerbatim},
    {0x11B00, 0x11B09, kVerbatim}, {0x11C30, 0x11C36, kVerbatim}, {0x11C38, 0x11C3D, kVerbatim},
    {0x11C3F, 0x11C3F, kVerbatim}, {0x11C41, 0x11C45, kVerbatim}, {0x11C70, 0x11C71, kVerbatim},
    {0x11C92, 0x11CA7, kVerbatim}, {0x11CAA, 0x11CB0, kVerbatim}, {0x11CB2, 0x11CB3, kVerbatim},
    {0x11CB5, 0x11CB6, kVerbatim}, {0x11D31, 0x11D36, kVerbatim}, {0x11D3A, 0x11D3A, kVerbatim},
    {0x11D3C, 0x11D3D, kVerbatim}, {0x11D3F, 0x11D45, kVerbatim}, {0x11D47, 0x11D47, kVerbatim},
    {0x11D90, 0x11D91, kVerbatim}, {0x11D95, 0x11D95, kVerbatim}, {0x11D97, 0x11D97, kVerbatim},
    {0x11EF3, 0x11EF4, kVerbatim}, {0x11EF7, 0x11EF8, kVerbatim}, {0x11F00, 0x11F01, kVerbatim},
    {0x11F36, 0x11F3A, kVerbatim}, {0x11F40, 0x11F40, kVerbatim}, {0x11F42, 0x11F4F, kVerbatim},
    {0x11FFF, 0x11FFF, kVerbatim}, {0x12FF1, 0x12FF2, kVerbatim}, {0x13430, 0x13440, kVerbatim},
    {0x13447, 0x13455, kVerbatim}, {0x16E97, 0x16E9A, kVerbatim}, {0x16F4F, 0x16F4F, kVerbatim},
    {0x16FE2, 0x16FE2, kVerbatim}, {0x16FE4, 0x16FE4, kVerbatim}, {0x1CF00, 0x1CF2D, kVerbatim},
    {0x1CF30, 0x1CF46, kVerbatim}, {0x1E000, 0x1E006, kVerbatim}, {0x1E008, 0x1E018, kVerbatim},
    {0x1E01B, 0x1E021, kVerbatim}, {0x1E023, 0x1E024, kVerbatim}, {0x1E026, 0x1E02A, kVerbatim},
    {0x1E08F, 0x1E08F, kVerbatim}, {0x1E130, 0x1E136, kVerbatim}, {0x1E2AE, 0x1E2AE, kVerbatim},
    {0x1E2EC, 0x1E2EF, kVerbatim}, {0x1E4EC, 0x1E4EF, kVerbatim}, {0x1E944, 0x1E94A, kVerbatim},
    {0x1E95E, 0x1E95F, kVerbatim},
};

}  // namespace

HfCharOverride hf_char_override(int32_t c) {
  if (c < kRanges[0].first || c > std::prev(std::end(kRanges))->last) return kNoOverride;
  const Range* r = std::upper_bound(std::begin(kRanges), std::end(kRanges), c,
                                    [](int32_t v, const Range& x) { return v < x.first; });
  if (r == std::begin(kRanges)) return kNoOverride;
  --r;
  return c <= r->last ? r->what : kNoOverride;
}

}  // namespace brisk::detail
