// The Redis value envelope (value_envelope.h): encoding, and decoding that refuses what it cannot trust.
#include "brisk/cache/value_envelope.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define XXH_STATIC_LINKING_ONLY  // XXH64_state_t on the stack
#include <xxhash.h>

#include "absl/strings/str_cat.h"

namespace brisk::cache {
namespace {

constexpr char kMagic[4] = {'B', 'R', 'K', 'V'};
constexpr uint8_t kFlagSigned = 1;
constexpr size_t kChecksumOffset = 32;

void put_le(char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

// XXH64 of the header before the checksum field and of the body up to `end` (the MAC, if any, is left out).
uint64_t checksum(std::string_view bytes, size_t end) {
  XXH64_state_t state;
  XXH64_reset(&state, 0);
  XXH64_update(&state, bytes.data(), kChecksumOffset);
  XXH64_update(&state, bytes.data() + kEnvelopeHeaderSize, end - kEnvelopeHeaderSize);
  return XXH64_digest(&state);
}

void hmac_sha256(std::string_view key, std::string_view data, unsigned char out[kEnvelopeMacSize]) {
  unsigned int len = kEnvelopeMacSize;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out, &len);
}

}  // namespace

EnvelopeRejection envelope_rejection(const Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition: return EnvelopeRejection::kFormat;
    case absl::StatusCode::kUnauthenticated: return EnvelopeRejection::kUnauthenticated;
    case absl::StatusCode::kPermissionDenied: return EnvelopeRejection::kWrongKey;
    default: return EnvelopeRejection::kCorrupt;
  }
}

std::string encode_envelope(uint32_t codec_id, std::string_view key, std::span<const std::string> tags,
                            std::string_view payload, std::string_view signing_key) {
  size_t tags_len = 0;
  for (const std::string& t : tags) tags_len += 4 + t.size();
  const bool sign = !signing_key.empty();
  std::string out(kEnvelopeHeaderSize, '\0');
  out.reserve(kEnvelopeHeaderSize + key.size() + tags_len + payload.size() + (sign ? kEnvelopeMacSize : 0));
  std::copy(kMagic, kMagic + 4, out.data());
  out[4] = static_cast<char>(kEnvelopeFormatVersion);
  out[5] = static_cast<char>(sign ? kFlagSigned : 0);
  put_le(out.data() + 8, codec_id, 4);
  put_le(out.data() + 12, key.size(), 4);
  put_le(out.data() + 16, tags_len, 4);
  put_le(out.data() + 24, payload.size(), 8);
  out.append(key);
  char len[4];
  for (const std::string& t : tags) {
    put_le(len, t.size(), 4);
    out.append(len, 4).append(t);
  }
  out.append(payload);
  put_le(out.data() + kChecksumOffset, checksum(out, out.size()), 8);
  if (sign) {
    unsigned char mac[kEnvelopeMacSize];
    hmac_sha256(signing_key, out, mac);
    out.append(reinterpret_cast<const char*>(mac), kEnvelopeMacSize);
  }
  return out;
}

StatusOr<DecodedEnvelope> decode_envelope(std::string_view bytes, uint32_t expected_codec_id,
                                          std::string_view expected_key, std::string_view signing_key) {
  if (bytes.size() < 4 || bytes.substr(0, 4) != std::string_view(kMagic, 4)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cache value of ", bytes.size(), " bytes is not a brisk envelope; expected it to start with \"BRKV\""));
  }
  if (bytes.size() < 5) return absl::DataLossError("cache value ends inside its envelope header");
  const auto version = static_cast<uint8_t>(bytes[4]);
  if (version != kEnvelopeFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("cache value has envelope format version ", version, "; expected ", kEnvelopeFormatVersion));
  }
  if (bytes.size() < kEnvelopeHeaderSize) {
    return absl::DataLossError(absl::StrCat("cache value of ", bytes.size(), " bytes is shorter than the ",
                                            kEnvelopeHeaderSize, "-byte envelope header"));
  }
  const auto flags = static_cast<uint8_t>(bytes[5]);
  if ((flags & ~kFlagSigned) != 0 || bytes[6] != 0 || bytes[7] != 0 || get_le(bytes.data() + 20, 4) != 0) {
    return absl::FailedPreconditionError("cache value has unknown envelope flags; expected none but \"signed\"");
  }
  DecodedEnvelope out;
  out.signed_value = (flags & kFlagSigned) != 0;
  out.codec_id = static_cast<uint32_t>(get_le(bytes.data() + 8, 4));
  if (out.codec_id != expected_codec_id) {
    return absl::FailedPreconditionError(
        absl::StrCat("cache value was written by codec type id ", out.codec_id, "; expected ", expected_codec_id));
  }
  const uint64_t key_len = get_le(bytes.data() + 12, 4);
  const uint64_t tags_len = get_le(bytes.data() + 16, 4);
  const uint64_t payload_len = get_le(bytes.data() + 24, 8);
  const uint64_t mac_len = out.signed_value ? kEnvelopeMacSize : 0;
  const uint64_t body = bytes.size() - kEnvelopeHeaderSize;
  // Each term is below 2^32 except payload_len, which is compared last against what is left.
  if (mac_len + key_len + tags_len > body || payload_len != body - mac_len - key_len - tags_len) {
    return absl::DataLossError(absl::StrCat("cache value's lengths (key ", key_len, " + tags ", tags_len, " + payload ",
                                            payload_len, " + MAC ", mac_len, " bytes) do not match its ", body,
                                            "-byte body"));
  }
  const size_t signed_end = bytes.size() - mac_len;
  if (checksum(bytes, signed_end) != get_le(bytes.data() + kChecksumOffset, 8)) {
    return absl::DataLossError("cache value's checksum does not match its bytes; expected an intact value");
  }
  if (!signing_key.empty()) {
    if (!out.signed_value) {
      return absl::UnauthenticatedError(
          "cache value is unsigned; expected an HMAC-SHA256 by the shared signing key (RedisOptions.signing_key)");
    }
    unsigned char mac[kEnvelopeMacSize];
    hmac_sha256(signing_key, bytes.substr(0, signed_end), mac);
    if (CRYPTO_memcmp(mac, bytes.data() + signed_end, kEnvelopeMacSize) != 0) {
      return absl::UnauthenticatedError(
          "cache value's HMAC does not match; expected one by the shared signing key (RedisOptions.signing_key)");
    }
  }
  const std::string_view key = bytes.substr(kEnvelopeHeaderSize, key_len);
  if (key != expected_key) {
    return absl::PermissionDeniedError(absl::StrCat("cache value was written for key \"",
                                                    std::string(key.substr(0, 200)), "\"; expected \"",
                                                    std::string(expected_key.substr(0, 200)), "\""));
  }
  std::string_view tags = bytes.substr(kEnvelopeHeaderSize + key_len, tags_len);
  while (!tags.empty()) {
    if (tags.size() < 4) return absl::DataLossError("cache value's tags block ends inside a tag length");
    const uint64_t n = get_le(tags.data(), 4);
    if (n > tags.size() - 4) return absl::DataLossError("cache value's tags block ends inside a tag");
    out.tags.emplace_back(tags.substr(4, n));
    tags.remove_prefix(4 + n);
  }
  out.payload = bytes.substr(kEnvelopeHeaderSize + key_len + tags_len, payload_len);
  return out;
}

}  // namespace brisk::cache
