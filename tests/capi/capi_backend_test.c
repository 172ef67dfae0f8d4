#define _POSIX_C_SOURCE 200809L /* nanosleep */
/* The host-callback backend from C99: brisk_runtime_create_with_backend, the host's function filling embeddings and
 * logits, its errors and unset outputs, classify / rerank over it, and exactly-once callbacks for 200,000 submits from
 * four threads. The tokenizer is the default model's; no weights are read. */
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "brisk.h"
#include "check.h"

#define DIM 8
#define STRESS_REQUESTS 200000
#define STRESS_THREADS 4

typedef struct host {
  pthread_mutex_t mu;
  long calls;     /* run() calls */
  long sequences; /* sequences computed */
  int mode;       /* 0: fill every value; 1: fail with a message; 2: leave row 0 unset */
} host;

/* A deterministic "model": value k of a sequence's row is (sum of its ids) mod 1000 + k, plus 0.5 per token of type 1.
 */
static brisk_status host_run(void* user_data, const brisk_batch* batch, float* out, size_t out_len, char* error,
                             size_t error_len) {
  host* h = (host*)user_data;
  size_t i, t, dim = out_len / (batch->num_sequences ? batch->num_sequences : 1);
  pthread_mutex_lock(&h->mu);
  h->calls += 1;
  h->sequences += (long)batch->num_sequences;
  pthread_mutex_unlock(&h->mu);
  if (h->mode == 1) {
    snprintf(error, error_len, "the host model is offline");
    return BRISK_FAILED_PRECONDITION;
  }
  for (i = 0; i < batch->num_sequences; ++i) {
    long sum = 0;
    float types = 0;
    size_t k;
    for (t = (size_t)batch->offsets[i]; t < (size_t)batch->offsets[i + 1]; ++t) {
      sum += batch->input_ids[t];
      types += batch->token_type_ids[t] ? 0.5f : 0.0f;
    }
    if (h->mode == 2 && i == 0) continue;
    for (k = 0; k < dim; ++k) out[i * dim + k] = (float)(sum % 1000) + (float)k + types;
  }
  return BRISK_OK;
}

static host g_host;

static brisk_runtime* make(int output, size_t dim, const char* const* labels, int cache) {
  brisk_runtime_options opts;
  brisk_backend backend;
  brisk_runtime* rt = NULL;
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = brisk_default_model_dir();
  opts.cache_result_bytes = cache ? 1 << 20 : 0;
  opts.batch_max_queue = 1 << 20;
  brisk_backend_init(&backend, sizeof backend);
  backend.run = host_run;
  backend.user_data = &g_host;
  backend.output = output;
  backend.output_dim = dim;
  backend.labels = labels;
  backend.name = "host-test";
  if (brisk_runtime_create_with_backend(&opts, &backend, &rt) != BRISK_OK) {
    fprintf(stderr, "brisk_runtime_create_with_backend: %s (run scripts/setup)\n", brisk_last_error());
    exit(1);
  }
  return rt;
}

static void test_embed_and_errors(void) {
  brisk_runtime* rt = make(BRISK_OUTPUT_EMBEDDING, DIM, NULL, 0);
  const char* texts[2] = {"reset my PIN", "lost card"};
  float out[2 * DIM];
  size_t dim = 0, k;
  CHECK(brisk_embedding_dim(rt, &dim) == BRISK_OK && dim == DIM);
  g_host.mode = 0;
  CHECK(brisk_embed(rt, texts, 2, out, 2 * DIM) == BRISK_OK);
  for (k = 1; k < DIM; ++k) CHECK(out[k] == out[0] + (float)k); /* the host's own values, row by row */
  CHECK(out[0] != out[DIM]);
  g_host.mode = 1;
  CHECK(brisk_embed(rt, texts, 1, out, DIM) == BRISK_FAILED_PRECONDITION);
  CHECK(strstr(brisk_last_error(), "host-test") != NULL && strstr(brisk_last_error(), "offline") != NULL);
  g_host.mode = 2;
  CHECK(brisk_embed(rt, texts, 2, out, 2 * DIM) == BRISK_INTERNAL);
  CHECK(strstr(brisk_last_error(), "left row 0 value 0 unset") != NULL);
  g_host.mode = 0;
  brisk_runtime_destroy(rt);
}

static void test_bad_backends(void) {
  brisk_runtime_options opts;
  brisk_backend backend;
  brisk_runtime* rt = NULL;
  const char* bad_labels[2] = {"yes", NULL};
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = brisk_default_model_dir();
  brisk_backend_init(&backend, sizeof backend);
  CHECK(brisk_runtime_create_with_backend(&opts, NULL, &rt) == BRISK_INVALID_ARGUMENT && rt == NULL);
  CHECK(brisk_runtime_create_with_backend(&opts, &backend, &rt) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "backend->run is NULL") != NULL);
  backend.run = host_run;
  backend.output_dim = 0;
  CHECK(brisk_runtime_create_with_backend(&opts, &backend, &rt) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "output_dim is 0") != NULL);
  backend.output_dim = 2;
  backend.output = 7;
  CHECK(brisk_runtime_create_with_backend(&opts, &backend, &rt) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "backend->output is 7") != NULL);
  backend.output = BRISK_OUTPUT_LOGITS;
  backend.labels = bad_labels;
  CHECK(brisk_runtime_create_with_backend(&opts, &backend, &rt) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "labels[1] is NULL") != NULL);
  opts.model_dir = "/nonexistent/brisk-model";
  backend.labels = NULL;
  CHECK(brisk_runtime_create_with_backend(&opts, &backend, &rt) == BRISK_NOT_FOUND && rt == NULL);
}

static void test_classify_and_rerank(void) {
  const char* labels[3] = {"billing", "card_lost", "greeting"};
  const char* texts[2] = {"hello", "my card"};
  const char* passages[3] = {"a", "lost card today", "hello there"};
  brisk_label_score top[6];
  brisk_rerank_result ranked[3];
  size_t n = 0;
  brisk_runtime* rt = make(BRISK_OUTPUT_LOGITS, 3, labels, 1);
  CHECK(brisk_num_labels(rt, &n) == BRISK_OK && n == 3);
  CHECK(strcmp(brisk_label_name(rt, 1), "card_lost") == 0 && brisk_label_name(rt, 3) == NULL);
  CHECK(brisk_classify(rt, texts, 2, 3, top, 6) == BRISK_OK);
  /* logits (s, s + 1, s + 2): the softmax puts greeting (id 2) first */
  CHECK(top[0].label_id == 2 && strcmp(top[0].label, "greeting") == 0 && top[1].label_id == 1);
  CHECK(fabsf(top[0].score + top[1].score + top[2].score - 1.0f) < 1e-5f);
  CHECK(fabsf(top[0].score - 0.66524f) < 1e-4f);
  CHECK(brisk_classify(rt, texts, 2, 4, top, 8) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "top_k is 4") != NULL);
  CHECK(brisk_classify(rt, texts, 2, 3, top, 5) == BRISK_INVALID_ARGUMENT);
  CHECK(brisk_rerank(rt, "q", passages, 3, 0, ranked, 3) == BRISK_FAILED_PRECONDITION); /* three labels */
  CHECK(brisk_embed(rt, texts, 1, (float*)top, 3) == BRISK_FAILED_PRECONDITION);
  brisk_runtime_destroy(rt);

  rt = make(BRISK_OUTPUT_LOGITS, 1, NULL, 1);
  CHECK(brisk_rerank(rt, "q", passages, 3, 1, ranked, 3) == BRISK_OK);
  CHECK(ranked[0].score >= ranked[1].score && ranked[1].score >= ranked[2].score);
  CHECK(ranked[0].index != ranked[1].index && ranked[1].index != ranked[2].index);
  CHECK(ranked[0].score == floorf(ranked[0].score) + 0.5f * (ranked[0].score - floorf(ranked[0].score)) * 2.0f);
  CHECK(brisk_rerank(rt, "q", passages, 0, 0, ranked, 3) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "passages is empty") != NULL);
  CHECK(brisk_rerank(rt, "q", passages, 3, 2, ranked, 3) == BRISK_INVALID_ARGUMENT);
  CHECK(brisk_rerank(rt, NULL, passages, 3, 0, ranked, 3) == BRISK_INVALID_ARGUMENT);
  brisk_runtime_destroy(rt);
}

typedef struct stress {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned char* calls; /* callbacks per request */
  long done, failed_submits, bad_values;
} stress;

static stress g_stress;

static void on_embedding(void* user_data, uint64_t request_id, brisk_status status, const float* embedding, size_t dim,
                         const char* error) {
  size_t slot = (size_t)(uintptr_t)user_data;
  (void)request_id;
  (void)error;
  pthread_mutex_lock(&g_stress.mu);
  if (g_stress.calls[slot] < 255) g_stress.calls[slot] += 1;
  if (status != BRISK_OK || dim != DIM || embedding[1] != embedding[0] + 1.0f) g_stress.bad_values += 1;
  g_stress.done += 1;
  pthread_cond_broadcast(&g_stress.cv);
  pthread_mutex_unlock(&g_stress.mu);
}

typedef struct producer {
  brisk_runtime* rt;
  int first, count;
} producer;

static void* produce(void* p) {
  producer* a = (producer*)p;
  int i;
  char text[64];
  brisk_request_options o;
  brisk_request_options_init(&o, sizeof o);
  for (i = a->first; i < a->first + a->count; ++i) {
    snprintf(text, sizeof text, "question number %d", i % 5000);
    o.priority = i % 3;
    if (brisk_submit_embed_ex(a->rt, text, &o, on_embedding, (void*)(uintptr_t)i, NULL) != BRISK_OK) {
      pthread_mutex_lock(&g_stress.mu);
      g_stress.failed_submits += 1;
      g_stress.done += 1; /* no callback will come */
      pthread_mutex_unlock(&g_stress.mu);
    }
  }
  return NULL;
}

static void test_exactly_once_stress(void) {
  brisk_runtime* rt = make(BRISK_OUTPUT_EMBEDDING, DIM, NULL, 0);
  pthread_t threads[STRESS_THREADS];
  producer args[STRESS_THREADS];
  int t, i, once = 1;
  g_host.mode = 0;
  g_host.sequences = 0;
  g_stress.calls = (unsigned char*)calloc(STRESS_REQUESTS, 1);
  for (t = 0; t < STRESS_THREADS; ++t) {
    args[t].rt = rt;
    args[t].first = t * (STRESS_REQUESTS / STRESS_THREADS);
    args[t].count = STRESS_REQUESTS / STRESS_THREADS;
    pthread_create(&threads[t], NULL, produce, &args[t]);
  }
  for (t = 0; t < STRESS_THREADS; ++t) pthread_join(threads[t], NULL);
  pthread_mutex_lock(&g_stress.mu);
  while (g_stress.done < STRESS_REQUESTS) pthread_cond_wait(&g_stress.cv, &g_stress.mu);
  pthread_mutex_unlock(&g_stress.mu);
  CHECK(g_stress.failed_submits == 0);
  for (i = 0; i < STRESS_REQUESTS; ++i) once &= g_stress.calls[i] == 1;
  CHECK(once);
  CHECK(g_stress.bad_values == 0);
  /* Single flight: concurrent submits of one text share a pass, so the host computed at most one row per request. */
  CHECK(g_host.sequences > 0 && g_host.sequences <= STRESS_REQUESTS);
  printf("stress: %d requests, %ld host sequences in %ld calls\n", STRESS_REQUESTS, g_host.sequences, g_host.calls);
  brisk_runtime_destroy(rt);
  free(g_stress.calls);
}

/* One submit's outcome and the path brisk_callback_answer_path named inside its callback. */
typedef struct answer {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  brisk_status status;
  brisk_answer_path path;
  float first;
} answer;

static void on_answer(void* user_data, uint64_t request_id, brisk_status status, const float* embedding, size_t dim,
                      const char* error) {
  answer* a = (answer*)user_data;
  (void)request_id;
  (void)dim;
  (void)error;
  pthread_mutex_lock(&a->mu);
  a->status = status;
  a->path = brisk_callback_answer_path();
  a->first = embedding ? embedding[0] : -1.0f;
  a->done = 1;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
}

static answer submit_with(brisk_runtime* rt, const char* text, const brisk_request_options* o) {
  answer a;
  uint64_t id = 0;
  brisk_status s;
  memset(&a, 0, sizeof a);
  pthread_mutex_init(&a.mu, NULL);
  pthread_cond_init(&a.cv, NULL);
  s = brisk_submit_embed_ex(rt, text, o, on_answer, &a, &id);
  if (s != BRISK_OK) {
    a.status = s;
    a.done = 1;
  }
  pthread_mutex_lock(&a.mu);
  while (!a.done) pthread_cond_wait(&a.cv, &a.mu);
  pthread_mutex_unlock(&a.mu);
  pthread_mutex_destroy(&a.mu);
  pthread_cond_destroy(&a.cv);
  return a;
}

static answer submit_and_wait(brisk_runtime* rt, const char* text, int allow_stale) {
  brisk_request_options o;
  brisk_request_options_init(&o, sizeof o);
  o.allow_stale = allow_stale;
  return submit_with(rt, text, &o);
}

/* cache_stale_ttl_ms and allow_stale: an expired result answers when the host model fails, and the callback learns
 * which path answered. */
static void test_answer_paths_and_stale(void) {
  brisk_runtime_options opts;
  brisk_backend backend;
  brisk_runtime* rt = NULL;
  answer model, cached, failed, stale;
  struct timespec past_ttl = {0, 150 * 1000 * 1000};
  brisk_request_options bad, old;
  uint64_t id = 0;
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = brisk_default_model_dir();
  opts.cache_result_bytes = 1 << 20;
  opts.cache_ttl_ms = 50;
  opts.cache_stale_ttl_ms = 600000;
  brisk_backend_init(&backend, sizeof backend);
  backend.run = host_run;
  backend.user_data = &g_host;
  backend.output = BRISK_OUTPUT_EMBEDDING;
  backend.output_dim = DIM;
  backend.name = "host-stale";
  g_host.mode = 0;
  CHECK(brisk_runtime_create_with_backend(&opts, &backend, &rt) == BRISK_OK);
  if (rt == NULL) return;
  model = submit_and_wait(rt, "card blocked", 0);
  CHECK(model.status == BRISK_OK && model.path == BRISK_ANSWER_MODEL);
  cached = submit_and_wait(rt, "card blocked", 0);
  CHECK(cached.status == BRISK_OK && cached.path == BRISK_ANSWER_CACHE);
  nanosleep(&past_ttl, NULL);
  g_host.mode = 1; /* the host model fails */
  failed = submit_and_wait(rt, "card blocked", 0);
  CHECK(failed.status == BRISK_FAILED_PRECONDITION);
  stale = submit_and_wait(rt, "card blocked", 1);
  CHECK(stale.status == BRISK_OK && stale.path == BRISK_ANSWER_STALE);
  CHECK(stale.first == model.first);
  /* A 0.6 caller's struct ends at top_k; the padding after it (now reserved1) may hold anything. */
  memset(&old, 0xFF, sizeof old);
  old.struct_size = offsetof(brisk_request_options, reserved1) + sizeof(int32_t);
  old.priority = 0;
  old.deadline_ms = 0;
  old.cache_tags = NULL;
  old.num_cache_tags = 0;
  old.top_k = 1;
  stale = submit_with(rt, "card blocked", &old); /* allow_stale is beyond its struct: 0, so the failure shows */
  CHECK(stale.status == BRISK_FAILED_PRECONDITION);
  g_host.mode = 0;
  brisk_request_options_init(&bad, sizeof bad);
  bad.allow_stale = 2;
  CHECK(brisk_submit_embed_ex(rt, "x", &bad, on_answer, NULL, &id) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "allow_stale is 2") != NULL);
  brisk_runtime_destroy(rt);
  opts.cache_stale_ttl_ms = -1;
  CHECK(brisk_runtime_create_with_backend(&opts, &backend, &rt) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "cache_stale_ttl_ms") != NULL);
}

int main(void) {
  pthread_mutex_init(&g_host.mu, NULL);
  pthread_mutex_init(&g_stress.mu, NULL);
  pthread_cond_init(&g_stress.cv, NULL);
  test_embed_and_errors();
  test_bad_backends();
  test_classify_and_rerank();
  test_answer_paths_and_stale();
  test_exactly_once_stress();
  printf("%d checks passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
