// read_torch_checkpoint: a torch.save'd state dict (pytorch_model.bin) to named tensors. Compiled only when
// libtorch is found (BRISK_HAVE_TORCH); this is the only file that includes libtorch headers.
//
// libtorch 1.13's torch::pickle_load cannot read what Python's model.state_dict() produces: its unpickler turns
// collections.OrderedDict into None ("Expected GenericDict but got None", pytorch/pytorch#100741, fixed only in
// 2.6) and cannot apply BUILD to the dict's _metadata. So this file uses libtorch for the zip container only
// (caffe2::serialize::PyTorchStreamReader: archive prefix, records, version checks) and interprets data.pkl with
// a small restricted pickle machine of its own. It knows just the globals a state dict uses (OrderedDict,
// torch._utils._rebuild_tensor[_v2], _rebuild_parameter, torch.*Storage); any other global becomes an opaque
// value, and nothing is ever executed. All values live in an arena, so hostile input cannot build deep object
// graphs whose destruction overflows the stack; sizes, offsets and strides are checked against each record.
// The arena is bounded against the input: values, strings, item lists and memo entries may take at most
// kArenaBytesPerPickleByte x the size of data.pkl + kArenaSlackBytes (see PickleMachine::charge), so a small
// hostile pickle cannot make the reader hold ~100x its size (about 200 bytes per one-byte opcode otherwise).
#include <caffe2/serialize/inline_container.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "brisk/model/weights.h"
#include "zip_directory.h"

namespace brisk {

namespace {

enum class StorageType : uint8_t { kFloat, kHalf, kBFloat16, kDouble, kLong, kInt, kShort, kChar, kByte, kBool };

struct StorageTypeInfo {
  const char* name;
  StorageType type;
  size_t elem;
};

constexpr StorageTypeInfo kStorageTypes[] = {
    {"FloatStorage", StorageType::kFloat, 4},       {"HalfStorage", StorageType::kHalf, 2},
    {"BFloat16Storage", StorageType::kBFloat16, 2}, {"DoubleStorage", StorageType::kDouble, 8},
    {"LongStorage", StorageType::kLong, 8},         {"IntStorage", StorageType::kInt, 4},
    {"ShortStorage", StorageType::kShort, 2},       {"CharStorage", StorageType::kChar, 1},
    {"ByteStorage", StorageType::kByte, 1},         {"BoolStorage", StorageType::kBool, 1},
};

struct Value {
  enum Kind : uint8_t {
    kNone,
    kBool,
    kInt,
    kFloat,
    kStr,
    kBytes,
    kTuple,
    kList,
    kDict,
    kGlobal,
    kStorage,
    kTensor,
    kObject,
    kMark
  };
  Kind kind = kNone;
  int64_t i = 0;
  double f = 0;
  std::string s, s2;                         // str/bytes; global: module (s) and name (s2); storage: key (s)
  std::vector<Value*> items;                 // tuple, list; dict: key, value, key, value ...
  const StorageTypeInfo* storage = nullptr;  // storage, and the tensor's storage type
  int64_t storage_numel = 0;
  Value* tensor_storage = nullptr;  // tensor
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
};

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& what) { throw CheckpointError(what); }

class PickleMachine {
 public:
  // A torch.save'd state dict needs about 35 bytes of arena per byte of data.pkl (measured: 36 for
  // tests/data/tiny_bert, 33 for bad_checkpoints/good.bin), so 64 leaves room; the slack covers small pickles.
  static constexpr uint64_t kArenaBytesPerPickleByte = 64;
  static constexpr uint64_t kArenaSlackBytes = 1 << 20;

  PickleMachine(const char* data, size_t size)
      : p_(data), end_(data + size), begin_(data), arena_limit_(kArenaBytesPerPickleByte * size + kArenaSlackBytes) {}

  Value* run() {
    while (true) {
      if (stack_.size() > kMaxStack) fail("pickle stack grows beyond 1M entries; expected a state dict");
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;    // PROTO
        case 0x95: bytes(8); break;  // FRAME
        case '.': {                  // STOP
          if (stack_.empty()) fail("pickle STOP with an empty stack");
          return stack_.back();
        }
        case '(': push(make(Value::kMark)); break;
        case '0': pop(); break;        // POP
        case '1': pop_mark(); break;   // POP_MARK
        case '2': push(top()); break;  // DUP
        case 'N': push(make(Value::kNone)); break;
        case 0x88: push(make_int(Value::kBool, 1)); break;             // NEWTRUE
        case 0x89: push(make_int(Value::kBool, 0)); break;             // NEWFALSE
        case 'J': push(make_int(Value::kInt, int32_t(le(4)))); break;  // BININT
        case 'K': push(make_int(Value::kInt, int64_t(le(1)))); break;  // BININT1
        case 'M': push(make_int(Value::kInt, int64_t(le(2)))); break;  // BININT2
        case 0x8a: {                                                   // LONG1
          const size_t n = byte();
          if (n > 8) fail("pickle integer wider than 64 bits; expected a 64-bit integer");
          uint64_t v = n ? le(n) : 0;
          if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);  // sign-extend
          push(make_int(Value::kInt, int64_t(v)));
          break;
        }
        case 'I': {  // INT (text)
          const std::string line = read_line();
          if (line == "01" || line == "00") {
            push(make_int(Value::kBool, line == "01"));
            break;
          }
          push(make_int(Value::kInt, parse_int(line)));
          break;
        }
        case 'G': {  // BINFLOAT, big-endian
          uint64_t bits = 0;
          for (char c : bytes(8)) bits = (bits << 8) | uint8_t(c);
          Value* v = make(Value::kFloat);
          std::memcpy(&v->f, &bits, 8);
          push(v);
          break;
        }
        case 'X': push(make_str(Value::kStr, bytes(le(4)))); break;     // BINUNICODE
        case 0x8c: push(make_str(Value::kStr, bytes(le(1)))); break;    // SHORT_BINUNICODE
        case 0x8d: push(make_str(Value::kStr, bytes(le(8)))); break;    // BINUNICODE8
        case 'T': push(make_str(Value::kBytes, bytes(le(4)))); break;   // BINSTRING
        case 'U': push(make_str(Value::kBytes, bytes(le(1)))); break;   // SHORT_BINSTRING
        case 'B': push(make_str(Value::kBytes, bytes(le(4)))); break;   // BINBYTES
        case 'C': push(make_str(Value::kBytes, bytes(le(1)))); break;   // SHORT_BINBYTES
        case 0x8e: push(make_str(Value::kBytes, bytes(le(8)))); break;  // BINBYTES8
        case ')': push(make(Value::kTuple)); break;                     // EMPTY_TUPLE
        case 't': push(make_seq(Value::kTuple, pop_mark())); break;     // TUPLE
        case 0x85: push(make_seq(Value::kTuple, pop_n(1))); break;      // TUPLE1
        case 0x86: push(make_seq(Value::kTuple, pop_n(2))); break;      // TUPLE2
        case 0x87: push(make_seq(Value::kTuple, pop_n(3))); break;      // TUPLE3
        case ']': push(make(Value::kList)); break;                      // EMPTY_LIST
        case 'l': push(make_seq(Value::kList, pop_mark())); break;      // LIST
        case 'a': {                                                     // APPEND
          Value* v = pop();
          append(top(), {v});
          break;
        }
        case 'e': {  // APPENDS
          std::vector<Value*> vs = pop_mark();
          append(top(), vs);
          break;
        }
        case '}': push(make(Value::kDict)); break;  // EMPTY_DICT
        case 'd': {                                 // DICT
          std::vector<Value*> kv = pop_mark();
          Value* d = make(Value::kDict);
          set_items(d, kv);
          push(d);
          break;
        }
        case 's': {  // SETITEM
          std::vector<Value*> kv = pop_n(2);
          set_items(top(), kv);
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<Value*> kv = pop_mark();
          set_items(top(), kv);
          break;
        }
        case 'q': memo_put(le(1)); break;                                   // BINPUT
        case 'r': memo_put(le(4)); break;                                   // LONG_BINPUT
        case 'p': memo_put(uint64_t(parse_int(read_line()))); break;        // PUT
        case 0x94: memo_put(memo_.size()); break;                           // MEMOIZE
        case 'h': push(memo_get(le(1))); break;                             // BINGET
        case 'j': push(memo_get(le(4))); break;                             // LONG_BINGET
        case 'g': push(memo_get(uint64_t(parse_int(read_line())))); break;  // GET
        case 'c': {                                                         // GLOBAL
          Value* g = make(Value::kGlobal);
          g->s = read_line();
          g->s2 = read_line();
          push(g);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          std::vector<Value*> mn = pop_n(2);
          if (mn[0]->kind != Value::kStr || mn[1]->kind != Value::kStr) fail("STACK_GLOBAL expects two strings");
          Value* g = make(Value::kGlobal);
          g->s = mn[0]->s;
          g->s2 = mn[1]->s;
          push(g);
          break;
        }
        case 'Q': push(persistent_load(pop())); break;  // BINPERSID
        case 'R':
        case 0x81: {  // REDUCE, NEWOBJ
          std::vector<Value*> fa = pop_n(2);
          push(call(fa[0], fa[1], 0));
          break;
        }
        case 'b': pop(); break;  // BUILD: object state (the state dict's _metadata, tensor subclass state): ignored
        default:
          fail(
              absl::StrFormat("unsupported pickle opcode 0x%02x at byte %d of data.pkl; expected a torch.save'd "
                              "state dict (pickle protocol 2 to 5)",
                              op, p_ - begin_ - 1));
      }
    }
  }

 private:
  static constexpr size_t kMaxStack = 1 << 20;
  static constexpr uint64_t kMemoEntryBytes = 48;  // an unordered_map node of (key, pointer) and its bucket

  uint8_t byte() {
    if (p_ >= end_) fail("data.pkl ends before the pickle STOP opcode; expected a complete pickle (truncated file?)");
    return uint8_t(*p_++);
  }
  std::string bytes(uint64_t n) {
    if (n > uint64_t(end_ - p_)) fail("data.pkl ends inside a string or bytes value (truncated file?)");
    std::string s(p_, size_t(n));
    p_ += n;
    return s;
  }
  uint64_t le(size_t n) {
    uint64_t v = 0;
    const std::string b = bytes(n);
    for (size_t k = n; k-- > 0;) v = (v << 8) | uint8_t(b[k]);
    return v;
  }
  std::string read_line() {
    const char* nl = static_cast<const char*>(std::memchr(p_, '\n', size_t(end_ - p_)));
    if (nl == nullptr) fail("data.pkl ends inside a text line (truncated file?)");
    std::string s(p_, nl);
    p_ = nl + 1;
    return s;
  }
  static int64_t parse_int(const std::string& s) {
    try {
      size_t used = 0;
      const long long v = std::stoll(s, &used);
      if (used == s.size() || (used + 1 == s.size() && s.back() == 'L')) return v;
    } catch (const std::logic_error&) {
    }
    fail(absl::StrCat("bad integer '", absl::CHexEscape(s.substr(0, 32)), "' in data.pkl; expected a decimal integer"));
  }

  // Counts `n` more bytes against the arena bound; fails past it, before the allocation.
  void charge(uint64_t n) {
    arena_bytes_ += n;
    if (arena_bytes_ > arena_limit_) {
      fail(absl::StrCat("data.pkl (", end_ - begin_, " bytes) needs more than ", arena_limit_,
                        " bytes of unpickled values at byte ", p_ - begin_, "; the reader allows at most ",
                        kArenaBytesPerPickleByte, " x the size of data.pkl + ", kArenaSlackBytes,
                        " bytes (a torch.save'd state dict needs far less: is this pickle built to exhaust memory?)"));
    }
  }

  Value* make(Value::Kind k) {
    charge(sizeof(Value));
    arena_.emplace_back();
    arena_.back().kind = k;
    return &arena_.back();
  }
  Value* make_int(Value::Kind k, int64_t v) {
    Value* x = make(k);
    x->i = v;
    return x;
  }
  Value* make_str(Value::Kind k, std::string s) {
    charge(s.size());
    Value* x = make(k);
    x->s = std::move(s);
    return x;
  }
  Value* make_seq(Value::Kind k, std::vector<Value*> items) {
    charge(items.size() * sizeof(Value*));
    Value* x = make(k);
    x->items = std::move(items);
    return x;
  }

  void push(Value* v) { stack_.push_back(v); }
  Value* top() {
    if (stack_.empty() || stack_.back()->kind == Value::kMark) fail("pickle opcode needs a value on an empty stack");
    return stack_.back();
  }
  Value* pop() {
    Value* v = top();
    stack_.pop_back();
    return v;
  }
  std::vector<Value*> pop_n(size_t n) {
    if (stack_.size() < n) fail("pickle stack underflow; expected a well-formed pickle");
    std::vector<Value*> out(stack_.end() - ptrdiff_t(n), stack_.end());
    for (Value* v : out) {
      if (v->kind == Value::kMark) fail("pickle opcode found a MARK where it expected a value");
    }
    stack_.resize(stack_.size() - n);
    return out;
  }
  std::vector<Value*> pop_mark() {
    size_t k = stack_.size();
    while (k > 0 && stack_[k - 1]->kind != Value::kMark) --k;
    if (k == 0) fail("pickle opcode needs a MARK that is not on the stack");
    std::vector<Value*> out(stack_.begin() + ptrdiff_t(k), stack_.end());
    stack_.resize(k - 1);
    return out;
  }
  void memo_put(uint64_t key) {
    Value* v = top();
    charge(kMemoEntryBytes);
    memo_[key] = v;
  }
  Value* memo_get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail(absl::StrCat("pickle refers to memo entry ", key, " that was never stored"));
    return it->second;
  }
  void append(Value* list, const std::vector<Value*>& vs) {
    if (list->kind == Value::kObject) return;  // e.g. a list subclass we do not model
    if (list->kind != Value::kList) fail("pickle APPEND onto a value that is not a list");
    charge(vs.size() * sizeof(Value*));
    list->items.insert(list->items.end(), vs.begin(), vs.end());
  }
  void set_items(Value* dict, const std::vector<Value*>& kv) {
    if (dict->kind == Value::kObject) return;
    if (dict->kind != Value::kDict) fail("pickle SETITEM onto a value that is not a dict");
    if (kv.size() % 2 != 0) fail("pickle SETITEMS with an odd number of keys and values");
    charge(kv.size() * sizeof(Value*));
    dict->items.insert(dict->items.end(), kv.begin(), kv.end());
  }

  // ('storage', torch.<Type>Storage, key, location, numel)
  Value* persistent_load(Value* pid) {
    if (pid->kind != Value::kTuple || pid->items.size() < 5 || pid->items[0]->kind != Value::kStr ||
        pid->items[0]->s != "storage") {
      fail("persistent id is not ('storage', type, key, location, numel); expected torch.save's storage reference");
    }
    const Value* type = pid->items[1];
    const Value* key = pid->items[2];
    const Value* numel = pid->items[4];
    if (type->kind != Value::kGlobal || key->kind != Value::kStr || numel->kind != Value::kInt || numel->i < 0) {
      fail("malformed storage reference in data.pkl; expected (type, key string, location, element count)");
    }
    Value* st = make(Value::kStorage);
    for (const StorageTypeInfo& t : kStorageTypes) {
      if (type->s == "torch" && type->s2 == t.name) st->storage = &t;
    }
    if (st->storage == nullptr) {
      fail(absl::StrCat("storage type ", type->s, ".", type->s2, " is not supported; expected Float, Half, BFloat16, ",
                        "Double, Long, Int, Short, Char, Byte or Bool storage"));
    }
    st->s = key->s;
    st->storage_numel = numel->i;
    return st;
  }

  static std::vector<int64_t> int_tuple(const Value* v, const char* what) {
    if (v->kind != Value::kTuple && v->kind != Value::kList) fail(absl::StrCat("tensor ", what, " is not a tuple"));
    std::vector<int64_t> out;
    for (const Value* x : v->items) {
      if (x->kind != Value::kInt) fail(absl::StrCat("tensor ", what, " holds a non-integer"));
      out.push_back(x->i);
    }
    return out;
  }

  Value* call(Value* fn, Value* args, int depth) {
    if (fn->kind != Value::kGlobal || args->kind != Value::kTuple) return make(Value::kObject);
    const std::string& m = fn->s;
    const std::string& n = fn->s2;
    const std::vector<Value*>& a = args->items;
    if (m == "collections" && n == "OrderedDict") {
      Value* d = make(Value::kDict);
      if (!a.empty()) return make(Value::kObject);  // OrderedDict(iterable): not produced by torch.save
      return d;
    }
    if (m == "torch._utils" && (n == "_rebuild_tensor_v2" || n == "_rebuild_tensor")) {
      if (a.size() < 4 || a[0]->kind != Value::kStorage || a[1]->kind != Value::kInt) {
        fail(absl::StrCat("torch._utils.", n,
                          " with unexpected arguments; expected (storage, offset, size, stride, ...)"));
      }
      Value* t = make(Value::kTensor);
      t->tensor_storage = a[0];
      t->storage = a[0]->storage;
      t->offset = a[1]->i;
      t->size = int_tuple(a[2], "size");
      t->stride = int_tuple(a[3], "stride");
      charge((t->size.size() + t->stride.size()) * sizeof(int64_t));
      return t;
    }
    if (m == "torch._utils" && (n == "_rebuild_parameter" || n == "_rebuild_parameter_with_state")) {
      if (a.empty() || a[0]->kind != Value::kTensor) fail("torch._utils._rebuild_parameter without a tensor");
      return a[0];
    }
    if (m == "torch._tensor" && n == "_rebuild_from_type_v2" && a.size() >= 3 && depth < 4) {
      return call(a[0], a[2], depth + 1);  // (func, subclass type, args, state): the plain tensor is enough
    }
    return make(Value::kObject);  // anything else: an opaque value, never executed
  }

  const char* p_;
  const char* end_;
  const char* begin_;
  const uint64_t arena_limit_;
  uint64_t arena_bytes_ = 0;  // what charge() has counted: values, strings, item lists, memo entries
  std::deque<Value> arena_;
  std::vector<Value*> stack_;
  std::unordered_map<uint64_t, Value*> memo_;
};

DType output_dtype(StorageType t) {
  switch (t) {
    case StorageType::kFloat:
    case StorageType::kHalf:
    case StorageType::kBFloat16:
    case StorageType::kDouble: return DType::kF32;
    case StorageType::kLong: return DType::kI64;
    case StorageType::kInt:
    case StorageType::kShort: return DType::kI32;
    case StorageType::kChar: return DType::kI8;
    case StorageType::kByte:
    case StorageType::kBool: return DType::kU8;
  }
  return DType::kF32;
}

// Converts `n` contiguous elements of storage type `t` at `src` into `dst` (output_dtype(t), contiguous).
Status convert_contiguous(StorageType t, const char* src, int64_t n, Tensor& dst) {
  char* out = static_cast<char*>(dst.raw_data());
  const size_t count = size_t(n);
  switch (t) {
    case StorageType::kFloat:
    case StorageType::kLong:
    case StorageType::kInt:
    case StorageType::kChar:
    case StorageType::kByte: std::memcpy(out, src, count * dtype_size(dst.dtype())); return absl::OkStatus();
    case StorageType::kHalf:
    case StorageType::kBFloat16: {
      // to_float32 reads through a borrowed view; records are allocator-aligned and offsets are in elements.
      Tensor half = Tensor::borrow(const_cast<char*>(src), {n}, t == StorageType::kHalf ? DType::kF16 : DType::kBF16);
      BRISK_ASSIGN_OR_RETURN(Tensor f, to_float32(half));
      std::memcpy(out, f.raw_data(), count * 4);
      return absl::OkStatus();
    }
    case StorageType::kDouble:
      for (size_t e = 0; e < count; ++e) {
        double d;
        std::memcpy(&d, src + e * 8, 8);
        const float f = static_cast<float>(d);
        std::memcpy(out + e * 4, &f, 4);
      }
      return absl::OkStatus();
    case StorageType::kShort:
      for (size_t e = 0; e < count; ++e) {
        int16_t v;
        std::memcpy(&v, src + e * 2, 2);
        const int32_t w = v;
        std::memcpy(out + e * 4, &w, 4);
      }
      return absl::OkStatus();
    case StorageType::kBool:
      for (size_t e = 0; e < count; ++e) out[e] = src[e] != 0 ? 1 : 0;
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

StatusOr<Tensor> materialize(const Value& t, const std::string& name, const char* record, size_t record_size,
                             const std::string& file) {
  const StorageTypeInfo& st = *t.storage;
  const auto err = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", name, "' ", what));
  };
  if (t.size.size() != t.stride.size()) {
    return err(absl::StrCat("has ", t.size.size(), " sizes but ", t.stride.size(), " strides; expected one per dim"));
  }
  const uint64_t storage_numel = record_size / st.elem;
  bool empty = false;
  for (int64_t d : t.size) {
    if (d < 0) return err("has a negative size; expected non-negative sizes");
    if (d == 0) empty = true;
  }
  if (t.offset < 0) return err("has a negative storage offset");
  if (!empty) {
    // A state dict never needs more elements than its storage holds; refusing broadcast (stride-0) views keeps a
    // tiny hostile file from making us allocate gigabytes.
    uint64_t numel = 1;
    for (int64_t d : t.size) {
      if (numel > storage_numel / uint64_t(d)) {
        return err(absl::StrCat("has sizes [", absl::StrJoin(t.size, ", "), "], more elements than its storage of ",
                                storage_numel, " ", st.name, " elements; expected a view no larger than its storage"));
      }
      numel *= uint64_t(d);
    }
    // Highest element index touched, overflow-checked; must lie inside the storage record.
    uint64_t last = uint64_t(t.offset);
    for (size_t k = 0; k < t.size.size(); ++k) {
      if (t.stride[k] < 0) return err("has a negative stride; expected non-negative strides");
      const uint64_t span = uint64_t(t.size[k] - 1);
      if (t.stride[k] != 0 && span > (UINT64_MAX - last) / uint64_t(t.stride[k])) return err("has overflowing strides");
      last += span * uint64_t(t.stride[k]);
    }
    if (last >= storage_numel) {
      return err(absl::StrCat("reaches element ", last, " of its storage, which holds ", storage_numel, " ", st.name,
                              " elements; expected sizes and strides inside the storage (truncated file?)"));
    }
  }
  BRISK_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(t.size, output_dtype(st.type)));
  if (empty) return out;
  const int64_t n = out.numel();
  if (t.stride == contiguous_strides(t.size)) {
    BRISK_RETURN_IF_ERROR(convert_contiguous(st.type, record + uint64_t(t.offset) * st.elem, n, out));
    return out;
  }
  // A strided view (e.g. a transposed or sliced tensor): gather its elements, then convert.
  std::vector<char> gathered(size_t(n) * st.elem);
  std::vector<int64_t> idx(t.size.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    uint64_t src_index = uint64_t(t.offset);
    for (size_t k = 0; k < idx.size(); ++k) src_index += uint64_t(idx[k]) * uint64_t(t.stride[k]);
    std::memcpy(gathered.data() + size_t(e) * st.elem, record + src_index * st.elem, st.elem);
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < t.size[k]) break;
      idx[k] = 0;
    }
  }
  BRISK_RETURN_IF_ERROR(convert_contiguous(st.type, gathered.data(), n, out));
  return out;
}

const Value* find_state_dict(const Value* root) {
  if (root->kind != Value::kDict) return nullptr;
  bool has_tensor = false;
  for (size_t k = 0; k + 1 < root->items.size(); k += 2) has_tensor |= root->items[k + 1]->kind == Value::kTensor;
  if (has_tensor) return root;
  for (const char* wrapper : {"state_dict", "model", "module"}) {  // {"state_dict": {...}} training checkpoints
    for (size_t k = 0; k + 1 < root->items.size(); k += 2) {
      if (root->items[k]->kind == Value::kStr && root->items[k]->s == wrapper &&
          root->items[k + 1]->kind == Value::kDict) {
        return root->items[k + 1];
      }
    }
  }
  return root;
}

StatusOr<NamedTensors> read_checkpoint(const std::string& path, const std::string& file) {
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the PyTorch checkpoint"));
    char magic[4] = {0, 0, 0, 0};
    in.read(magic, 4);
    if (in.gcount() < 4 || std::memcmp(magic, "PK\x03\x04", 4) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          file,
          ": not a zip archive; expected a checkpoint written by torch.save with torch >= 1.6 (the legacy "
          "pre-1.6 format is not supported: re-save it with a current torch, or convert it to safetensors)"));
    }
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) return absl::NotFoundError(absl::StrCat(path, ": cannot read the size of the PyTorch checkpoint"));
    BRISK_RETURN_IF_ERROR(check_zip_record_sizes(in, size, file));
  }
  caffe2::serialize::PyTorchStreamReader reader(path);
  if (reader.hasRecord("byteorder")) {
    auto [ptr, n] = reader.getRecord("byteorder");
    const std::string order(static_cast<const char*>(ptr.get()), n);
    if (order != "little") {
      return absl::InvalidArgumentError(absl::StrCat(file, ": byteorder is '", order, "'; expected 'little'"));
    }
  }
  if (!reader.hasRecord("data.pkl")) {
    return absl::InvalidArgumentError(absl::StrCat(file,
                                                   ": the archive has no data.pkl record; expected a "
                                                   "torch.save'd state dict (a TorchScript module is not one)"));
  }
  auto [pkl_ptr, pkl_size] = reader.getRecord("data.pkl");
  PickleMachine machine(static_cast<const char*>(pkl_ptr.get()), pkl_size);
  const Value* root = machine.run();
  const Value* dict = find_state_dict(root);
  if (dict == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(file,
                                                   ": holds a pickled value that is not a dict; expected a "
                                                   "state dict mapping tensor names to tensors"));
  }
  // storage key -> record bytes, read once (tied weights share a storage)
  std::unordered_map<std::string, std::pair<at::DataPtr, size_t>> records;
  NamedTensors out;
  for (size_t k = 0; k + 1 < dict->items.size(); k += 2) {
    const Value* key = dict->items[k];
    const Value* val = dict->items[k + 1];
    if (key->kind != Value::kStr || val->kind != Value::kTensor) continue;  // e.g. metadata entries
    const std::string& key_str = val->tensor_storage->s;
    auto rec = records.find(key_str);
    if (rec == records.end()) {
      const std::string record_name = "data/" + key_str;
      if (!reader.hasRecord(record_name)) {
        return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", key->s, "' refers to storage record '",
                                                       record_name, "' which the archive lacks (truncated file?)"));
      }
      auto [ptr, n] = reader.getRecord(record_name);
      rec = records.emplace(key_str, std::make_pair(std::move(ptr), n)).first;
    }
    const uint64_t declared = uint64_t(val->tensor_storage->storage_numel) * val->storage->elem;
    const char* bytes = static_cast<const char*>(rec->second.first.get());
    const size_t nbytes = rec->second.second;
    if (nbytes < declared) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": storage record 'data/", key_str, "' of tensor '", key->s,
                                                     "' holds ", nbytes, " bytes; expected ", declared));
    }
    BRISK_ASSIGN_OR_RETURN(Tensor t, materialize(*val, key->s, bytes, nbytes, file));
    out.insert_or_assign(key->s, std::move(t));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": holds no tensors; expected a state dict"));
  }
  return out;
}

}  // namespace

bool torch_checkpoints_supported() { return true; }

StatusOr<NamedTensors> read_torch_checkpoint(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file; expected a PyTorch checkpoint"));
  }
  try {
    return read_checkpoint(path, file);
  } catch (const CheckpointError& e) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": ", e.what()));
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": libtorch could not read the archive: ", e.what_without_backtrace()));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(file, ": out of memory while reading the checkpoint"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": cannot read the checkpoint: ", e.what()));
  }
}

}  // namespace brisk
