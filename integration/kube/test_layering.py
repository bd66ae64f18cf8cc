"""The import graph of the test API server's modules: no cycles, no imports inside functions.

Every ``*.py`` file in this directory is a module of the server (or one of its
tests). This test reads them with ``ast`` (without importing them), collects
the imports of each one that name another module of this directory, wherever
they are written, and checks that:
* the graph of those imports has no cycle (the layering is leaf helpers,
  then the store and resources, then the controller runtime, then the
  concrete controllers, then apiserver.py, which registers them);
* no such import is written inside a function (imports of optional
  third-party packages, such as python3-kubernetes, are not concerned);
* kcommon.py, the leaf module of shared helpers, imports none of them.
"""

import ast
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
LEAF = "kcommon"


def local_modules(directory=HERE):
    """The names of the modules in ``directory`` (its ``*.py`` files)."""
    return sorted(f[:-3] for f in os.listdir(directory) if f.endswith(".py"))


def imported_names(node):
    """The top-level module names an ``import`` or ``from ... import`` statement refers to."""
    if isinstance(node, ast.Import):
        return [alias.name.split(".")[0] for alias in node.names]
    if node.level and not node.module:  # from . import a, b
        return [alias.name for alias in node.names]
    return [node.module.split(".")[0]]


def imports_of(source, modules):
    """The imports in ``source`` of names in ``modules``: a list of (name, line, in_function)."""
    out = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for name in imported_names(child):
                    if name in modules:
                        out.append((name, child.lineno, in_function))
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            visit(child, nested)

    visit(ast.parse(source), False)
    return out


def import_graph(directory=HERE):
    """Module -> {imported module: [(line, in_function), ...]} for the modules of ``directory``."""
    modules = set(local_modules(directory))
    graph = {}
    for name in sorted(modules):
        with open(os.path.join(directory, name + ".py"), encoding="utf-8") as f:
            source = f.read()
        edges = graph.setdefault(name, {})
        for target, line, in_function in imports_of(source, modules):
            edges.setdefault(target, []).append((line, in_function))
    return graph


def find_cycle(graph):
    """A cycle of ``graph`` (node -> iterable of nodes) as [a, b, ..., a], or None."""
    state = {}  # node -> "open" while on the current path, "done" once fully explored
    path = []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


class LayeringTest(unittest.TestCase):

    def setUp(self):
        self.graph = import_graph()

    def test_no_import_cycle(self):
        cycle = find_cycle(self.graph)
        self.assertIsNone(cycle, "import cycle: %s" % " -> ".join(cycle or []))

    def test_no_import_inside_functions(self):
        found = ["%s.py:%d imports %s" % (module, line, target)
                 for module, edges in sorted(self.graph.items())
                 for target, uses in sorted(edges.items())
                 for line, in_function in uses if in_function]
        self.assertEqual(found, [], "imports of this directory's modules inside functions")

    def test_leaf_imports_no_local_module(self):
        self.assertIn(LEAF, self.graph)
        self.assertEqual(sorted(self.graph[LEAF]), [])

    def test_controller_runtime_imports_no_controller(self):
        # controllers.py is imported by every controller; they are registered by apiserver.py.
        runtime = set(self.graph["controllers"])
        users = {m for m, edges in self.graph.items() if "controllers" in edges}
        self.assertEqual(runtime & users, set())
        self.assertIn("controllers", self.graph["apiserver"])


class CheckerTest(unittest.TestCase):
    """The checks above do find what they look for."""

    def test_finds_cycles(self):
        self.assertEqual(find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}), ["a", "b", "c", "a"])
        self.assertEqual(find_cycle({"a": ["a"]}), ["a", "a"])
        self.assertEqual(find_cycle({"x": ["a"], "a": ["b"], "b": ["a"]}), ["a", "b", "a"])
        self.assertIsNone(find_cycle({"a": ["b", "c"], "b": ["c"], "c": []}))

    def test_finds_imports_in_functions(self):
        source = ("import os\nimport a\nfrom b import x\n\n"
                  "def f():\n    import c\n    from d.e import y\n    import os\n\n"
                  "class K:\n    def m(self):\n        from . import a\n\n"
                  "try:\n    import e\nexcept ImportError:\n    e = None\n")
        self.assertEqual(imports_of(source, {"a", "b", "c", "d", "e"}),
                         [("a", 2, False), ("b", 3, False), ("c", 6, True), ("d", 7, True),
                          ("a", 12, True), ("e", 15, False)])

    def test_graph_of_a_cycle(self):
        graph = {"store": {"crds": []}, "crds": {"store": []}}
        self.assertEqual(find_cycle(graph), ["crds", "store", "crds"])


if __name__ == "__main__":
    unittest.main()
