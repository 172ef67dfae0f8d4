// Symbol visibility for libbrisk.so. The library builds with hidden visibility; BRISK_API marks what is
// part of the public C++ API. Usage: `class BRISK_API Tensor { ... };`
#pragma once

#if defined(BRISK_BUILDING_LIBRARY)
#define BRISK_API __attribute__((visibility("default")))
#else
#define BRISK_API
#endif
