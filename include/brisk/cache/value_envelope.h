// The envelope around every value the tiered cache stores in Redis: a fixed 40-byte header (magic, format
// version, flags, codec type id, lengths, an xxHash64 checksum), the full Redis key the value was written for,
// the entry's tags, the codec's payload and, when a signing key is set, an HMAC-SHA256. A reader rejects
// anything it cannot trust with an error instead of decoding it, and says why (envelope_rejection()): another
// program's bytes or format, a corrupted value, a value written for another key (values copied between keys
// must not be served), and, with a signing key, a value that is unsigned or signed with another key. The tiered
// cache counts each reason and treats the value as a miss.
//
//   std::string bytes = encode_envelope(FloatVectorCodec::kTypeId, "brisk:m:t:k", tags, payload, secret);
//   StatusOr<DecodedEnvelope> e =
//       decode_envelope(bytes, FloatVectorCodec::kTypeId, "brisk:m:t:k", secret);  // e->payload views bytes
//   if (!e.ok()) count(envelope_rejection(e.status()));
//
// Layout (little-endian): [0,4) "BRKV"; [4] format version (2); [5] flags (bit 0: signed); [6,8) zero; [8,12)
// codec type id; [12,16) key length; [16,20) tags block length; [20,24) zero; [24,32) payload length; [32,40)
// XXH64 (seed 0) of bytes [0,32) and the body without the MAC. Body: the key, the tags block (per tag a u32
// length and the tag's bytes), the payload, then for signed values 32 bytes of HMAC-SHA256(signing key, every
// byte before the MAC), which covers the key, the header and the payload together.
//
// Signing: with an empty signing key values are written unsigned and a reader checks only the checksum (which
// detects accidents, not forgery: anyone who can write to Redis can compute it). With a signing key every value
// is signed, and a reader refuses unsigned values and wrong MACs (compared in constant time). Format version 1
// values (no key binding) are refused as kFormat.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisk/core/export.h"
#include "brisk/core/status.h"

namespace brisk::cache {

inline constexpr uint8_t kEnvelopeFormatVersion = 2;
inline constexpr size_t kEnvelopeHeaderSize = 40;
inline constexpr size_t kEnvelopeMacSize = 32;  // HMAC-SHA256

struct DecodedEnvelope {
  uint32_t codec_id = 0;
  bool signed_value = false;
  std::vector<std::string> tags;
  std::string_view payload;  // a view into the decoded bytes
};

// Why decode_envelope() refused a value; each maps to one status code.
enum class EnvelopeRejection : uint8_t {
  kFormat,           // INVALID_ARGUMENT (not an envelope) or FAILED_PRECONDITION (version, flags, codec)
  kCorrupt,          // DATA_LOSS: truncated, inconsistent lengths, checksum mismatch
  kUnauthenticated,  // UNAUTHENTICATED: unsigned while a signing key is set, or the MAC does not match
  kWrongKey,         // PERMISSION_DENIED: written for another Redis key
};

// The reason behind a status from decode_envelope() (kCorrupt for codes it does not return, such as a codec's).
BRISK_API EnvelopeRejection envelope_rejection(const Status& status);

// key: the full Redis key the value is stored at. signing_key empty: unsigned.
BRISK_API std::string encode_envelope(uint32_t codec_id, std::string_view key, std::span<const std::string> tags,
                                      std::string_view payload, std::string_view signing_key = {});

// Checks, in order: the magic, the header, version, flags and codec (kFormat); lengths and the checksum
// (kCorrupt); with a signing key the MAC (kUnauthenticated); then the key (kWrongKey). A signed value read
// without a signing key is checked by its checksum only.
BRISK_API StatusOr<DecodedEnvelope> decode_envelope(std::string_view bytes, uint32_t expected_codec_id,
                                                    std::string_view expected_key, std::string_view signing_key = {});

}  // namespace brisk::cache
