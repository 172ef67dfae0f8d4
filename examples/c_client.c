/* A C client of libbrisk: embeds its arguments and prints the cosine similarity of each to the first.
 *   c_client [--model DIR] TEXT TEXT...   (default model: $BRISK_MODEL_DIR or ~/.cache/brisk/models/all-MiniLM-L6-v2)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brisk.h"

int main(int argc, char** argv) {
  const char* dir = brisk_default_model_dir();
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "--model") == 0) {
    dir = argv[2];
    first = 3;
  }
  if (argc - first < 1) {
    fprintf(stderr, "usage: %s [--model DIR] TEXT [TEXT...]\n", argv[0]);
    return 2;
  }
  brisk_runtime_options opts;
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = dir;
  brisk_runtime* rt = NULL;
  if (brisk_runtime_create(&opts, &rt) != BRISK_OK) {
    fprintf(stderr, "c_client: %s\n", brisk_last_error());
    return 1;
  }
  size_t dim = 0;
  brisk_embedding_dim(rt, &dim);
  const size_t n = (size_t)(argc - first);
  float* out = malloc(n * dim * sizeof(float));
  if (out == NULL || brisk_embed(rt, (const char* const*)(argv + first), n, out, n * dim) != BRISK_OK) {
    fprintf(stderr, "c_client: %s\n", out ? brisk_last_error() : "out of memory");
    free(out);
    brisk_runtime_destroy(rt);
    return 1;
  }
  for (size_t i = 0; i < n; ++i) {
    double cos = 0;
    for (size_t j = 0; j < dim; ++j) cos += (double)out[j] * out[i * dim + j];
    printf("%.4f  %s\n", cos, argv[first + (int)i]);
  }
  free(out);
  brisk_runtime_destroy(rt);
  return 0;
}
