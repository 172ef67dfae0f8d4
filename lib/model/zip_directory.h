// check_zip_record_sizes: refuses a zip archive whose central directory declares a record larger than the whole
// archive, before libtorch's PyTorchStreamReader (miniz) allocates that many bytes for it. Internal to lib/model.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "brisk/core/status.h"

namespace brisk {

// in: the archive, open in binary mode; size: its size in bytes; file: its name for messages.
Status check_zip_record_sizes(std::ifstream& in, uint64_t size, const std::string& file);

}  // namespace brisk
