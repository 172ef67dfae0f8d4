// The Redis value envelope on its own: round trips, and every kind of value it must refuse, each with its reason
// (format, corrupt, unauthenticated, wrong key).
#include "brisk/cache/value_envelope.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

using brisk::cache::decode_envelope;
using brisk::cache::encode_envelope;
using brisk::cache::envelope_rejection;
using brisk::cache::EnvelopeRejection;
using brisk::cache::kEnvelopeHeaderSize;
using brisk::cache::kEnvelopeMacSize;

namespace {

constexpr std::string_view kKey = "brisk:minilm:t:hello";
constexpr std::string_view kSecret = "shared-secret";

EnvelopeRejection reason(std::string_view bytes, std::string_view key = kKey, std::string_view secret = {}) {
  auto d = decode_envelope(bytes, 7, key, secret);
  REQUIRE_FALSE(d.ok());
  return envelope_rejection(d.status());
}

// Recomputes the checksum (XXH64 of header bytes [0,32) and the body before the MAC), as anyone can.
std::string reseal(std::string bytes) {
  const size_t mac = (bytes[5] & 1) != 0 ? kEnvelopeMacSize : 0;
  std::string covered =
      bytes.substr(0, 32) + bytes.substr(kEnvelopeHeaderSize, bytes.size() - kEnvelopeHeaderSize - mac);
  const uint64_t sum = XXH64(covered.data(), covered.size(), 0);
  for (int i = 0; i < 8; ++i) bytes[32 + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
  return bytes;
}

}  // namespace

TEST_CASE("value envelope round-trips unsigned and signed values", "[cache][envelope]") {
  const std::vector<std::string> tags = {"a", std::string("b\0c", 3)};
  for (std::string_view secret : {std::string_view(), kSecret}) {
    const std::string bytes = encode_envelope(7, kKey, tags, "payload", secret);
    CHECK(bytes.size() == kEnvelopeHeaderSize + kKey.size() + 12 + 7 + (secret.empty() ? 0 : kEnvelopeMacSize));
    auto ok = decode_envelope(bytes, 7, kKey, secret);
    REQUIRE(ok.ok());
    CHECK(ok->payload == "payload");
    CHECK(ok->tags == tags);
    CHECK(ok->signed_value == !secret.empty());
    CHECK(decode_envelope(encode_envelope(7, kKey, {}, "", secret), 7, kKey, secret).ok());
  }
  // A reader without the key checks a signed value by its checksum alone.
  CHECK(decode_envelope(encode_envelope(7, kKey, {}, "p", kSecret), 7, kKey).ok());
}

TEST_CASE("value envelope refuses foreign, old-format, other-codec and corrupt values", "[cache][envelope]") {
  const std::string bytes = encode_envelope(7, kKey, {{"tag"}}, "payload");
  CHECK(reason("hello world") == EnvelopeRejection::kFormat);
  CHECK(reason("") == EnvelopeRejection::kFormat);
  CHECK(decode_envelope(bytes, 8, kKey).status().code() == absl::StatusCode::kFailedPrecondition);
  std::string v1 = bytes;
  v1[4] = 1;  // format 1 had no key binding
  CHECK(reason(v1) == EnvelopeRejection::kFormat);
  CHECK(decode_envelope(v1, 7, kKey).status().message().find("version 1") != std::string_view::npos);
  for (size_t cut : {size_t{5}, kEnvelopeHeaderSize - 1, bytes.size() - 1}) {
    CHECK(reason(bytes.substr(0, cut)) == EnvelopeRejection::kCorrupt);
  }
  for (size_t i = 8; i < bytes.size(); ++i) {  // every single-byte change past the version and flags is caught
    std::string bad = bytes;
    bad[i] ^= 0x20;
    CHECK_FALSE(decode_envelope(bad, 7, kKey).ok());
  }
}

TEST_CASE("value envelope refuses a value written for another key", "[cache][envelope]") {
  for (std::string_view secret : {std::string_view(), kSecret}) {
    const std::string other = encode_envelope(7, "brisk:minilm:t:other", {}, "payload", secret);
    auto d = decode_envelope(other, 7, kKey, secret);
    REQUIRE_FALSE(d.ok());
    CHECK(envelope_rejection(d.status()) == EnvelopeRejection::kWrongKey);
    CHECK(d.status().message().find("brisk:minilm:t:other") != std::string_view::npos);
  }
  // A prefix of the key is another key.
  CHECK(reason(encode_envelope(7, kKey.substr(0, kKey.size() - 1), {}, "p")) == EnvelopeRejection::kWrongKey);
}

TEST_CASE("value envelope with a signing key refuses unsigned, tampered and foreign-signed values",
          "[cache][envelope]") {
  CHECK(reason(encode_envelope(7, kKey, {}, "payload"), kKey, kSecret) == EnvelopeRejection::kUnauthenticated);
  CHECK(reason(encode_envelope(7, kKey, {}, "payload", "another-secret"), kKey, kSecret) ==
        EnvelopeRejection::kUnauthenticated);
  const std::string signed_bytes = encode_envelope(7, kKey, {{"tag"}}, "payload", kSecret);
  for (size_t i = 8; i < signed_bytes.size(); ++i) {  // any byte, the MAC's included
    std::string bad = signed_bytes;
    bad[i] ^= 0x01;
    CHECK_FALSE(decode_envelope(bad, 7, kKey, kSecret).ok());
  }
  // The checksum is no secret: a forger who recomputes it is still refused by the MAC, whether they change the
  // payload or rewrite the key field of a value signed for another key so that it names this one.
  std::string tampered = signed_bytes;
  tampered[signed_bytes.size() - kEnvelopeMacSize - 1] ^= 0x01;
  CHECK(reason(reseal(tampered), kKey, kSecret) == EnvelopeRejection::kUnauthenticated);
  std::string moved = encode_envelope(7, "brisk:minilm:t:hellp", {}, "payload", kSecret);
  moved[kEnvelopeHeaderSize + kKey.size() - 1] = 'o';
  CHECK(reason(reseal(moved), kKey, kSecret) == EnvelopeRejection::kUnauthenticated);
  // Without the MAC that forgery would pass: the MAC is what makes the key binding hold against writers.
  CHECK(decode_envelope(reseal(moved), 7, kKey).ok());
  // An unsigned value is refused before its payload is looked at, whatever the flags say.
  std::string flagged = encode_envelope(7, kKey, {}, "payload");
  flagged[5] = 2;
  CHECK(reason(flagged, kKey, kSecret) == EnvelopeRejection::kFormat);
}
