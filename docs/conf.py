"""Sphinx configuration of the scheduler's design and operator notes.

The pages are written by hand (no autodoc), so building them needs
neither the service's dependencies nor a database.  Build with
``tox -e docs`` (warnings are errors).
"""

project = 'scheduler'
copyright = 'the scheduler authors'
author = 'the scheduler authors'

root_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
exclude_patterns = ['_build', 'requirements.txt']
extensions = []

# Module and option names are written as ``literals``; nothing is a
# cross-reference target, so ``nitpicky`` stays at its default.
highlight_language = 'none'
html_theme = 'alabaster'
html_static_path = []
