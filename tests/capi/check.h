/* A CHECK macro for the C test programs: counts passes and failures and reports each failure's line. */
#ifndef BRISK_TESTS_CAPI_CHECK_H_
#define BRISK_TESTS_CAPI_CHECK_H_

#include <stdio.h>

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      ++g_passed;                                                              \
    } else {                                                                   \
      ++g_failed;                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#endif /* BRISK_TESTS_CAPI_CHECK_H_ */
