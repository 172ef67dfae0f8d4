/* Uses the installed C API through pkg-config. */
#include <stdio.h>

#include "brisk.h"

int main(void) {
  if (brisk_abi_version() != BRISK_ABI_VERSION) return 1;
  brisk_runtime* rt = NULL;
  if (brisk_runtime_create(NULL, &rt) != BRISK_INVALID_ARGUMENT || rt != NULL) return 2;
  printf("consumer_c ok: brisk %s\n", brisk_version_string());
  return 0;
}
