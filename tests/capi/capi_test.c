/* The C API exercised from C99: NULL arguments to every function, bad options, invalid UTF-8, a too-small
 * output buffer, an older (shorter) options struct, real embeddings from the default model, and the Redis
 * security fields against a real redis-server with a password. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "brisk.h"
#include "check.h"

/* The call failed with `code` and left a message that mentions `needle`. */
static int failed_with(brisk_status got, brisk_status code, const char* needle) {
  const char* msg = brisk_last_error();
  if (got != code || msg == NULL || strstr(msg, needle) == NULL) {
    fprintf(stderr, "  got status %d (%s), message '%s'; expected status %d mentioning '%s'\n", (int)got,
            brisk_status_string(got), msg ? msg : "(null)", (int)code, needle);
    return 0;
  }
  return 1;
}

static void test_null_arguments(void) {
  brisk_runtime* rt = (brisk_runtime*)0x1;
  brisk_runtime_options opts;
  size_t dim = 0;
  float out[4];
  const char* texts[1] = {"x"};
  CHECK(
      failed_with(brisk_runtime_options_init(NULL, sizeof(brisk_runtime_options)), BRISK_INVALID_ARGUMENT, "options"));
  brisk_runtime_options_init(&opts, sizeof opts);
  CHECK(failed_with(brisk_runtime_create(NULL, &rt), BRISK_INVALID_ARGUMENT, "options"));
  CHECK(rt == NULL);
  CHECK(failed_with(brisk_runtime_create(&opts, NULL), BRISK_INVALID_ARGUMENT, "out"));
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "model_dir"));
  CHECK(failed_with(brisk_embedding_dim(NULL, &dim), BRISK_INVALID_ARGUMENT, "runtime"));
  CHECK(failed_with(brisk_embed(NULL, texts, 1, out, 4), BRISK_INVALID_ARGUMENT, "runtime"));
  brisk_runtime_destroy(NULL); /* accepted, no crash */
  CHECK(brisk_status_string(BRISK_DATA_LOSS) != NULL);
  CHECK(brisk_version_string() != NULL && strlen(brisk_version_string()) > 0);
  CHECK(brisk_abi_version() == BRISK_ABI_VERSION);
  CHECK(strstr(brisk_default_model_dir(), "all-MiniLM-L6-v2") != NULL || getenv("BRISK_MODEL_DIR") != NULL);
}

static void test_bad_options(void) {
  brisk_runtime* rt = NULL;
  brisk_runtime_options opts;
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = "/nonexistent/brisk-model";
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_NOT_FOUND, "/nonexistent/brisk-model"));
  CHECK(rt == NULL);
  opts.pooling = 7;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "pooling"));
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = "/nonexistent/brisk-model";
  opts.struct_size = 4;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "struct_size"));
}

/* Counts and sizes past their documented bounds are refused before anything is allocated or started: none of
 * these may take the host process down (10^6 threads crashed it inside libgomp; 2^31-1 token-cache entries took
 * 17 GB). */
static void test_options_past_their_bounds(void) {
  brisk_runtime* rt = NULL;
  brisk_runtime_options opts;
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = brisk_default_model_dir();
  opts.num_threads = 1000000;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "num_threads is 1000000"));
  opts.num_threads = 1025;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT,
                    "0 (the CPUs this process may use) to 1024"));
  opts.num_threads = 2;
  opts.cache_token_entries = 2147483647;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "cache_token_entries is 2147483647"));
  opts.cache_token_entries = 16;
  opts.max_batch_size = 2147483647;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "max_batch_size is 2147483647"));
  opts.max_batch_size = 32;
  opts.batch_max_queue = 2147483647;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "batch_max_queue is 2147483647"));
  opts.batch_max_queue = 16;
  opts.normalize = 2;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "normalize is 2"));
  CHECK(rt == NULL);
}

/* A caller built against an older, shorter brisk_runtime_options (one that ended before `normalize`): init
 * writes only its bytes, and create gives the missing fields their defaults. */
static void test_older_options_struct(const char* dir) {
  const size_t old_size = offsetof(brisk_runtime_options, normalize);
  unsigned char buf[sizeof(brisk_runtime_options) + 16];
  brisk_runtime_options* opts = (brisk_runtime_options*)(void*)buf;
  brisk_runtime* rt = NULL;
  size_t i, untouched = 0;
  memset(buf, 0xAB, sizeof buf);
  CHECK(brisk_runtime_options_init(opts, old_size) == BRISK_OK);
  CHECK(opts->struct_size == old_size);
  for (i = old_size; i < sizeof buf; ++i) untouched += buf[i] == 0xAB;
  CHECK(untouched == sizeof buf - old_size); /* nothing written past the caller's struct */
  CHECK(failed_with(brisk_runtime_options_init(opts, 3), BRISK_INVALID_ARGUMENT, "struct_size"));
  opts->model_dir = dir;
  opts->num_threads = 2;
  /* normalize, device and max_batch_size hold 0xAB garbage past old_size; create must not read them. */
  CHECK(brisk_runtime_create(opts, &rt) == BRISK_OK);
  if (rt != NULL) {
    const char* text[1] = {"old callers still get normalised embeddings"};
    float out[384];
    CHECK(brisk_embed(rt, text, 1, out, 384) == BRISK_OK);
    {
      double n = 0;
      for (i = 0; i < 384; ++i) n += (double)out[i] * out[i];
      CHECK(fabs(n - 1.0) < 1e-4);
    }
    brisk_runtime_destroy(rt);
  }
}

static double dot(const float* a, const float* b, size_t n) {
  double s = 0;
  size_t i;
  for (i = 0; i < n; ++i) s += (double)a[i] * b[i];
  return s;
}

static void test_embed(void) {
  brisk_runtime* rt = NULL;
  brisk_runtime_options opts;
  size_t dim = 0;
  float* out;
  const char* texts[3] = {"How do I reset my card PIN?", "I forgot the PIN of my card", "Opening hours on Sunday"};
  const char* bad_utf8[2] = {"fine", "bad \xC3\x28 byte"};
  const char* with_null[2] = {"fine", NULL};
  const char* dir = brisk_default_model_dir();
  brisk_runtime_options_init(&opts, sizeof opts);
  opts.model_dir = dir;
  opts.num_threads = 2;
  opts.cache_result_bytes = 0; /* every embedding below comes from the model, not from a cache */
  if (brisk_runtime_create(&opts, &rt) != BRISK_OK) {
    fprintf(stderr, "cannot load the default model from %s: %s (run scripts/setup)\n", dir, brisk_last_error());
    ++g_failed;
    return;
  }
  CHECK(brisk_embedding_dim(rt, NULL) == BRISK_INVALID_ARGUMENT);
  CHECK(brisk_embedding_dim(rt, &dim) == BRISK_OK && dim == 384);
  /* all-MiniLM-L6-v2 has no prompts: "" (not NULL); a NULL runtime gives NULL. */
  CHECK(brisk_query_prompt(rt) != NULL && brisk_query_prompt(rt)[0] == '\0' && brisk_query_prompt(NULL) == NULL);
  out = (float*)calloc(3 * dim, sizeof(float));
  CHECK(brisk_embed(rt, texts, 3, out, 3 * dim) == BRISK_OK);
  CHECK(fabs(dot(out, out, dim) - 1.0) < 1e-4);                   /* normalised */
  CHECK(dot(out, out + dim, dim) > dot(out, out + 2 * dim, dim)); /* paraphrase closer than unrelated */
  CHECK(failed_with(brisk_embed(rt, texts, 3, out, 3 * dim - 1), BRISK_INVALID_ARGUMENT, "out_len"));
  CHECK(failed_with(brisk_embed(rt, NULL, 3, out, 3 * dim), BRISK_INVALID_ARGUMENT, "texts"));
  CHECK(failed_with(brisk_embed(rt, texts, 3, NULL, 3 * dim), BRISK_INVALID_ARGUMENT, "out"));
  CHECK(failed_with(brisk_embed(rt, with_null, 2, out, 2 * dim), BRISK_INVALID_ARGUMENT, "texts[1]"));
  CHECK(failed_with(brisk_embed(rt, bad_utf8, 2, out, 2 * dim), BRISK_INVALID_ARGUMENT, "UTF-8"));
  CHECK(brisk_embed(rt, texts, 0, NULL, 0) == BRISK_OK); /* nothing to do */
  CHECK(opts.normalize == -1 && strcmp(brisk_status_string(BRISK_PERMISSION_DENIED), "permission denied") == 0);
  /* The runtime still works after the errors. */
  CHECK(brisk_embed(rt, texts, 1, out, dim) == BRISK_OK && fabs(dot(out, out, dim) - 1.0) < 1e-4);
  brisk_runtime_destroy(rt);

  /* replace_invalid_utf8: the bad byte is dropped (U+FFFD, which the tokenizer removes), the rest embedded. */
  rt = NULL;
  opts.replace_invalid_utf8 = 2;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "replace_invalid_utf8 is 2"));
  opts.replace_invalid_utf8 = 1;
  CHECK(brisk_runtime_create(&opts, &rt) == BRISK_OK);
  if (rt != NULL) {
    const char* repaired[2] = {"bad \xC3\x28 byte", "bad ( byte"};
    CHECK(brisk_embed(rt, repaired, 2, out, 2 * dim) == BRISK_OK);
    CHECK(fabs(dot(out, out + dim, dim) - 1.0) < 1e-5);
    brisk_runtime_destroy(rt);
  }
  free(out);
  test_older_options_struct(dir);
}

/* The caches through the C API: a repeated text is a hit, tags drop entries, bad cache options and NULL
 * arguments are refused with the field named. */
static void test_cache(const char* dir) {
  brisk_runtime* rt = NULL;
  brisk_runtime_options opts;
  char json[4096];
  size_t need = 0, removed = 99;
  float out[384];
  const char* text[1] = {"How do I block my card?"};
  brisk_runtime_options_init(&opts, sizeof opts);
  CHECK(opts.cache_result_bytes == 64 << 20 && opts.cache_ttl_ms == 300000 && opts.cache_token_entries > 0);
  CHECK(opts.redis_host == NULL && opts.redis_port == 6379 && opts.redis_timeout_ms > 0);
  opts.model_dir = dir;
  opts.num_threads = 2;
  opts.cache_ttl_ms = -1;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "cache_ttl_ms"));
  opts.cache_ttl_ms = 1000;
  opts.cache_result_bytes = -5;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "cache_result_bytes"));
  opts.cache_result_bytes = 1 << 20;
  /* Issue 30: INT32_MAX us (35 minutes) blocked a lone brisk_embed for as long; the bound is 60 s. */
  opts.batch_max_delay_us = 2147483647;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "batch_max_delay_us"));
  opts.batch_max_delay_us = 0;
  opts.redis_host = "127.0.0.1";
  opts.redis_port = 70000;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "redis_port"));
  opts.redis_port = 6379;
  opts.cache_ttl_ms = 0;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "cache_ttl_ms"));
  opts.cache_ttl_ms = 1000;
  opts.redis_host = NULL;
  CHECK(brisk_runtime_create(&opts, &rt) == BRISK_OK);
  if (rt == NULL) return;
  CHECK(brisk_embed(rt, text, 1, out, 384) == BRISK_OK);
  CHECK(brisk_embed(rt, text, 1, out, 384) == BRISK_OK);
  CHECK(brisk_cache_stats_json(rt, NULL, 0, &need) == BRISK_OUT_OF_RANGE && need > 1);
  CHECK(brisk_cache_stats_json(rt, json, sizeof json, NULL) == BRISK_OK);
  CHECK(strstr(json, "\"result\":{") != NULL && strstr(strstr(json, "\"result\":{"), "\"hits\":1") != NULL);
  CHECK(failed_with(brisk_cache_stats_json(NULL, json, sizeof json, NULL), BRISK_INVALID_ARGUMENT, "runtime"));
  CHECK(failed_with(brisk_cache_invalidate_tag(rt, NULL, &removed), BRISK_INVALID_ARGUMENT, "tag"));
  CHECK(removed == 0);
  CHECK(failed_with(brisk_cache_invalidate_tag(NULL, "x", NULL), BRISK_INVALID_ARGUMENT, "runtime"));
  CHECK(failed_with(brisk_cache_invalidate_tag(rt, "", NULL), BRISK_INVALID_ARGUMENT, "tag"));
  CHECK(brisk_cache_invalidate_tag(rt, "no-such-tag", &removed) == BRISK_OK && removed == 0);
  {
    /* Every result carries "model:<model_id>". */
    char tag[512] = "model:";
    const char* id = strstr(json, "\"model_id\":\"");
    CHECK(id != NULL);
    if (id != NULL) {
      const char* begin = id + strlen("\"model_id\":\"");
      const char* end = strchr(begin, '"');
      if (end != NULL && (size_t)(end - begin) < sizeof tag - 7) strncat(tag, begin, (size_t)(end - begin));
    }
    CHECK(brisk_cache_invalidate_tag(rt, tag, &removed) == BRISK_OK && removed == 1);
  }
  brisk_runtime_destroy(rt);
}

/* The Redis security fields: their defaults, a struct from before them (its bytes past redis_timeout_ms are
 * garbage that create must not read), TLS this build lacks, a user without a password, and a real redis-server
 * with requirepass that refuses a wrong password (skipped when redis-server cannot be started). */
static void test_redis_security(const char* dir) {
  const size_t old_size = offsetof(brisk_runtime_options, redis_user);
  unsigned char buf[sizeof(brisk_runtime_options)];
  brisk_runtime_options* old = (brisk_runtime_options*)(void*)buf;
  brisk_runtime_options opts;
  brisk_runtime* rt = NULL;
  char cmd[512], json[4096];
  float out[384];
  const char* text[1] = {"Is my card blocked?"};
  int port = 0, i, up = 0;
  brisk_runtime_options_init(&opts, sizeof opts);
  CHECK(opts.redis_user == NULL && opts.redis_password == NULL && opts.redis_signing_key == NULL &&
        opts.redis_tls == 0);
  opts.model_dir = dir;
  opts.num_threads = 2;
  opts.redis_host = "127.0.0.1";
  opts.redis_port = 1; /* nothing listens there: the tier fails soft, create still works */
  CHECK(opts.redis_allow_unsigned == 0);
  /* Unsigned shared values are a choice, not a default (issue 30). */
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "redis_allow_unsigned"));
  opts.redis_allow_unsigned = 2;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "redis_allow_unsigned"));
  opts.redis_allow_unsigned = 1;
  opts.redis_tls = 1;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_UNIMPLEMENTED, "tls"));
  opts.redis_tls = 2;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "redis_tls"));
  opts.redis_tls = 0;
  opts.redis_user = "app";
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "redis_user"));
  opts.redis_user = NULL;

  memset(buf, 0xAB, sizeof buf);
  CHECK(brisk_runtime_options_init(old, old_size) == BRISK_OK);
  old->model_dir = dir;
  old->num_threads = 2;
  old->redis_host = "127.0.0.1";
  old->redis_port = 1;
  /* A struct from before the signing key (0.3) gets the defaults: no signing key, no unsigned tier, so no Redis. */
  CHECK(failed_with(brisk_runtime_create(old, &rt), BRISK_INVALID_ARGUMENT, "redis_signing_key"));
  CHECK(rt == NULL);

  /* A port where nothing listens, so that the test never talks to (or shuts down) another test's server. */
  for (i = 0; i < 20 && port == 0; ++i) {
    const int candidate = 20000 + (int)((time(NULL) + 997 * i) % 20000);
    snprintf(cmd, sizeof cmd, "timeout 2 redis-cli -p %d ping 2>&1 | grep -q 'Could not connect'", candidate);
    if (system(cmd) == 0) port = candidate;
  }
  /* timeout: a crashed test leaves no server behind for long. */
  snprintf(cmd, sizeof cmd,
           "timeout 120 redis-server --port %d --bind 127.0.0.1 --requirepass c-secret --save '' "
           "--appendonly no >/dev/null 2>&1 &",
           port);
  if (port != 0 && system(cmd) == 0) {
    /* Ours: it wants a password, and c-secret is the one. */
    snprintf(cmd, sizeof cmd,
             "redis-cli -p %d -a c-secret --no-auth-warning ping 2>/dev/null | grep -q PONG && "
             "redis-cli -p %d ping 2>&1 | grep -q NOAUTH",
             port, port);
    for (i = 0; i < 500 && !up; ++i) up = system(cmd) == 0;
  }
  if (!up) {
    printf("test_redis_security: skipped the live part (redis-server did not start on port %d)\n", port);
    return;
  }
  opts.redis_port = port;
  opts.redis_timeout_ms = 500;
  opts.redis_password = "wrong";
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_PERMISSION_DENIED, "password"));
  CHECK(rt == NULL);
  opts.redis_password = "c-secret";
  opts.redis_signing_key = "shared-secret";
  CHECK(brisk_runtime_create(&opts, &rt) == BRISK_OK);
  if (rt != NULL) {
    CHECK(brisk_embed(rt, text, 1, out, 384) == BRISK_OK);
    CHECK(brisk_cache_stats_json(rt, json, sizeof json, NULL) == BRISK_OK);
    CHECK(strstr(json, "\"auth_failures\":0") != NULL);
    CHECK(strstr(json, "\"rejected\":{") != NULL);
    brisk_runtime_destroy(rt);
  }
  snprintf(cmd, sizeof cmd, "redis-cli -p %d -a c-secret --no-auth-warning shutdown nosave >/dev/null 2>&1", port);
  CHECK(system(cmd) >= 0);
}

/* The GPU fields (appended in 0.5): their defaults, bad values named in the error, a struct from before them (its
 * bytes past replace_invalid_utf8 are garbage that create must not read), and BRISK_DEVICE_CUDA on a machine
 * without a GPU (or a build without CUDA), which fails with a status naming cuda instead of crashing. */
static void test_gpu_options(const char* dir) {
  const size_t old_size = offsetof(brisk_runtime_options, device_index);
  unsigned char buf[sizeof(brisk_runtime_options)];
  brisk_runtime_options* old = (brisk_runtime_options*)(void*)buf;
  brisk_runtime_options opts;
  brisk_runtime* rt = NULL;
  brisk_status got;
  const char* text[1] = {"Can I pay with my phone?"};
  float out[384];
  brisk_runtime_options_init(&opts, sizeof opts);
  CHECK(opts.device == BRISK_DEVICE_CPU);
  CHECK(opts.device_index == 0);
  CHECK(opts.activation_dtype == BRISK_DTYPE_DEFAULT);
  CHECK(opts.remove_padding == 1);
  CHECK(opts.device_memory_limit == 0);
  CHECK(strcmp(brisk_status_string(BRISK_OUT_OF_MEMORY), "unknown status") != 0);
  CHECK(strstr(brisk_status_string(BRISK_OUT_OF_MEMORY), "memory") != NULL);

  opts.model_dir = dir;
  opts.num_threads = 2;
  opts.device_index = -1;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "device_index is -1"));
  opts.device_index = 0;
  opts.activation_dtype = 9;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "activation_dtype is 9"));
  opts.activation_dtype = -1;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "activation_dtype is -1"));
  opts.activation_dtype = BRISK_DTYPE_DEFAULT;
  opts.remove_padding = 2;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "remove_padding is 2"));
  opts.remove_padding = 1;
  opts.device_memory_limit = -5;
  CHECK(failed_with(brisk_runtime_create(&opts, &rt), BRISK_INVALID_ARGUMENT, "device_memory_limit is -5"));
  opts.device_memory_limit = 0;
  CHECK(rt == NULL);

  /* Without a GPU: UNIMPLEMENTED (a build without CUDA, or a runtime without the CUDA path yet) or NOT_FOUND (no
   * such device), naming cuda. With one (nvidia-smi lists it), the runtime may run there. */
  opts.device = BRISK_DEVICE_CUDA;
  opts.device_memory_limit = (int64_t)1 << 30;
  got = brisk_runtime_create(&opts, &rt);
  if (got == BRISK_OK) {
    CHECK(system("nvidia-smi -L >/dev/null 2>&1") == 0);
    CHECK(brisk_embed(rt, text, 1, out, 384) == BRISK_OK);
    brisk_runtime_destroy(rt);
    rt = NULL;
  } else {
    fprintf(stderr, "  device cuda here: status %d (%s): %s\n", (int)got, brisk_status_string(got), brisk_last_error());
    CHECK(got == BRISK_UNIMPLEMENTED || got == BRISK_NOT_FOUND);
    CHECK(strstr(brisk_last_error(), "cuda") != NULL || strstr(brisk_last_error(), "CUDA") != NULL);
    CHECK(rt == NULL);
  }

  memset(buf, 0xAB, sizeof buf);
  CHECK(brisk_runtime_options_init(old, old_size) == BRISK_OK);
  CHECK(old->struct_size == old_size);
  old->model_dir = dir;
  old->num_threads = 2;
  /* device_index, activation_dtype, remove_padding and device_memory_limit hold 0xAB garbage (negative): reading
   * them would fail the call. */
  got = brisk_runtime_create(old, &rt);
  CHECK(got == BRISK_OK);
  if (got != BRISK_OK) fprintf(stderr, "  older struct: %s\n", brisk_last_error());
  if (rt != NULL) {
    CHECK(brisk_embed(rt, text, 1, out, 384) == BRISK_OK);
    brisk_runtime_destroy(rt);
  }
}

int main(void) {
  test_null_arguments();
  test_bad_options();
  test_options_past_their_bounds();
  test_embed();
  test_cache(brisk_default_model_dir());
  test_redis_security(brisk_default_model_dir());
  test_gpu_options(brisk_default_model_dir());
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
