// libFuzzer target: decode_envelope, the format-2 header, key, tags block, payload and MAC of a value read from
// Redis. The target recomputes the XXH64 field (bytes [32,40)) before decoding so that mutations reach the parser
// behind the checksum; the unit tests cover the checksum itself. A value that decodes must re-encode, unsigned and
// signed, to values that decode to the same codec, tags and payload, and that are refused for another key or
// another signing key.
#include <xxhash.h>

#include <cstring>

#include "brisk/cache/value_envelope.h"
#include "fuzz_util.h"

namespace {

using brisk::cache::decode_envelope;
using brisk::cache::encode_envelope;
using brisk::cache::envelope_rejection;
using brisk::cache::EnvelopeRejection;
using brisk::cache::kEnvelopeHeaderSize;
using brisk::cache::kEnvelopeMacSize;

constexpr uint32_t kCodec = 7;                       // the seeds' codec id
constexpr std::string_view kKey = "brisk:fuzz:key";  // the seeds' key (make_corpus.py ENVELOPE_KEY)
constexpr std::string_view kSecret = "fuzz signing key";

void fix_checksum(std::string& b) {
  if (b.size() < kEnvelopeHeaderSize) return;
  const size_t mac = (static_cast<uint8_t>(b[5]) & 1) != 0 ? kEnvelopeMacSize : 0;
  if (b.size() < kEnvelopeHeaderSize + mac) return;
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  XXH64_update(st, b.data(), 32);
  XXH64_update(st, b.data() + kEnvelopeHeaderSize, b.size() - kEnvelopeHeaderSize - mac);
  const uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  std::memcpy(b.data() + 32, &h, 8);
}

void expect_refused(const brisk::StatusOr<brisk::cache::DecodedEnvelope>& d, EnvelopeRejection why, const char* what) {
  if (d.ok()) brisk_fuzz::invariant_failed(what);
  if (envelope_rejection(d.status()) != why) brisk_fuzz::invariant_failed(what, std::string(d.status().message()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  (void)decode_envelope(raw, kCodec, kKey);  // as read: nearly always a checksum error
  std::string bytes = raw;
  fix_checksum(bytes);
  auto signed_read = decode_envelope(bytes, kCodec, kKey, kSecret);  // a forged MAC must not pass
  if (signed_read.ok()) brisk_fuzz::invariant_failed("a value not signed with the secret passed the MAC check");
  auto d = decode_envelope(bytes, kCodec, kKey);
  if (!d.ok()) {
    if (d.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  if (d->codec_id != kCodec) brisk_fuzz::invariant_failed("decoded another codec");
  const char* b = bytes.data();
  if (d->payload.data() < b || d->payload.data() + d->payload.size() > b + bytes.size()) {
    brisk_fuzz::invariant_failed("payload view outside the input");
  }
  for (std::string_view secret : {std::string_view{}, kSecret}) {
    const std::string again = encode_envelope(d->codec_id, kKey, d->tags, d->payload, secret);
    auto e = decode_envelope(again, kCodec, kKey, secret);
    if (!e.ok()) brisk_fuzz::invariant_failed("re-encoded value does not decode", std::string(e.status().message()));
    if (e->tags != d->tags || e->payload != d->payload) brisk_fuzz::invariant_failed("round trip changed the value");
    expect_refused(decode_envelope(again, kCodec, "brisk:fuzz:other", secret), EnvelopeRejection::kWrongKey,
                   "a value was served for another key");
    if (!secret.empty()) {
      expect_refused(decode_envelope(again, kCodec, kKey, "another key"), EnvelopeRejection::kUnauthenticated,
                     "a value signed with another key was accepted");
    }
  }
  return 0;
}
