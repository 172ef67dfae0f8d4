/* The batched C API from C99 with pthreads: brisk_submit_embed from several threads, every callback exactly
 * once, cancel, deadlines, overload, bad arguments, the stats/metrics buffers, and destroy with requests queued. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brisk.h"
#include "check.h"

#define MAX_IDS 256

/* Outcomes of callbacks, by slot; a slot is one submitted request. */
typedef struct outcomes {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int calls[MAX_IDS];
  brisk_status status[MAX_IDS];
  size_t dim[MAX_IDS];
  int done;
} outcomes;

static outcomes g_out;

static void on_done(void* user_data, uint64_t request_id, brisk_status status, const float* embedding, size_t dim,
                    const char* error) {
  size_t slot = (size_t)(uintptr_t)user_data;
  (void)request_id;
  pthread_mutex_lock(&g_out.mu);
  g_out.calls[slot] += 1;
  g_out.status[slot] = status;
  g_out.dim[slot] = (status == BRISK_OK && embedding != NULL) ? dim : 0;
  if (status != BRISK_OK && (error == NULL || error[0] == '\0')) g_out.dim[slot] = (size_t)-1; /* no message */
  g_out.done += 1;
  pthread_cond_broadcast(&g_out.cv);
  pthread_mutex_unlock(&g_out.mu);
}

static void reset_outcomes(void) {
  pthread_mutex_lock(&g_out.mu);
  memset(g_out.calls, 0, sizeof g_out.calls);
  memset(g_out.dim, 0, sizeof g_out.dim);
  g_out.done = 0;
  pthread_mutex_unlock(&g_out.mu);
}

static void wait_done(int n) {
  pthread_mutex_lock(&g_out.mu);
  while (g_out.done < n) pthread_cond_wait(&g_out.cv, &g_out.mu);
  pthread_mutex_unlock(&g_out.mu);
}

/* The number after key in a JSON text; -1 when key is absent. */
static long json_number(const char* json, const char* key) {
  const char* at = strstr(json, key);
  return at == NULL ? -1 : strtol(at + strlen(key), NULL, 10);
}

static brisk_runtime* make_runtime(int max_queue, int delay_us) {
  brisk_runtime_options opts;
  brisk_runtime* rt = NULL;
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = brisk_default_model_dir();
  opts.num_threads = 2;
  opts.batch_max_queue = max_queue;
  opts.batch_max_delay_us = delay_us;
  opts.max_batch_size = 64;
  opts.cache_result_bytes = 0; /* repeated texts must reach the batcher */
  if (brisk_runtime_create(&opts, &rt) != BRISK_OK) {
    fprintf(stderr, "cannot load the default model: %s (run scripts/setup)\n", brisk_last_error());
    exit(1);
  }
  return rt;
}

typedef struct producer_arg {
  brisk_runtime* rt;
  int first_slot, count;
  int failures;
} producer_arg;

static void* produce(void* p) {
  producer_arg* a = (producer_arg*)p;
  static const char* texts[4] = {"reset my PIN", "lost card", "opening hours", "fees for transfers abroad"};
  int i;
  for (i = 0; i < a->count; ++i) {
    uint64_t id = 0;
    int slot = a->first_slot + i;
    if (brisk_submit_embed(a->rt, texts[slot % 4], slot % 3, 0, on_done, (void*)(uintptr_t)slot, &id) != BRISK_OK ||
        id == 0) {
      a->failures++;
    }
  }
  return NULL;
}

static void test_concurrent_submit(void) {
  brisk_runtime* rt = make_runtime(4096, 0);
  pthread_t threads[4];
  producer_arg args[4];
  int t, i, once = 1, ok = 1;
  reset_outcomes();
  for (t = 0; t < 4; ++t) {
    args[t].rt = rt;
    args[t].first_slot = t * 40;
    args[t].count = 40;
    args[t].failures = 0;
    pthread_create(&threads[t], NULL, produce, &args[t]);
  }
  for (t = 0; t < 4; ++t) {
    pthread_join(threads[t], NULL);
    CHECK(args[t].failures == 0);
  }
  wait_done(160);
  for (i = 0; i < 160; ++i) {
    once &= g_out.calls[i] == 1;
    ok &= g_out.status[i] == BRISK_OK && g_out.dim[i] == 384;
  }
  CHECK(once);
  CHECK(ok);
  {
    char small[8];
    size_t need = 0;
    char* json;
    CHECK(brisk_stats_json(rt, NULL, 0, &need) == BRISK_OUT_OF_RANGE && need > 100);
    CHECK(brisk_stats_json(rt, small, sizeof small, NULL) == BRISK_OUT_OF_RANGE);
    CHECK(strstr(brisk_last_error(), "len is 8 bytes") != NULL);
    json = (char*)malloc(need);
    CHECK(brisk_stats_json(rt, json, need, NULL) == BRISK_OK);
    /* Single flight: a text already in flight answers its repeats, which never reach the batcher. */
    CHECK(json_number(json, "\"completed\":") + json_number(json, "\"single_flight_joined\":") == 160);
    CHECK(json_number(json, "\"completed\":") >= 4);
    free(json);
    CHECK(brisk_metrics_prometheus(rt, NULL, 0, &need) == BRISK_OUT_OF_RANGE);
    json = (char*)malloc(need);
    CHECK(brisk_metrics_prometheus(rt, json, need, &need) == BRISK_OK);
    CHECK(strstr(json, "outcome=\"completed\"}") != NULL);
    free(json);
  }
  brisk_runtime_destroy(rt);
}

static void test_outcomes_and_bad_arguments(void) {
  /* Requests stay queued: a 60 s queue delay and batches of 64. */
  brisk_runtime* rt = make_runtime(3, 60 * 1000 * 1000);
  uint64_t id = 7;
  int i;
  reset_outcomes();
  CHECK(brisk_submit_embed(NULL, "x", 0, 0, on_done, NULL, &id) == BRISK_INVALID_ARGUMENT && id == 0);
  CHECK(strstr(brisk_last_error(), "runtime") != NULL);
  CHECK(brisk_submit_embed(rt, NULL, 0, 0, on_done, NULL, &id) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "text") != NULL);
  CHECK(brisk_submit_embed(rt, "x", 0, 0, NULL, NULL, &id) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "callback is NULL") != NULL);
  CHECK(brisk_submit_embed(rt, "x", 0, -1, on_done, NULL, &id) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "deadline_ms is -1") != NULL);
  CHECK(brisk_submit_embed(rt, "x", 3, 0, on_done, NULL, &id) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "priority 3 is out of range") != NULL);
  CHECK(brisk_submit_embed(rt, "bad \xC3\x28 byte", 0, 0, on_done, NULL, &id) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "UTF-8") != NULL);
  CHECK(brisk_cancel(NULL, 1) == BRISK_INVALID_ARGUMENT);
  CHECK(brisk_cancel(rt, 424242) == BRISK_NOT_FOUND);
  CHECK(brisk_stats_json(NULL, NULL, 0, NULL) == BRISK_INVALID_ARGUMENT);
  CHECK(brisk_metrics_prometheus(NULL, NULL, 0, NULL) == BRISK_INVALID_ARGUMENT);

  /* slot 0: cancelled while queued; slot 1: expires after 20 ms; slots 2-4 fill the queue of 3; then overload. */
  CHECK(brisk_submit_embed(rt, "cancel me", 0, 0, on_done, (void*)(uintptr_t)0, &id) == BRISK_OK);
  CHECK(brisk_cancel(rt, id) == BRISK_OK);
  CHECK(g_out.calls[0] == 1 && g_out.status[0] == BRISK_CANCELLED);
  CHECK(brisk_cancel(rt, id) == BRISK_NOT_FOUND);
  CHECK(brisk_submit_embed(rt, "expire me", 1, 20, on_done, (void*)(uintptr_t)1, &id) == BRISK_OK);
  wait_done(2);
  CHECK(g_out.status[1] == BRISK_DEADLINE_EXCEEDED);
  {
    /* Three different texts: the same text would join the first one's request (single flight). */
    static const char* queued[3] = {"queued one", "queued two", "queued three"};
    for (i = 2; i < 5; ++i) {
      CHECK(brisk_submit_embed(rt, queued[i - 2], 2, 0, on_done, (void*)(uintptr_t)i, NULL) == BRISK_OK);
    }
  }
  CHECK(brisk_submit_embed(rt, "one too many", 0, 0, on_done, (void*)(uintptr_t)5, NULL) == BRISK_OVERLOADED);
  CHECK(strstr(brisk_last_error(), "overloaded") != NULL);
  brisk_runtime_destroy(rt); /* the three queued requests complete with BRISK_SHUTDOWN before it returns */
  for (i = 2; i < 5; ++i) CHECK(g_out.calls[i] == 1 && g_out.status[i] == BRISK_SHUTDOWN && g_out.dim[i] == 0);
  CHECK(g_out.calls[5] == 0);
  CHECK(strcmp(brisk_status_string(BRISK_SHUTDOWN), "shut down") == 0);
}

/* Deadlines past the clock's range mean none: 9223372036854 ms was refused as "already passed" and INT64_MAX as
 * "timeout is negative" (signed overflow converting to nanoseconds). */
static void test_far_deadlines_mean_none(void) {
  brisk_runtime* rt = make_runtime(16, 0);
  int i;
  const int64_t far[3] = {9223372036854LL, INT64_MAX, INT64_MAX / 2};
  reset_outcomes();
  for (i = 0; i < 3; ++i) {
    CHECK(brisk_submit_embed(rt, "a far deadline", 0, far[i], on_done, (void*)(uintptr_t)i, NULL) == BRISK_OK);
  }
  wait_done(3);
  for (i = 0; i < 3; ++i) CHECK(g_out.calls[i] == 1 && g_out.status[i] == BRISK_OK && g_out.dim[i] == 384);
  brisk_runtime_destroy(rt);
}

static void test_bad_batch_options(void) {
  brisk_runtime_options opts;
  brisk_runtime* rt = NULL;
  brisk_runtime_options_init(&opts, sizeof opts);
  CHECK(opts.max_batch_size == 32 && opts.batch_max_queue == 4096 && opts.batch_max_delay_us == 0);
  CHECK(opts.normalize == -1); /* as the model says */
  opts.model_dir = brisk_default_model_dir();
  opts.max_batch_size = 0;
  CHECK(brisk_runtime_create(&opts, &rt) == BRISK_INVALID_ARGUMENT && rt == NULL);
  CHECK(strstr(brisk_last_error(), "max_batch_size is 0") != NULL);
  opts.max_batch_size = 8;
  opts.batch_p99_target_ms = -3;
  CHECK(brisk_runtime_create(&opts, &rt) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "batch_p99_target_ms is -3") != NULL);
  /* Every duration has a documented maximum (issue 30). */
  opts.batch_p99_target_ms = 3600001;
  CHECK(brisk_runtime_create(&opts, &rt) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "batch_p99_target_ms is 3600001; expected 0 (off) to 3600000") != NULL);
  opts.batch_p99_target_ms = 0;
  opts.redis_host = "127.0.0.1";
  opts.redis_timeout_ms = 60001;
  CHECK(brisk_runtime_create(&opts, &rt) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "redis_timeout_ms is 60001; expected 1 to 60000") != NULL);
}

int main(void) {
  pthread_mutex_init(&g_out.mu, NULL);
  pthread_cond_init(&g_out.cv, NULL);
  test_bad_batch_options();
  test_outcomes_and_bad_arguments();
  test_far_deadlines_mean_none();
  test_concurrent_submit();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
