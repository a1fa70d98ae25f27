"""Compares two CSV outputs of `pcr-dump cat` value by value.

usage: same_cells.py ACTUAL EXPECTED   (ACTUAL may be - for stdin)

Cells match when their text is equal, or when both are numbers (or JSON
lists of numbers) of equal value: 1 and 1.0 match, -0 and 0 do not, NaN
matches NaN. A blank line, as earlier versions wrote a row of one missing
cell, matches NA. Golden files written by earlier versions of pcr-dump
printed floats more briefly; the values, not the spelling, are what a file
of that version must still read to.
"""
import csv
import io
import json
import math
import sys


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def same_float(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def same_json(a, b):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return same_float(float(a), float(b))
    return a == b


def same_cell(a, b):
    if a == b:
        return True
    x, y = number(a), number(b)
    if x is not None and y is not None:
        return same_float(x, y)
    if a.startswith("[") and b.startswith("["):
        try:
            return same_json(json.loads(a), json.loads(b))
        except ValueError:
            return False
    return False


def rows(text):
    return [row if row else ["NA"] for row in csv.reader(io.StringIO(text, newline=""))]


def main():
    actual_path, expected_path = sys.argv[1:3]
    actual_text = sys.stdin.read() if actual_path == "-" else open(actual_path, encoding="utf-8").read()
    with open(expected_path, encoding="utf-8", newline="") as f:
        expected_text = f.read()
    actual, expected = rows(actual_text), rows(expected_text)
    if len(actual) != len(expected):
        print(f"{expected_path}: {len(actual)} rows, expected {len(expected)}")
        return 1
    for line, (a, e) in enumerate(zip(actual, expected), 1):
        if len(a) != len(e) or not all(same_cell(x, y) for x, y in zip(a, e)):
            print(f"{expected_path}: row {line} differs:\n  got      {a}\n  expected {e}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
