// libFuzzer target: decode_envelope, the header, tags block and payload of a value read from Redis (written
// against the API of today: decode_envelope(bytes, expected_codec_id)). The target recomputes the XXH64 field
// (bytes [24,32)) before decoding so that mutations reach the parser behind the checksum; the unit tests cover the
// checksum itself. A value that decodes must re-encode to a value that decodes to the same codec, tags and payload.
#include <xxhash.h>

#include <cstring>

#include "brisk/cache/value_envelope.h"
#include "fuzz_util.h"

namespace {

constexpr uint32_t kCodec = 7;  // the seeds' codec id

void fix_checksum(std::string& b) {
  if (b.size() < brisk::cache::kEnvelopeHeaderSize) return;
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  XXH64_update(st, b.data(), 24);
  XXH64_update(st, b.data() + 32, b.size() - 32);
  const uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  std::memcpy(b.data() + 24, &h, 8);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  (void)brisk::cache::decode_envelope(raw, kCodec);  // as read: nearly always a checksum error
  std::string bytes = raw;
  fix_checksum(bytes);
  auto d = brisk::cache::decode_envelope(bytes, kCodec);
  if (!d.ok()) {
    if (d.status().message().empty()) brisk_fuzz::invariant_failed("an error without a message");
    return 0;
  }
  if (d->codec_id != kCodec) brisk_fuzz::invariant_failed("decoded another codec");
  const char* b = bytes.data();
  if (d->payload.data() < b || d->payload.data() + d->payload.size() > b + bytes.size()) {
    brisk_fuzz::invariant_failed("payload view outside the input");
  }
  const std::string again = brisk::cache::encode_envelope(d->codec_id, d->tags, d->payload);
  auto e = brisk::cache::decode_envelope(again, kCodec);
  if (!e.ok()) brisk_fuzz::invariant_failed("re-encoded value does not decode", std::string(e.status().message()));
  if (e->tags != d->tags || e->payload != d->payload) brisk_fuzz::invariant_failed("round trip changed the value");
  return 0;
}
