// The IR core: dtypes, interning, builders, exact ALU semantics, range analysis, text form.
#include <gtest/gtest.h>

#include <cmath>

#include "generator/ir/text.h"
#include "generator/ir/uop.h"
#include "generator/ir/verify.h"

namespace kiln {
namespace {

TEST(DType, NamesRoundTrip) {
  for (int s = 0; s < kNumScalars; ++s) {
    for (DType d : {DType(Scalar(s)), DType(Scalar(s)).vec(4), DType(Scalar(s)).as_ptr(),
                    DType(Scalar(s)).as_ptr(AddrSpace::Local), DType(Scalar(s)).vec(2).as_ptr(AddrSpace::Reg)}) {
      auto back = parse_dtype(to_string(d));
      ASSERT_TRUE(back.has_value()) << to_string(d);
      EXPECT_EQ(*back, d) << to_string(d);
    }
  }
  EXPECT_EQ(parse_dtype("i32"), dtypes::int32);
  EXPECT_EQ(parse_dtype("float32"), dtypes::float32);
  EXPECT_FALSE(parse_dtype("int33").has_value());
  EXPECT_FALSE(parse_dtype("float.0").has_value());
}

TEST(DType, PromotionLattice) {
  EXPECT_EQ(least_upper_dtype(dtypes::bool_, dtypes::weakint), dtypes::weakint);
  EXPECT_EQ(least_upper_dtype(dtypes::weakint, dtypes::int32), dtypes::int32);
  EXPECT_EQ(least_upper_dtype(dtypes::int8, dtypes::uint8), dtypes::int16);
  EXPECT_EQ(least_upper_dtype(dtypes::int32, dtypes::uint32), dtypes::int64);
  EXPECT_EQ(least_upper_dtype(dtypes::int64, dtypes::uint64), dtypes::weakfloat);
  EXPECT_EQ(least_upper_dtype(dtypes::float16, dtypes::bfloat16), dtypes::float32);
  EXPECT_EQ(least_upper_dtype(dtypes::int32, dtypes::float16), dtypes::float16);
  EXPECT_TRUE(can_lossless_cast(dtypes::int16, dtypes::int32));
  EXPECT_FALSE(can_lossless_cast(dtypes::int32, dtypes::int16));
  EXPECT_FALSE(can_lossless_cast(dtypes::int32, dtypes::float32));
  EXPECT_TRUE(can_lossless_cast(dtypes::int32, dtypes::float64));
  EXPECT_TRUE(can_lossless_cast(dtypes::uint8, dtypes::weakint));
  EXPECT_EQ(int_min(dtypes::int8), -128);
  EXPECT_EQ(int_max(dtypes::uint16), 65535);
}

TEST(Context, InterningGivesPointerEquality) {
  Context ctx;
  const UOp* a = ctx.var("a", 0, 10);
  EXPECT_EQ(a, ctx.var("a", 0, 10));
  EXPECT_NE(a, ctx.var("a", 0, 11));
  Expr x = a;
  EXPECT_EQ((x * 4).get(), (x * 4).get());
  EXPECT_NE((x * 4).get(), (x * 3).get());
  EXPECT_NE((x * 4).get(), (x + 4).get());
  const UOp* b = ctx.var("b", 0, 10);
  EXPECT_NE((x + b).get(), (Expr(b) + x).get());  // operand order is structure
  EXPECT_EQ(ctx.cint(3), ctx.cint(3));
  EXPECT_NE(ctx.cint(3), ctx.cint(3, dtypes::int32));
  EXPECT_NE(ctx.cfloat(0.0), ctx.cfloat(-0.0));
  EXPECT_EQ(ctx.cfloat(NAN), ctx.cfloat(-NAN));
  EXPECT_NE(a->with_tag(1), a);
}

TEST(Context, CreationIdsAreDenseAndOrdered) {
  Context ctx;
  const UOp* a = ctx.var("a", 0, 10);
  const UOp* s = Expr(a) + 1;
  EXPECT_LT(a->id, s->id);
  EXPECT_EQ(ctx.node(s->id), s);
  for (uint32_t i = 0; i < ctx.size(); ++i) EXPECT_EQ(ctx.node(i)->id, i);
}

TEST(Builders, PromoteLikeTheSeeds) {
  Context ctx;
  Expr a = ctx.var("a", 0, 10);
  EXPECT_EQ(print(a + 1), "(ADD:weakint (VAR:weakint a 0 10) (CONST:weakint 1))");
  EXPECT_EQ(print(a - 1), "(ADD:weakint (VAR:weakint a 0 10) (MUL:weakint (CONST:weakint 1) (CONST:weakint -1)))");
  EXPECT_EQ(print(a / 4), "(FLOORDIV:weakint (VAR:weakint a 0 10) (CONST:weakint 4))");
  EXPECT_EQ(print(a % 4), "(FLOORMOD:weakint (VAR:weakint a 0 10) (CONST:weakint 4))");
  EXPECT_EQ(print(a >= 3), "(CMPNE:bool (CMPLT:bool (VAR:weakint a 0 10) (CONST:weakint 3)) (CONST:bool true))");
  Expr i = ctx.var("i", 0, 10, dtypes::int32);
  // a weak literal stays weak next to a strong int; the node takes the strong dtype
  EXPECT_EQ(print(i + 1), "(ADD:int (VAR:int i 0 10) (CONST:weakint 1))");
  // mixing strong widths casts the narrower side
  Expr l = ctx.var("l", 0, 10, dtypes::int64);
  EXPECT_EQ(print(i + l), "(ADD:long (CAST:long (VAR:int i 0 10)) (VAR:long l 0 10))");
  Expr f = ctx.cfloat(1.5, dtypes::float32);
  EXPECT_EQ(print(f * 2), "(MUL:float (CONST:float 1.5) (CONST:weakfloat 2.0))");
}

TEST(Alu, ExactIntegerSemantics) {
  auto run = [](Op op, DType d, int64_t a, int64_t b) {
    ConstValue in[2] = {ConstValue::of_int(a), ConstValue::of_int(b)};
    auto r = exec_alu(op, d, in);
    return r ? r->i : INT64_MIN;
  };
  // floor division / modulo for the index type
  EXPECT_EQ(run(Op::FLOORDIV, dtypes::weakint, -7, 2), -4);
  EXPECT_EQ(run(Op::FLOORMOD, dtypes::weakint, -7, 2), 1);
  EXPECT_EQ(run(Op::FLOORDIV, dtypes::weakint, 7, -2), -4);
  EXPECT_EQ(run(Op::FLOORMOD, dtypes::weakint, 7, -2), -1);
  // C truncating division for fixed-width ints
  EXPECT_EQ(run(Op::CDIV, dtypes::int32, -7, 2), -3);
  EXPECT_EQ(run(Op::CMOD, dtypes::int32, -7, 2), -1);
  // wrap-around at the dtype's width
  EXPECT_EQ(run(Op::ADD, dtypes::int8, 127, 1), -128);
  EXPECT_EQ(run(Op::MUL, dtypes::uint8, 16, 17), 16);
  EXPECT_EQ(run(Op::ADD, dtypes::int32, 2147483647, 1), -2147483648LL);
  EXPECT_EQ(run(Op::SHL, dtypes::int16, 1, 15), -32768);
  // undefined: no folding
  EXPECT_EQ(run(Op::FLOORDIV, dtypes::weakint, 1, 0), INT64_MIN);
  EXPECT_EQ(run(Op::CDIV, dtypes::int32, 1, 0), INT64_MIN);
  // the index type does not wrap: an int64 overflow refuses to fold
  EXPECT_EQ(run(Op::ADD, dtypes::weakint, INT64_MAX, 1), INT64_MIN);
}

// uint64 carries its values from 2^63 up as negative int64 bit patterns: every op reads them unsigned
TEST(Alu, Uint64IsReadUnsigned) {
  const int64_t max = -1, big = -7;  // 2^64-1 and 2^64-7
  auto cmp = [](Op op, int64_t a, int64_t b, DType operand = dtypes::uint64) {
    ConstValue in[2] = {ConstValue::of_int(a), ConstValue::of_int(b)};
    return exec_alu(op, dtypes::bool_, in, operand)->i;
  };
  EXPECT_EQ(cmp(Op::CMPLT, 0, big), 1);
  EXPECT_EQ(cmp(Op::CMPLT, max, 0), 0);
  EXPECT_EQ(cmp(Op::CMPLT, big, max), 1);
  EXPECT_EQ(cmp(Op::CMPLT, -1, 0, dtypes::int64), 1);
  EXPECT_EQ(cmp(Op::CMPLT, -1, 5, dtypes::uint8), 0);  // a weak -1 next to a uint8 is 255
  ConstValue one[1] = {ConstValue::of_int(1)};
  EXPECT_EQ(exec_alu(Op::NEG, dtypes::uint64, one)->i, max);
  ConstValue mx[2] = {ConstValue::of_int(big), ConstValue::of_int(1)};
  EXPECT_EQ(exec_alu(Op::MAX, dtypes::uint64, mx)->i, big);
  EXPECT_EQ(exec_alu(Op::FLOORDIV, dtypes::uint64, mx)->i, big);
  ConstValue m3[3] = {ConstValue::of_int(max), ConstValue::of_int(max), ConstValue::of_int(3)};
  EXPECT_EQ(exec_alu(Op::MULACC, dtypes::uint64, m3)->i, 4);  // (2^64-1)^2 + 3 wraps to 4
  ConstValue c[1] = {ConstValue::of_int(max)};
  EXPECT_EQ(exec_alu(Op::CAST, dtypes::float32, c, dtypes::uint64)->f, 0x1p64);
  EXPECT_EQ(exec_alu(Op::CAST, dtypes::float64, c, dtypes::int64)->f, -1.0);
  EXPECT_EQ(convert(dtypes::float64, dtypes::uint64, ConstValue::of_int(big)).f, 0x1p64);
  EXPECT_EQ(truncate_to(dtypes::uint64, ConstValue::of_float(0x1p63 + 0x1p11)).i, int64_t(0x8000000000000800ull));
}

TEST(Alu, FloatsRoundToTheirDtype) {
  ConstValue in[2] = {ConstValue::of_float(0.1), ConstValue::of_float(0.2)};
  auto r = exec_alu(Op::ADD, dtypes::float32, in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->f, double(float(0.1 + 0.2)));
  EXPECT_EQ(truncate_to(dtypes::float16, ConstValue::of_float(65520.0)).f, INFINITY);
  EXPECT_EQ(truncate_to(dtypes::float16, ConstValue::of_float(1.0009765625)).f, 1.0009765625);
  EXPECT_EQ(truncate_to(dtypes::bfloat16, ConstValue::of_float(1.00390625)).f, 1.0);
}

TEST(Range, BoundsFollowTheOps) {
  Context ctx;
  Expr a = ctx.var("a", 3, 8), b = ctx.var("b", -2, 5);
  auto bounds = [](Expr e) { return std::make_pair(e->imin(), e->imax()); };
  EXPECT_EQ(bounds(a + b), std::make_pair(int64_t(1), int64_t(13)));
  EXPECT_EQ(bounds(a * b), std::make_pair(int64_t(-16), int64_t(40)));
  EXPECT_EQ(bounds(a / 2), std::make_pair(int64_t(1), int64_t(4)));
  EXPECT_EQ(bounds(b % 4), std::make_pair(int64_t(0), int64_t(3)));
  EXPECT_EQ(bounds(a % 16), std::make_pair(int64_t(3), int64_t(8)));
  EXPECT_EQ(bounds(maximum(a, b)), std::make_pair(int64_t(3), int64_t(8)));
  EXPECT_EQ(bounds(a < 9), std::make_pair(int64_t(1), int64_t(1)));
  EXPECT_EQ(bounds(a < 3), std::make_pair(int64_t(0), int64_t(0)));
  EXPECT_EQ(bounds(a < b), std::make_pair(int64_t(0), int64_t(1)));
  // bit operations of non-negative operands stay under the larger maximum's next power of two
  Expr c = ctx.var("c", 0, 20);
  EXPECT_EQ(bounds(a ^ c), std::make_pair(int64_t(0), int64_t(31)));
  EXPECT_EQ(bounds(a | c), std::make_pair(int64_t(3), int64_t(31)));
  EXPECT_EQ(bounds(a ^ b).first, INT64_MIN);  // b may be negative: any value
  const UOp* r = ctx.range(16, 0);
  EXPECT_EQ(bounds(r), std::make_pair(int64_t(0), int64_t(15)));
  const UOp* f = ctx.fvar("f", -1.5, 2.5);
  EXPECT_EQ(f->vmin().f, -1.5);
  EXPECT_EQ(f->vmax().f, 2.5);
  // a fixed-width int that could wrap gets its dtype's range
  Expr i = ctx.var("i", 0, 200, dtypes::int8);
  EXPECT_EQ(bounds(i * 2), std::make_pair(int64_t(-128), int64_t(127)));
  Expr big = ctx.var("big", 0, INT64_MAX);
  EXPECT_EQ(bounds(big * 4).second, INT64_MAX);  // the index type saturates
}

TEST(Range, Uint64BoundsAreExactOrTheFullRange) {
  Context ctx;
  auto bounds = [](Expr e) { return std::make_pair(e->exact_lo(), e->exact_hi()); };
  const i128 max = ~uint64_t(0);
  Expr a = ctx.var("a", 0, 10, dtypes::uint64);
  Expr big = ctx.cint(-7, dtypes::uint64);  // 2^64-7
  EXPECT_EQ(bounds(big), std::make_pair(max - 6, max - 6));
  EXPECT_EQ(bounds(a + big), std::make_pair(i128(0), max));  // wraps: the whole range, not INT64_MAX
  EXPECT_EQ(bounds(a * big), std::make_pair(i128(0), max));
  EXPECT_EQ(bounds(big * big), std::make_pair(i128(0), max));  // past int128: no overflow either
  EXPECT_EQ(bounds(maximum(big, a)), std::make_pair(max - 6, max - 6));
  EXPECT_EQ(bounds(Expr(big) / 2), std::make_pair((max - 6) / 2, (max - 6) / 2));
  EXPECT_EQ(bounds(a < big), std::make_pair(i128(1), i128(1)));
  EXPECT_EQ(bounds(big < a), std::make_pair(i128(0), i128(0)));
  Expr u = ctx.var("u", 0, -1, dtypes::uint64);  // 0 .. 2^64-1
  EXPECT_EQ(bounds(u), std::make_pair(i128(0), max));
  EXPECT_EQ(u->cast(dtypes::float32)->vmax().f, 0x1p64);
  EXPECT_EQ(bounds(u->cast(dtypes::int64)), std::make_pair(i128(INT64_MIN), i128(INT64_MAX)));
  EXPECT_EQ(bounds(a->cast(dtypes::int8)), std::make_pair(i128(0), i128(10)));
  // a cast that can wrap gets the target's full range, not a clamped one
  Expr l = ctx.var("l", 0, int64_t(1) << 40, dtypes::int64);
  EXPECT_EQ(bounds(l->cast(dtypes::int32)), std::make_pair(i128(INT32_MIN), i128(INT32_MAX)));
  Expr n = ctx.var("n", -3, 3, dtypes::int64);
  EXPECT_EQ(bounds(n->cast(dtypes::uint64)), std::make_pair(i128(0), max));
}

TEST(Text, RoundTripsExactly) {
  Context ctx;
  const char* cases[] = {
      "(CONST:weakint 5)",
      "(CONST:bool true)",
      "(CONST:bool invalid)",
      "(CONST:float 0.1)",
      "(CONST:float -inf)",
      "(CONST:double nan)",
      "(CONST:half -0.0)",
      "(VAR:weakint a 0 8)",
      "(VAR:int n 1 4096 mul=16)",
      "(VAR:float x -4.5 4.5)",
      "(ADD:weakint (MUL:weakint (VAR:weakint a 0 8) (CONST:weakint 4)) (VAR:weakint b 0 3))",
      "(RANGE:weakint 0 loop (CONST:weakint 16))",
      "(RANGE:weakint 3 reduce sub=1 (CONST:weakint 16))",
      "(SPECIAL:weakint gidx0 (CONST:weakint 4))",
      "(PARAM:float* slot=0 size=1024)",
      "(INDEX:float* (PARAM:float* slot=0) (CONST:weakint 1))",
      "(REDUCE:float add (CONST:float 1.0) (RANGE:weakint 0 reduce (CONST:weakint 4)))",
      "(WHERE:weakint (CMPLT:bool (VAR:weakint a 0 8) (CONST:weakint 4)) (VAR:weakint a 0 8) (CONST:bool invalid))",
      "(CAST:float.4 (VAR:weakint a 0 8 tag=3))",
      "(SINK:void)",
  };
  for (const char* c : cases) {
    ParseError e;
    const UOp* u = parse(ctx, c, &e);
    ASSERT_NE(u, nullptr) << c << ": " << e.message;
    EXPECT_EQ(print(u), c);
    EXPECT_EQ(parse(ctx, print_graph(u)), u) << print_graph(u);
  }
}

TEST(Text, ErrorsSayWhatAndWhere) {
  Context ctx;
  auto err = [&](std::string_view s) {
    ParseError e;
    EXPECT_EQ(parse(ctx, s, &e), nullptr) << s;
    return std::to_string(e.offset) + ": " + e.message;
  };
  EXPECT_EQ(err("(FOO:weakint 1)"), "1: unknown op 'FOO'");
  EXPECT_EQ(err("(CONST:wint 1)"), "7: unknown dtype 'wint'");
  EXPECT_EQ(err("(CONST:int 4294967296)"), "11: constant 4294967296 out of range for int");
  EXPECT_EQ(err("(ADD:weakint (CONST:weakint 1))"), "1: ADD takes 2 source(s), got 1");
  EXPECT_EQ(err("(VAR:weakint a 5 1)"), "15: VAR range is empty: min 5 > max 1");
  EXPECT_EQ(err("(CMPLT:weakint (CONST:weakint 1) (CONST:weakint 2))"), "1: CMPLT has dtype bool, got weakint");
  EXPECT_EQ(err("(CONST:weakint 1"), "16: unexpected end of input, expected ')'");
  EXPECT_EQ(err("(CONST:weakint 1) x"), "18: unexpected text after the expression");
  EXPECT_EQ(err("(CONST:weakint x)"), "15: expected an integer, got 'x'");
  EXPECT_EQ(err(""), "0: unexpected end of input, expected '('");
  EXPECT_EQ(err("(VAR:ulong a 0 18446744073709551616)"),
            "15: expected an integer in 0..18446744073709551615 for ulong, got '18446744073709551616'");
  EXPECT_EQ(err("(VAR:ulong a 18446744073709551615 1)"), "13: VAR range is empty: min 18446744073709551615 > max 1");
}

TEST(Text, Uint64VariablesTakeTheWholeRange) {
  Context ctx;
  std::string s = "(VAR:ulong a 9223372036854775808 18446744073709551615)";
  const UOp* u = parse(ctx, s);
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(print(u), s);
  EXPECT_EQ(u->exact_lo(), i128(1) << 63);
  EXPECT_EQ(u->exact_hi(), i128(~uint64_t(0)));
  EXPECT_EQ(verify(u), std::nullopt);
}

// parse_verified is what users' text goes through: an ill-typed node fails at its head
TEST(Text, VerifiedParseRefusesIllTypedNodes) {
  Context ctx;
  auto err = [&](std::string_view s) {
    ParseError e;
    EXPECT_NE(parse(ctx, s), nullptr) << s;  // well formed as text
    EXPECT_EQ(parse_verified(ctx, s, &e), nullptr) << s;
    return std::to_string(e.offset) + ": " + e.message;
  };
  EXPECT_EQ(err("(ADD:int (CONST:float 1.5) (CONST:int 2))"), "1: ADD: operand of dtype float in a int op");
  EXPECT_EQ(err("(AND:bool (CONST:int 5) (CONST:bool true))"), "1: AND: operand of dtype int in a bool op");
  EXPECT_EQ(err("(MUL:weakint (VAR:weakint a 0 3) (ADD:int (CONST:int 1) (CONST:long 2)))"),
            "34: ADD: operand of dtype long in a int op");
  for (std::string_view ok : {"(ADD:int (VAR:int a 0 3) (CONST:weakint 1))", "(CONST:ulong 18446744073709551609)",
                              "(CMPLT:bool (CONST:ulong 0) (CONST:ulong 18446744073709551609))"})
    EXPECT_NE(parse_verified(ctx, ok), nullptr) << ok;
}

}  // namespace
}  // namespace kiln

#include "generator/ir/verify.h"

namespace kiln {
namespace {

TEST(Verify, AcceptsWellTypedGraphs) {
  Context ctx;
  Expr a = ctx.var("a", 0, 8), i = ctx.var("i", 0, 8, dtypes::int32);
  EXPECT_EQ(verify(a * 4 + (a % 3)), std::nullopt);
  EXPECT_EQ(verify(i + 1), std::nullopt);
  EXPECT_EQ(verify(where(a < 3, a, Expr(ctx.invalid()))), std::nullopt);
  EXPECT_EQ(verify(ctx.range(16, 0)), std::nullopt);
}

TEST(Verify, NamesTheBrokenRule) {
  Context ctx;
  auto bad = [&](std::string_view s) {
    const UOp* u = parse(ctx, s);
    if (u == nullptr) return std::string("parse error");
    auto e = verify(u);
    return e ? *e : std::string("ok");
  };
  EXPECT_EQ(bad("(ADD:int (VAR:long a 0 8) (CONST:weakint 1))"),
            "ADD: operand of dtype long in a int op: (ADD:int (VAR:long a 0 8) (CONST:weakint 1))");
  EXPECT_EQ(bad("(MAX:bool (VAR:weakint c 0 1) (CONST:bool true))"),
            "MAX: operand of dtype weakint in a bool op: (MAX:bool (VAR:weakint c 0 1) (CONST:bool true))");
  EXPECT_EQ(bad("(RANGE:weakint 0 loop (CONST:float 1.0))"),
            "RANGE: a RANGE's first source is its integer end: (RANGE:weakint 0 loop (CONST:float 1.0))");
}

}  // namespace
}  // namespace kiln
