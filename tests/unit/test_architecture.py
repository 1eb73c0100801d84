"""The shape of the ``scheduler`` package, checked on its source.

* size: no module over 500 lines, no class over 300 (the tools'
  ``scheduler_tools`` package too);
* a small root: the rest of the code lives in packages named for their
  part of the architecture;
* layers: each package imports only its own modules and those of the
  layers below it (``LAYERS``, lowest first), and no two modules import
  each other, directly or around a cycle, counting imports inside
  functions too.
"""

import ast
import collections
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = REPO / 'scheduler'
TOOLS = REPO / 'scheduler-tools' / 'scheduler_tools'

MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 300

# The modules at the root of ``scheduler/`` besides ``__init__``.
ROOT_MODULES = {'config', 'context', 'exception', 'loadables', 'rpc'}

# Lowest first: a unit may import itself and any unit before it.  A unit
# is a root module or a subpackage.
LAYERS = (
    'exception',       # the errors every layer raises
    'context',         # the request context
    'conf',            # option definitions
    'objects',         # versioned objects: Nova's wire formats
    'loadables',       # finding plug-in classes by name
    'resources',       # pure capacity rules: ratios, NUMA, PCI, metrics
    'rpc',             # transports, serializer, notifier
    'observability',   # decision log, notifications, Prometheus metrics
    'db',              # SQL: schema, hosts, claims, Nova's databases
    'view',            # the host view: HostState, HostTable, managers
    'filters',         # plug-ins: filters
    'weights',         # plug-ins: weighers
    'engine',          # one request: pipeline, decision, claims, moves
    'placement',       # Placement as a candidate source and reservation
    'drivers',         # filter and chance scheduler
    'server',          # RPC endpoint, service, launcher, pre-flight
    'config',          # command line and logging set-up
    'cmd',             # console scripts
)


def _modules():
    for path in sorted(PACKAGE.rglob('*.py')):
        parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
        if parts[-1] == '__init__':
            parts = parts[:-1]
        yield '.'.join(parts), path


MODULES = dict(_modules())


def _unit(module):
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else '__init__'


def _type_checking_nodes(tree):
    """The nodes under ``if typing.TYPE_CHECKING:`` (annotations only)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and 'TYPE_CHECKING' in ast.unparse(
                node.test):
            for child in node.body:
                skipped.update(ast.walk(child))
    return skipped


def _imports(module, path, runtime_only=False):
    """The ``scheduler`` modules ``module`` imports, anywhere in it.

    ``from package import name`` counts the submodule ``package.name``
    when there is one, else the package itself (an attribute of its
    ``__init__``).  With ``runtime_only``, imports made for annotations
    only (under ``TYPE_CHECKING``) are left out.
    """
    tree = ast.parse(path.read_text())
    skipped = _type_checking_nodes(tree) if runtime_only else set()
    found = set()
    for node in ast.walk(tree):
        if node in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [f'{node.module}.{alias.name}'
                     if f'{node.module}.{alias.name}' in MODULES
                     else node.module for alias in node.names]
        else:
            continue
        for name in names:
            if name in MODULES and name not in ('scheduler', module):
                found.add(name)
    return found


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}
RUNTIME_GRAPH = {module: _imports(module, path, runtime_only=True)
                 for module, path in MODULES.items()}


SIZED = sorted([*PACKAGE.rglob('*.py'), *TOOLS.rglob('*.py')])


@pytest.mark.parametrize('path', SIZED,
                         ids=[str(path.relative_to(REPO)) for path in SIZED])
def test_module_and_class_sizes(path):
    text = path.read_text()
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f'{path}: {lines} lines'
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            size = node.end_lineno - node.lineno + 1
            assert size <= MAX_CLASS_LINES, (
                f'{path}:{node.name}: {size} lines')


def test_the_size_check_sees_both_packages():
    assert len(SIZED) > len(MODULES) > 150


def test_the_root_holds_a_handful_of_modules():
    root = {path.stem for path in PACKAGE.glob('*.py')} - {'__init__'}
    assert root == ROOT_MODULES


def test_every_unit_has_a_layer():
    units = {_unit(module) for module in MODULES} - {'__init__'}
    assert units == set(LAYERS)


def test_imports_only_run_downwards():
    rank = {unit: index for index, unit in enumerate(LAYERS)}
    upward = sorted(
        f'{module} imports {target}'
        for module, targets in GRAPH.items() if module != 'scheduler'
        for target in targets
        if rank[_unit(target)] > rank[_unit(module)])
    assert not upward, '\n'.join(upward)


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack = {}, {}, [], set()
    found = []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle():
    assert _cycles(RUNTIME_GRAPH) == []


def test_the_checks_see_the_imports():
    """The graph is not empty by mistake: known edges are found."""
    assert 'scheduler.engine.decision' in GRAPH[
        'scheduler.drivers.filter_scheduler']
    layers = collections.Counter(_unit(module) for module in GRAPH)
    assert layers['filters'] > 20
