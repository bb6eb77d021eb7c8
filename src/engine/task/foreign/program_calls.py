# What an OpenEvolve evaluator does with the program it loads, for
# `thetaevolve convert`: the names it holds the loaded module under (whatever
# they are: program, module, candidate...), per function, and each use of
# them: a call with or without arguments, a function handed on uncalled, or
# the module itself handed on (name null); also in Python code the evaluator
# writes out to run in a subprocess (a string that loads the program). It
# only parses the file (ast); nothing in it runs.
#
#   python3 program_calls.py EVALUATOR   -> {"modules": [...], "uses": [{"module", "name", "line", "arguments", "called"}]}
import ast
import json
import sys
import textwrap

LOADERS = {"module_from_spec", "import_module", "__import__", "load_source"}
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# Calls that only look at the module: they use nothing of it that convert must provide.
LOOKS_ONLY = {"hasattr", "exec_module", "isinstance", "type", "print", "repr", "str"}


def walk_scope(node):
    """The nodes of one scope: `node`'s body without the bodies of the functions and classes defined in it."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, SCOPES):
            yield from walk_scope(child)


def call_name(node):
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def assigned_names(node):
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def scopes_of(tree):
    return [tree] + [n for n in ast.walk(tree) if isinstance(n, SCOPES)]


def module_names(tree):
    """Per scope, the names bound to the loaded program: module_from_spec/import_module results, exec_module's argument, and what a loader function of the file returns."""
    scopes = scopes_of(tree)
    modules = {id(scope): set() for scope in scopes}
    loader_functions = set()
    while True:
        before = (sum(len(m) for m in modules.values()), len(loader_functions))
        for scope in scopes:
            names = modules[id(scope)]
            for node in walk_scope(scope):
                if isinstance(node, ast.Call) and call_name(node) == "exec_module" and node.args and isinstance(node.args[0], ast.Name):
                    names.add(node.args[0].id)
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
                    name = call_name(node.value)
                    if name in LOADERS or name in loader_functions:
                        names.update(assigned_names(node))
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id in names:
                    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        loader_functions.add(scope.name)
        if (sum(len(m) for m in modules.values()), len(loader_functions)) == before:
            return scopes, modules


def uses_in(scope, names):
    out = []
    nodes = list(walk_scope(scope))
    called = set()
    attribute_bases = set()
    looks_only = set()
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            if node.func.value.id in names:
                called.add(id(node.func))
                arguments = len(node.args) + len(node.keywords)
                out.append({"module": node.func.value.id, "name": node.func.attr, "line": node.lineno, "arguments": arguments, "called": True})
        if isinstance(node, ast.Attribute):
            attribute_bases.add(id(node.value))
        if isinstance(node, ast.Call) and call_name(node) in LOOKS_ONLY:
            looks_only.update(id(a) for a in node.args)
        if isinstance(node, (ast.Assign, ast.Return)) and isinstance(node.value, ast.Name):
            looks_only.add(id(node.value))  # sys.modules["program"] = module; a loader's return
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names and id(node) not in called:
            if isinstance(node.ctx, ast.Load) and not node.attr.startswith("__"):
                out.append({"module": node.value.id, "name": node.attr, "line": node.lineno, "arguments": 0, "called": False})
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
            if id(node) not in attribute_bases and id(node) not in looks_only:
                out.append({"module": node.id, "name": None, "line": node.lineno, "arguments": 0, "called": False})
    return out


def embedded_programs(tree):
    """Python code the evaluator writes out and runs in a subprocess (a string or f-string that loads the program), parsed, with its first line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "0" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if "exec_module" not in text and "import_module" not in text:
            continue
        try:
            found.append((ast.parse(textwrap.dedent(text)), node.lineno))
        except SyntaxError:
            continue
    return found


def main(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    scopes, modules = module_names(tree)
    uses = [use for scope in scopes for use in uses_in(scope, modules[id(scope)])]
    for inner, first_line in embedded_programs(tree):
        inner_scopes, inner_modules = module_names(inner)
        for scope in inner_scopes:
            modules[id(scope)] = inner_modules[id(scope)]
            for use in uses_in(scope, inner_modules[id(scope)]):
                uses.append({**use, "line": first_line + use["line"] - 1})
    all_names = sorted(set().union(*modules.values()))
    print(json.dumps({"modules": all_names, "uses": sorted(uses, key=lambda u: (u["line"], u["name"] or ""))}))


if __name__ == "__main__":
    main(sys.argv[1])
