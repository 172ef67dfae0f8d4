#include "brisk/cache/value_envelope.h"

#define XXH_STATIC_LINKING_ONLY  // XXH64_state_t on the stack
#include <xxhash.h>

#include "absl/strings/str_cat.h"

namespace brisk::cache {
namespace {

constexpr char kMagic[4] = {'B', 'R', 'K', 'V'};

void put_le(char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

// XXH64 of the header's first 24 bytes and the body: the checksum field itself is left out.
uint64_t checksum(std::string_view bytes) {
  XXH64_state_t state;
  XXH64_reset(&state, 0);
  XXH64_update(&state, bytes.data(), 24);
  XXH64_update(&state, bytes.data() + kEnvelopeHeaderSize, bytes.size() - kEnvelopeHeaderSize);
  return XXH64_digest(&state);
}

}  // namespace

std::string encode_envelope(uint32_t codec_id, std::span<const std::string> tags, std::string_view payload) {
  size_t tags_len = 0;
  for (const std::string& t : tags) tags_len += 4 + t.size();
  std::string out(kEnvelopeHeaderSize, '\0');
  out.reserve(kEnvelopeHeaderSize + tags_len + payload.size());
  std::copy(kMagic, kMagic + 4, out.data());
  out[4] = static_cast<char>(kEnvelopeFormatVersion);
  put_le(out.data() + 8, codec_id, 4);
  put_le(out.data() + 12, tags_len, 4);
  put_le(out.data() + 16, payload.size(), 8);
  char len[4];
  for (const std::string& t : tags) {
    put_le(len, t.size(), 4);
    out.append(len, 4).append(t);
  }
  out.append(payload);
  put_le(out.data() + 24, checksum(out), 8);
  return out;
}

StatusOr<DecodedEnvelope> decode_envelope(std::string_view bytes, uint32_t expected_codec_id) {
  if (bytes.size() < 4 || bytes.substr(0, 4) != std::string_view(kMagic, 4)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cache value of ", bytes.size(), " bytes is not a brisk envelope; expected it to start with \"BRKV\""));
  }
  if (bytes.size() < kEnvelopeHeaderSize) {
    return absl::DataLossError(absl::StrCat("cache value of ", bytes.size(), " bytes is shorter than the ",
                                            kEnvelopeHeaderSize, "-byte envelope header"));
  }
  const auto version = static_cast<uint8_t>(bytes[4]);
  if (version != kEnvelopeFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat("cache value has envelope format version ", version,
                                                      "; expected ", kEnvelopeFormatVersion));
  }
  if (bytes[5] != 0 || bytes[6] != 0 || bytes[7] != 0) {
    return absl::FailedPreconditionError("cache value has unknown envelope flags; expected none");
  }
  DecodedEnvelope out;
  out.codec_id = static_cast<uint32_t>(get_le(bytes.data() + 8, 4));
  if (out.codec_id != expected_codec_id) {
    return absl::FailedPreconditionError(absl::StrCat("cache value was written by codec type id ", out.codec_id,
                                                      "; expected ", expected_codec_id));
  }
  const uint64_t tags_len = get_le(bytes.data() + 12, 4);
  const uint64_t payload_len = get_le(bytes.data() + 16, 8);
  const uint64_t body = bytes.size() - kEnvelopeHeaderSize;
  if (tags_len > body || payload_len != body - tags_len) {
    return absl::DataLossError(absl::StrCat("cache value's lengths (tags ", tags_len, " + payload ", payload_len,
                                            " bytes) do not match its ", body, "-byte body"));
  }
  const uint64_t stored = get_le(bytes.data() + 24, 8);
  if (checksum(bytes) != stored) {
    return absl::DataLossError("cache value's checksum does not match its bytes; expected an intact value");
  }
  std::string_view tags = bytes.substr(kEnvelopeHeaderSize, tags_len);
  while (!tags.empty()) {
    if (tags.size() < 4) return absl::DataLossError("cache value's tags block ends inside a tag length");
    const uint64_t n = get_le(tags.data(), 4);
    if (n > tags.size() - 4) return absl::DataLossError("cache value's tags block ends inside a tag");
    out.tags.emplace_back(tags.substr(4, n));
    tags.remove_prefix(4 + n);
  }
  out.payload = bytes.substr(kEnvelopeHeaderSize + tags_len);
  return out;
}

}  // namespace brisk::cache
