// PickleMachine: the restricted unpickler behind read_torch_checkpoint (torch_checkpoint.cc). Internal to lib/model.
//
// It interprets a torch.save'd data.pkl without executing anything: it knows just the globals a state dict uses
// (collections.OrderedDict, torch._utils._rebuild_tensor[_v2], _rebuild_parameter, torch.*Storage); any other global
// becomes an opaque value. All values live in its arena, so hostile input cannot build deep object graphs whose
// destruction overflows the stack; the arena is bounded against the input (values, strings, item lists and memo
// entries may take at most kArenaBytesPerPickleByte x the size of data.pkl + kArenaSlackBytes; see charge()), so a
// small hostile pickle cannot make the reader hold ~100x its size. Errors throw CheckpointError naming what was
// wrong and what was expected.
//
//   internal::pickle::PickleMachine m(pkl.data(), pkl.size());
//   const internal::pickle::Value* root = m.run();   // the unpickled object; lives as long as m
//
// Thread safety: a PickleMachine is used by one thread; separate machines are independent.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace brisk::internal::pickle {

enum class StorageType : uint8_t { kFloat, kHalf, kBFloat16, kDouble, kLong, kInt, kShort, kChar, kByte, kBool };

struct StorageTypeInfo {
  const char* name;
  StorageType type;
  size_t elem;
};

inline constexpr StorageTypeInfo kStorageTypes[] = {
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

[[noreturn]] inline void fail(const std::string& what) { throw CheckpointError(what); }

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

}  // namespace brisk::internal::pickle
