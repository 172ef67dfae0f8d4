/* The pruner's sensitivity analysis from C99 (brisk_prune_sensitivity): a C metric callback, the built-in metric,
 * the zero mode and the tensor granularity, the three output files, and every refused option. It runs on the
 * 3-layer, 4-head random BERT in tests/data/tiny_bert4 (argv[1]), copied to a temporary folder with a small
 * vocab.txt, since the analysis on a real model takes minutes. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, mkdir, rmdir */

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "brisk.h"
#include "check.h"

static char g_dir[256];   /* the temporary folder */
static char g_model[320]; /* g_dir/model: the tiny model with a vocabulary */

static const char* g_texts[] = {"hello world",       "how are you", "reset my pin",  "lost card",
                                "hello how are you", "my card",     "world card pin"};
#define NUM_TEXTS (sizeof g_texts / sizeof g_texts[0])

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

static int succeeded(brisk_status got) {
  if (got != BRISK_OK) fprintf(stderr, "  failed: %s: %s\n", brisk_status_string(got), brisk_last_error());
  return got == BRISK_OK;
}

static int copy_file(const char* from, const char* to) {
  char buf[65536];
  size_t n;
  int ok = 1;
  FILE* in = fopen(from, "rb");
  FILE* out = in ? fopen(to, "wb") : NULL;
  if (in == NULL || out == NULL) {
    fprintf(stderr, "cannot copy %s to %s\n", from, to);
    if (in) fclose(in);
    return 0;
  }
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) ok &= fwrite(buf, 1, n, out) == n;
  fclose(in);
  return (fclose(out) == 0) & ok;
}

/* A whole file as a NUL-terminated string (NULL when it cannot be read); the caller frees it. */
static char* read_all(const char* path) {
  FILE* f = fopen(path, "rb");
  char* text;
  long size;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = malloc((size_t)size + 1);
  if (text != NULL) text[fread(text, 1, (size_t)size, f)] = '\0';
  fclose(f);
  return text;
}

static size_t count_lines(const char* text) {
  size_t n = 0;
  for (; *text; ++text) n += *text == '\n';
  return n;
}

static void path_in(char* buf, size_t len, const char* dir, const char* name) {
  snprintf(buf, len, "%s/%s", dir, name);
}

/* The tiny model in a temporary folder, with a vocabulary (ids < the config's vocab_size of 20). */
static int make_model(const char* data_dir) {
  static const char* files[] = {"config.json", "model.safetensors"};
  static const char vocab[] =
      "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\nhow\nare\nyou\nreset\nmy\npin\nlost\ncard\n";
  char from[512], to[512];
  FILE* f;
  size_t i;
  const char* tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/brisk_capi_prune_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(g_dir) == NULL) return 0;
  path_in(g_model, sizeof g_model, g_dir, "model");
  if (mkdir(g_model, 0700) != 0) return 0;
  for (i = 0; i < 2; ++i) {
    path_in(from, sizeof from, data_dir, files[i]);
    path_in(to, sizeof to, g_model, files[i]);
    if (!copy_file(from, to)) return 0;
  }
  path_in(to, sizeof to, g_model, "vocab.txt");
  f = fopen(to, "wb");
  if (f == NULL) return 0;
  fputs(vocab, f);
  return fclose(f) == 0;
}

static void remove_outputs(const char* out_dir) {
  static const char* names[] = {"sensitivity.csv", "sensitivity.json", "sensitivity.svg"};
  char path[512];
  size_t i;
  for (i = 0; i < 3; ++i) {
    path_in(path, sizeof path, out_dir, names[i]);
    remove(path);
  }
  rmdir(out_dir);
}

static void remove_model(void) {
  static const char* names[] = {"config.json", "model.safetensors", "vocab.txt"};
  char path[512];
  size_t i;
  for (i = 0; i < 3; ++i) {
    path_in(path, sizeof path, g_model, names[i]);
    remove(path);
  }
  rmdir(g_model);
  rmdir(g_dir);
}

/* The three files exist; the CSV has its header and `rows` points; the JSON names the metric. */
static void check_outputs(const char* out_dir, size_t rows, const char* metric_name) {
  char path[512];
  char* csv;
  char* json;
  char* svg;
  path_in(path, sizeof path, out_dir, "sensitivity.csv");
  csv = read_all(path);
  path_in(path, sizeof path, out_dir, "sensitivity.json");
  json = read_all(path);
  path_in(path, sizeof path, out_dir, "sensitivity.svg");
  svg = read_all(path);
  CHECK(csv != NULL && json != NULL && svg != NULL);
  if (csv != NULL) {
    static const char header[] =
        "mode,kind,unit,series,layer,index,sparsity,parameters_removed,metric,drop,drop_per_parameter\n";
    CHECK(strncmp(csv, header, sizeof header - 1) == 0);
    CHECK(count_lines(csv) == rows + 1);
    if (count_lines(csv) != rows + 1) fprintf(stderr, "  %s has %lu lines\n", path, (unsigned long)count_lines(csv));
  }
  if (json != NULL) {
    char needle[128];
    snprintf(needle, sizeof needle, "\"%s\"", metric_name);
    CHECK(strstr(json, needle) != NULL);
  }
  CHECK(svg != NULL && strstr(svg, "<svg") != NULL);
  free(csv);
  free(json);
  free(svg);
}

/* The user's metric: the first call's embeddings are the baseline; the score is the mean cosine against it. */
typedef struct metric_state {
  int calls;
  int fail_on_call; /* > 0: that call returns 7 */
  int write_nan;    /* 1: the score is NaN */
  int bad_shape;    /* rows or dim differed from the first call, or a row was not unit length */
  size_t rows, dim;
  float* baseline;
} metric_state;

static int cosine_metric(void* user_data, const float* embeddings, size_t rows, size_t dim, double* score) {
  metric_state* s = (metric_state*)user_data;
  double sum = 0.0;
  size_t i, j;
  ++s->calls;
  if (s->fail_on_call == s->calls) return 7;
  if (s->write_nan) {
    *score = NAN;
    return 0;
  }
  if (s->baseline == NULL) {
    s->rows = rows;
    s->dim = dim;
    s->baseline = malloc(rows * dim * sizeof(float));
    memcpy(s->baseline, embeddings, rows * dim * sizeof(float));
  }
  if (rows != s->rows || dim != s->dim) {
    s->bad_shape = 1;
    return 1;
  }
  for (i = 0; i < rows; ++i) {
    double dot = 0.0, norm = 0.0;
    for (j = 0; j < dim; ++j) {
      dot += (double)embeddings[i * dim + j] * s->baseline[i * dim + j];
      norm += (double)embeddings[i * dim + j] * embeddings[i * dim + j];
    }
    if (fabs(norm - 1.0) > 1e-3) s->bad_shape = 1;
    sum += dot;
  }
  *score = sum / (double)rows;
  return 0;
}

static void base_options(brisk_sensitivity_options* o, const char* out_dir) {
  brisk_sensitivity_options_init(o, sizeof *o);
  o->model_dir = g_model;
  o->texts = g_texts;
  o->num_texts = NUM_TEXTS;
  o->out_dir = out_dir;
  o->num_threads = 2;
}

static void test_sweep_with_callback(void) {
  static const double levels[2] = {0.0, 0.5};
  char out_dir[512];
  metric_state state;
  brisk_sensitivity_options o;
  memset(&state, 0, sizeof state);
  path_in(out_dir, sizeof out_dir, g_dir, "sweep");
  base_options(&o, out_dir);
  o.levels = levels;
  o.num_levels = 2;
  o.metric = cosine_metric;
  o.metric_user_data = &state;
  o.metric_name = "my_cosine";
  CHECK(succeeded(brisk_prune_sensitivity(&o)));
  CHECK(state.calls == 1 + 3 * 2 * 1); /* the baseline, then 3 layers x (heads, ffn) x 1 non-zero level */
  CHECK(state.rows == NUM_TEXTS && state.dim == 16 && !state.bad_shape);
  check_outputs(out_dir, 3 * 2 * 2, "my_cosine");
  remove_outputs(out_dir);
  free(state.baseline);
}

/* metric_name NULL with a metric: "user". The tensor granularity: 6 linears per layer. */
static void test_tensor_sweep(void) {
  static const double levels[1] = {0.5};
  char out_dir[512];
  metric_state state;
  brisk_sensitivity_options o;
  memset(&state, 0, sizeof state);
  path_in(out_dir, sizeof out_dir, g_dir, "tensor");
  base_options(&o, out_dir);
  o.granularity = "tensor";
  o.levels = levels;
  o.num_levels = 1;
  o.metric = cosine_metric;
  o.metric_user_data = &state;
  CHECK(succeeded(brisk_prune_sensitivity(&o)));
  CHECK(state.calls == 1 + 3 * 6);
  CHECK(!state.bad_shape);
  check_outputs(out_dir, 3 * 6, "user");
  remove_outputs(out_dir);
  free(state.baseline);
}

/* Each layer, then each of the 4 heads of each layer, removed alone. */
static void test_zero_mode(void) {
  char out_dir[512];
  metric_state state;
  brisk_sensitivity_options o;
  memset(&state, 0, sizeof state);
  path_in(out_dir, sizeof out_dir, g_dir, "zero");
  base_options(&o, out_dir);
  o.mode = "zero";
  o.metric = cosine_metric;
  o.metric_user_data = &state;
  o.metric_name = "zero_cosine";
  CHECK(succeeded(brisk_prune_sensitivity(&o)));
  CHECK(state.calls == 1 + 3 + 3 * 4);
  check_outputs(out_dir, 3 + 3 * 4, "zero_cosine");
  remove_outputs(out_dir);
  free(state.baseline);
}

/* metric NULL: the built-in mean cosine, with the default levels and magnitude importance. */
static void test_builtin_metric(void) {
  char out_dir[512];
  brisk_sensitivity_options o;
  path_in(out_dir, sizeof out_dir, g_dir, "builtin");
  base_options(&o, out_dir);
  o.importance = "l2";
  o.max_seq_len = 8;
  CHECK(succeeded(brisk_prune_sensitivity(&o)));
  check_outputs(out_dir, 3 * 2 * 10, "mean_cosine");
  remove_outputs(out_dir);
  /* the default importance (activation) and num_threads 0 */
  base_options(&o, out_dir);
  o.num_threads = 0;
  CHECK(succeeded(brisk_prune_sensitivity(&o)));
  check_outputs(out_dir, 3 * 2 * 10, "mean_cosine");
  remove_outputs(out_dir);
}

static void test_callback_errors(void) {
  char out_dir[512];
  metric_state state;
  brisk_sensitivity_options o;
  memset(&state, 0, sizeof state);
  path_in(out_dir, sizeof out_dir, g_dir, "failing");
  base_options(&o, out_dir);
  o.metric = cosine_metric;
  o.metric_user_data = &state;
  state.fail_on_call = 3;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_CANCELLED, "metric callback returned 7"));
  CHECK(state.calls == 3); /* stopped at once */
  free(state.baseline);
  memset(&state, 0, sizeof state);
  state.write_nan = 1;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "NaN"));
  CHECK(state.calls == 1);
  remove_outputs(out_dir); /* nothing should be there; removes the folder if it was made */
}

static void test_bad_options(void) {
  static const double above[2] = {0.0, 1.0};
  static const double below[1] = {-0.1};
  double nan_level[1];
  const char* with_null[3];
  const char* with_bad_utf8[3];
  char out_dir[512];
  brisk_sensitivity_options o;
  nan_level[0] = NAN;
  with_null[0] = "hello";
  with_null[1] = NULL;
  with_null[2] = "world";
  with_bad_utf8[0] = "hello";
  with_bad_utf8[1] = "world";
  with_bad_utf8[2] = "caf\xc3 x";
  path_in(out_dir, sizeof out_dir, g_dir, "bad");

  CHECK(failed_with(brisk_sensitivity_options_init(NULL, sizeof o), BRISK_INVALID_ARGUMENT, "options is NULL"));
  CHECK(failed_with(brisk_sensitivity_options_init(&o, 4), BRISK_INVALID_ARGUMENT, "struct_size is 4"));
  CHECK(failed_with(brisk_prune_sensitivity(NULL), BRISK_INVALID_ARGUMENT, "options is NULL"));

  base_options(&o, out_dir);
  o.struct_size = 8;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "struct_size is 8"));

  base_options(&o, out_dir);
  o.texts = NULL;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "options->texts is NULL"));
  base_options(&o, out_dir);
  o.num_texts = 0;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "num_texts is 0"));
  base_options(&o, out_dir);
  o.texts = with_null;
  o.num_texts = 3;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "texts[1] is NULL"));
  o.texts = with_bad_utf8;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "texts[2]"));
  CHECK(strstr(brisk_last_error(), "UTF-8") != NULL);

  base_options(&o, NULL);
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "options->out_dir is NULL"));
  base_options(&o, "");
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "out_dir is \"\""));

  base_options(&o, out_dir);
  o.mode = "prune";
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "mode is \"prune\"; expected \"sweep\" or"));
  base_options(&o, out_dir);
  o.granularity = "element";
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "granularity is \"element\""));
  base_options(&o, out_dir);
  o.importance = "taylor";
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT,
                    "importance is \"taylor\"; expected \"activation\", \"l1\" or \"l2\""));

  base_options(&o, out_dir);
  o.levels = above;
  o.num_levels = 2;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT,
                    "levels[1] is 1; expected a fraction in [0, 1)"));
  o.levels = below;
  o.num_levels = 1;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "levels[0] is -0.1"));
  o.levels = nan_level;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "levels[0] is nan"));
  o.levels = below;
  o.num_levels = 0;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "num_levels is 0"));

  base_options(&o, out_dir);
  o.num_threads = 5000;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "num_threads is 5000"));
  base_options(&o, out_dir);
  o.max_seq_len = 1;
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_INVALID_ARGUMENT, "max_seq_len is 1"));

  base_options(&o, out_dir);
  o.model_dir = "/nonexistent/brisk-model";
  CHECK(failed_with(brisk_prune_sensitivity(&o), BRISK_NOT_FOUND, "/nonexistent/brisk-model"));
  rmdir(out_dir); /* no call above may have written anything */
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s TESTS_DATA/tiny_bert4\n", argv[0]);
    return 2;
  }
  if (!make_model(argv[1])) {
    fprintf(stderr, "cannot set up the tiny model from %s in a temporary folder\n", argv[1]);
    return 1;
  }
  test_bad_options();
  test_callback_errors();
  test_sweep_with_callback();
  test_tensor_sweep();
  test_zero_mode();
  test_builtin_metric();
  remove_model();
  printf("%d checks passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
