/* The C API's semantic answer cache from C99 (brisk_answer_cache_insert / _lookup): answers served by question per
 * tenant, the buffer protocol, the errors (no cache, NULLs, bad options, a file that is not a verifier), a caller
 * built against 0.8 whose struct's tail padding holds garbage, and a verifier file fitted by `brisk fit-verifier`
 * (the fixture before this test) refusing a changed amount.
 *
 *   brisk_capi_answers_test VERIFIER_FILE */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "brisk.h"
#include "check.h"

static const char* kQuestion = "Can I send 500 pounds abroad without a fee?";
static const char* kAnswer = "Yes: transfers abroad of up to 500 pounds a month are free.";

static brisk_status create(int answer_cache, const char* verifier, int32_t entries, brisk_runtime** rt) {
  brisk_runtime_options opts;
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = brisk_default_model_dir();
  opts.num_threads = 2;
  opts.answer_cache = answer_cache;
  opts.semantic_verifier = verifier;
  opts.answer_cache_entries = entries;
  return brisk_runtime_create(&opts, rt);
}

static void without_verifier(void) {
  brisk_runtime* rt = NULL;
  brisk_answer_cache_result r;
  char buf[256];
  char tiny[8];
  CHECK(create(1, NULL, 0, &rt) == BRISK_OK);
  CHECK(brisk_answer_cache_insert(rt, "bank", kQuestion, kAnswer, 0) == BRISK_OK);

  CHECK(brisk_answer_cache_lookup(rt, "bank", "can I send 500 pounds abroad without a fee", &r, buf, sizeof buf) ==
        BRISK_OK);
  CHECK(r.hit == 1 && r.reason == BRISK_LOOKUP_HIT && r.similarity > 0.95f && r.verified == 0);
  CHECK(strcmp(buf, kAnswer) == 0 && r.answer_size == strlen(kAnswer) + 1);
  /* Too small a buffer: nothing written, the size needed, BRISK_OUT_OF_RANGE; then a NULL buffer asks the size. */
  memset(tiny, 'x', sizeof tiny);
  CHECK(brisk_answer_cache_lookup(rt, "bank", kQuestion, &r, tiny, sizeof tiny) == BRISK_OUT_OF_RANGE);
  CHECK(r.hit == 0 && r.answer_size == strlen(kAnswer) + 1 && tiny[0] == 'x');
  CHECK(strstr(brisk_last_error(), "answer_len is 8 bytes") != NULL);
  CHECK(brisk_answer_cache_lookup(rt, "bank", kQuestion, &r, NULL, 0) == BRISK_OUT_OF_RANGE);
  /* Tenants: NULL and "" are "default", which has no answers. */
  CHECK(brisk_answer_cache_lookup(rt, NULL, kQuestion, &r, buf, sizeof buf) == BRISK_OK);
  CHECK(r.hit == 0 && r.reason == BRISK_LOOKUP_NO_CANDIDATE);
  CHECK(brisk_answer_cache_insert(rt, "", "What are your opening hours?", "9 to 5", 60000) == BRISK_OK);
  CHECK(brisk_answer_cache_lookup(rt, NULL, "What are your opening hours?", &r, buf, sizeof buf) == BRISK_OK);
  CHECK(r.hit == 1 && strcmp(buf, "9 to 5") == 0);
  CHECK(brisk_answer_cache_lookup(rt, "bank", "What time does the museum open on Sundays?", &r, buf, sizeof buf) ==
        BRISK_OK);
  CHECK(r.hit == 0 && r.reason == BRISK_LOOKUP_BELOW_THRESHOLD);
  /* Bad input. */
  CHECK(brisk_answer_cache_insert(rt, "bank", NULL, kAnswer, 0) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "question is NULL") != NULL);
  CHECK(brisk_answer_cache_insert(rt, "bank", kQuestion, kAnswer, -5) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "ttl_ms is -5") != NULL);
  CHECK(brisk_answer_cache_insert(rt, "bank", "caf\xC3", kAnswer, 0) == BRISK_INVALID_ARGUMENT);
  CHECK(brisk_answer_cache_lookup(rt, "bank", kQuestion, NULL, buf, sizeof buf) == BRISK_INVALID_ARGUMENT);
  brisk_runtime_destroy(rt);

  /* A runtime without an answer cache. */
  CHECK(create(0, NULL, 0, &rt) == BRISK_OK);
  CHECK(brisk_answer_cache_lookup(rt, "bank", kQuestion, &r, buf, sizeof buf) == BRISK_FAILED_PRECONDITION);
  CHECK(strstr(brisk_last_error(), "no answer cache") != NULL);
  CHECK(brisk_answer_cache_insert(rt, "bank", kQuestion, kAnswer, 0) == BRISK_FAILED_PRECONDITION);
  brisk_runtime_destroy(rt);
  rt = NULL;
  CHECK(create(2, NULL, 0, &rt) == BRISK_INVALID_ARGUMENT && rt == NULL);
  CHECK(strstr(brisk_last_error(), "options->answer_cache is 2; expected 0 or 1") != NULL);
  CHECK(create(1, NULL, -1, &rt) == BRISK_INVALID_ARGUMENT && rt == NULL);
  CHECK(strstr(brisk_last_error(), "answer_cache_entries is -1") != NULL);
}

/* A caller built against 0.8's header: its struct ended at redis_allow_unsigned, and answer_cache lies in that
 * struct's tail padding, which such a caller never writes (here: garbage). It must get no answer cache, not a
 * create that fails (or an answer cache it never asked for). */
static void caller_from_0_8(void) {
  const size_t old_size = offsetof(brisk_runtime_options, semantic_verifier);
  CHECK(offsetof(brisk_runtime_options, answer_cache) + sizeof(int32_t) <= old_size);
  unsigned char garbage[] = {0x01, 0xab};
  for (size_t i = 0; i < sizeof garbage; ++i) {
    brisk_runtime_options opts;
    memset(&opts, garbage[i], sizeof opts);
    CHECK(brisk_runtime_options_init(&opts, old_size) == BRISK_OK);
    memset((unsigned char*)&opts + offsetof(brisk_runtime_options, answer_cache), garbage[i], sizeof(int32_t));
    opts.model_dir = brisk_default_model_dir();
    opts.num_threads = 1;
    brisk_runtime* rt = NULL;
    CHECK(brisk_runtime_create(&opts, &rt) == BRISK_OK);
    if (rt != NULL) {
      brisk_answer_cache_result r;
      char buf[64];
      CHECK(brisk_answer_cache_lookup(rt, "bank", kQuestion, &r, buf, sizeof buf) == BRISK_FAILED_PRECONDITION);
      brisk_runtime_destroy(rt);
    }
  }
}

static void with_verifier(const char* verifier) {
  brisk_runtime* rt = NULL;
  brisk_answer_cache_result r;
  char buf[256];
  char weights[4096];
  CHECK(create(0, verifier, 0, &rt) == BRISK_OK);
  if (rt == NULL) {
    fprintf(stderr, "%s\n", brisk_last_error());
    return;
  }
  CHECK(brisk_answer_cache_insert(rt, "bank", kQuestion, kAnswer, 0) == BRISK_OK);
  CHECK(brisk_answer_cache_lookup(rt, "bank", kQuestion, &r, buf, sizeof buf) == BRISK_OK);
  CHECK(r.hit == 1 && r.verified == 1 && r.verifier_score > 0.5f && strcmp(buf, kAnswer) == 0);
  CHECK(brisk_answer_cache_lookup(rt, "bank", "Can I send 5,000 pounds abroad without a fee?", &r, buf, sizeof buf) ==
        BRISK_OK);
  CHECK(r.hit == 0 && r.reason == BRISK_LOOKUP_REJECTED_BY_VERIFIER && r.verified == 1 && r.similarity > 0.9f);
  {
    static char metrics[1 << 17];
    CHECK(brisk_metrics_prometheus(rt, metrics, sizeof metrics, NULL) == BRISK_OK);
    CHECK(strstr(metrics, "brisk_answer_cache_lookups_total{result=\"rejected_by_verifier\"} 1") != NULL);
    CHECK(strstr(metrics, "brisk_answer_cache_verifier_calls_total{result=\"accepted\"} 1") != NULL);
  }
  brisk_runtime_destroy(rt);

  /* A file that is not a verifier (the model's own weights) fails create, naming it. */
  rt = NULL;
  snprintf(weights, sizeof weights, "%s/model.safetensors", brisk_default_model_dir());
  CHECK(create(0, weights, 0, &rt) != BRISK_OK && rt == NULL);
  CHECK(strstr(brisk_last_error(), "model.safetensors") != NULL);
  CHECK(strstr(brisk_last_error(), "brisk-pair-verifier") != NULL);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s VERIFIER_FILE\n", argv[0]);
    return 2;
  }
  without_verifier();
  caller_from_0_8();
  with_verifier(argv[1]);
  printf("%d checks passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
