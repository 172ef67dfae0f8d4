// TorchScript pruning against torch itself: tests/data/make_tiny_torchscript.py scripted three tiny modules and
// recorded, with torch 1.13, their outputs and what torch.nn.utils.prune.l1_unstructured / global_unstructured do
// to them (zero counts, zero positions, outputs). brisk loads the same modules through libtorch and must agree.
// In a build without libtorch every function returns Unimplemented naming BRISK_WITH_TORCH, and the
// libtorch-only tests return early after checking that.
#include "brisk/prune/torchscript.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using brisk::DType;
using brisk::PackedSequences;
using brisk::Tensor;
using brisk::prune::TorchScriptModel;
using brisk::testing::TempDir;
using json = nlohmann::json;

std::string msg(const absl::Status& s) { return std::string(s.message()); }
bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

fs::path data_dir() { return brisk::testing::test_data_dir() / "tiny_torchscript"; }
std::string module_path() { return (data_dir() / "module.pt").string(); }

const json& golden() {
  static const json g = [] {
    std::ifstream in(data_dir() / "golden.json");
    return json::parse(in);
  }();
  return g;
}

// False (after checking the message) in a build without libtorch.
bool have_torch() {
  auto m = TorchScriptModel::load(module_path());
  if (m.status().code() == absl::StatusCode::kUnimplemented) {
    CHECK(contains(msg(m.status()), "BRISK_WITH_TORCH"));
    brisk::testing::skip_test_case("brisk was built without libtorch (BRISK_WITH_TORCH=OFF)");
    return false;
  }
  REQUIRE(m.ok());
  return true;
}

TorchScriptModel load(const std::string& path = module_path()) {
  auto m = TorchScriptModel::load(path);
  INFO(m.status());
  REQUIRE(m.ok());
  return std::move(*m);
}

Tensor i64_tensor(const json& rows) {
  const int64_t b = int64_t(rows.size()), t = int64_t(rows[0].size());
  Tensor x = Tensor::empty({b, t}, DType::kI64).value();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < t; ++j) x.data<int64_t>()[i * t + j] = rows[size_t(i)][size_t(j)].get<int64_t>();
  return x;
}

std::vector<Tensor> golden_inputs() {
  return {i64_tensor(golden()["inputs"]["input_ids"]), i64_tensor(golden()["inputs"]["attention_mask"])};
}

std::vector<float> values(const Tensor& t) {
  REQUIRE(t.dtype() == DType::kF32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

void check_close(const std::vector<float>& got, const json& want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i].get<double>()));
  INFO("largest difference " << worst);
  CHECK(worst <= tol);
}

std::vector<float> run(const TorchScriptModel& m, const std::vector<Tensor>& inputs = golden_inputs()) {
  auto out = m.forward(inputs);
  INFO(out.status());
  REQUIRE(out.ok());
  REQUIRE(!out->empty());
  return values((*out)[0]);
}

std::vector<std::string> floating_parameter_names() {
  std::vector<std::string> names;
  for (const json& p : golden()["parameters"])
    if (p["dtype"] == "float32") names.push_back(p["name"]);
  return names;
}

std::map<std::string, std::vector<float>> all_parameters(const TorchScriptModel& m) {
  std::map<std::string, std::vector<float>> out;
  for (const std::string& name : floating_parameter_names()) out[name] = values(m.parameter(name).value());
  return out;
}

int64_t zeros(const std::vector<float>& v) { return std::count(v.begin(), v.end(), 0.0f); }

std::vector<int64_t> zero_indices(const std::vector<float>& v) {
  std::vector<int64_t> idx;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == 0.0f) idx.push_back(int64_t(i));
  return idx;
}

// What torch did: zeros per floating parameter, the zero positions of the pruned ones, and the output.
void check_matches_torch(const TorchScriptModel& m, const json& record) {
  const auto params = all_parameters(m);
  for (const auto& [name, v] : params) {
    INFO(name);
    CHECK(zeros(v) == record["zeros"][name].get<int64_t>());
  }
  for (const auto& [name, idx] : record["zero_indices"].items()) {
    INFO(name);
    CHECK(zero_indices(params.at(name)) == idx.get<std::vector<int64_t>>());
  }
  check_close(run(m), record["output"]);
}

// Mean row cosine of two [rows, features] float lists, from the golden data alone.
double golden_cosine(const json& a, const json& b, int64_t features) {
  const size_t rows = a.size() / size_t(features);
  double total = 0;
  for (size_t r = 0; r < rows; ++r) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t k = 0; k < size_t(features); ++k) {
      const double x = a[r * size_t(features) + k].get<double>(), y = b[r * size_t(features) + k].get<double>();
      ab += x * y;
      aa += x * x;
      bb += y * y;
    }
    total += ab / std::sqrt(aa * bb);
  }
  return total / double(rows);
}

// Options built field by field (designated initializers that skip fields trip -Wmissing-field-initializers).
brisk::StatusOr<brisk::prune::TorchPruneResult> prune(TorchScriptModel& m, double amount, bool global = false,
                                                      std::vector<std::string> parameters = {}) {
  brisk::prune::TorchPruneOptions opts;
  opts.amount = amount;
  opts.global = global;
  opts.parameters = std::move(parameters);
  return brisk::prune::torchscript_prune_unstructured(m, opts);
}

brisk::prune::TorchSensitivityOptions sensitivity_options(brisk::prune::TorchScriptMetric metric,
                                                          std::vector<std::string> parameters = {},
                                                          std::string mode = "sweep") {
  brisk::prune::TorchSensitivityOptions opts;
  opts.metric = std::move(metric);
  opts.parameters = std::move(parameters);
  opts.mode = std::move(mode);
  return opts;
}

PackedSequences golden_batch(bool with_types) {
  PackedSequences batch;
  const json& ids = golden()["inputs"]["input_ids"];
  const json& mask = golden()["inputs"]["attention_mask"];
  const json& types = golden()["inputs"]["token_type_ids"];
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<int32_t> seq;
    for (size_t j = 0; j < ids[i].size(); ++j) {
      if (mask[i][j].get<int>() == 0) continue;
      seq.push_back(ids[i][j].get<int32_t>());
      if (with_types) batch.token_type_ids.push_back(types[i][j].get<int32_t>());
    }
    batch.add(seq);
  }
  return batch;
}

}  // namespace

TEST_CASE("torchscript: load, parameters and forward match torch", "[prune][torchscript]") {
  if (!have_torch()) return;
  TorchScriptModel m = load();
  std::vector<std::string> want;
  for (const json& p : golden()["parameters"]) want.push_back(p["name"]);
  CHECK(m.parameter_names() == want);

  const auto info = m.parameter_info();
  REQUIRE(info.size() == golden()["parameters"].size());
  for (size_t i = 0; i < info.size(); ++i) {
    const json& p = golden()["parameters"][i];
    CHECK(info[i].name == p["name"].get<std::string>());
    CHECK(info[i].shape == p["shape"].get<std::vector<int64_t>>());
    CHECK(info[i].floating == (p["dtype"] == "float32"));
    CHECK(info[i].dtype == (p["dtype"] == "float32" ? "Float" : "Long"));
  }

  auto w = m.parameter("ffn_in.weight");
  REQUIRE(w.ok());
  CHECK(w->shape() == std::vector<int64_t>{32, 16});
  CHECK(w->owns_storage());

  auto out = m.forward(golden_inputs());
  REQUIRE(out.ok());
  REQUIRE(out->size() == 1);
  CHECK((*out)[0].shape() == golden()["output_shape"].get<std::vector<int64_t>>());
  check_close(values((*out)[0]), golden()["reference"]);

  // i32 inputs become torch ints; the module's embedding accepts them.
  std::vector<Tensor> i32;
  for (const Tensor& t : golden_inputs()) {
    Tensor x = Tensor::empty(t.shape(), DType::kI32).value();
    for (int64_t i = 0; i < t.numel(); ++i) x.data<int32_t>()[i] = int32_t(t.data<int64_t>()[i]);
    i32.push_back(x);
  }
  check_close(run(m, i32), golden()["reference"]);
}

TEST_CASE("torchscript: clone is deep and set_parameter writes in place", "[prune][torchscript]") {
  if (!have_torch()) return;
  TorchScriptModel m = load();
  auto copy = m.clone();
  REQUIRE(copy.ok());
  Tensor zero = Tensor::zeros({32, 16}, DType::kF32).value();
  REQUIRE(copy->set_parameter("ffn_in.weight", zero).ok());
  CHECK(zeros(values(copy->parameter("ffn_in.weight").value())) == 512);
  CHECK(zeros(values(m.parameter("ffn_in.weight").value())) == 0);
  check_close(run(m), golden()["reference"]);
  std::vector<float> changed = run(*copy);
  std::vector<float> ref = run(m);
  CHECK(changed != ref);

  auto bad_shape = m.set_parameter("ffn_in.weight", Tensor::zeros({16, 32}, DType::kF32).value());
  CHECK(!bad_shape.ok());
  CHECK(contains(msg(bad_shape), "has shape [16, 32]; expected [32, 16]"));
  auto bad_name = m.set_parameter("nope", zero);
  CHECK(contains(msg(bad_name), "'nope'"));
  CHECK(contains(msg(bad_name), "ffn_in.weight"));
  auto long_param = m.parameter("step");
  CHECK(msg(long_param.status()) == "parameter 'step' has dtype Long; expected a floating-point parameter");
}

TEST_CASE("torchscript: l1 pruning of one parameter matches torch.nn.utils.prune", "[prune][torchscript]") {
  if (!have_torch()) return;
  TorchScriptModel m = load();
  const json& rec = golden()["l1"];
  auto r = prune(m, rec["amount"].get<double>(), false, {rec["parameter"].get<std::string>()});
  INFO(r.status());
  REQUIRE(r.ok());
  CHECK(r->parameters == std::vector<std::string>{"ffn_in.weight"});
  CHECK(r->pruned == 154);  // round(0.3 * 512)
  CHECK(r->total == 512);
  check_matches_torch(m, rec);
}

TEST_CASE("torchscript: global pruning matches torch's global_unstructured", "[prune][torchscript]") {
  if (!have_torch()) return;
  TorchScriptModel m = load();
  const json& rec = golden()["global"];
  auto r = prune(m, rec["amount"].get<double>(), true, rec["parameters"].get<std::vector<std::string>>());
  INFO(r.status());
  REQUIRE(r.ok());
  CHECK(r->parameters == std::vector<std::string>{"ffn_in.weight", "ffn_out.weight"});
  CHECK(r->pruned == 410);  // round(0.4 * 1024), split unevenly between the two
  CHECK(r->total == 1024);
  check_matches_torch(m, rec);

  // Per parameter instead of global: each one gets exactly round(0.4 * 512) = 205.
  TorchScriptModel each = load();
  auto r2 = prune(each, 0.4, false, {"ffn_out.weight", "ffn_in.weight"});
  REQUIRE(r2.ok());
  CHECK(r2->parameters == std::vector<std::string>{"ffn_in.weight", "ffn_out.weight"});  // module order
  CHECK(zeros(values(each.parameter("ffn_in.weight").value())) == 205);
  CHECK(zeros(values(each.parameter("ffn_out.weight").value())) == 205);

  // The default selection: every floating parameter of rank >= 2 (the embedding too, never biases or norms).
  TorchScriptModel all = load();
  auto r3 = prune(all, 0.5);
  REQUIRE(r3.ok());
  CHECK(r3->parameters == std::vector<std::string>{"embed.weight", "ffn_in.weight", "ffn_out.weight"});
  CHECK(r3->pruned == 3 * 256);
  CHECK(zeros(values(all.parameter("ffn_in.bias").value())) == 0);
  CHECK(zeros(values(all.parameter("norm.weight").value())) == 0);
}

TEST_CASE("torchscript: a saved pruned module loads back identical", "[prune][torchscript]") {
  if (!have_torch()) return;
  TempDir dir;
  TorchScriptModel m = load();
  REQUIRE(prune(m, 0.4, true).ok());
  const std::string path = dir.file("pruned.pt");
  REQUIRE(m.save(path).ok());
  CHECK(!fs::exists(path + ".tmp"));
  TorchScriptModel back = load(path);
  CHECK(back.parameter_names() == m.parameter_names());
  CHECK(all_parameters(back) == all_parameters(m));
  CHECK(run(back) == run(m));
  CHECK(run(back) != run(load()));

  auto bad = m.save(dir.file("no/such/dir/x.pt"));
  CHECK(!bad.ok());
  CHECK(contains(msg(bad), "x.pt"));
}

TEST_CASE("torchscript: token_inputs pads to the module's forward() arguments", "[prune][torchscript]") {
  if (!have_torch()) return;
  TorchScriptModel m = load();
  auto two = brisk::prune::token_inputs(m, {golden_batch(true), golden_batch(false)});
  INFO(two.status());
  REQUIRE(two.ok());
  REQUIRE(two->size() == 2);
  for (const auto& set : *two) {
    REQUIRE(set.size() == 2);  // forward(input_ids, attention_mask)
    CHECK(set[0].dtype() == DType::kI64);
    CHECK(set[0].shape() == std::vector<int64_t>{3, 6});
    CHECK(set[1].shape() == std::vector<int64_t>{3, 6});
    const std::vector<Tensor> want = golden_inputs();
    CHECK(std::memcmp(set[0].raw_data(), want[0].raw_data(), want[0].nbytes()) == 0);
    CHECK(std::memcmp(set[1].raw_data(), want[1].raw_data(), want[1].nbytes()) == 0);
    check_close(run(m, set), golden()["reference"]);
  }

  TorchScriptModel three = load((data_dir() / "three_inputs.pt").string());
  auto args = three.forward_arguments();
  REQUIRE(args.ok());
  REQUIRE(args->size() == 3);
  CHECK((*args)[2].name == "token_type_ids");
  auto sets = brisk::prune::token_inputs(three, {golden_batch(true), golden_batch(false)});
  REQUIRE(sets.ok());
  REQUIRE((*sets)[0].size() == 3);
  const Tensor want_types = i64_tensor(golden()["inputs"]["token_type_ids"]);
  // The golden token types are 0 at padding, as token_inputs pads.
  CHECK(std::memcmp((*sets)[0][2].raw_data(), want_types.raw_data(), want_types.nbytes()) == 0);
  const Tensor& no_types = (*sets)[1][2];
  CHECK(std::all_of(no_types.data<int64_t>(), no_types.data<int64_t>() + no_types.numel(),
                    [](int64_t v) { return v == 0; }));

  // A dict output comes back in insertion order: last_hidden_state, then pooled.
  auto outs = three.forward((*sets)[0]);
  REQUIRE(outs.ok());
  REQUIRE(outs->size() == 2);
  const json& g = golden()["three_inputs"]["outputs"];
  CHECK((*outs)[0].shape() == g["last_hidden_state"]["shape"].get<std::vector<int64_t>>());
  check_close(values((*outs)[0]), g["last_hidden_state"]["values"]);
  CHECK((*outs)[1].shape() == g["pooled"]["shape"].get<std::vector<int64_t>>());
  check_close(values((*outs)[1]), g["pooled"]["values"]);

  TorchScriptModel four = load((data_dir() / "four_inputs.pt").string());
  auto too_many = brisk::prune::token_inputs(four, {golden_batch(false)});
  CHECK(!too_many.ok());
  CHECK(contains(msg(too_many.status()), "takes 4 argument(s)"));
  CHECK(contains(msg(too_many.status()), "expected 1, 2 or 3"));

  PackedSequences empty;
  CHECK(!brisk::prune::token_inputs(m, {empty}).ok());
  PackedSequences bad_types = golden_batch(false);
  bad_types.token_type_ids = {0, 1};
  auto bt = brisk::prune::token_inputs(m, {bad_types});
  CHECK(contains(msg(bt.status()), "2 token_type_ids; expected 14"));
}

TEST_CASE("torchscript: output_cosine_metric", "[prune][torchscript]") {
  if (!have_torch()) return;
  TorchScriptModel m = load();
  auto metric = brisk::prune::output_cosine_metric(m, {golden_inputs()});
  REQUIRE(metric.ok());
  auto self = (*metric)(m);
  REQUIRE(self.ok());
  CHECK(*self == Approx(1.0).margin(1e-9));

  // Against torch's l1-pruned output: the cosine of the golden outputs, computed from the JSON alone.
  TorchScriptModel pruned = load();
  REQUIRE(prune(pruned, 0.3, false, {"ffn_in.weight"}).ok());
  auto score = (*metric)(pruned);
  REQUIRE(score.ok());
  const double want = golden_cosine(golden()["l1"]["output"], golden()["reference"], 16);
  CHECK(want < 0.9999);
  CHECK(*score == Approx(want).margin(1e-5));

  // A [B, T, H] output with an attention mask is mean-pooled over the mask's tokens before the cosine.
  TorchScriptModel three = load((data_dir() / "three_inputs.pt").string());
  std::vector<Tensor> inputs = golden_inputs();
  inputs.push_back(i64_tensor(golden()["inputs"]["token_type_ids"]));
  auto metric3 = brisk::prune::output_cosine_metric(three, {inputs});
  REQUIRE(metric3.ok());
  auto candidate = three.clone();
  REQUIRE(candidate.ok());
  std::vector<float> w = values(three.parameter("dense.weight").value());
  for (size_t i = 0; i < w.size(); i += 3) w[i] = 0.0f;
  Tensor wt = Tensor::empty({16, 16}, DType::kF32).value();
  std::memcpy(wt.raw_data(), w.data(), w.size() * sizeof(float));
  REQUIRE(candidate->set_parameter("dense.weight", wt).ok());
  const json& ref_hidden = golden()["three_inputs"]["outputs"]["last_hidden_state"]["values"];
  const std::vector<float> cand_hidden = run(*candidate, inputs);
  const json& mask = golden()["inputs"]["attention_mask"];
  double total = 0;
  for (size_t b = 0; b < 3; ++b) {
    std::vector<double> a(16, 0.0), r(16, 0.0);
    int n = 0;
    for (size_t t = 0; t < 6; ++t) {
      if (mask[b][t].get<int>() == 0) continue;
      ++n;
      for (size_t k = 0; k < 16; ++k) {
        a[k] += cand_hidden[(b * 6 + t) * 16 + k];
        r[k] += ref_hidden[(b * 6 + t) * 16 + k].get<double>();
      }
    }
    double ab = 0, aa = 0, rr = 0;
    for (size_t k = 0; k < 16; ++k) {
      ab += a[k] / n * r[k] / n;
      aa += a[k] / n * a[k] / n;
      rr += r[k] / n * r[k] / n;
    }
    total += ab / std::sqrt(aa * rr);
  }
  auto pooled_score = (*metric3)(*candidate);
  REQUIRE(pooled_score.ok());
  CHECK(total / 3 < 0.9999);
  CHECK(*pooled_score == Approx(total / 3).margin(1e-6));

  // A candidate whose output has another shape is an error, as is no input at all.
  auto other = (*metric3)(m);
  CHECK(!other.ok());
  CHECK(!brisk::prune::output_cosine_metric(m, {}).ok());
}

TEST_CASE("torchscript: sensitivity sweep", "[prune][torchscript]") {
  if (!have_torch()) return;
  TorchScriptModel m = load();
  const auto before = all_parameters(m);
  const std::vector<float> output_before = run(m);
  auto metric = brisk::prune::output_cosine_metric(m, {golden_inputs()});
  REQUIRE(metric.ok());
  std::vector<int64_t> progress;
  int64_t progress_total = 0;
  brisk::prune::TorchSensitivityOptions opts;
  opts.levels = {0.0, 0.3, 0.6, 0.9};
  opts.metric = *metric;
  opts.progress = [&](std::string_view, int64_t done, int64_t total) {
    progress.push_back(done);
    progress_total = total;
  };
  auto t = brisk::prune::torchscript_sensitivity(m, opts);
  INFO(t.status());
  REQUIRE(t.ok());
  CHECK(t->mode == "sweep");
  CHECK(t->metric_name == "output_cosine");
  CHECK(t->baseline == Approx(1.0).margin(1e-9));
  REQUIRE(t->points.size() == 12);  // embed.weight, ffn_in.weight, ffn_out.weight x 4 levels
  CHECK(progress == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(progress_total == 12);
  const std::vector<std::string> names = {"embed.weight", "ffn_in.weight", "ffn_out.weight"};
  for (size_t p = 0; p < 3; ++p) {
    for (size_t l = 0; l < 4; ++l) {
      const auto& pt = t->points[p * 4 + l];
      INFO(pt.unit << " at " << pt.sparsity);
      CHECK(pt.unit == names[p]);
      CHECK(pt.series == names[p]);
      CHECK(pt.kind == "tensor");
      CHECK(pt.layer == -1);
      CHECK(pt.index == -1);
      CHECK(pt.sparsity == opts.levels[l]);
      CHECK(pt.parameters_removed == int64_t(std::nearbyint(opts.levels[l] * 512)));
    }
    const auto* pts = &t->points[p * 4];
    CHECK(pts[0].metric == t->baseline);  // level 0 prunes nothing
    CHECK(pts[1].metric < t->baseline);
    CHECK(pts[2].metric < pts[1].metric);  // more pruned, further from the unpruned output
    CHECK(pts[3].metric < pts[2].metric);
    CHECK(pts[3].metric < 0.995);
  }
  // ffn_in.weight at 0.3 is exactly torch's l1_unstructured(amount=0.3) run.
  CHECK(t->points[5].metric == Approx(golden_cosine(golden()["l1"]["output"], golden()["reference"], 16)).margin(1e-5));

  // The model is left unchanged.
  CHECK(all_parameters(m) == before);
  CHECK(run(m) == output_before);
}

TEST_CASE("torchscript: sensitivity zero mode", "[prune][torchscript]") {
  if (!have_torch()) return;
  TorchScriptModel m = load();
  const auto before = all_parameters(m);
  auto metric = brisk::prune::output_cosine_metric(m, {golden_inputs()});
  REQUIRE(metric.ok());
  auto t =
      brisk::prune::torchscript_sensitivity(m, sensitivity_options(*metric, {"ffn_in.bias", "ffn_out.weight"}, "zero"));
  INFO(t.status());
  REQUIRE(t.ok());
  CHECK(t->mode == "zero");
  REQUIRE(t->points.size() == 2);
  CHECK(t->points[0].unit == "ffn_in.bias");  // module order
  CHECK(t->points[0].parameters_removed == 32);
  CHECK(t->points[1].unit == "ffn_out.weight");
  CHECK(t->points[1].parameters_removed == 512);
  for (const auto& pt : t->points) {
    CHECK(pt.sparsity == 1.0);
    CHECK(pt.metric < t->baseline - 1e-4);
  }
  // Zeroing ffn_out.weight leaves LayerNorm(x + ffn_out.bias): check against that, computed by a modified copy.
  auto copy = m.clone();
  REQUIRE(copy.ok());
  REQUIRE(copy->set_parameter("ffn_out.weight", Tensor::zeros({16, 32}, DType::kF32).value()).ok());
  CHECK(t->points[1].metric == Approx((*metric)(*copy).value()).margin(1e-12));
  CHECK(all_parameters(m) == before);
}

TEST_CASE("torchscript: bad inputs give errors, not crashes", "[prune][torchscript]") {
  if (!have_torch()) return;
  TempDir dir;
  auto missing = TorchScriptModel::load(dir.file("absent.pt"));
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(contains(msg(missing.status()), "absent.pt"));

  std::ifstream in(module_path(), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 1000);
  for (size_t cut : {bytes.size() / 2, bytes.size() - 10, size_t(100), size_t(0)}) {
    const std::string path = dir.file("cut_" + std::to_string(cut) + ".pt");
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(cut));
    auto t = TorchScriptModel::load(path);
    INFO(cut);
    CHECK(t.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(t.status()), path));
  }
  auto not_module = TorchScriptModel::load((data_dir() / "golden.json").string());
  CHECK(not_module.status().code() == absl::StatusCode::kInvalidArgument);
  auto directory = TorchScriptModel::load(dir.path.string());
  CHECK(!directory.ok());

  TorchScriptModel m = load();
  auto metric = brisk::prune::output_cosine_metric(m, {golden_inputs()});
  REQUIRE(metric.ok());
  const auto before = all_parameters(m);

  auto unknown = brisk::prune::torchscript_sensitivity(m, sensitivity_options(*metric, {"ffn_in.weigth"}));
  CHECK(!unknown.ok());
  CHECK(contains(msg(unknown.status()), "parameter 'ffn_in.weigth' is not in the module"));
  CHECK(contains(msg(unknown.status()), "ffn_in.weight, ffn_in.bias"));
  auto long_param = brisk::prune::torchscript_sensitivity(m, sensitivity_options(*metric, {"step"}));
  CHECK(msg(long_param.status()) == "parameter 'step' has dtype Long; expected a floating-point parameter");
  auto no_metric = brisk::prune::torchscript_sensitivity(m, {});
  CHECK(contains(msg(no_metric.status()), "no metric"));
  auto bad_mode = brisk::prune::torchscript_sensitivity(m, sensitivity_options(*metric, {}, "swep"));
  CHECK(contains(msg(bad_mode.status()), "mode is 'swep'"));
  brisk::prune::TorchSensitivityOptions levels = sensitivity_options(*metric);
  levels.levels = {0.5, 1.0};
  auto bad_level = brisk::prune::torchscript_sensitivity(m, levels);
  CHECK(contains(msg(bad_level.status()), "expected a fraction in [0, 1)"));
  auto failing_metric = brisk::prune::torchscript_sensitivity(
      m, sensitivity_options(
             [](const TorchScriptModel&) -> brisk::StatusOr<double> { return absl::InternalError("boom"); }));
  CHECK(contains(msg(failing_metric.status()), "boom"));

  for (double amount : {1.0, -0.1, std::numeric_limits<double>::quiet_NaN()}) {
    auto r = prune(m, amount);
    INFO(amount);
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(contains(msg(r.status()), "expected a fraction in [0, 1)"));
  }
  auto partly_unknown = prune(m, 0.5, false, {"ffn_in.weight", "nope"});
  CHECK(contains(msg(partly_unknown.status()), "'nope'"));
  auto prune_long = prune(m, 0.5, false, {"step"});
  CHECK(msg(prune_long.status()) == "parameter 'step' has dtype Long; expected a floating-point parameter");
  CHECK(all_parameters(m) == before);  // nothing was written by a failed call

  // forward() with the wrong inputs: an error naming the file.
  auto one_input = m.forward({golden_inputs()[0]});
  CHECK(!one_input.ok());
  CHECK(contains(msg(one_input.status()), "module.pt"));
  auto floats_for_ids = m.forward({Tensor::zeros({2, 3}, DType::kF32).value(), golden_inputs()[1]});
  CHECK(!floats_for_ids.ok());
  auto u8 = m.forward({Tensor::zeros({2, 3}, DType::kU8).value(), golden_inputs()[1]});
  CHECK(contains(msg(u8.status()), "expected f32, i64 or i32"));
  auto out_of_range = m.forward({Tensor::zeros({3, 6}, DType::kI64).value(), golden_inputs()[1]});
  CHECK(out_of_range.ok());  // id 0 is valid; a large id is not:
  Tensor big = Tensor::zeros({3, 6}, DType::kI64).value();
  big.data<int64_t>()[0] = 1000;
  CHECK(!m.forward({big, golden_inputs()[1]}).ok());
  check_close(run(m), golden()["reference"]);
}
