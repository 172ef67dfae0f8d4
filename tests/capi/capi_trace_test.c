/* Request tracing through the C API from C99: brisk_runtime_options.span_fn receives a traced submit's spans as
 * brisk_span views (hex ids, names, times, status, attributes), brisk_request_options.traceparent_out names brisk's
 * request span, otlp_trace_path writes OTLP/JSON lines, and bad tracing arguments are refused with a message.
 * argv[1] (optional): where to leave the OTLP/JSON file for tests/capi/otlp_check.py. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "brisk.h"
#include "check.h"

#define MAX_SPANS 16
#define TEXT 96

static const char* kParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/* Copies of the spans span_fn received (the views die with the call). */
typedef struct span_copy {
  char trace_id[TEXT], span_id[TEXT], parent_span_id[TEXT], name[TEXT], status_message[TEXT], cache[TEXT];
  long long start, end;
  int status;
} span_copy;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  span_copy spans[MAX_SPANS];
  size_t n;
  int exports;
  int callbacks;
} g; /* mu and cv are initialised in main */

static void copy_text(char* dst, const char* src) { snprintf(dst, TEXT, "%s", src == NULL ? "(null)" : src); }

static void on_spans(void* user_data, const brisk_span* spans, size_t n) {
  size_t i, k;
  pthread_mutex_lock(&g.mu);
  CHECK(user_data == (void*)&g);
  for (i = 0; i < n && g.n < MAX_SPANS; ++i, ++g.n) {
    span_copy* c = &g.spans[g.n];
    copy_text(c->trace_id, spans[i].trace_id);
    copy_text(c->span_id, spans[i].span_id);
    copy_text(c->parent_span_id, spans[i].parent_span_id);
    copy_text(c->name, spans[i].name);
    copy_text(c->status_message, spans[i].status_message);
    c->cache[0] = '\0';
    for (k = 0; k < spans[i].num_attributes; ++k) {
      if (strcmp(spans[i].attributes[k].key, "brisk.cache") == 0) copy_text(c->cache, spans[i].attributes[k].value);
    }
    c->start = (long long)spans[i].start_unix_nanos;
    c->end = (long long)spans[i].end_unix_nanos;
    c->status = spans[i].status;
  }
  g.exports += 1;
  pthread_cond_broadcast(&g.cv);
  pthread_mutex_unlock(&g.mu);
}

static void on_done(void* user_data, uint64_t request_id, brisk_status status, const float* embedding, size_t dim,
                    const char* error) {
  (void)user_data, (void)request_id, (void)embedding, (void)dim, (void)error;
  pthread_mutex_lock(&g.mu);
  CHECK(status == BRISK_OK);
  g.callbacks += 1;
  pthread_cond_broadcast(&g.cv);
  pthread_mutex_unlock(&g.mu);
}

static const span_copy* find(const char* name) {
  size_t i;
  for (i = 0; i < g.n; ++i) {
    if (strcmp(g.spans[i].name, name) == 0) return &g.spans[i];
  }
  return NULL;
}

static brisk_runtime* make_runtime(brisk_span_fn fn, const char* otlp_path, brisk_status* status) {
  brisk_runtime_options opts;
  brisk_runtime* rt = NULL;
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = brisk_default_model_dir();
  opts.num_threads = 2;
  opts.cache_result_bytes = 0; /* every submit reaches the batcher */
  opts.span_fn = fn;
  opts.span_user_data = &g;
  opts.otlp_trace_path = otlp_path;
  opts.otlp_service_name = "c-trace-test";
  *status = brisk_runtime_create(&opts, &rt);
  return rt;
}

static void test_span_fn(void) {
  brisk_status status;
  brisk_runtime* rt = make_runtime(on_spans, NULL, &status);
  brisk_request_options ro;
  char traceparent[64];
  char expected[64];
  uint64_t id = 0;
  size_t i;
  const span_copy* request;
  if (rt == NULL) {
    fprintf(stderr, "cannot load the default model: %s (run scripts/setup)\n", brisk_last_error());
    exit(1);
  }
  brisk_request_options_init(&ro, sizeof ro);
  ro.trace_parent = kParent;
  ro.traceparent_out = traceparent;
  ro.traceparent_out_len = sizeof traceparent;
  CHECK(brisk_submit_embed_ex(rt, "how do I reset my card PIN?", &ro, on_done, NULL, &id) == BRISK_OK);
  pthread_mutex_lock(&g.mu);
  while (g.exports < 1) pthread_cond_wait(&g.cv, &g.mu);
  pthread_mutex_unlock(&g.mu);

  CHECK(g.callbacks == 1); /* the spans come after the callback returned */
  CHECK(g.n == 6);
  request = &g.spans[0];
  CHECK(strcmp(request->name, "brisk.request") == 0);
  CHECK(strcmp(request->parent_span_id, "00f067aa0ba902b7") == 0);
  CHECK(strlen(request->span_id) == 16);
  snprintf(expected, sizeof expected, "00-4bf92f3577b34da6a3ce929d0e0e4736-%.16s-01", request->span_id);
  CHECK(strcmp(traceparent, expected) == 0);
  for (i = 0; i < g.n; ++i) {
    CHECK(strcmp(g.spans[i].trace_id, "4bf92f3577b34da6a3ce929d0e0e4736") == 0);
    CHECK(g.spans[i].start <= g.spans[i].end);
    CHECK(g.spans[i].status == 0);
    if (i > 0) CHECK(strcmp(g.spans[i].parent_span_id, request->span_id) == 0);
  }
  CHECK(find("brisk.tokenize") != NULL);
  CHECK(find("brisk.cache_lookup") != NULL && strcmp(find("brisk.cache_lookup")->cache, "miss") == 0);
  CHECK(find("brisk.queue") != NULL && find("brisk.batch_compute") != NULL &&
        find("brisk.queue")->end == find("brisk.batch_compute")->start);
  CHECK(find("brisk.callback") != NULL);

  /* Bad tracing arguments name what was wrong; the callback is never called. */
  ro.trace_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
  CHECK(brisk_submit_embed_ex(rt, "x", &ro, on_done, NULL, &id) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "parent-id is all zeros") != NULL);
  CHECK(traceparent[0] == '\0');
  ro.trace_parent = kParent;
  ro.traceparent_out_len = 55;
  CHECK(brisk_submit_embed_ex(rt, "x", &ro, on_done, NULL, &id) == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "traceparent_out_len is 55") != NULL);
  /* Not sampled: no spans, and the caller's traceparent passes through. */
  ro.trace_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
  ro.traceparent_out_len = sizeof traceparent;
  CHECK(brisk_submit_embed_ex(rt, "not sampled", &ro, on_done, NULL, &id) == BRISK_OK);
  CHECK(strcmp(traceparent, ro.trace_parent) == 0);
  pthread_mutex_lock(&g.mu);
  while (g.callbacks < 2) pthread_cond_wait(&g.cv, &g.mu);
  pthread_mutex_unlock(&g.mu);
  brisk_runtime_destroy(rt); /* joins the batcher: any export of the unsampled request would have happened */
  CHECK(g.exports == 1);
  CHECK(g.callbacks == 2);
}

static void test_otlp_file(const char* path) {
  brisk_status status;
  brisk_runtime* rt;
  brisk_request_options ro;
  char line[16384];
  FILE* f;
  int lines = 0;
  uint64_t id = 0;
  CHECK(make_runtime(on_spans, path, &status) == NULL);
  CHECK(status == BRISK_INVALID_ARGUMENT);
  CHECK(strstr(brisk_last_error(), "at most one of them") != NULL);
  CHECK(make_runtime(NULL, "/nonexistent-dir/spans.jsonl", &status) == NULL);
  CHECK(strstr(brisk_last_error(), "otlp_trace_path") != NULL);

  remove(path);
  rt = make_runtime(NULL, path, &status);
  CHECK(rt != NULL);
  if (rt == NULL) return;
  brisk_request_options_init(&ro, sizeof ro);
  ro.trace_parent = kParent;
  CHECK(brisk_submit_embed_ex(rt, "what are your opening hours", &ro, on_done, NULL, &id) == BRISK_OK);
  pthread_mutex_lock(&g.mu);
  while (g.callbacks < 3) pthread_cond_wait(&g.cv, &g.mu);
  pthread_mutex_unlock(&g.mu);
  brisk_runtime_destroy(rt); /* joins the batcher: the line is written after the callback */
  f = fopen(path, "r");
  CHECK(f != NULL);
  if (f == NULL) return;
  while (fgets(line, sizeof line, f) != NULL) {
    ++lines;
    CHECK(strstr(line, "\"traceId\":\"4bf92f3577b34da6a3ce929d0e0e4736\"") != NULL);
    CHECK(strstr(line, "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"c-trace-test\"}}") != NULL);
    CHECK(strstr(line, "\"name\":\"brisk.batch_compute\"") != NULL);
  }
  fclose(f);
  CHECK(lines == 1);
}

int main(int argc, char** argv) {
  char path[256];
  pthread_mutex_init(&g.mu, NULL);
  pthread_cond_init(&g.cv, NULL);
  if (argc > 1) {
    snprintf(path, sizeof path, "%s", argv[1]);
  } else {
    snprintf(path, sizeof path, "/tmp/brisk_capi_trace_%ld.jsonl", (long)getpid());
  }
  test_span_fn();
  test_otlp_file(path);
  if (argc <= 1) remove(path);
  printf("%d checks passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
