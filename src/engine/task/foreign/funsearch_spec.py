# Reads a FunSearch specification for `thetaevolve convert SPEC --inputs ...`:
# the function decorated @funsearch.run (called once per input) and the one
# decorated @funsearch.evolve (the one the model rewrites), found as FunSearch
# finds them (implementation/code_manipulation.py, yield_decorated), or from
# the commented-out `# @funsearch.run` lines its published notebooks use. It
# only parses the file; nothing in it runs.
#
#   python3 funsearch_spec.py SPEC -> {"run", "evolve", "firstLine", "lastLine"} or {"problem"}
import ast
import json
import re
import sys

COMMENTED = re.compile(r"^\s*#\s*@funsearch\.(run|evolve)\b")


def decorated(tree, name):
    """FunSearch's rule: @funsearch.NAME or @funsearch.NAME(...) on a def."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                attribute = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(attribute, ast.Attribute) and isinstance(attribute.value, ast.Name):
                    if attribute.value.id == "funsearch" and attribute.attr == name:
                        yield node, decorator.lineno


def commented(tree, lines, name):
    """`# @funsearch.NAME` on the line above a def (FunSearch's notebooks)."""
    functions = {n.lineno: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for index, line in enumerate(lines):
        match = COMMENTED.match(line)
        if match and match.group(1) == name:
            following = index + 2  # 1-based number of the next line
            while following <= len(lines) and (lines[following - 1].strip() == "" or lines[following - 1].lstrip().startswith("#")):
                following += 1
            if following in functions:
                yield functions[following], index + 1


def find(tree, lines, name):
    found = list(decorated(tree, name)) or list(commented(tree, lines, name))
    if len(found) != 1:
        where = ", ".join(node.name for node, _ in found) or "none"
        raise ValueError(f"needs exactly one function decorated @funsearch.{name} (found {where})")
    return found[0]


def main(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        tree = ast.parse(text, filename=path)
        lines = text.split("\n")
        run, _ = find(tree, lines, "run")
        evolve, decorator_line = find(tree, lines, "evolve")
    except (SyntaxError, ValueError) as err:
        print(json.dumps({"problem": str(err)}))
        return
    first = min([decorator_line] + [d.lineno for d in evolve.decorator_list])
    print(json.dumps({"run": run.name, "evolve": evolve.name, "firstLine": first, "lastLine": evolve.end_lineno}))


if __name__ == "__main__":
    main(sys.argv[1])
