#!/usr/bin/env python3
"""Records tinygrad's simplified forms of random index expressions, for kiln's parity test.

Three families of random expressions, a third of the records each, are built with tinygrad's own
UOp API: trees in the style of tinygrad's symbolic fuzzer (sums, products, floor division and modulo
by constants, max, min and gated selects over three variables in [0, n]); trees in the style of
kiln's SymbolicFuzz (variables that may be negative, differences, bool logic, bit operations, shifts,
division by a positive variable, bools cast to ints); and sums of scaled variables whose remainder
terms reach a divisor's boundaries, divided or reduced by it. Each is simplified with `UOp.simplify()`, and written as records in kiln's IR
syntax (tests/golden/tinygrad/README.md, which says which tinygrad commit and seed wrote the file):
`in` is the expression, `tinygrad_out` what tinygrad made of it. The records are facts about tinygrad's output; no tinygrad code is kept.
TinygradParity.* (tests/unit/test_tinygrad_port.cpp) simplifies each `in` with kiln, checks that
the value is kept, and counts the records where kiln's form has no more nodes than tinygrad's.

Usage: scripts/symbolic_parity.py TINYGRAD_CHECKOUT [--seed S] [--count N] [--out FILE]
(default out: tests/golden/tinygrad/parity.txt). Needs only Python 3.10+; tinygrad is imported
from the checkout.
"""

import argparse
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("tinygrad")
  ap.add_argument("--seed", type=int, default=20261202)
  ap.add_argument("--count", type=int, default=2400)
  ap.add_argument("--out", default=os.path.join(ROOT, "tests/golden/tinygrad/parity.txt"))
  ap.add_argument("--commit", help="the checkout's commit, where it has no .git (default: git rev-parse HEAD)")
  args = ap.parse_args()
  sys.path.insert(0, os.path.abspath(args.tinygrad))
  import subprocess
  from tinygrad import Variable
  from tinygrad.uop.ops import Ops

  commit = args.commit or subprocess.run(["git", "-C", args.tinygrad, "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "unknown"
  rng = random.Random(args.seed)

  def leaf(vs):
    return rng.choice(vs)

  def some_node(e):
    # a node of `e` itself, so that operands share subtrees as index math does
    nodes = [n for n in e.toposort() if n.dtype.name == "weakint"]
    return rng.choice(nodes)

  def int_expr(depth, vs):
    if depth <= 0:
      return leaf(vs)
    a = int_expr(depth - 1, vs)
    kind = rng.choices(["unary", "binary", "where"], weights=[6, 4, 1])[0]
    if kind == "unary":
      op = rng.choices(["add", "mul", "div", "mod", "max", "min"], weights=[4, 4, 4, 4, 1, 1])[0]
      if op == "add": return a + rng.randint(-4, 4)
      if op == "mul": return a * rng.randint(-4, 4)
      if op == "div": return a // rng.choice([d for d in range(-9, 10) if d != 0])
      if op == "mod": return a % rng.randint(1, 9)
      if op == "max": return a.maximum(rng.randint(-10, 10))
      return a.minimum(rng.randint(-10, 10))
    b = int_expr(depth - 1, vs) if rng.random() < 0.5 else some_node(a)
    if kind == "binary":
      op = rng.choices(["add", "mul", "max", "min"], weights=[8, 1, 1, 1])[0]
      if op == "add": return a + b
      if op == "mul": return a * b
      if op == "max": return a.maximum(b)
      return a.minimum(b)
    c = int_expr(depth - 1, vs) if rng.random() < 0.5 else some_node(a)
    rhs = some_node(a) if rng.random() < 0.5 else a.const_like(rng.randint(-10, 10))
    cmp = rng.choice(["lt", "le", "gt", "ge"])
    g = {"lt": lambda: a < rhs, "le": lambda: a <= rhs, "gt": lambda: a > rhs, "ge": lambda: a >= rhs}[cmp]()
    return g.where(b, c)

  def sexpr(root):
    memo = {}

    def go(u):
      if u in memo: return memo[u]
      d = u.dtype.name
      if u.op == Ops.CONST:
        v = u.arg
        s = f"(CONST:{d} {'true' if v is True else 'false' if v is False else v})"
      elif u.op in (Ops.BUFFER, Ops.PARAM) and hasattr(u.arg, "vmin_vmax"):
        lo, hi = u.arg.vmin_vmax
        mul = f" mul={u.arg.multiple_of}" if getattr(u.arg, "multiple_of", 1) != 1 else ""
        s = f"(VAR:{d} {u.arg.name} {lo} {hi}{mul})"
      else:
        if u.arg is not None and not (u.op == Ops.CAST and u.arg == u.dtype): raise ValueError(f"no kiln form for {u.op} with arg {u.arg!r}")
        s = f"({u.op.name}:{d}" + "".join(" " + go(x) for x in u.src) + ")"
      memo[u] = s
      return s

    return go(root)

  def rich_int(depth, vs):
    if depth <= 0 or rng.random() < 0.1:
      return leaf(vs) if rng.random() < 0.7 else vs[0].const_like(rng.randint(-12, 12))
    d = depth - 1
    kind = rng.choices(range(12), weights=[12, 12, 8, 8, 4, 10, 10, 5, 5, 5, 4, 3])[0]
    if kind == 9: return rich_bool(d, vs).where(rich_int(d, vs), rich_int(d, vs))
    if kind == 10: return rich_bool(d, vs).cast(vs[0].dtype)
    x = rich_int(d, vs)
    if kind == 0: return x + rich_int(d, vs)
    if kind == 1: return x + rng.randint(-12, 12)
    if kind == 2: return x * rng.randint(-12, 12)
    if kind == 3: return x * rng.randint(-3, 4)
    if kind == 4: return x - rich_int(d, vs)
    if kind in (5, 6):
      positive = [v for v in vs if v.vmin >= 1]
      if positive and rng.random() < 0.1: div = rng.choice(positive)
      else: div = rng.randint(1, 9) * (-1 if rng.random() < 0.15 else 1)
      return x // div if kind == 5 else x % div
    if kind == 7: return x.maximum(rich_int(d, vs))
    if kind == 8: return x.minimum(rich_int(d, vs))
    return rng.choice([lambda: x & rng.randint(0, 15), lambda: x | rng.randint(0, 15), lambda: x ^ rng.randint(0, 15),
                       lambda: x << rng.randint(0, 4), lambda: x >> rng.randint(0, 4)])()

  def rich_bool(depth, vs):
    if depth <= 0: return leaf(vs) < rng.randint(-12, 12)
    d = depth - 1
    kind = rng.choices(range(6), weights=[10, 8, 8, 4, 4, 3])[0]
    if kind == 5: return rich_bool(d, vs).logical_not()
    if kind == 3: return rich_bool(d, vs) & rich_bool(d, vs)
    if kind == 4: return rich_bool(d, vs) | rich_bool(d, vs)
    x = rich_int(d, vs)
    y = rich_int(d, vs) if kind == 0 else rng.randint(-12, 12)
    return x < y if kind <= 1 else x != y

  def boundary_expr():
    div = rng.choice([2, 3, 4, 6, 8, 9, 12, 16])
    g = rng.choice([f for f in range(2, div) if div % f == 0] or [div])
    terms = []
    for i in range(rng.randint(2, 3)):
      coef = g * rng.randint(1, 3) if rng.random() < 0.5 else rng.randint(1, max(1, g - 1))
      target = rng.choice([g - 1, g, g, g + 1, div - 1, div, div, div + 1, 2 * div, div * g])
      hi, lo = max(0, target // coef), (-rng.randint(1, 3) if rng.random() < 0.2 else 0)
      if rng.random() < 0.15: lo = hi = target // coef
      terms.append(Variable("abc"[i], lo, hi) * coef)
    num = terms[0]
    for t in terms[1:]: num = num + t
    if rng.random() < 0.3: num = num + rng.randint(-div, div)
    return rng.choices([lambda: num % div, lambda: num // div, lambda: (num % div) // g,
                        lambda: (num // g) % max(1, div // g), lambda: (num % div) * 2 + num // div],
                       weights=[4, 3, 1, 1, 1])[0]()

  bounds = [*range(1, 10), 16, 32, 64, 128, 256]
  records, skipped = [], 0
  while len(records) < args.count:
    family = len(records) % 3
    try:
      if family == 0:
        vs = [Variable(f"v{i + 1}", 0, rng.choice(bounds)) for i in range(3)]
        e = int_expr(rng.randint(2, 6), vs)
      elif family == 1:
        vs = []
        for i in range(3):
          lo = rng.choice([0, 0, 1, -rng.randint(1, 16)])
          vs.append(Variable(f"v{i + 1}", lo, lo + rng.choice(bounds)))
        e = rich_int(rng.randint(2, 5), vs)
      else:
        e = boundary_expr()
      s = e.simplify()
      rec = (sexpr(e), sexpr(s), len(s.toposort()))
    except (ValueError, RecursionError, AssertionError, ZeroDivisionError) as ex:
      if os.environ.get("PARITY_DEBUG"): print(type(ex).__name__, str(ex)[:200])
      skipped += 1
      continue
    records.append(rec)

  with open(args.out, "w") as f:
    for k, (i, o, _) in enumerate(records):
      f.write(f"# parity #{k}\nkind: parity\nin: {i}\ntinygrad_out: {o}\n\n")
  print(f"wrote {len(records)} records to {args.out} ({skipped} expressions skipped), tinygrad commit {commit}")


if __name__ == "__main__":
  main()
