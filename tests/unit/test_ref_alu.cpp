// kiln::exec_alu and kiln::truncate_to (the generator's arithmetic: constant folding) against
// ref::alu and ref::to_dtype (the oracle's, written apart): every op at every dtype on random and
// edge operands (NaN, the infinities, -0, ties of each float format, each int dtype's limits, -1,
// shifts at and past the width, unsigned wrap), and every cast between dtypes. A bug in either shows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "generator/ir/uop.h"
#include "tests/unit/ref_alu.h"

namespace kiln {
namespace {

const DType kInts[] = {dtypes::int8,   dtypes::uint8, dtypes::int16,  dtypes::uint16, dtypes::int32,
                       dtypes::uint32, dtypes::int64, dtypes::uint64, dtypes::weakint};
const DType kFloats[] = {dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64, dtypes::weakfloat};

std::string show(const std::optional<ConstValue>& v) {
  if (!v) return "undefined";
  if (v->is_invalid()) return "invalid";
  if (v->is_float()) {
    char b[64];
    std::snprintf(b, sizeof b, "%a", v->f);
    return b;
  }
  return (v->is_bool() ? "bool " : "int ") + std::to_string(v->i);
}

std::vector<ConstValue> int_operands(DType d, std::mt19937_64& rng) {
  std::vector<int64_t> xs = {0, 1, -1, 2, -2, 3, 7, -7, 100, -100, 255, 256, -129, 65535, 65536};
  int bits = bitsize(d);
  for (int64_t s : {bits - 1, bits, bits + 1, 63, 64}) xs.push_back(s);
  xs.push_back(int_min(d)), xs.push_back(int_max(d)), xs.push_back(int64_t(uint_max(d)));
  xs.push_back(int_min(d) + 1), xs.push_back(int_max(d) - 1),
      xs.push_back(int64_t(uint_max(d) + 1));  // wraps for the 64-bit ones
  xs.push_back(std::numeric_limits<int64_t>::min()), xs.push_back(std::numeric_limits<int64_t>::max());
  for (int i = 0; i < 12; ++i) xs.push_back(int64_t(rng()));
  for (int i = 0; i < 12; ++i) xs.push_back(int64_t(rng() % 2001) - 1000);
  std::vector<ConstValue> r;
  for (int64_t x : xs) r.push_back(ConstValue::of_int(x));
  return r;
}

std::vector<ConstValue> float_operands(std::mt19937_64& rng) {
  std::vector<double> xs = {0.0,
                            -0.0,
                            1.0,
                            -1.0,
                            0.5,
                            -0.5,
                            1.5,
                            2.5,
                            -2.5,
                            3.0,
                            NAN,
                            INFINITY,
                            -INFINITY,
                            65504.0,
                            65519.99,
                            65520.0,
                            -65520.0,
                            0x1p-14,
                            0x1p-24,
                            0x1.8p-25,
                            0x1p-25,
                            1.0 + 0x1p-11,  // a tie of float16
                            1.0 + 0x3p-11,
                            1.0 + 0x1p-8,  // a tie of bfloat16
                            1.0 + 0x3p-8,
                            1.0 + 0x1p-24,  // a tie of float32
                            0x1.fffffep127,
                            0x1.ffffffp127,
                            0x1p-149,
                            0x1p-150,
                            1e-310,
                            3e38,
                            1e39,
                            0x1p63,
                            -0x1p63,
                            0x1p64,
                            4294967296.5,
                            -2147483648.9,
                            255.9,
                            -128.5};
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  std::uniform_int_distribution<int> e(-160, 140);
  for (int i = 0; i < 16; ++i) xs.push_back(u(rng));
  for (int i = 0; i < 16; ++i) xs.push_back(std::ldexp(u(rng), e(rng)));
  std::vector<ConstValue> r;
  for (double x : xs) r.push_back(ConstValue::of_float(x));
  return r;
}

struct Tally {
  int64_t compared = 0, differ = 0;
  void check(const std::string& what, const std::optional<ConstValue>& gen, const std::optional<ConstValue>& ref) {
    ++compared;
    bool same = gen.has_value() == ref.has_value() && (!gen || *gen == *ref);
    if (same) return;
    if (++differ <= 20) ADD_FAILURE() << what << ": exec_alu " << show(gen) << ", ref " << show(ref);
  }
};

std::string call(Op op, DType d, const std::vector<ConstValue>& a, DType operand = DType()) {
  std::string s = std::string(op_name(op)) + "." + to_string(d) + "(";
  for (const ConstValue& v : a) s += show(v) + " ";
  return s + (operand == DType() ? ")" : "as " + to_string(operand) + ")");
}

void compare(Tally& t, Op op, DType d, const std::vector<ConstValue>& a, DType operand = DType()) {
  t.check(call(op, d, a, operand), exec_alu(op, d, a, operand), ref::alu(op, d, a, operand));
}

TEST(RefAlu, AgreesWithExecAluOnEveryOpAndDtype) {
  std::mt19937_64 rng(17);
  Tally t;
  const Op unary_int[] = {Op::NEG, Op::TRUNC};
  const Op binary_int[] = {Op::ADD, Op::SUB,  Op::MUL,  Op::MAX,      Op::AND,      Op::OR,    Op::XOR,   Op::SHL,
                           Op::SHR, Op::CDIV, Op::CMOD, Op::FLOORDIV, Op::FLOORMOD, Op::CMPLT, Op::CMPNE, Op::CMPEQ};
  for (DType d : kInts) {
    std::vector<ConstValue> xs = int_operands(d, rng);
    for (Op op : unary_int)
      for (const ConstValue& x : xs) compare(t, op, d, {x});
    for (Op op : binary_int)
      for (const ConstValue& x : xs)
        for (const ConstValue& y : xs) compare(t, op, d, {x, y}, in_group(op, G_COMPARISON) ? d : DType());
    for (int i = 0; i < 2000; ++i) {
      const ConstValue &x = xs[rng() % xs.size()], &y = xs[rng() % xs.size()], &z = xs[rng() % xs.size()];
      compare(t, Op::MULACC, d, {x, y, z});
      compare(t, Op::WHERE, d, {ConstValue::of_bool(i % 2), x, y});
    }
  }
  const Op unary_float[] = {Op::NEG, Op::EXP2, Op::LOG2, Op::SIN, Op::SQRT, Op::RECIPROCAL, Op::TRUNC};
  const Op binary_float[] = {Op::ADD, Op::SUB, Op::MUL, Op::FDIV, Op::MAX, Op::POW, Op::CMPLT, Op::CMPNE, Op::CMPEQ};
  std::vector<ConstValue> fs = float_operands(rng);
  for (DType d : kFloats) {
    for (Op op : unary_float)
      for (const ConstValue& x : fs) compare(t, op, d, {x});
    for (Op op : binary_float)
      for (const ConstValue& x : fs)
        for (const ConstValue& y : fs) compare(t, op, d, {x, y}, in_group(op, G_COMPARISON) ? d : DType());
    for (int i = 0; i < 2000; ++i)
      compare(t, Op::MULACC, d, {fs[rng() % fs.size()], fs[rng() % fs.size()], fs[rng() % fs.size()]});
  }
  const Op bool_ops[] = {Op::AND, Op::MUL, Op::OR, Op::ADD, Op::MAX, Op::XOR, Op::CMPLT, Op::CMPNE, Op::CMPEQ};
  for (Op op : bool_ops)
    for (bool x : {false, true})
      for (bool y : {false, true})
        compare(t, op, dtypes::bool_, {ConstValue::of_bool(x), ConstValue::of_bool(y)},
                in_group(op, G_COMPARISON) ? DType(dtypes::bool_) : DType());
  compare(t, Op::ADD, dtypes::int32, {ConstValue::invalid(), ConstValue::of_int(1)});  // invalid stays invalid
  compare(t, Op::NEG, dtypes::int32, {ConstValue::invalid()});
  compare(t, Op::FDIV, dtypes::int32, {ConstValue::of_int(1), ConstValue::of_int(2)});  // not an int op
  compare(t, Op::AND, dtypes::float32, {ConstValue::of_float(1), ConstValue::of_float(2)});

  // every cast, and the rounding and wrapping of every dtype
  std::vector<DType> all(std::begin(kInts), std::end(kInts));
  all.insert(all.end(), std::begin(kFloats), std::end(kFloats));
  all.push_back(dtypes::bool_);
  for (DType from : all) {
    std::vector<ConstValue> xs = is_float(from) ? fs
                                 : is_bool(from)
                                     ? std::vector<ConstValue>{ConstValue::of_bool(false), ConstValue::of_bool(true)}
                                     : int_operands(from, rng);
    for (DType to : all)
      for (const ConstValue& x : xs) {
        compare(t, Op::CAST, to, {x}, from);
        ++t.compared;
        ConstValue g = truncate_to(to, x), r = ref::to_dtype(to, x);
        if (!(g == r) && ++t.differ <= 20)
          ADD_FAILURE() << "truncate_to(" << to_string(to) << ", " << show(x) << "): " << show(g) << ", ref "
                        << show(r);
      }
  }
  EXPECT_EQ(t.differ, 0);
  EXPECT_GT(t.compared, 100000);
  std::cout << t.compared << " results of exec_alu and truncate_to compared with ref_alu's, " << t.differ
            << " differ\n";
}

}  // namespace
}  // namespace kiln
