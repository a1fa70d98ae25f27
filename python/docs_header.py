"""Writes the C++ header of _pcr's docstrings from _pcr.pyi, so that the
stub and help() show the same text from one source.

usage: docs_header.py _pcr.pyi OUT.h

Each class, method, property and function of the stub with a docstring
becomes an entry named "Class", "Class.member" or "function".
"""
import ast
import sys


def entries(tree):
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node):
            yield node.name, ast.get_docstring(node)
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef) and ast.get_docstring(member):
                    yield f"{node.name}.{member.name}", ast.get_docstring(member)


def main():
    source, out = sys.argv[1:]
    with open(source) as f:
        tree = ast.parse(f.read(), source)
    lines = ["// Generated from _pcr.pyi by python/docs_header.py: the bindings' docstrings.",
             "#pragma once", "", "#include <string_view>", "", "namespace pcr_docs {", "",
             "struct Entry {", "  std::string_view name;", "  const char* doc;", "};", "",
             "inline constexpr Entry kEntries[] = {"]
    for name, doc in entries(tree):
        if ")pcrdoc\"" in doc:
            sys.exit(f"{source}: the docstring of {name} holds the header's delimiter")
        lines.append(f'    {{"{name}", R"pcrdoc({doc})pcrdoc"}},')
    lines += ["};", "", "}  // namespace pcr_docs", ""]
    with open(out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
