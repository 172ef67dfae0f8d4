/* The C API's policy_path from C99: a serving policy file (as `brisk tune` writes) changes the runtime's batching,
 * seen in brisk_stats_json and in the forward passes of one brisk_embed call; a bad file fails brisk_runtime_create
 * with a message naming the file and the value; a struct from before policy_path existed (a shorter struct_size)
 * gets none.
 *
 *   brisk_capi_policy_test DIR    (DIR: a writable folder for the policy files) */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brisk.h"
#include "check.h"

/* The number after key in a JSON text; -1 when key is absent. */
static long json_number(const char* json, const char* key) {
  const char* at = strstr(json, key);
  return at == NULL ? -1 : strtol(at + strlen(key), NULL, 10);
}

static void write_file(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  fputs(text, f);
  fclose(f);
}

static brisk_status create(const char* policy, size_t struct_size, brisk_runtime** rt) {
  brisk_runtime_options opts;
  memset(&opts, 0, sizeof opts);
  brisk_runtime_options_init(&opts, struct_size);
  opts.model_dir = brisk_default_model_dir();
  opts.num_threads = 2;
  opts.cache_result_bytes = 0;
  if (struct_size >= offsetof(brisk_runtime_options, policy_path) + sizeof(const char*)) opts.policy_path = policy;
  return brisk_runtime_create(&opts, rt);
}

/* forward passes and batch_limit after embedding ten texts in one call. */
static void embed_ten(brisk_runtime* rt, long* passes, long* limit) {
  static char json[1 << 16];
  const char* texts[10] = {"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"};
  size_t dim = 0;
  float* out;
  CHECK(brisk_embedding_dim(rt, &dim) == BRISK_OK && dim == 384);
  out = (float*)malloc(10 * dim * sizeof(float));
  CHECK(brisk_embed(rt, texts, 10, out, 10 * dim) == BRISK_OK);
  free(out);
  CHECK(brisk_stats_json(rt, json, sizeof json, NULL) == BRISK_OK);
  *passes = json_number(json, "\"forward_passes\":");
  *limit = json_number(json, "\"batch_limit\":");
}

int main(int argc, char** argv) {
  char good[4096], bad[4096];
  brisk_runtime* rt = NULL;
  long passes = 0, limit = 0;
  if (argc != 2) {
    fprintf(stderr, "usage: brisk_capi_policy_test DIR\n");
    return 2;
  }
  snprintf(good, sizeof good, "%s/capi_policy_good.json", argv[1]);
  snprintf(bad, sizeof bad, "%s/capi_policy_bad.json", argv[1]);
  write_file(good,
             "{\"format\": \"brisk-serving-policy\", \"version\": 1, \"max_batch_size\": 3, "
             "\"preferred_batch_multiple\": 1, \"num_threads\": 1}\n");
  write_file(bad, "{\"max_batch_size\": 3, \"max_batch\": 4}\n");

  /* The policy's max_batch_size 3: ten texts take ceil(10 / 3) = 4 passes. */
  CHECK(create(good, sizeof(brisk_runtime_options), &rt) == BRISK_OK);
  if (rt != NULL) {
    embed_ten(rt, &passes, &limit);
    CHECK(limit == 3);
    CHECK(passes == 4);
    brisk_runtime_destroy(rt);
    rt = NULL;
  }
  /* Without a policy (NULL, or a struct from before the field): the default batch of 32, one pass. */
  CHECK(create(NULL, sizeof(brisk_runtime_options), &rt) == BRISK_OK);
  if (rt != NULL) {
    embed_ten(rt, &passes, &limit);
    CHECK(limit == 32);
    CHECK(passes == 1);
    brisk_runtime_destroy(rt);
    rt = NULL;
  }
  CHECK(create(good, offsetof(brisk_runtime_options, policy_path), &rt) == BRISK_OK);
  if (rt != NULL) {
    embed_ten(rt, &passes, &limit);
    CHECK(limit == 32);
    brisk_runtime_destroy(rt);
    rt = NULL;
  }
  /* A bad file: BRISK_INVALID_ARGUMENT naming the file and the unknown key; a missing one: BRISK_NOT_FOUND. */
  CHECK(create(bad, sizeof(brisk_runtime_options), &rt) == BRISK_INVALID_ARGUMENT);
  CHECK(rt == NULL);
  CHECK(strstr(brisk_last_error(), "capi_policy_bad.json") != NULL);
  CHECK(strstr(brisk_last_error(), "unknown key \"max_batch\"") != NULL);
  CHECK(create("/nonexistent/policy.json", sizeof(brisk_runtime_options), &rt) == BRISK_NOT_FOUND);
  CHECK(strstr(brisk_last_error(), "/nonexistent/policy.json") != NULL);
  remove(good);
  remove(bad);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
