// The envelope around every value the tiered cache stores in Redis: a fixed 32-byte header (magic, format
// version, codec type id, lengths, an xxHash64 checksum) followed by the entry's tags and the codec's payload.
// A reader rejects anything it cannot trust (another program's bytes, an older or newer format, another codec,
// a truncated or corrupted value) with an error instead of decoding it; the tiered cache counts that as a miss.
//
//   std::string bytes = encode_envelope(FloatVectorCodec::kTypeId, tags, payload);
//   StatusOr<DecodedEnvelope> e = decode_envelope(bytes, FloatVectorCodec::kTypeId);   // e->payload views bytes
//
// Layout (little-endian): [0,4) "BRKV"; [4] format version (1); [5] flags (0); [6,8) zero; [8,12) codec type
// id; [12,16) tags block length; [16,24) payload length; [24,32) XXH64 (seed 0) of bytes [0,24) and everything
// after the header. The tags block is, per tag, a u32 length and the tag's bytes.
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

inline constexpr uint8_t kEnvelopeFormatVersion = 1;
inline constexpr size_t kEnvelopeHeaderSize = 32;

struct DecodedEnvelope {
  uint32_t codec_id = 0;
  std::vector<std::string> tags;
  std::string_view payload;  // a view into the decoded bytes
};

BRISK_API std::string encode_envelope(uint32_t codec_id, std::span<const std::string> tags, std::string_view payload);

// INVALID_ARGUMENT: not an envelope (foreign bytes); FAILED_PRECONDITION: another format version, unknown flags
// or another codec; DATA_LOSS: truncated, inconsistent lengths or a checksum mismatch.
BRISK_API StatusOr<DecodedEnvelope> decode_envelope(std::string_view bytes, uint32_t expected_codec_id);

}  // namespace brisk::cache
